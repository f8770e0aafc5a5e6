//! GPU streams: work joined to its launch call by (process, correlation
//! id), each stream's and GPU's busy and idle time, the idle time split
//! between host, dependency and unattributed, short kernels, and the
//! per-process overlap of computation and communication.

use otf2::reader::EventContext;
use otf2::{AttributeRef, AttributeValue, RegionRef};

use super::{GpuTime, Key, Map, Pass, Pattern, Place, What};
use crate::model::RegionKind;

pub(super) struct Work {
    pub(super) kind: RegionKind,
    pub(super) nccl: bool,
    pub(super) region: RegionRef,
    pub(super) start: u64,
    pub(super) launch: Option<(usize, u64)>,
    pub(super) pageable_async: bool,
    pub(super) bytes: u64,
}

#[derive(Default)]
pub(super) struct Stream {
    pub(super) open: Vec<Work>,
    pub(super) first: Option<u64>,
    pub(super) last_end: Option<u64>,
    pub(super) time: GpuTime,
    /// The memory kinds of each copy region's last Enter here (the merge
    /// writes them only when they change).
    pub(super) memory: Map<RegionRef, (Option<otf2::StringRef>, Option<otf2::StringRef>)>,
}

#[derive(Default)]
pub(super) struct Gpu {
    pub(super) active: u32,
    pub(super) first: Option<u64>,
    pub(super) last_change: u64,
    pub(super) idle_since: Option<u64>,
    pub(super) time: GpuTime,
    pub(super) process: Option<usize>,
}

#[derive(Default)]
pub(super) struct Proc {
    pub(super) last: u64,
    pub(super) compute: u32,
    pub(super) comm_gpu: u32,
    pub(super) comm_host: u32,
    pub(super) compute_ns: u64,
    pub(super) comm_ns: u64,
    pub(super) overlap_ns: u64,
}

impl Proc {
    pub(super) fn advance(&mut self, t: u64) {
        let dt = t.saturating_sub(self.last);
        if self.last != 0 && dt > 0 {
            let computing = self.compute > 0;
            let communicating = self.comm_gpu + self.comm_host > 0;
            if computing {
                self.compute_ns += dt;
            }
            if communicating {
                self.comm_ns += dt;
            }
            if computing && communicating {
                self.overlap_ns += dt;
            }
        }
        self.last = self.last.max(t);
    }
}

/// A CUDA API call that may have launched GPU work.
pub(super) struct Launch {
    pub(super) loc: usize,
    pub(super) region: RegionRef,
    pub(super) node: u32,
    pub(super) enter: u64,
    pub(super) end: Option<u64>,
    /// The synchronous copy or memset finding its bytes go to.
    pub(super) bytes_to: Option<Key>,
    /// A kernel that ended before its launch did: (stream loc, kernel,
    /// start, end).
    pub(super) pending_kernel: Option<(usize, RegionRef, u64, u64)>,
}

/// A kernel launch call (not a graph's).
pub(super) fn is_kernel_launch(name: &str) -> bool {
    name.contains("Launch") && !name.contains("Graph")
}

/// NCCL's kernels: `ncclKernel_...`, `ncclDevKernel_...`.
pub fn is_nccl_kernel(name: &str) -> bool {
    let name = name.strip_prefix("void ").unwrap_or(name);
    name.starts_with("ncclKernel") || name.starts_with("ncclDevKernel")
}

impl Pass<'_> {
    fn string_attr(ev: &EventContext<'_>, a: Option<AttributeRef>) -> Option<otf2::StringRef> {
        match ev.attributes.get(a?)? {
            AttributeValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// Idle time before work starting at `t` that followed idleness since
    /// `since`: (host launch, dependency, unattributed).
    fn split_idle(&self, since: u64, t: u64, launch: Option<(usize, u64)>) -> (u64, u64, u64) {
        let gap = t.saturating_sub(since);
        match launch.and_then(|k| self.launches.get(&k)) {
            Some(l) => {
                // The launch call had not ended when the GPU became free:
                // the GPU waited for the host until it did.
                let launched = l.end.unwrap_or(u64::MAX).clamp(since, t);
                let host = launched - since;
                (host, gap - host, 0)
            }
            None => (0, 0, gap),
        }
    }

    pub(super) fn stream_enter(&mut self, l: usize, ev: &EventContext<'_>, region: RegionRef) {
        let t = ev.time;
        let info = self.model.region(region);
        let kind = info.map_or(RegionKind::Other, |i| i.on_stream);
        if !matches!(kind, RegionKind::Kernel | RegionKind::Copy(_) | RegionKind::Memset | RegionKind::Graph) {
            return;
        }
        let name = info.map_or("", |i| i.name.as_str());
        let nccl = kind == RegionKind::Kernel && is_nccl_kernel(name);
        let process = self.locs[l].process;
        let corr = self.attrs.correlation.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64());
        let launch = corr.map(|c| (process, c)).filter(|k| self.launches.contains_key(k));
        self.note_gpu_work(process, corr, nccl, t);
        let bytes = self.attrs.bytes.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64()).unwrap_or(0);
        let mut pageable_async = false;
        if matches!(kind, RegionKind::Copy(_)) {
            let (src, dst) =
                (Self::string_attr(ev, self.attrs.src_memory), Self::string_attr(ev, self.attrs.dst_memory));
            let memory = self.locs[l].stream.memory.entry(region).or_default();
            if src.is_some() {
                memory.0 = src;
            }
            if dst.is_some() {
                memory.1 = dst;
            }
            let is_pageable = self.pageable.is_some() && (memory.0 == self.pageable || memory.1 == self.pageable);
            let api = launch.and_then(|k| self.launches.get(&k)).map(|x| self.region_name(x.region));
            pageable_async = is_pageable && api.is_some_and(|n| n.contains("Async"));
        }
        if let Some(key) = launch.and_then(|k| self.launches.get(&k)).and_then(|x| x.bytes_to) {
            let agg = self.findings.entry(key).or_default();
            *agg.bytes.get_or_insert(0) += bytes;
        }
        // Idle time before this work, on the stream and on its GPU.
        let stream = &self.locs[l].stream;
        if stream.open.is_empty()
            && let Some(since) = stream.last_end
            && t > since
        {
            let (host, dep, unknown) = self.split_idle(since, t, launch);
            let time = &mut self.locs[l].stream.time;
            time.idle_host_ns += host;
            time.idle_dependency_ns += dep;
            time.idle_unattributed_ns += unknown;
        }
        let stream = &mut self.locs[l].stream;
        stream.first.get_or_insert(t);
        stream.open.push(Work { kind, nccl, region, start: t, launch, pageable_async, bytes });
        if let Some(g) = self.locs[l].gpu {
            let gap = match self.gpus[g].idle_since {
                Some(since) if self.gpus[g].active == 0 && t > since => Some(self.split_idle(since, t, launch)),
                _ => None,
            };
            let gpu = &mut self.gpus[g];
            if gpu.active == 0 {
                gpu.first.get_or_insert(t);
                gpu.last_change = t;
            }
            gpu.active += 1;
            if gpu.process.is_none() {
                gpu.process = Some(process);
            }
            if let Some((host, dep, unknown)) = gap {
                let since = gpu.idle_since.unwrap_or(t);
                gpu.time.idle_host_ns += host;
                gpu.time.idle_dependency_ns += dep;
                gpu.time.idle_unattributed_ns += unknown;
                let gap = t - since;
                if self.model.ns(gap) >= self.options.gap_threshold_ns {
                    let node = launch.and_then(|k| self.launches.get(&k)).map_or(0, |x| x.node);
                    let key = Key {
                        pattern: Pattern::GpuGap,
                        place: Place::Gpu(g),
                        what: What::Region(region, node),
                        comm: None,
                    };
                    self.record(key, since, t, gap, None, process);
                }
            }
        }
        if nccl {
            self.nccl_kernel_started(l, region, t, launch);
        }
        let p = &mut self.procs[process];
        p.advance(t);
        match kind {
            RegionKind::Kernel if nccl => p.comm_gpu += 1,
            RegionKind::Kernel | RegionKind::Graph => p.compute += 1,
            _ => {}
        }
    }

    pub(super) fn stream_leave(&mut self, l: usize, t: u64, region: RegionRef) {
        let Some(i) = self.locs[l].stream.open.iter().rposition(|w| w.region == region) else { return };
        let work = self.locs[l].stream.open.remove(i);
        self.note_work(l, &work, t);
        let process = self.locs[l].process;
        let dur = t.saturating_sub(work.start);
        let ns = self.model.ns(dur);
        let stream = &mut self.locs[l].stream;
        match work.kind {
            RegionKind::Kernel if work.nccl => stream.time.communication_ns += ns,
            RegionKind::Kernel | RegionKind::Graph => stream.time.kernels_ns += ns,
            RegionKind::Copy(_) => stream.time.copies_ns += ns,
            _ => stream.time.memsets_ns += ns,
        }
        stream.last_end = Some(stream.last_end.map_or(t, |e| e.max(t)));
        if let Some(g) = self.locs[l].gpu {
            let gpu = &mut self.gpus[g];
            let nested_kind = work.kind;
            match nested_kind {
                RegionKind::Kernel if work.nccl => gpu.time.communication_ns += ns,
                RegionKind::Kernel | RegionKind::Graph => gpu.time.kernels_ns += ns,
                RegionKind::Copy(_) => gpu.time.copies_ns += ns,
                _ => gpu.time.memsets_ns += ns,
            }
            gpu.active = gpu.active.saturating_sub(1);
            if gpu.active == 0 {
                gpu.time.busy_ns += self.model.ns(t.saturating_sub(gpu.last_change));
                gpu.idle_since = Some(t);
            }
        }
        match work.kind {
            RegionKind::Kernel if !work.nccl => self.nccl_other_kernel(l, work.region, work.start, t),
            RegionKind::Copy(_) => self.nccl_copy(l, work.region, (work.start, t), work.bytes),
            _ => {}
        }
        let p = &mut self.procs[process];
        p.advance(t);
        match work.kind {
            RegionKind::Kernel if work.nccl => p.comm_gpu = p.comm_gpu.saturating_sub(1),
            RegionKind::Kernel | RegionKind::Graph => p.compute = p.compute.saturating_sub(1),
            _ => {}
        }
        if work.pageable_async
            && let Some(launch) = work.launch.and_then(|k| self.launches.get(&k))
        {
            let key = Key {
                pattern: Pattern::PageableAsyncMemcpy,
                place: Place::Loc(launch.loc),
                what: What::Path(launch.node),
                comm: None,
            };
            let agg = self.findings.entry(key).or_default();
            *agg.bytes.get_or_insert(0) += work.bytes;
            self.record(key, work.start, t, dur, None, process);
        }
        if work.kind == RegionKind::Kernel
            && let Some(key) = work.launch
            && let Some(launch) = self.launches.get_mut(&key)
            && is_kernel_launch(self.model.region(launch.region).map_or("", |r| r.name.as_str()))
        {
            match launch.end {
                Some(end) => {
                    let (launch_ticks, node) = (end.saturating_sub(launch.enter), launch.node);
                    self.short_kernel(l, work.region, node, work.start, t, launch_ticks);
                }
                None => launch.pending_kernel = Some((l, work.region, work.start, t)),
            }
        }
    }

    /// A kernel whose launch call's length is known: shorter than it, it
    /// counts for the short-kernel rule.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn short_kernel(
        &mut self,
        stream: usize,
        kernel: RegionRef,
        node: u32,
        start: u64,
        end: u64,
        launch_ticks: u64,
    ) {
        let what = What::Region(kernel, node);
        let key = Key { pattern: Pattern::ShortKernels, place: Place::Loc(stream), what, comm: None };
        let (k, la) = (self.model.ns(end.saturating_sub(start)), self.model.ns(launch_ticks));
        let (s, e) = (self.ns(start), self.ns(end));
        let agg = self.findings.entry(key).or_default();
        agg.all += 1;
        if k < la {
            if agg.instances == 0 || s < agg.first {
                agg.first = s;
            }
            agg.last = agg.last.max(e);
            agg.instances += 1;
            agg.lost += la - k;
            agg.kernel_ns += k;
            agg.launch_ns += la;
            if la - k > agg.worst.2 {
                agg.worst = (s, e, la - k, None);
            }
        }
    }
}
