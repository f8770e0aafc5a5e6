//! gputrace's NCCL profiler plugin, `libgputrace_nccl.so`.
//!
//! `gputrace` sets `NCCL_PROFILER_PLUGIN` to this library for the traced
//! processes; NCCL (2.23 and later) loads it and looks up the newest
//! interface it knows among `ncclProfiler_v6` … `ncclProfiler_v1`, all
//! exported here. For every communicator NCCL calls `init`, then reports
//! events — the user's groups and calls, collectives and send/receive as
//! launched, proxy operations, kernel channels — which the plugin records
//! into the process's NCCL raw stream as `GPUTRACE_NCCL_ENABLE` asks:
//!
//! - [`abi`]: the C layouts of every interface version;
//! - [`exports`]: the exported symbols, converting each version's
//!   descriptors into the one [`model`];
//! - [`profiler`]: the recording logic (regions, attributes, collectives,
//!   messages, proxy and kernel lanes), written once;
//! - [`levels`] and [`bytes`]: the activation mask, and bytes per rank;
//! - [`capture`] and [`replay`]: callback sequences saved as JSON lines and fed
//!   back through the same logic, for tests without a GPU;
//! - `live`: the process-wide state, the panic guard and the exit handler.
//!
//! The plugin never makes NCCL fail: every callback returns `ncclSuccess`,
//! and an internal error switches the plugin off with one warning line.
//! `docs/nccl.md` describes what is recorded and how.
//!
//! A producer: depends on `runtime`, `raw` and `config`; never on OTF2,
//! the merge or the reports.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod bytes;
pub mod capture;
pub mod exports;
mod handle;
pub mod levels;
mod live;
pub mod model;
pub mod profiler;
pub mod replay;

pub use capture::{Capture, CaptureError, Record};
pub use levels::Levels;
pub use replay::replay;
