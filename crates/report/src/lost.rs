//! What the sources of a trace (CUPTI, NCCL) or gputrace's producers lost
//! before it became events, as the run summary and `gputrace stats
//! --report lost_sum` word it. The archive carries the counts as
//! location-group properties `GPUTRACE::LOST::<KIND>` (UINT64) of each
//! process; the kinds are the raw format's (`raw::SourceLoss`), which this
//! crate knows by their keys only.

use crate::numbers::thousands;

/// The prefix of the location-group properties that carry losses.
pub const PROPERTY_PREFIX: &str = "GPUTRACE::LOST::";

/// What `count` losses of kind `key` (`CUPTI_DROPPED`) are: `1,234 CUDA
/// activity records dropped by CUPTI (buffers full: raise
/// GPUTRACE_CUDA_BUFFER)`.
pub fn describe(key: &str, count: u64) -> String {
    format!("{} {}", thousands(count), what(key))
}

/// The kind's words, without the count; a key this build does not know
/// (a newer gputrace's) is named as it is.
pub fn what(key: &str) -> String {
    match key {
        "CUPTI_DROPPED" => "CUDA activity records dropped by CUPTI (buffers full: raise GPUTRACE_CUDA_BUFFER)",
        "CUPTI_UNDECODABLE" => "CUDA activity records the agent could not decode (a CUPTI newer than the agent?)",
        "CUDA_EARLY_OVERFLOW" => "CUDA API records dropped before the first GPU work (more than a million held)",
        "CUDA_SYNC_WITHOUT_CALL" => "CUDA synchronizations dropped: their API call was never reported",
        "NCCL_THREAD_EXIT" => "NCCL calls lost in a group left open when its thread exited",
        "NCCL_THREAD_GONE" => "NCCL events lost (reported while their thread was being torn down)",
        "SAMPLES_LOST" => "call-stack samples lost (a full ring: raise GPUTRACE_SAMPLING; or a stack off its thread's)",
        other => return format!("records lost ({PROPERTY_PREFIX}{other})"),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_are_worded_with_their_count() {
        assert_eq!(
            describe("CUPTI_DROPPED", 1234),
            "1,234 CUDA activity records dropped by CUPTI (buffers full: raise GPUTRACE_CUDA_BUFFER)"
        );
        assert_eq!(describe("KIND_99", 1), "1 records lost (GPUTRACE::LOST::KIND_99)");
    }
}
