//! gputrace's call-path profile: a [`merge::Extra`] sink that builds, in
//! the merge's own pass, each location's call tree from the nesting of its
//! regions and the metrics at every call path, and writes them as a CUBE4
//! profile (`profile.cubex`) with the [`cube`] crate.
//!
//! - **Call tree.** One root, the program (named after rank 0's
//!   executable, its command line as the mangled name, as Score-P names
//!   it), under which each location's regions nest as they were entered:
//!   MPI calls, CUDA API calls, NCCL calls, NVTX ranges on host threads;
//!   kernels, copies and memsets on a GPU stream directly under the root.
//! - **System tree.** The archive's: the machine, its hosts, the processes
//!   (MPI ranks), GPUs, CUDA contexts; threads, GPU streams, metric
//!   locations.
//! - **Metrics** ([`METRICS`]), as Score-P stores them where it has them:
//!   `visits` (exclusive), `time` (inclusive, seconds: a call path with
//!   everything called from it; the root's is the location's span from
//!   its first event to its last), `bytes_sent`/`bytes_received`
//!   (exclusive: MPI and NCCL point-to-point messages and collectives, at
//!   the call path that sent or completed them), and for GPU work
//!   `kernel_time`, `copy_time`, `memset_time` (inclusive, seconds) and
//!   `copy_bytes`, `memset_bytes` (exclusive). The kind of a copy is its
//!   region (`[CUDA memcpy HtoD]`...).
//!
//! The sink costs the pass a cache lookup per Enter and a few additions
//! per event (call-tree nodes are indices; a Leave goes to the parent, so
//! there is no stack) and allocates nothing per event; a location's values
//! are kept when its events end, and go into the cube once the merge is
//! over ([`Profile::finish`]).

mod call_tree;
mod contexts;
mod define;
mod error;
mod extra;
mod metrics;
mod profile;
mod sink;

pub use error::Error;
pub use metrics::METRICS;
pub use profile::Profile;

#[cfg(test)]
mod tests;
