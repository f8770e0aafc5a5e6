//! `libgputrace_mpi_mpich.so`: gputrace's PMPI wrappers for MPICH and the
//! MPIs derived from it.
//!
//! Preloaded into the ranks (`mpiexec.mpich -genv LD_PRELOAD
//! .../libgputrace_mpi_mpich.so`), it exports every `MPI_*` function of
//! the signature list in `gputrace-mpi-core`, expanded for [`Mpich`]'s ABI.
//! MPICH's Fortran bindings call the C `MPI_*` functions, so Fortran
//! programs are covered by the same wrappers.
//!
//! The library is not linked against libmpi; it loads harmlessly into
//! processes without MPI, and in a process whose MPI is not MPICH-based it
//! warns once at `MPI_Init` and passes every call through.
//!
//! Depends on `gputrace-mpi-core` (and through it the runtime) and on
//! `raw` and `config`, which its expansion of the signature list names;
//! never on OTF2, the merge or the reports.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;

pub use abi::Mpich;

gputrace_mpi_core::define_wrappers!(crate::Mpich);
