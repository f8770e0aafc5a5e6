//! The critical path of one iteration: the instances of a region that
//! marks iterations (an NVTX range, a user region), the k-th on every
//! thread that has one being iteration k. Its path goes backwards from
//! the latest end of its instances to the earliest start, crossing ranks
//! and GPUs as the run's does; each process's computation within its own
//! instance is what the iteration's what-if projections compare.

use std::collections::HashMap;

use super::{CriticalPath, Describe, GpuWhatIf, Timelines, is_computation};

/// An iteration's time: from its earliest start on any location to its
/// latest end, on `end_loc` (ticks); each instance (location, start, end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) end_loc: usize,
    pub(crate) parts: Vec<(usize, u64, u64)>,
}

/// The critical path of one iteration, its GPU projections, and each
/// process's computation in it.
pub(crate) struct IterationPath {
    pub(crate) path: CriticalPath,
    pub(crate) gpu_what_if: Vec<GpuWhatIf>,
    /// (process, computation in its instance, ns), by process.
    pub(crate) computation: Vec<(usize, u64)>,
}

impl Timelines {
    /// Per process, its computation within its instances of `span`: the
    /// time in activities that are not MPI, NCCL or synchronization calls
    /// (summed over its threads that marked the iteration).
    pub(super) fn computation(&self, span: &Span, names: &dyn Describe) -> Vec<(usize, u64)> {
        let mut memo: HashMap<u32, bool> = HashMap::new();
        let mut per: HashMap<usize, u64> = HashMap::new();
        for &(loc, from, to) in &span.parts {
            let Some(changes) = self.changes.get(loc) else { continue };
            let i = changes.partition_point(|&(t, _)| t <= from);
            let mut node = i.checked_sub(1).map_or(super::NONE, |i| changes[i].1);
            let mut at = from;
            let mut ticks = 0;
            let mut add = |node: u32, d: u64| {
                if *memo.entry(node).or_insert_with(|| is_computation(&names.activity(node))) {
                    ticks += d;
                }
            };
            for &(t, next) in &changes[i..] {
                if t >= to {
                    break;
                }
                add(node, t - at);
                at = t;
                node = next;
            }
            add(node, to.saturating_sub(at));
            *per.entry(names.process_of(loc)).or_default() += names.ns(ticks);
        }
        let mut out: Vec<(usize, u64)> = per.into_iter().collect();
        out.sort_unstable();
        out
    }
}
