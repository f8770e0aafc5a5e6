//! The call path of each recorded MPI call (`GPUTRACE_UNWINDING`):
//! recorded at the call's Enter with the recorder's
//! [`CallPaths`](recorder::callpath::CallPaths), shared with the CUDA and
//! NCCL producers.

use recorder::Recorder;
use recorder::callpath::CallPaths;

static PATHS: CallPaths = CallPaths::new();

/// Whether call paths are recorded.
#[inline]
pub fn on() -> bool {
    PATHS.on()
}

pub(crate) fn set(on: bool) {
    PATHS.set(on);
}

/// The node of the calling thread's call path with the function `region`
/// (a region id of `rec`'s stream) as its leaf, its new nodes defined;
/// `None` when the stack could not be unwound past the wrapper.
#[inline(never)]
pub fn here(rec: &Recorder, region: u32) -> Option<u32> {
    PATHS.here(rec, region)
}
