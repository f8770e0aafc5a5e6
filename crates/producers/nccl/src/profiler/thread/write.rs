//! A thread's NCCL calls written out: collectives, sends and receives,
//! groups closed with their calls, as regions, messages and collectives.

use raw::{CapturedOp, Collective, Definition, Event, Message};

use super::{Func, Launch, PendingCall, ThreadState, Via, release};
use crate::bytes;
use crate::model::{CollLaunch, P2pLaunch};
use crate::profiler::{CommContext, Profiler};

impl ThreadState {
    /// A collective recorded on its own (v1–v4, graph launches), at its
    /// stop. NCCL starts all the tasks of a launch, then stops them all:
    /// their regions are laid one after the other, each from the end of
    /// the previous one (or its own start) to its stop.
    pub(in crate::profiler) fn write_coll(
        &mut self,
        p: &Profiler,
        ctx: &CommContext,
        coll: &CollLaunch,
        start: u64,
        stop: u64,
    ) {
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
    pub(in crate::profiler) fn write_p2p(
        &mut self,
        p: &Profiler,
        ctx: &CommContext,
        p2p: &P2pLaunch,
        start: u64,
        stop: u64,
    ) {
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
    pub(super) fn close_group(&mut self, p: &Profiler, now: u64) {
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
            let captured = match first.via.filter(|v| v.is_p2p_collective()) {
                Some(via) => {
                    let calls: Vec<&PendingCall> = unit.iter().map(|&i| &g.calls[i]).collect();
                    self.write_p2p_collective(p, &calls, via, start, stop, &mut ev)
                }
                None => self.write_call(p, first, start, stop, &mut ev),
            };
            if let Some(op) = captured {
                p.rec.define(&Definition::GraphCaptured {
                    call: first.key as u64,
                    thread: self.tid,
                    start: first.start,
                    end: now,
                    op,
                });
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
    /// sends and receives NCCL made of it: one region, one collective. A
    /// call captured into a CUDA graph is its region only; its collective
    /// is returned, for each launch of the graph.
    fn write_p2p_collective(
        &self,
        p: &Profiler,
        calls: &[&PendingCall],
        via: Via,
        start: u64,
        stop: u64,
        ev: &mut Vec<(u64, Event)>,
    ) -> Option<CapturedOp> {
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
        call_path(p, first, region, start, ev);
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
        let collective = shape.map(|s| collective_of(&s, ctx.id));
        let (live, captured) = split_captured(collective, call.graph_captured);
        push_collective(ev, region, live, start, stop);
        captured.map(CapturedOp::Collective)
    }

    /// One call: its region and its collective or message; for a call
    /// captured into a CUDA graph the region only, and what each launch of
    /// the graph moves is returned.
    fn write_call(
        &self,
        p: &Profiler,
        c: &PendingCall,
        start: u64,
        stop: u64,
        ev: &mut Vec<(u64, Event)>,
    ) -> Option<CapturedOp> {
        let call = &c.call;
        let region = p.func_region(call.func);
        let size = call.datatype.datatype_size();
        let a = &p.attrs;
        call_path(p, c, region, start, ev);
        if region.is_some() {
            ev.push(p.attr(a.bytes, call.count.saturating_mul(size), start));
            ev.push(p.attr(a.count, call.count, start));
            ev.push(p.attr_str(a.datatype, call.datatype, start));
        }
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
            let collective = shape.map(|s| collective_of(&s, c.ctx.id));
            let (live, captured) = split_captured(collective, call.graph_captured);
            push_collective(ev, region, live, start, stop);
            captured.map(CapturedOp::Collective)
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
            let msg = launch.and_then(|(peer, _)| {
                let peer = u32::try_from(peer).ok()?;
                Some(Message { peer, comm: c.ctx.id, tag: 0, bytes: call.count.saturating_mul(size) })
            });
            let (msg, captured) = split_captured(msg, call.graph_captured);
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
            match func {
                Func::Send => captured.map(CapturedOp::Send),
                Func::Recv => captured.map(CapturedOp::Recv),
                _ => None,
            }
        }
    }
}

/// The CallPath of a call whose caller's path was taken
/// (`GPUTRACE_UNWINDING`), its region as the leaf, before its Enter.
fn call_path(p: &Profiler, c: &PendingCall, region: Option<u32>, start: u64, ev: &mut Vec<(u64, Event)>) {
    if let (Some(caller), Some(region)) = (c.caller, region) {
        let frame = crate::profiler::PATHS.leaf(&p.rec, caller, region);
        ev.push((start, Event::CallPath { frame }));
    }
}

/// What a call moves now (`live`), or, for a call captured into a CUDA
/// graph, at each launch of the graph (`captured`).
fn split_captured<T>(what: Option<T>, graph_captured: bool) -> (Option<T>, Option<T>) {
    if graph_captured { (None, what) } else { (what, None) }
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
