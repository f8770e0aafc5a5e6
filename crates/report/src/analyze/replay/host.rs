//! Host threads: each thread's stack of open calls, the time it spends
//! outside computation (MPI, NCCL, CUDA synchronization), and the
//! findings a call's close reports (synchronous copies, memsets and
//! synchronizations).

use otf2::RegionRef;
use otf2::reader::EventContext;

use super::critical;
use super::{Key, Launch, MAX_LAUNCHES, Pass, Pattern, Place, What};
use crate::analyze::stragglers::{RegionClock, Transfers};
use crate::model::RegionKind;

/// What a host frame's close reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    None,
    SyncMemcpy,
    SyncMemset,
    SyncApi,
}

pub(super) struct Frame {
    pub(super) region: RegionRef,
    pub(super) kind: RegionKind,
    pub(super) enter: u64,
    pub(super) node: u32,
    /// Counts as not computing (MPI, NCCL, CUDA synchronization).
    pub(super) excluded: bool,
    /// An outermost MPI call (communication, for the overlap).
    pub(super) mpi_outer: bool,
    pub(super) rule: Rule,
    /// The launch this CUDA call made (process, correlation id).
    pub(super) launch: Option<(usize, u64)>,
    /// Late Sender in a wait for several messages: up to when the waiting
    /// was already counted.
    pub(super) ls_until: u64,
    /// Blocking sends made in this call whose Late Receiver needs its end.
    pub(super) sends: Vec<usize>,
}

#[derive(Default)]
pub(super) struct Host {
    pub(super) stack: Vec<Frame>,
    pub(super) first: Option<u64>,
    pub(super) last: u64,
    pub(super) excluded_depth: u32,
    pub(super) excluded_since: u64,
    pub(super) excluded_ns: u64,
    pub(super) mpi_since: u64,
    pub(super) mpi_ns: u64,
    /// Time per region since the thread's last collective (stragglers).
    pub(super) clock: RegionClock,
    /// The messages received since then (stragglers' links).
    pub(super) transfers: Transfers,
}

impl Host {
    /// An event at `t` on the thread, before its stack changes: the
    /// thread's last time, and the time since its last change credited to
    /// the region on top (unless MPI, NCCL or a synchronization).
    fn event_at(&mut self, t: u64) {
        self.last = self.last.max(t);
        self.clock.credit(self.stack.last().filter(|f| !f.excluded).map(|f| f.region), t);
    }
}

fn is_init_or_finalize(name: &str) -> bool {
    matches!(name, "MPI_Init" | "MPI_Init_thread" | "MPI_Finalize")
}

/// Whether a CUDA API call (by name) waits for the GPU.
pub(crate) fn is_sync_api(name: &str) -> bool {
    name.contains("Synchronize")
}

pub(super) fn copy_rule(name: &str) -> Rule {
    if name.contains("Async") {
        return Rule::None;
    }
    if name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy") {
        Rule::SyncMemcpy
    } else if name.starts_with("cudaMemset") || name.starts_with("cuMemset") {
        Rule::SyncMemset
    } else {
        Rule::None
    }
}

impl Pass<'_> {
    pub(super) fn host_enter(&mut self, l: usize, ev: &EventContext<'_>, region: RegionRef) {
        let t = ev.time;
        let info = self.model.region(region);
        let kind = info.map_or(RegionKind::Other, |i| i.on_host);
        let name = info.map_or("", |i| i.name.as_str());
        let process = self.locs[l].process;
        if let Some(m) = &mut self.marks {
            m.enter(l, region, t);
        }
        let host = &mut self.locs[l].host;
        host.first.get_or_insert(t);
        host.event_at(t);
        let parent = host.stack.last().map_or(0, |f| f.node);
        let in_cuda = host.stack.iter().any(|f| matches!(f.kind, RegionKind::CudaApi | RegionKind::Sync));
        let in_mpi = host.stack.iter().any(|f| f.kind == RegionKind::Mpi);
        let node = self.paths.child(parent, region);
        let sync_call = !in_cuda
            && match kind {
                RegionKind::Sync => !name.contains("stream wait event"),
                RegionKind::CudaApi => is_sync_api(name),
                _ => false,
            };
        let excluded = matches!(kind, RegionKind::Mpi | RegionKind::Nccl | RegionKind::Sync) || sync_call;
        // MPI_Init and MPI_Finalize are set-up, not communication.
        let mpi_outer = kind == RegionKind::Mpi && !in_mpi && !is_init_or_finalize(name);
        let mut rule = if sync_call { Rule::SyncApi } else { Rule::None };
        let mut launch = None;
        if kind == RegionKind::CudaApi && !in_cuda {
            let copy = copy_rule(name);
            if copy != Rule::None {
                rule = copy;
            }
            let corr = self.attrs.correlation.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64());
            if let Some(corr) = corr {
                let key = (process, corr);
                let bytes_to =
                    (rule == Rule::SyncMemcpy || rule == Rule::SyncMemset).then(|| self.rule_key(rule, l, node));
                if !self.launches.contains_key(&key) {
                    self.launch_order.push_back(key);
                    if self.launch_order.len() > MAX_LAUNCHES
                        && let Some(old) = self.launch_order.pop_front()
                    {
                        self.launches.remove(&old);
                    }
                }
                self.launches
                    .insert(key, Launch { loc: l, region, node, enter: t, end: None, bytes_to, pending_kernel: None });
                launch = Some(key);
                if super::unfinished::launches_a_kernel(name) {
                    self.note_launch(key, l, ev, node);
                }
            }
        }
        if kind == RegionKind::Nccl {
            self.note_nccl_enter(l, ev, region);
        }
        let host = &mut self.locs[l].host;
        if excluded {
            if host.excluded_depth == 0 {
                host.excluded_since = t;
            }
            host.excluded_depth += 1;
        }
        if mpi_outer {
            host.mpi_since = t;
            let p = &mut self.procs[process];
            p.advance(t);
            p.comm_host += 1;
        }
        self.locs[l].host.stack.push(Frame {
            region,
            kind,
            enter: t,
            node,
            excluded,
            mpi_outer,
            rule,
            launch,
            ls_until: 0,
            sends: Vec::new(),
        });
        self.timelines.change(l, t, node);
    }

    fn rule_key(&self, rule: Rule, l: usize, node: u32) -> Key {
        let pattern = match rule {
            Rule::SyncMemcpy => Pattern::SyncMemcpy,
            Rule::SyncMemset => Pattern::SyncMemset,
            _ => Pattern::SyncApi,
        };
        Key { pattern, place: Place::Loc(l), what: What::Path(node), comm: None }
    }

    pub(super) fn host_leave(&mut self, l: usize, t: u64, region: RegionRef) {
        if let Some(m) = &mut self.marks {
            m.leave(l, region, t);
        }
        let host = &mut self.locs[l].host;
        host.event_at(t);
        let Some(depth) = host.stack.iter().rposition(|f| f.region == region) else { return };
        while self.locs[l].host.stack.len() > depth {
            let frame = self.locs[l].host.stack.pop().expect("depth < len");
            self.close_frame(l, frame, t);
        }
        let top = self.locs[l].host.stack.last().map_or(critical::NONE, |f| f.node);
        self.timelines.change(l, t, top);
    }

    fn close_frame(&mut self, l: usize, frame: Frame, t: u64) {
        self.note_sync(l, &frame, t);
        let process = self.locs[l].process;
        let host = &mut self.locs[l].host;
        if frame.excluded {
            host.excluded_depth -= 1;
            if host.excluded_depth == 0 {
                host.excluded_ns += t.saturating_sub(host.excluded_since);
            }
        }
        if frame.kind == RegionKind::Mpi
            && self.model.region(frame.region).is_some_and(|r| r.name.starts_with("MPI_Init"))
        {
            self.timelines.started(l, t);
        }
        let host = &mut self.locs[l].host;
        if frame.mpi_outer {
            host.mpi_ns += t.saturating_sub(host.mpi_since);
            let p = &mut self.procs[process];
            p.advance(t);
            p.comm_host = p.comm_host.saturating_sub(1);
        }
        if frame.rule != Rule::None {
            let key = self.rule_key(frame.rule, l, frame.node);
            self.record(key, frame.enter, t, t.saturating_sub(frame.enter), None, process);
        }
        if let Some(key) = frame.launch
            && let Some(launch) = self.launches.get_mut(&key)
        {
            launch.end = Some(t);
            if let Some((stream, kernel, start, end)) = launch.pending_kernel.take() {
                let (launch_ticks, node) = (t.saturating_sub(launch.enter), launch.node);
                self.short_kernel(stream, kernel, node, start, end, launch_ticks);
            }
        }
        for id in frame.sends {
            let Some(msg) = self.msgs[id].as_mut() else { continue };
            if let Some(send) = msg.send.as_mut() {
                send.leave = Some(t);
            }
            if msg.recv.is_some() {
                self.late_receiver(id);
                self.free_msg(id);
            }
        }
    }

    /// The innermost MPI call open on a thread: (index in the stack).
    pub(super) fn mpi_frame(&self, l: usize) -> Option<usize> {
        self.locs[l].host.stack.iter().rposition(|f| f.kind == RegionKind::Mpi)
    }
}
