//! The call path of each recorded MPI call (`GPUTRACE_UNWINDING`):
//! recorded at the call's Enter with the recorder's
//! [`CallPaths`](recorder::callpath::CallPaths), as the CUDA and NCCL
//! producers record theirs.

use recorder::callpath::CallPaths;

/// The MPI calls' call paths: on with `GPUTRACE_UNWINDING`.
pub(crate) static PATHS: CallPaths = CallPaths::new();
