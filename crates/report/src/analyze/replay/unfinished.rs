//! The pass's part of [`crate::analyze::unfinished`]: kernel launches kept
//! until their GPU work shows up, NCCL's last collective per process and
//! communicator, and what is left at the end.

use std::collections::VecDeque;

use otf2::reader::EventContext;
use otf2::{AttributeValue, CommRef, RegionRef};

use super::{MAX_LAUNCHES, Map, Pass};
use crate::analyze::unfinished::{Launched, NcclUnfinished, Unfinished};

/// A call that launches a kernel, whose record says it ended
/// (`cudaLaunchKernel`, `cuLaunchKernelEx`, `cudaLaunchCooperativeKernel`),
/// not a host function (`cudaLaunchHostFunc`) or a graph.
pub(crate) fn launches_a_kernel(name: &str) -> bool {
    super::gpu::is_kernel_launch(name) && name.contains("Kernel")
}

/// A kernel launch whose GPU work has not shown up (yet).
struct Pending {
    loc: usize,
    node: u32,
    enter: u64,
    kernel: Option<otf2::StringRef>,
}

/// A process's last NCCL collective call on a communicator.
#[derive(Clone, Copy)]
pub(super) struct NcclCall {
    loc: usize,
    region: RegionRef,
    node: u32,
    enter: u64,
    comm: CommRef,
    /// Its place among the communicator's collectives, from 1.
    operation: u64,
    sequence: Option<u64>,
}

#[derive(Default)]
pub(super) struct Tracker {
    pending: Map<(usize, u64), Pending>,
    /// The pending launches' keys, oldest first (keys of launches whose
    /// work came are dropped as they reach the front).
    order: VecDeque<(usize, u64)>,
    /// Per location, the NCCL region last entered with NCCL's sequence
    /// number.
    pub(super) sequence: Map<usize, (RegionRef, u64)>,
    nccl: Map<(usize, CommRef), NcclCall>,
    /// Per process, the start of its last NCCL kernel.
    nccl_kernel: Map<usize, u64>,
}

impl Tracker {
    fn forget_done(&mut self) {
        while let Some(k) = self.order.front() {
            if self.pending.contains_key(k) {
                break;
            }
            self.order.pop_front();
        }
    }
}

impl Pass<'_> {
    /// A kernel launch call entered (`key`: process and correlation id).
    pub(super) fn note_launch(&mut self, key: (usize, u64), l: usize, ev: &EventContext<'_>, node: u32) {
        let kernel = match self.attrs.kernel.and_then(|a| ev.attributes.get(a)) {
            Some(AttributeValue::String(s)) => Some(s),
            _ => None,
        };
        let t = &mut self.unfinished;
        t.pending.insert(key, Pending { loc: l, node, enter: ev.time, kernel });
        t.order.push_back(key);
        if t.pending.len() > MAX_LAUNCHES {
            t.forget_done();
            if let Some(old) = t.order.pop_front() {
                t.pending.remove(&old);
            }
        }
        if t.order.len() > 4 * MAX_LAUNCHES {
            let pending = &t.pending;
            t.order.retain(|k| pending.contains_key(k));
        }
    }

    /// GPU work of `process` started: its launch (`corr`) is done with; an
    /// NCCL kernel's start is kept.
    pub(super) fn note_gpu_work(&mut self, process: usize, corr: Option<u64>, nccl: bool, t: u64) {
        let tracker = &mut self.unfinished;
        if let Some(c) = corr
            && tracker.pending.remove(&(process, c)).is_some()
        {
            tracker.forget_done();
        }
        if nccl {
            let last = tracker.nccl_kernel.entry(process).or_insert(t);
            *last = (*last).max(t);
        }
    }

    /// An NCCL region entered: NCCL's sequence number of it, if given.
    pub(super) fn note_nccl_enter(&mut self, l: usize, ev: &EventContext<'_>, region: RegionRef) {
        if let Some(seq) = self.attrs.sequence.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64()) {
            self.unfinished.sequence.insert(l, (region, seq));
        }
    }

    /// The `operation`-th collective on NCCL communicator `comm` ended on
    /// location `l`, inside its call at `frame` of the thread's stack.
    pub(super) fn note_nccl_collective(&mut self, l: usize, comm: CommRef, frame: Option<usize>, operation: u64) {
        let Some(f) = frame.and_then(|i| self.locs[l].host.stack.get(i)) else { return };
        let sequence = self.unfinished.sequence.get(&l).filter(|(r, _)| *r == f.region).map(|(_, s)| *s);
        let call = NcclCall { loc: l, region: f.region, node: f.node, enter: f.enter, comm, operation, sequence };
        self.unfinished.nccl.insert((self.locs[l].process, comm), call);
    }

    /// Process `process`'s last collective call on NCCL communicator
    /// `comm` and NCCL's sequence number of it, for [`super::super::stuck`].
    pub(super) fn last_nccl_call(&self, process: usize, comm: CommRef) -> Option<(String, Option<u64>)> {
        let c = self.unfinished.nccl.get(&(process, comm))?;
        Some((self.region_name(c.region).to_owned(), c.sequence))
    }

    fn launched(&self, loc: usize, node: u32, enter: u64) -> (String, String, u64, u64) {
        let path: Vec<&str> = self.paths.regions(node).iter().map(|r| self.region_name(*r)).collect();
        let launched = self.ns(enter);
        let end = self.model.ns(self.model.length);
        (path.join(" > "), self.locs[loc].name.clone(), launched, end.saturating_sub(launched))
    }

    fn launch(&self, p: &Pending) -> Launched {
        let (path, thread, launched_ns, before_end_ns) = self.launched(p.loc, p.node, p.enter);
        let call = self.paths.regions(p.node).last().map(|r| self.region_name(*r).to_owned()).unwrap_or_default();
        let kernel = p.kernel.map(|s| self.defs.string(s).to_owned()).filter(|k| !k.is_empty());
        Launched { kernel, call, path, thread, launched_ns, before_end_ns }
    }

    /// The NCCL collective of `process` whose kernel never started: its
    /// last one, when NCCL kernels of the process were recorded and none
    /// started after that call was entered.
    fn nccl_unfinished(&self, process: usize) -> Option<NcclUnfinished> {
        let kernel = *self.unfinished.nccl_kernel.get(&process)?;
        let c =
            self.unfinished.nccl.iter().filter(|((p, _), _)| *p == process).map(|(_, c)| c).max_by_key(|c| c.enter)?;
        if kernel >= c.enter {
            return None;
        }
        let (path, thread, launched_ns, before_end_ns) = self.launched(c.loc, c.node, c.enter);
        let communicator =
            self.defs.comms.get(&c.comm).map(|d| self.defs.string(d.name).to_owned()).unwrap_or_default();
        Some(NcclUnfinished {
            call: self.region_name(c.region).to_owned(),
            communicator,
            operation: c.operation,
            sequence: c.sequence,
            path,
            thread,
            launched_ns,
            before_end_ns,
        })
    }

    /// Per process, the GPU work launched that never finished.
    pub(super) fn unfinished_kernels(&self) -> Vec<Unfinished> {
        let model = self.model;
        let mut per: Map<usize, (u64, &Pending, &Pending)> = Map::default();
        for (&(process, _), p) in &self.unfinished.pending {
            let e = per.entry(process).or_insert((0, p, p));
            e.0 += 1;
            if p.enter < e.1.enter {
                e.1 = p;
            }
            if p.enter > e.2.enter {
                e.2 = p;
            }
        }
        let mut out = Vec::new();
        for process in 0..model.processes.len() {
            let launches = per.get(&process);
            let nccl = self.nccl_unfinished(process);
            if launches.is_none() && nccl.is_none() {
                continue;
            }
            let info = &model.processes[process];
            out.push(Unfinished {
                rank: info.rank,
                process: model.process_label(process),
                gpu: info.gpu.and_then(|g| model.gpus.get(g)).map(|g| g.label.clone()),
                count: launches.map_or(0, |l| l.0),
                first: launches.map(|l| self.launch(l.1)),
                last: launches.map(|l| self.launch(l.2)),
                nccl,
            });
        }
        out.sort_by_key(|u| (u.rank.is_none(), u.rank));
        out
    }
}
