//! The MPI producer of gputrace: PMPI wrappers that record MPI calls,
//! messages and collectives into the process's raw MPI stream.
//!
//! This crate is the part that does not depend on the MPI
//! implementation. It is generic over [`MpiAbi`], which each flavour
//! crate (`gputrace-mpi`, `gputrace-mpi-mpich`) implements for its MPI,
//! and exports the macro [`define_wrappers!`] that expands the one
//! signature list ([`functions`]) into the `MPI_*` symbols of that
//! flavour's preload library. Nothing here links against MPI: every
//! `PMPI_*` function is looked up at run time ([`pmpi`]), so the library
//! loads harmlessly into processes that have no MPI.
//!
//! - [`call`]: following one call — re-entry guard, Enter/Leave, panics;
//! - [`callpath`]: the caller's call path at Enter (`GPUTRACE_UNWINDING`);
//! - [`hooks`]: what each family of functions records;
//! - [`comms`], [`requests`]: communicators and outstanding requests;
//! - [`coll_bytes`]: Score-P's byte counts for collectives;
//! - [`lifecycle`], [`clocksync`]: init, finalize and clock offsets;
//! - [`pmpi`], [`loaded`]: finding and calling the MPI library's functions;
//! - [`fortran`]: helpers for Fortran wrappers that bypass the C ones.
//!
//! `docs/mpi.md` describes the event mapping for users.
//!
//! A producer: depends on `runtime`, `raw`, `config` and the unwinder
//! (`gputrace-unwind`); never on OTF2,
//! the merge or the reports.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod call;
mod callpath;
pub mod clocksync;
pub mod coll_bytes;
pub mod comms;
pub mod functions;
pub mod hooks;
pub mod lifecycle;
pub mod loaded;
pub mod pmpi;
pub mod requests;
pub mod scratch;
pub mod state;
pub mod wrappers;

pub use abi::{Handle, IntHandle, MpiAbi, ObjectHandle};
