//! gputrace's CUDA agent, `libgputrace_cuda.so`.
//!
//! `gputrace` sets `CUDA_INJECTION64_PATH` to this library for the traced
//! processes; the CUDA driver loads it when a process initializes CUDA —
//! whatever the program is written in, Python included — and calls
//! [`InitializeInjection`]. The agent then records through CUPTI what
//! `GPUTRACE_CUDA_ENABLE` asks for:
//!
//! - [`agent`]: CUPTI set-up, activity buffers, exit;
//! - [`records`]: CUPTI's versioned record structs decoded into one form;
//! - [`convert`]: records into raw events on host threads and GPU streams;
//! - [`nvlink`]: the NVML sampler thread, and NVLink traffic;
//! - [`memory`]: allocations, frees, pools, memory in use and unified memory;
//! - [`gpu_metrics`]: GPU utilization, memory, clock, power and temperature from NVML;
//! - [`graphs`]: CUDA graph and node ids, graph executions;
//! - [`capture`]: CUPTI buffers saved and replayed, for tests without a GPU;
//! - [`synthetic`]: records built by hand from the bindings' structs, for tests;
//! - [`names`]: kernel and API names;
//! - [`lost`]: what could not become events, counted.
//!
//! A process that never creates a CUDA context leaves no trace; a process
//! where CUPTI cannot be used (missing, too old, another profiler attached)
//! gets one warning line and runs untraced for CUDA; the agent leaves why
//! in a stream of its own (an Untraced record), for the merge to say.
//!
//! A producer: depends on `runtime`, `raw`, `config`, `cupti-sys` and
//! `nvml-sys`; never on OTF2, the merge or the reports.

#![deny(unsafe_op_in_unsafe_fn)]

mod agent;
#[doc(hidden)]
pub mod api;
pub mod capture;
pub mod convert;
pub mod copies;
pub mod gpu_metrics;
pub mod graphs;
mod handoff;
pub mod launch_names;
pub mod lost;
pub mod memory;
pub mod names;
pub mod nvlink;
pub mod nvml_proxy;
pub mod records;
pub mod replay;
pub mod synthetic;
mod uvm;

/// The entry point the CUDA driver calls after loading the library from
/// `CUDA_INJECTION64_PATH`. Returns 1 (success) whatever happens: a
/// tracing problem never stops CUDA from initializing.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> std::ffi::c_int {
    let _ = recorder::guard::shield(agent::start);
    1
}
