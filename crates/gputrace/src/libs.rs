//! Finding gputrace's own libraries (the MPI hooks, the CUDA agent, the
//! NCCL plugin and the NVTX injection library) next to the `gputrace`
//! binary.

use std::path::{Path, PathBuf};

use crate::launch::MpiFlavor;

/// File name of the CUDA agent.
pub const CUDA_AGENT: &str = "libgputrace_cuda.so";

/// File name of the NCCL profiler plugin.
pub const NCCL_PLUGIN: &str = "libgputrace_nccl.so";

/// File name of the NVTX injection library.
pub const NVTX_INJECTION: &str = "libgputrace_nvtx.so";

/// File name of the MPI hooks for `flavor`.
pub fn mpi_hooks_name(flavor: MpiFlavor) -> &'static str {
    match flavor {
        MpiFlavor::OpenMpi => "libgputrace_mpi.so",
        MpiFlavor::Mpich => "libgputrace_mpi_mpich.so",
    }
}

/// Looks for `name` beside the executable, then in `../lib/gputrace` and
/// `../lib` relative to it (the installed layout).
pub fn find(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    candidates(dir, name).into_iter().find(|p| p.is_file())
}

fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    vec![dir.join(name), dir.join("../lib/gputrace").join(name), dir.join("../lib").join(name)]
}
