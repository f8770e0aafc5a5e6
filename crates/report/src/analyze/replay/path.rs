//! What the critical path needs from the pass beyond the host threads'
//! region changes and wait states: the CUDA synchronizations of the host
//! threads and the activities of the GPU streams with their launches.

use super::Pass;
use super::gpu::Work;
use super::host::{Frame, Rule};
use crate::analyze::critical;
use crate::model::RegionKind;

impl Pass<'_> {
    /// A host frame closed at `t`: a synchronizing call, a synchronous
    /// copy or memset, or CUPTI's record of a synchronization (`[CUDA
    /// sync: ...]`, not a stream's wait for an event) is a
    /// synchronization with the GPU.
    pub(super) fn note_sync(&mut self, l: usize, frame: &Frame, t: u64) {
        let waits = frame.rule != Rule::None
            || (frame.kind == RegionKind::Sync && !self.region_name(frame.region).contains("stream wait event"));
        if waits {
            self.timelines.synchronized(l, frame.enter, t);
        }
    }

    /// GPU stream `l` ended `work` at `t`.
    pub(super) fn note_work(&mut self, l: usize, work: &Work, t: u64) {
        let launch = work
            .launch
            .and_then(|k| self.launches.get(&k))
            .map(|x| critical::Launched { loc: x.loc, end: x.end.unwrap_or(u64::MAX) });
        let compute = matches!(work.kind, RegionKind::Kernel | RegionKind::Graph) && !work.nccl;
        let work = critical::Work { start: work.start, end: t, region: work.region, launch, nccl: work.nccl, compute };
        self.timelines.ran(l, work);
    }
}
