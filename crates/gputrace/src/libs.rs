//! Finding gputrace's own libraries (the MPI hooks, and the libraries
//! of raw's table of sources: the CUDA agent, the NCCL plugin, the NVTX
//! injection library) next to the `gputrace` binary.

use std::path::{Path, PathBuf};

use crate::launch::MpiFlavor;

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
