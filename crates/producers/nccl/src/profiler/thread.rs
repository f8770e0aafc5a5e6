//! One thread's NCCL calls: groups, collectives, send and receive.
//!
//! From v5 NCCL reports the user's calls (GroupApi, CollApi, P2pApi) on
//! the user's thread, and later, when the group is launched, the
//! collective and point-to-point events that carry what only the launch
//! knows (algorithm, protocol, channels, sequence number; the peer of a
//! send or receive). The plugin keeps the calls of the group in progress
//! and writes them when the group ends, each with what its launch added —
//! one region per call, one collective or message per call, never two:
//!
//! - an explicit group (`ncclGroupStart`/`End`, NCCL's depth ≥ 2) is the
//!   region `ncclGroup` (with `ncclGroupEnd` inside it, from the user's
//!   `ncclGroupEnd` call on) and each call is a region of its own, as
//!   long as the call took (it only enqueues);
//! - an implicit group (a single call outside a group: depth 1) is not
//!   shown as a group: the call's region spans the whole group, which is
//!   the user's call including the launch; an implicit group holding
//!   several calls (`ncclAlltoAll` is sends and receives) is `ncclGroup`.
//!
//! Where NCCL's NVTX ranges are handed over ([`super::nvtx`]), the group
//! is theirs (from `ncclGroupStart` to the end of `ncclGroupEnd`), the
//! sends and receives of one `ncclAlltoAll` (`ncclGather`, `ncclScatter`)
//! range are that one call, and each call goes where it ended among the
//! events held meanwhile.
//!
//! Before v5 there are no API events: the launch's events are recorded as
//! they come (`ncclGroup` per kernel plan, a region per collective).

use std::collections::HashMap;
use std::ptr::NonNull;

use raw::{Collective, Event, Message};
use recorder::Recorder;

use super::nvtx::NvtxLayer;
use super::{CommContext, Profiler};
use crate::bytes;
use crate::handle::{self, Handle, HandlePtr, Kind};
use crate::model::{ApiCall, CollLaunch, Func, NvtxPayload, P2pLaunch, Sym};

/// Events held for NCCL's NVTX ranges before the ranges still open are
/// given up.
const HELD_LIMIT: usize = 1 << 16;

/// Where a thread's events go.
#[derive(Debug)]
enum Output {
    /// Recorded on the calling thread's location.
    Live,
    /// Kept, for a replay to write to the captured thread's location.
    Buffer(Vec<(u64, Event)>),
}

/// What a call's launch added.
#[derive(Debug, Clone, Copy)]
enum Launch {
    Coll { seq: u64, channels: u8, algo: Sym, proto: Sym },
    P2p { peer: i32, channels: u8 },
}

/// The NVTX range of NCCL's a call was made in.
#[derive(Debug, Clone, Copy)]
struct Via {
    serial: u64,
    func: Func,
    payload: Option<NvtxPayload>,
}

impl Via {
    /// NCCL turns these collectives into sends and receives: the calls
    /// made in one such range are that one collective.
    fn is_p2p_collective(&self) -> bool {
        matches!(self.func, Func::AlltoAll | Func::Gather | Func::Scatter)
    }
}

/// A call in the open group.
#[derive(Debug)]
struct PendingCall {
    key: usize,
    handle: HandlePtr,
    ctx: &'static CommContext,
    call: ApiCall,
    is_coll: bool,
    start: u64,
    stop: Option<u64>,
    launch: Option<Launch>,
    via: Option<Via>,
    /// Where its region goes in the events held for NVTX ranges.
    mark: Option<usize>,
}

/// The user's group in progress.
#[derive(Debug)]
struct OpenGroup {
    key: usize,
    start: u64,
    depth: i32,
    end_called: Option<u64>,
    /// Made up for a call that came without a group of its own.
    synthetic: bool,
    calls: Vec<PendingCall>,
}

/// One thread's state.
#[derive(Debug)]
pub struct ThreadState {
    pub tid: u32,
    out: Output,
    group: Option<OpenGroup>,
    /// The proxy operations in progress on this (proxy) thread and their
    /// bytes so far, by handle address (their steps name them as parent).
    pub(super) proxy_ops: HashMap<usize, u64>,
    /// Where the last collective or send/receive recorded on its own ended.
    last_task_end: u64,
    /// Buffers reused from group to group.
    spare_calls: Vec<PendingCall>,
    scratch: Vec<(u64, Event)>,
    /// NCCL's NVTX ranges open on this thread.
    pub(super) nvtx: NvtxLayer,
}

impl ThreadState {
    /// A live thread: events go to the calling thread's location.
    pub fn live(tid: u32) -> ThreadState {
        ThreadState {
            tid,
            out: Output::Live,
            group: None,
            proxy_ops: HashMap::new(),
            last_task_end: 0,
            spare_calls: Vec::new(),
            scratch: Vec::new(),
            nvtx: NvtxLayer::default(),
        }
    }

    /// A replayed thread: events are kept for [`take_events`](Self::take_events).
    pub fn buffered(tid: u32) -> ThreadState {
        ThreadState {
            tid,
            out: Output::Buffer(Vec::new()),
            group: None,
            proxy_ops: HashMap::new(),
            last_task_end: 0,
            spare_calls: Vec::new(),
            scratch: Vec::new(),
            nvtx: NvtxLayer::default(),
        }
    }

    /// The calls of the group still open (lost if the thread ends now).
    pub fn open_calls(&self) -> usize {
        self.group.as_ref().map_or(0, |g| g.calls.len())
    }

    /// The events kept so far (replay).
    pub fn take_events(&mut self) -> Vec<(u64, Event)> {
        match &mut self.out {
            Output::Live => Vec::new(),
            Output::Buffer(b) => std::mem::take(b),
        }
    }

    pub(super) fn emit(&mut self, rec: &Recorder, events: &[(u64, Event)]) {
        if events.is_empty() {
            return;
        }
        if self.nvtx.active() {
            self.nvtx.held.extend_from_slice(events);
            self.bound_held(rec);
            return;
        }
        self.output(rec, events);
    }

    /// A range whose end never comes (an NVTX library that drops a pop)
    /// must not hold the thread's events for ever: past [`HELD_LIMIT`] the
    /// open ranges are given up and the held events, complete regions
    /// without them, written.
    fn bound_held(&mut self, rec: &Recorder) {
        if self.nvtx.held.len() > HELD_LIMIT {
            self.nvtx.give_up();
            self.release_held(rec);
        }
    }

    /// Writes the events held for NVTX ranges once none is open.
    pub(super) fn release_held(&mut self, rec: &Recorder) {
        if self.nvtx.active() || self.nvtx.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.nvtx.held);
        self.output(rec, &held);
        self.nvtx.held = held;
        self.nvtx.held.clear();
    }

    fn output(&mut self, rec: &Recorder, events: &[(u64, Event)]) {
        match &mut self.out {
            Output::Live => rec.record_many(events),
            Output::Buffer(b) => b.extend_from_slice(events),
        }
    }

    /// GroupApi start: a new group (a group still open is written first).
    pub(super) fn open_group(&mut self, p: &Profiler, key: usize, depth: i32, now: u64) {
        if self.group.is_some() {
            self.close_group(p, now);
        }
        let calls = std::mem::take(&mut self.spare_calls);
        self.group = Some(OpenGroup { key, start: now, depth, end_called: None, synthetic: false, calls });
    }

    /// The GroupEndApiStart state: the user called `ncclGroupEnd`.
    pub(super) fn group_end_called(&mut self, key: usize, now: u64) {
        if let Some(g) = self.group.as_mut().filter(|g| g.key == key) {
            g.end_called = Some(now);
        }
    }

    /// GroupApi stop.
    pub(super) fn close_group_by_key(&mut self, p: &Profiler, key: usize, now: u64) {
        if self.group.as_ref().is_some_and(|g| g.key == key) {
            self.close_group(p, now);
        }
    }

    /// CollApi or P2pApi start: the call joins the open group named as
    /// its parent, or a group of its own.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_api_call(
        &mut self,
        p: &Profiler,
        h: HandlePtr,
        parent: usize,
        ctx: &'static CommContext,
        call: ApiCall,
        is_coll: bool,
        rank: i32,
        now: u64,
    ) {
        ctx.ensure_defined(&p.rec, None, rank);
        let in_group = self.group.as_ref().is_some_and(|g| g.key == parent && parent != 0 && !g.synthetic);
        if !in_group {
            if self.group.is_some() {
                self.close_group(p, now);
            }
            self.group =
                Some(OpenGroup { key: 0, start: now, depth: 1, end_called: None, synthetic: true, calls: Vec::new() });
        }
        let key = handle::key(h);
        let via = self.nvtx.claim_call().map(|(serial, func, payload)| Via { serial, func, payload });
        if let Some(g) = self.group.as_mut() {
            let c = PendingCall {
                key,
                handle: h,
                ctx,
                call,
                is_coll,
                start: now,
                stop: None,
                launch: None,
                via,
                mark: None,
            };
            g.calls.push(c);
        }
    }

    /// CollApi or P2pApi stop.
    pub(super) fn api_call_stopped(&mut self, p: &Profiler, key: usize, now: u64) {
        let Some(g) = self.group.as_mut() else { return };
        let Some(c) = g.calls.iter_mut().find(|c| c.key == key) else { return };
        c.stop = Some(now);
        if self.nvtx.active() {
            c.mark = Some(self.nvtx.held.len());
        }
        if g.synthetic {
            self.close_group(p, now);
        }
    }

    /// A collective's launch: if it belongs to a call of the open group,
    /// the call takes its details and `true` is returned.
    pub(super) fn attach_coll(&mut self, parent: usize, coll: &CollLaunch) -> bool {
        self.attach(
            parent,
            true,
            Launch::Coll { seq: coll.seq, channels: coll.channels, algo: coll.algo, proto: coll.proto },
        )
    }

    /// A send's or receive's launch, likewise.
    pub(super) fn attach_p2p(&mut self, parent: usize, p2p: &P2pLaunch) -> bool {
        self.attach(parent, false, Launch::P2p { peer: p2p.peer, channels: p2p.channels })
    }

    fn attach(&mut self, parent: usize, is_coll: bool, launch: Launch) -> bool {
        if parent == 0 {
            return false;
        }
        let Some(g) = self.group.as_mut() else { return false };
        match g.calls.iter_mut().find(|c| c.key == parent && c.is_coll == is_coll && c.launch.is_none()) {
            Some(c) => {
                c.launch = Some(launch);
                true
            }
            None => false,
        }
    }

    /// A collective recorded on its own (v1–v4, graph launches), at its
    /// stop. NCCL starts all the tasks of a launch, then stops them all:
    /// their regions are laid one after the other, each from the end of
    /// the previous one (or its own start) to its stop.
    pub(super) fn write_coll(&mut self, p: &Profiler, ctx: &CommContext, coll: &CollLaunch, start: u64, stop: u64) {
        let (start, stop) = self.task_span(start, stop);
        let region = p.func_region(coll.func);
        let size = coll.datatype.datatype_size();
        let shape = bytes::shape(coll.func, coll.count, size, ctx.nranks, ctx.rank(), coll.root);
        let a = &p.attrs;
        let mut ev = Vec::with_capacity(16);
        if let Some(region) = region {
            ev.push(p.attr(a.bytes, coll.count.saturating_mul(size), start));
            ev.push(p.attr(a.count, coll.count, start));
            ev.push(p.attr_str(a.datatype, coll.datatype, start));
            if let Some(root) = shape.and_then(|s| s.root) {
                ev.push(p.attr(a.root, u64::from(root), start));
            }
            if let Some(r) = coll.reduction {
                ev.push(p.attr_str(a.reduction, r, start));
            }
            ev.push(p.attr_str(a.algorithm, coll.algo, start));
            ev.push(p.attr_str(a.protocol, coll.proto, start));
            ev.push(p.attr(a.channels, u64::from(coll.channels), start));
            ev.push(p.attr(a.sequence, coll.seq, start));
            ev.push((start, Event::Enter { region }));
        }
        if let Some(s) = shape {
            let k = collective_of(&s, ctx.id);
            ev.push((start, Event::MpiCollectiveBegin));
            ev.push((stop, Event::MpiCollectiveEnd(k)));
        }
        if let Some(region) = region {
            ev.push((stop, Event::Leave { region }));
        }
        self.emit(&p.rec, &ev);
    }

    /// A send or receive recorded on its own (v1–v4, graph launches, late
    /// launches), at its stop, laid out as [`write_coll`](Self::write_coll)
    /// does: a send's message at the region's start, a receive's at its end.
    pub(super) fn write_p2p(&mut self, p: &Profiler, ctx: &CommContext, p2p: &P2pLaunch, start: u64, stop: u64) {
        let (start, stop) = self.task_span(start, stop);
        let region = p.func_region(p2p.func);
        let bytes = p2p.count.saturating_mul(p2p.datatype.datatype_size());
        let msg = u32::try_from(p2p.peer).ok().map(|peer| Message { peer, comm: ctx.id, tag: 0, bytes });
        let a = &p.attrs;
        let mut ev = Vec::with_capacity(10);
        if let Some(region) = region {
            ev.push(p.attr(a.bytes, bytes, start));
            ev.push(p.attr(a.count, p2p.count, start));
            ev.push(p.attr_str(a.datatype, p2p.datatype, start));
            ev.push(p.attr(a.peer, p2p.peer.max(0) as u64, start));
            if p2p.channels > 0 {
                ev.push(p.attr(a.channels, u64::from(p2p.channels), start));
            }
            ev.push((start, Event::Enter { region }));
        }
        if let Some(m) = msg {
            match p2p.func {
                Func::Send => ev.push((start, Event::MpiSend(m))),
                Func::Recv => ev.push((stop, Event::MpiRecv(m))),
                _ => {}
            }
        }
        if let Some(region) = region {
            ev.push((stop, Event::Leave { region }));
        }
        self.emit(&p.rec, &ev);
    }

    fn task_span(&mut self, start: u64, stop: u64) -> (u64, u64) {
        let start = start.max(self.last_task_end);
        let stop = stop.max(start);
        self.last_task_end = stop;
        (start, stop)
    }

    /// Writes the open group and its calls, and lets go of their handles.
    ///
    /// The calls are written as units: a call, or the sends and receives
    /// that one `ncclAlltoAll` (`ncclGather`, `ncclScatter`) range holds.
    /// Where NCCL's NVTX ranges are recorded, the group is theirs (see
    /// [`super::nvtx`]) and each unit goes where its call ended among the
    /// held events; otherwise the group is written here, with its calls.
    fn close_group(&mut self, p: &Profiler, now: u64) {
        let Some(g) = self.group.take() else { return };
        let implicit = g.depth <= 1;
        let units = units(&g.calls);
        let folded = implicit && units.len() == 1;
        let empty_implicit = implicit && g.calls.is_empty();
        let nvtx_group = self.nvtx.group_depth > 0;
        let show_group = p.levels.group && !(g.synthetic || folded || empty_implicit || nvtx_group);
        let mut ev = std::mem::take(&mut self.scratch);
        ev.clear();
        let group_region = if show_group { p.group_region() } else { None };
        if let Some(region) = group_region {
            ev.push((g.start, Event::Enter { region }));
        }
        let placed = !show_group && g.calls.iter().any(|c| c.mark.is_some());
        let mut offset = 0;
        for unit in &units {
            let first = &g.calls[unit[0]];
            let (start, stop) = if folded {
                (g.start, now)
            } else {
                let stop = unit.iter().map(|&i| g.calls[i].stop.unwrap_or(now).max(g.calls[i].start)).max();
                (first.start, stop.unwrap_or(now))
            };
            let from = ev.len();
            match first.via.filter(|v| v.is_p2p_collective()) {
                Some(via) => {
                    let calls: Vec<&PendingCall> = unit.iter().map(|&i| &g.calls[i]).collect();
                    self.write_p2p_collective(p, &calls, via, start, stop, &mut ev);
                }
                None => self.write_call(p, first, start, stop, &mut ev),
            }
            let mark = unit.iter().filter_map(|&i| g.calls[i].mark).max();
            if let (true, Some(mark)) = (placed, mark) {
                self.nvtx.insert(mark + offset, stop, &ev[from..]);
                offset += ev.len() - from;
                ev.truncate(from);
            }
        }
        if let Some(region) = group_region {
            let end_region = if implicit { None } else { g.end_called.and_then(|_| p.group_end_region()) };
            if let (Some(end), Some(t)) = (end_region, g.end_called) {
                let t = t.max(ev.last().map_or(t, |e| e.0)).min(now);
                ev.push((t, Event::Enter { region: end }));
                ev.push((now, Event::Leave { region: end }));
            }
            ev.push((now, Event::Leave { region }));
        }
        self.emit(&p.rec, &ev);
        self.bound_held(&p.rec);
        self.scratch = ev;
        let mut calls = g.calls;
        for c in calls.drain(..) {
            release(c.handle);
        }
        self.spare_calls = calls;
    }

    /// One `ncclAlltoAll`, `ncclGather` or `ncclScatter` call, from the
    /// sends and receives NCCL made of it: one region, one collective.
    fn write_p2p_collective(
        &self,
        p: &Profiler,
        calls: &[&PendingCall],
        via: Via,
        start: u64,
        stop: u64,
        ev: &mut Vec<(u64, Event)>,
    ) {
        let first = calls[0];
        let ctx = first.ctx;
        let call = &first.call;
        let size = call.datatype.datatype_size();
        // The root: the payload's, else the peer that all of a Gather's
        // sends go to (a Scatter's receives come from).
        let peer_of = |f: Func| {
            calls.iter().find_map(|c| match c.launch {
                Some(Launch::P2p { peer, .. }) if c.call.func == f => Some(peer),
                _ => None,
            })
        };
        let root = via.payload.and_then(|pl| pl.root_or_peer).or_else(|| match via.func {
            Func::Gather => peer_of(Func::Send),
            Func::Scatter => peer_of(Func::Recv),
            _ => None,
        });
        let shape = bytes::shape(via.func, call.count, size, ctx.nranks, ctx.rank(), root.unwrap_or(-1));
        let region = p.func_region(via.func);
        let a = &p.attrs;
        if region.is_some() {
            ev.push(p.attr(a.bytes, call.count.saturating_mul(size), start));
            ev.push(p.attr(a.count, call.count, start));
            ev.push(p.attr_str(a.datatype, call.datatype, start));
            if let Some(root) = shape.and_then(|s| s.root) {
                ev.push(p.attr(a.root, u64::from(root), start));
            }
            let channels = calls
                .iter()
                .filter_map(|c| match c.launch {
                    Some(Launch::P2p { channels, .. }) => Some(channels),
                    _ => None,
                })
                .max();
            if let Some(ch) = channels.filter(|&c| c > 0) {
                ev.push(p.attr(a.channels, u64::from(ch), start));
            }
        }
        let collective = shape.filter(|_| !call.graph_captured).map(|s| collective_of(&s, ctx.id));
        push_collective(ev, region, collective, start, stop);
    }

    fn write_call(&self, p: &Profiler, c: &PendingCall, start: u64, stop: u64, ev: &mut Vec<(u64, Event)>) {
        let call = &c.call;
        let region = p.func_region(call.func);
        let size = call.datatype.datatype_size();
        let a = &p.attrs;
        if region.is_some() {
            ev.push(p.attr(a.bytes, call.count.saturating_mul(size), start));
            ev.push(p.attr(a.count, call.count, start));
            ev.push(p.attr_str(a.datatype, call.datatype, start));
        }
        let live = !call.graph_captured;
        if c.is_coll {
            let shape = bytes::shape(call.func, call.count, size, c.ctx.nranks, c.ctx.rank(), call.root);
            if region.is_some() {
                if let Some(root) = shape.and_then(|s| s.root) {
                    ev.push(p.attr(a.root, u64::from(root), start));
                }
                if let Some(Launch::Coll { seq, channels, algo, proto }) = c.launch {
                    ev.push(p.attr_str(a.algorithm, algo, start));
                    ev.push(p.attr_str(a.protocol, proto, start));
                    ev.push(p.attr(a.channels, u64::from(channels), start));
                    ev.push(p.attr(a.sequence, seq, start));
                }
            }
            let collective = shape.filter(|_| live).map(|s| collective_of(&s, c.ctx.id));
            push_collective(ev, region, collective, start, stop);
        } else {
            let launch = match c.launch {
                Some(Launch::P2p { peer, channels }) => Some((peer, channels)),
                _ => None,
            };
            if region.is_some()
                && let Some((peer, channels)) = launch
            {
                ev.push(p.attr(a.peer, peer.max(0) as u64, start));
                if channels > 0 {
                    ev.push(p.attr(a.channels, u64::from(channels), start));
                }
            }
            let msg = launch.filter(|_| live).and_then(|(peer, _)| {
                let peer = u32::try_from(peer).ok()?;
                Some(Message { peer, comm: c.ctx.id, tag: 0, bytes: call.count.saturating_mul(size) })
            });
            let func = call.func;
            if let Some(region) = region {
                ev.push((start, Event::Enter { region }));
            }
            if let Some(m) = msg.filter(|_| func == Func::Send) {
                ev.push((start, Event::MpiSend(m)));
            }
            if let Some(m) = msg.filter(|_| func == Func::Recv) {
                ev.push((stop, Event::MpiRecv(m)));
            }
            if let Some(region) = region {
                ev.push((stop, Event::Leave { region }));
            }
        }
    }
}

/// The group's calls as units, by index: each call alone, but the calls
/// made in one `ncclAlltoAll` (`ncclGather`, `ncclScatter`) range together.
fn units(calls: &[PendingCall]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        let joined = c.via.filter(|v| v.is_p2p_collective()).and_then(|v| {
            units.iter_mut().find(|u| calls[u[0]].via.is_some_and(|w| w.serial == v.serial && w.is_p2p_collective()))
        });
        match joined {
            Some(u) => u.push(i),
            None => units.push(vec![i]),
        }
    }
    units
}

/// The group lets go of a call's handle: freed if NCCL has stopped it
/// (and it is not a captured call, whose address must stay unique),
/// else freed at its stop.
fn release(h: HandlePtr) {
    let ptr: NonNull<Handle> = h;
    // SAFETY: the handle is alive: a call's handle is freed only by the
    // last of its stop and this release, and this is the release.
    let kind = unsafe { &mut (*ptr.as_ptr()).kind };
    if let Kind::Api { stopped, group_closed, captured } = kind {
        *group_closed = true;
        if *stopped && !*captured {
            // SAFETY: stopped, and the group was its last holder.
            unsafe { handle::free(h) };
        }
    }
}

/// The collective record of a call of `shape` on communicator `comm`.
fn collective_of(s: &bytes::Shape, comm: u32) -> Collective {
    Collective { op: s.op, comm, root: s.root, sent: s.sent, received: s.received }
}

/// A call's region (if it has one) holding its collective record (if it
/// moved anything), from `start` to `stop`.
fn push_collective(
    ev: &mut Vec<(u64, Event)>,
    region: Option<u32>,
    collective: Option<Collective>,
    start: u64,
    stop: u64,
) {
    if let Some(region) = region {
        ev.push((start, Event::Enter { region }));
    }
    if let Some(k) = collective {
        ev.push((start, Event::MpiCollectiveBegin));
        ev.push((stop, Event::MpiCollectiveEnd(k)));
    }
    if let Some(region) = region {
        ev.push((stop, Event::Leave { region }));
    }
}
