//! What a producer's *source* lost before it became events: records CUPTI
//! dropped because its buffers were full, records the agent could not
//! decode, NCCL calls of a group whose thread exited. The stream carries
//! them as [`Definition::SourceLost`](crate::Definition::SourceLost)
//! records, one per kind, each the running total for its stream (a later
//! record supersedes an earlier one), so that a stream cut short still
//! says what it had counted when it was last written.
//!
//! Not to be confused with [`Definition::Dropped`](crate::Definition::Dropped):
//! events the recorder itself could not write (a full disk).

/// A kind of loss. The numbers are the stream's; a kind this reader does
/// not know (written by a newer producer) is kept as [`SourceLoss::Other`]
/// rather than taken for damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceLoss {
    /// Activity records CUPTI dropped: its buffers were full
    /// (`cuptiActivityGetNumDroppedRecords`).
    CuptiDropped,
    /// Activity records CUPTI handed over that the agent could not decode
    /// (a kind or a struct version it does not know).
    CuptiUndecodable,
    /// Records that waited for the process's first GPU work beyond the
    /// agent's limit, and were dropped.
    CudaEarlyOverflow,
    /// Synchronization records whose API call never came: they have no
    /// thread to be placed on.
    CudaSyncWithoutCall,
    /// NCCL calls of a group still open when their thread exited.
    NcclThreadExit,
    /// NCCL events reported on a thread whose state was being torn down.
    NcclThreadGone,
    /// Call-stack samples lost: a full ring, or a stack pointer off the
    /// thread's stack.
    SamplesLost,
    /// A kind this reader does not know, by its number.
    Other(u8),
}

impl SourceLoss {
    /// Every kind this build knows, in code order.
    pub const KNOWN: [SourceLoss; 7] = [
        SourceLoss::CuptiDropped,
        SourceLoss::CuptiUndecodable,
        SourceLoss::CudaEarlyOverflow,
        SourceLoss::CudaSyncWithoutCall,
        SourceLoss::NcclThreadExit,
        SourceLoss::NcclThreadGone,
        SourceLoss::SamplesLost,
    ];

    /// Its number in a stream.
    pub fn code(self) -> u8 {
        match self {
            SourceLoss::CuptiDropped => 1,
            SourceLoss::CuptiUndecodable => 2,
            SourceLoss::CudaEarlyOverflow => 3,
            SourceLoss::CudaSyncWithoutCall => 4,
            SourceLoss::NcclThreadExit => 5,
            SourceLoss::NcclThreadGone => 6,
            SourceLoss::SamplesLost => 7,
            SourceLoss::Other(c) => c,
        }
    }

    pub fn from_code(c: u8) -> SourceLoss {
        SourceLoss::KNOWN.into_iter().find(|k| k.code() == c).unwrap_or(SourceLoss::Other(c))
    }

    /// Its index in [`KNOWN`](Self::KNOWN) (for tables of counters);
    /// `None` for [`Other`](SourceLoss::Other).
    pub fn index(self) -> Option<usize> {
        SourceLoss::KNOWN.iter().position(|k| *k == self)
    }

    /// The name of its archive property, `GPUTRACE::LOST::<key>`.
    pub fn key(self) -> String {
        match self {
            SourceLoss::CuptiDropped => "CUPTI_DROPPED".into(),
            SourceLoss::CuptiUndecodable => "CUPTI_UNDECODABLE".into(),
            SourceLoss::CudaEarlyOverflow => "CUDA_EARLY_OVERFLOW".into(),
            SourceLoss::CudaSyncWithoutCall => "CUDA_SYNC_WITHOUT_CALL".into(),
            SourceLoss::NcclThreadExit => "NCCL_THREAD_EXIT".into(),
            SourceLoss::NcclThreadGone => "NCCL_THREAD_GONE".into(),
            SourceLoss::SamplesLost => "SAMPLES_LOST".into(),
            SourceLoss::Other(c) => format!("KIND_{c}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_keys_round_trip() {
        for k in SourceLoss::KNOWN.into_iter().chain([SourceLoss::Other(200)]) {
            assert_eq!(SourceLoss::from_code(k.code()), k);
        }
        assert_eq!(SourceLoss::from_code(0), SourceLoss::Other(0));
        assert_eq!(SourceLoss::CuptiDropped.index(), Some(0));
        assert_eq!(SourceLoss::Other(9).index(), None);
    }
}
