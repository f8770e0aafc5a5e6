//! gputrace's in-process runtime, shared by every producer.
//!
//! - [`raw`]: the raw stream format, its writer and its salvaging reader;
//! - [`runtime`]: the [`Recorder`](runtime::Recorder) that producers write
//!   events through, with per-thread buffers and bounded memory;
//! - [`config`]: every `GPUTRACE_*` variable, declared and parsed once;
//! - [`clock`]: CLOCK_MONOTONIC timestamps;
//! - [`filter`]: Score-P filter files.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod clock;
pub mod config;
pub mod filter;
pub mod raw;
pub mod runtime;
pub mod synthetic;

pub use config::Config;
pub use runtime::Recorder;
