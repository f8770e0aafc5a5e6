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

use raw::Event;

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
