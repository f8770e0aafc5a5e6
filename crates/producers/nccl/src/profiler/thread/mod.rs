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

use raw::Event;
use recorder::Recorder;

use super::nvtx::NvtxLayer;
use super::{CommContext, Profiler};
use crate::handle::{self, Handle, HandlePtr, Kind};
use crate::model::{ApiCall, CollLaunch, Func, NvtxPayload, P2pLaunch, Sym};

mod write;

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
    /// Its caller's call path (`GPUTRACE_UNWINDING`), taken on the
    /// user's thread when NCCL reported the call.
    caller: Option<u32>,
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
        let caller = if crate::profiler::PATHS.on() { crate::profiler::PATHS.caller(&p.rec) } else { None };
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
                caller,
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
