//! gputrace's NVTX injection library, `libgputrace_nvtx.so`.
//!
//! `gputrace` sets `NVTX_INJECTION64_PATH` to this library for the traced
//! processes (unless `GPUTRACE_NVTX_ENABLE=no`); each NVTX instance in a
//! process (every library or program built with the NVTX v3 headers:
//! C/C++ `nvtx3`, PyTorch, the Python `nvtx` package) loads it at its
//! first annotation and calls `InitializeInjectionNvtx2`, which fills the
//! instance's CORE and CORE2 function tables with this library's
//! functions, as profilers do. It works before CUDA is initialized and in
//! processes that never use CUDA.
//!
//! - [`abi`]: the C layouts and ids, and the one function that writes an
//!   instance's slots;
//! - [`exports`]: the exported entry points and the functions put in the
//!   slots, reading C memory only;
//! - [`annotations`]: what each annotation becomes in the raw stream
//!   (ranges, marks, domains, categories, registered strings, thread
//!   names), written once;
//! - [`handles`]: the lock-free table behind domain and string handles;
//! - [`nccl`]: NCCL's own ranges, handed to gputrace's NCCL plugin;
//! - `live`: the process-wide state, the panic guard and the exit handler.
//!
//! `docs/nvtx.md` describes what is recorded and how.
//!
//! A producer: depends on `runtime`, `raw` and `config`; never on OTF2,
//! the merge or the reports.

pub mod abi;
pub mod annotations;
pub mod exports;
pub mod handles;
mod live;
pub mod nccl;

pub use annotations::{Annotations, Attributes, Message, Payload, Style};
