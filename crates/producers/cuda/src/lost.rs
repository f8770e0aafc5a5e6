//! What the agent could not turn into events, counted: nothing CUPTI
//! reports is lost silently. Each loss site is one call to [`note`]; the
//! counts are process-wide atomics (a site inside a CUPTI callback has no
//! recorder at hand, and records lost before the first GPU work come
//! before the stream exists), which the process's CUDA stream writes as
//! `SourceLost` records with its next definitions and at exit (see
//! `recorder::lost`). The merge sums them per process; the run summary
//! says them in a `lost:` line, the archive holds them as the process's
//! `GPUTRACE::LOST::<KIND>` properties, `gputrace stats` in `lost_sum`.
//!
//! The sites:
//!
//! | kind | where |
//! |---|---|
//! | `CuptiDropped` | `agent::buffer_completed`: `cuptiActivityGetNumDroppedRecords`, which counts since its last call |
//! | `CuptiUndecodable` | `Agent::records`: a record too short to decode; `Converter::record`: a kind whose struct this release of the agent does not know (`Record::Other`), onto its recorder |
//! | `CudaEarlyOverflow` | `Agent::process`: records beyond `EARLY_LIMIT` before any GPU work |
//! | `CudaSyncWithoutCall` | `Converter::finish`, onto its recorder |
//!
//! A replay counts what it could not decode and the synchronizations
//! without a call onto its own recorder, so that replays side by side
//! (the tests) count apart.
//!
//! And one test hook, [`refuse_buffer`], that makes CUPTI drop records
//! for real on a GPU machine.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub use raw::SourceLoss;

/// Counts `count` records of kind `what` lost in this process.
#[inline]
pub fn note(what: SourceLoss, count: u64) {
    recorder::lost::note(what, count);
}

/// Whether to refuse the buffer CUPTI asks for now (no buffer: CUPTI
/// drops the records it has no room for, and counts them). Only under the
/// test hook `_GPUTRACE_TEST_CUPTI_REFUSE=N`, which refuses every N-th
/// request (N ≥ 2, so that buffers still come and the stream starts):
/// larger or smaller buffers do not make CUPTI drop anything, it asks for
/// more of them.
pub fn refuse_buffer() -> bool {
    static EVERY: OnceLock<Option<u64>> = OnceLock::new();
    static ASKED: AtomicU64 = AtomicU64::new(0);
    let every = *EVERY.get_or_init(|| {
        std::env::var(config::hooks::CUPTI_REFUSE.name).ok().and_then(|v| v.trim().parse().ok()).filter(|n| *n >= 2)
    });
    every.is_some_and(|n| refused(ASKED.fetch_add(1, Ordering::Relaxed) + 1, n))
}

/// Whether the `asked`-th request (from 1) is refused, refusing every
/// `every`-th.
fn refused(asked: u64, every: u64) -> bool {
    asked.is_multiple_of(every)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_request_is_refused_the_first_never() {
        let refusals: Vec<u64> = (1..=10).filter(|&k| refused(k, 3)).collect();
        assert_eq!(refusals, [3, 6, 9]);
        assert!(!refused(1, 2));
    }
}
