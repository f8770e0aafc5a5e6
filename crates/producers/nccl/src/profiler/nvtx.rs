//! NCCL's own NVTX ranges, handed over by gputrace's NVTX library: the
//! user's calls as the user made them.
//!
//! NCCL opens a push/pop range (domain "NCCL") around every API function
//! it annotates — `ncclGroupStart`, `ncclAllReduce`, `ncclAlltoAll`,
//! `ncclGroupEnd`, `ncclCommInitRank`, ... — on the calling thread, with a
//! payload that gives the communicator's hash and the bytes of the call.
//! The profiler events say less about the call than its range does: NCCL
//! reports no event for `ncclGroupStart`, starts the group's event inside
//! the group's first call, reports nothing for a collective of count 0
//! (its `taskAppend` drops it before any event), and reports
//! `ncclAlltoAll`, `ncclGather` and `ncclScatter` as the sends and
//! receives it turns them into. The ranges fill those gaps:
//!
//! - an explicit group is `ncclGroup` from the outermost `ncclGroupStart`
//!   to the end of its `ncclGroupEnd`, holding `ncclGroupStart`, the calls
//!   and `ncclGroupEnd`, each as long as the user's call took;
//! - a call's range that NCCL reported events inside is recorded by those
//!   events (one region per call, with its launch's details); the sends
//!   and receives inside an `ncclAlltoAll` (`ncclGather`, `ncclScatter`)
//!   range become that one call;
//! - a call's range with no event inside (count 0) is a region of its
//!   own, with the bytes of its payload and, when its communicator is
//!   known, its collective (0 bytes);
//! - every other range (`ncclCommInitRank`, `ncclCommDestroy`, NCCL's
//!   host callbacks, ...) is a region of its own.
//!
//! While a range or a group is open, the thread's events are held here,
//! so that a region whose extent is known only at its end (a range, the
//! group, a call whose launch comes at the group's end) can be put where
//! it began; they are written when the thread leaves NCCL.

use raw::{Event, RegionRole};

use super::{Profiler, Stamp, ThreadState, define};
use crate::model::{Func, NvtxPayload, NvtxRange, Sym};

/// What an NVTX range of NCCL's is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RangeKind {
    /// A collective or send/receive call.
    Call(Func),
    GroupStart,
    GroupEnd,
    /// Any other function NCCL annotates.
    Other,
}

impl RangeKind {
    pub(super) fn of(name: Sym) -> RangeKind {
        let name = name.as_str();
        match name {
            "ncclGroupStart" => RangeKind::GroupStart,
            "ncclGroupEnd" => RangeKind::GroupEnd,
            _ => match name.strip_prefix("nccl").map(Func::from_name) {
                Some(f) if f.index().is_some() => RangeKind::Call(f),
                _ => RangeKind::Other,
            },
        }
    }
}

/// An open range.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpenRange {
    pub range: NvtxRange,
    pub kind: RangeKind,
    pub start: u64,
    /// Where in the held events it began.
    pub mark: usize,
    /// A number of its own on this thread.
    pub serial: u64,
    /// API events NCCL reported inside it.
    pub calls: u32,
}

/// The ranges open on a thread, and the events held meanwhile.
#[derive(Debug, Default)]
pub(super) struct NvtxLayer {
    pub stack: Vec<OpenRange>,
    /// `ncclGroupStart` calls not yet ended by an `ncclGroupEnd`.
    pub group_depth: u32,
    /// The outermost group's start and where it began in `held`.
    pub group: Option<(u64, usize)>,
    pub held: Vec<(u64, Event)>,
    next_serial: u64,
}

impl NvtxLayer {
    /// Whether events must be held (a range or a group is open).
    pub fn active(&self) -> bool {
        !self.stack.is_empty() || self.group_depth > 0
    }

    pub fn push(&mut self, range: NvtxRange, now: u64) {
        let kind = RangeKind::of(range.name);
        if kind == RangeKind::GroupStart {
            if self.group_depth == 0 {
                self.group = Some((now, self.held.len()));
            }
            self.group_depth += 1;
        }
        self.next_serial += 1;
        let r = OpenRange { range, kind, start: now, mark: self.held.len(), serial: self.next_serial, calls: 0 };
        self.stack.push(r);
    }

    /// An API event NCCL reported: it belongs to the innermost open call's
    /// range, whose number, function and payload are returned.
    pub fn claim_call(&mut self) -> Option<(u64, Func, Option<NvtxPayload>)> {
        let r = self.stack.iter_mut().rev().find(|r| matches!(r.kind, RangeKind::Call(_)))?;
        r.calls += 1;
        match r.kind {
            RangeKind::Call(func) => Some((r.serial, func, r.range.payload)),
            _ => None,
        }
    }

    /// Puts `events`, of something that began (a range) or ended (a
    /// call) at `t`, at `at` in the held events. An open range that began
    /// there moves behind them if it began after `t` (`ncclGroupEnd`
    /// after the group's calls), and stays before them if not (a range
    /// around them).
    pub fn insert(&mut self, at: usize, t: u64, events: &[(u64, Event)]) {
        let at = at.min(self.held.len());
        self.held.splice(at..at, events.iter().copied());
        let n = events.len();
        for r in &mut self.stack {
            if r.mark > at || (r.mark == at && r.start > t) {
                r.mark += n;
            }
        }
        if let Some((t0, mark)) = &mut self.group
            && (*mark > at || (*mark == at && *t0 > t))
        {
            *mark += n;
        }
    }

    /// Forgets the open ranges and group (their regions are not written;
    /// the held events, complete regions, can be): their ends, if they
    /// come, find nothing open.
    pub fn give_up(&mut self) {
        self.stack.clear();
        self.group_depth = 0;
        self.group = None;
    }

    /// Merges the payload NCCL gave at the pop (`ncclCommInitRank` and the
    /// other functions that know their communicator only at the end).
    pub fn with_pop_payload(r: &mut OpenRange, payload: Option<NvtxPayload>) {
        if payload.is_some() {
            r.range.payload = payload;
        }
    }
}

/// The profiler's side of NCCL's ranges.
impl Profiler {
    /// One of NCCL's NVTX ranges begins on this thread.
    pub(crate) fn nvtx_push(&self, th: &mut ThreadState, range: &NvtxRange, now: &Stamp) {
        th.nvtx.push(*range, now.get());
    }

    /// The innermost of NCCL's NVTX ranges on this thread ends; `payload`
    /// is what NCCL gave at the end, if anything. See [`nvtx`] for what a
    /// range becomes.
    pub(crate) fn nvtx_pop(&self, th: &mut ThreadState, payload: Option<NvtxPayload>, now: &Stamp) {
        let Some(mut r) = th.nvtx.stack.pop() else { return };
        NvtxLayer::with_pop_payload(&mut r, payload);
        let t = now.get().max(r.start);
        let l = &self.levels;
        match r.kind {
            RangeKind::Call(func) => {
                let on = if matches!(func, Func::Send | Func::Recv | Func::SendRecv) { l.p2p } else { l.coll };
                // A call NCCL reported events in is recorded by them.
                if on && r.calls == 0 {
                    self.nvtx_call(th, &r, func, t);
                }
            }
            RangeKind::GroupStart => {
                if l.group {
                    let region = *self
                        .regions
                        .group_start
                        .get_or_init(|| define(&self.rec, "ncclGroupStart", RegionRole::Function));
                    self.nvtx_region(th, region, &[], &r, t);
                }
            }
            RangeKind::GroupEnd => {
                if l.group {
                    self.nvtx_region(th, self.group_end_region(), &[], &r, t);
                }
                th.nvtx.group_depth = th.nvtx.group_depth.saturating_sub(1);
                if th.nvtx.group_depth == 0
                    && let Some((t0, mark)) = th.nvtx.group.take()
                    && l.group
                    && let Some(region) = self.group_region()
                {
                    th.nvtx.insert(mark, t0, &[(t0, Event::Enter { region })]);
                    th.nvtx.held.push((t, Event::Leave { region }));
                }
            }
            RangeKind::Other => {
                let region = {
                    let mut named = self.regions.named.lock().unwrap_or_else(|e| e.into_inner());
                    *named
                        .entry(r.range.name)
                        .or_insert_with(|| define(&self.rec, r.range.name.as_str(), RegionRole::Function))
                };
                self.nvtx_region(th, region, &[], &r, t);
            }
        }
        th.release_held(&self.rec);
    }

    /// A range's region: `before` and the Enter where it began, the Leave
    /// at `t`.
    fn nvtx_region(&self, th: &mut ThreadState, region: Option<u32>, before: &[(u64, Event)], r: &OpenRange, t: u64) {
        let Some(region) = region else { return };
        let mut enter: Vec<(u64, Event)> = before.to_vec();
        enter.push((r.start, Event::Enter { region }));
        th.nvtx.insert(r.mark, r.start, &enter);
        th.nvtx.held.push((t, Event::Leave { region }));
    }

    /// A call NCCL reported no event for (a collective of count 0; NCCL
    /// drops it before any event): its region, with the bytes its payload
    /// gives, and its collective when the payload names a communicator of
    /// this process.
    fn nvtx_call(&self, th: &mut ThreadState, r: &OpenRange, func: Func, t: u64) {
        let Some(region) = self.func_region(func) else { return };
        let a = &self.attrs;
        let payload = r.range.payload;
        let bytes = payload.and_then(|pl| pl.bytes);
        let mut attrs = Vec::with_capacity(4);
        if let Some(b) = bytes {
            attrs.push(self.attr(a.bytes, b, r.start));
            if b == 0 {
                attrs.push(self.attr(a.count, 0, r.start));
            }
        }
        let arg = payload.and_then(|pl| pl.root_or_peer);
        let ctx = payload.and_then(|pl| {
            let comms = self.comms.lock().unwrap_or_else(|e| e.into_inner());
            comms.iter().find(|c| c.comm_id == Some(pl.comm)).copied()
        });
        // The payload's bytes are count × type size: the shape's count in
        // bytes of one byte each.
        let shape = match (ctx, bytes) {
            (Some(c), Some(b)) => crate::bytes::shape(func, b, 1, c.nranks, c.rank(), arg.unwrap_or(-1)),
            _ => None,
        };
        if let Some(root) = shape.and_then(|s| s.root) {
            attrs.push(self.attr(a.root, u64::from(root), r.start));
        } else if let (Some(peer), Func::Send | Func::Recv) = (arg, func) {
            attrs.push(self.attr(a.peer, peer.max(0) as u64, r.start));
        }
        attrs.push((r.start, Event::Enter { region }));
        let mut after = Vec::with_capacity(2);
        if let (Some(s), Some(c)) = (shape, ctx) {
            let k = raw::Collective { op: s.op, comm: c.id, root: s.root, sent: s.sent, received: s.received };
            attrs.push((r.start, Event::MpiCollectiveBegin));
            after.push((t, Event::MpiCollectiveEnd(k)));
        }
        after.push((t, Event::Leave { region }));
        th.nvtx.insert(r.mark, r.start, &attrs);
        th.nvtx.held.extend_from_slice(&after);
    }
}
