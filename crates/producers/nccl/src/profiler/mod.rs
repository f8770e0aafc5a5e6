//! The recording logic, once for every interface version: what each NCCL
//! event becomes in the raw stream.
//!
//! [`Profiler`] is shared by all threads; [`ThreadState`] is one calling
//! thread's (the user's group in progress, the proxy thread's operations).
//! The live plugin keeps a `ThreadState` per OS thread and records on the
//! calling thread's location; replay keeps one per captured thread and
//! writes each one's events to a location of its own. Timestamps are
//! passed in, so the same code serves both.
//!
//! - [`thread`]: groups, collectives and send/receive on the calling thread;
//! - [`nvtx`]: NCCL's own NVTX ranges (the user's calls as made), which
//!   gputrace's NVTX library hands over;
//! - [`side`]: proxy operations and kernel channels, on locations of their
//!   own, with the GPU timer conversion.

mod nvtx;
mod side;
mod thread;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use raw::{Definition, Event, Paradigm, RegionRole};
use recorder::Recorder;

use crate::handle::{self, HandlePtr, Kind};
use crate::levels::Levels;
use crate::model::{CommTag, Descr, Func, InitArgs, StateChange, Sym, name_hash, state};

pub use side::GpuClock;
pub use thread::ThreadState;

/// A callback's time, read from the clock only if the event needs it (a
/// third of NCCL's callbacks are ignored or only add to another event).
#[derive(Debug)]
pub struct Stamp(std::cell::Cell<u64>);

impl Stamp {
    /// The clock, read at the first [`get`](Self::get).
    pub fn lazy() -> Stamp {
        Stamp(std::cell::Cell::new(0))
    }

    /// A known time (replay).
    pub fn at(t: u64) -> Stamp {
        Stamp(std::cell::Cell::new(t.max(1)))
    }

    pub fn get(&self) -> u64 {
        let t = self.0.get();
        if t != 0 {
            return t;
        }
        let t = gputrace_clock::now().max(1);
        self.0.set(t);
        t
    }
}

/// A communicator, as `init` (or, for v1–v3, its first collective)
/// describes it. Contexts live as long as the process: NCCL may name one
/// after `finalize` (a proxy thread's late event), and an address that
/// stays valid is what lets the plugin check contexts it is given.
#[derive(Debug)]
pub struct CommContext {
    /// The interface version NCCL loaded for this communicator.
    pub version: u32,
    /// The stream-local id of its [`Definition::NcclComm`].
    pub id: u32,
    /// Ranks in the communicator; 0 when unknown (v1–v3).
    pub nranks: u32,
    /// This process's rank in it (v1–v3: from the first event).
    rank: OnceLock<u32>,
    name: Option<String>,
    comm_id: Option<u64>,
    defined: OnceLock<()>,
    finalized: AtomicBool,
}

impl CommContext {
    /// The rank; 0 before anything said (v1–v3 before their first event).
    pub fn rank(&self) -> u32 {
        self.rank.get().copied().unwrap_or(0)
    }

    /// Defines the communicator in the stream, once. v1–v3 define it at
    /// the first collective or point-to-point event, whose descriptor
    /// names it (`tag`) and gives the rank.
    fn ensure_defined(&self, rec: &Recorder, tag: Option<CommTag>, rank: i32) {
        if self.defined.get().is_some() {
            return;
        }
        self.defined.get_or_init(|| {
            let tag_name = tag.and_then(|t| t.name).map(|s| s.as_str().to_string()).filter(|s| !s.is_empty());
            let name = self.name.clone().or(tag_name);
            let hash = match (self.comm_id, tag) {
                (Some(h), _) => h,
                (None, Some(t)) if t.hash != 0 => t.hash,
                _ => name.as_deref().map_or(0, name_hash),
            };
            let rank = *self.rank.get_or_init(|| u32::try_from(rank).unwrap_or(0));
            let name = name.unwrap_or_else(|| format!("NCCL comm {hash:016x}"));
            rec.define(&Definition::NcclComm { id: self.id, comm_hash: hash, nranks: self.nranks, rank, name });
        });
    }

    pub fn is_finalized(&self) -> bool {
        self.finalized.load(Ordering::Relaxed)
    }
}

/// Names of the attributes, interned once.
#[derive(Debug)]
struct AttrNames {
    bytes: u32,
    count: u32,
    datatype: u32,
    root: u32,
    reduction: u32,
    algorithm: u32,
    protocol: u32,
    channels: u32,
    sequence: u32,
    peer: u32,
    channel: u32,
    steps: u32,
    chunk_size: u32,
    appended: u32,
}

impl AttrNames {
    fn new(rec: &Recorder) -> AttrNames {
        AttrNames {
            bytes: rec.intern("bytes"),
            count: rec.intern("count"),
            datatype: rec.intern("datatype"),
            root: rec.intern("root"),
            reduction: rec.intern("reduction"),
            algorithm: rec.intern("algorithm"),
            protocol: rec.intern("protocol"),
            channels: rec.intern("channels"),
            sequence: rec.intern("sequence"),
            peer: rec.intern("peer"),
            channel: rec.intern("channel"),
            steps: rec.intern("steps"),
            chunk_size: rec.intern("chunk size"),
            appended: rec.intern("appended ops"),
        }
    }
}

/// The regions, each defined at first use (`None`: filtered out).
#[derive(Debug, Default)]
struct Regions {
    group: OnceLock<Option<u32>>,
    group_end: OnceLock<Option<u32>>,
    funcs: [OnceLock<Option<u32>>; Func::NAMED.len()],
    other: Mutex<HashMap<Sym, Option<u32>>>,
    /// NCCL functions known from their NVTX ranges only.
    named: Mutex<HashMap<Sym, Option<u32>>>,
    group_start: OnceLock<Option<u32>>,
    /// proxy send, proxy recv, proxy sleep, proxy append.
    proxy: [OnceLock<Option<u32>>; 4],
    kernel: Mutex<HashMap<u8, Option<u32>>>,
}

const PROXY_SEND: usize = 0;
const PROXY_RECV: usize = 1;
const PROXY_SLEEP: usize = 2;
const PROXY_APPEND: usize = 3;
const PROXY_NAMES: [&str; 4] = ["NCCL proxy send", "NCCL proxy recv", "NCCL proxy sleep", "NCCL proxy append"];

fn define(rec: &Recorder, name: &str, role: RegionRole) -> Option<u32> {
    rec.region(name, None, Paradigm::Nccl, role, "NCCL")
}

/// String ids of attribute values (data types, algorithms, protocols).
#[derive(Debug)]
struct StringIds {
    known: Vec<OnceLock<u32>>,
    dynamic: Mutex<HashMap<Sym, u32>>,
}

impl StringIds {
    fn new() -> StringIds {
        StringIds { known: (0..Sym::known_count()).map(|_| OnceLock::new()).collect(), dynamic: Mutex::default() }
    }

    fn get(&self, rec: &Recorder, s: Sym) -> u32 {
        match self.known.get(s.0 as usize) {
            Some(cell) => *cell.get_or_init(|| rec.intern(s.as_str())),
            None => {
                let mut d = self.dynamic.lock().unwrap_or_else(|e| e.into_inner());
                *d.entry(s).or_insert_with(|| rec.intern(s.as_str()))
            }
        }
    }
}

/// The call paths of the user's calls (`GPUTRACE_UNWINDING`, v5+: NCCL
/// reports the call on the user's thread).
pub(crate) static PATHS: recorder::callpath::CallPaths = recorder::callpath::CallPaths::new();

/// The process's NCCL recording.
#[derive(Debug)]
pub struct Profiler {
    rec: Recorder,
    levels: Levels,
    attrs: AttrNames,
    regions: Regions,
    strings: StringIds,
    side: side::Side,
    /// Graph-captured API calls: their launches (graph replays) are
    /// recorded as collectives of their own where NCCL reports them; true
    /// once one was (the merge then adds none for the call's kernel).
    captured: Mutex<HashMap<usize, bool>>,
    /// Every communicator's context, for NVTX payloads that name one by
    /// its hash.
    comms: Mutex<Vec<&'static CommContext>>,
}

/// At most this many graph-captured calls are remembered.
const CAPTURED_LIMIT: usize = 1 << 20;

impl Profiler {
    pub fn new(rec: Recorder, levels: Levels) -> Profiler {
        let attrs = AttrNames::new(&rec);
        Profiler {
            rec,
            levels,
            attrs,
            regions: Regions::default(),
            strings: StringIds::new(),
            side: side::Side::default(),
            captured: Mutex::default(),
            comms: Mutex::default(),
        }
    }

    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    pub fn levels(&self) -> Levels {
        self.levels
    }

    /// The activation mask for a communicator of interface `version`.
    pub fn mask(&self, version: u32) -> i32 {
        self.levels.mask(version)
    }

    /// The GPU timer conversion in use (for tests and diagnostics).
    pub fn gpu_clock(&self) -> &GpuClock {
        &self.side.clock
    }

    /// A communicator's `init`: its context, defined at once where `init`
    /// names it (v4+).
    pub fn init(&self, args: &InitArgs) -> &'static CommContext {
        let rank = OnceLock::new();
        if let Some(r) = args.rank.and_then(|r| u32::try_from(r).ok()) {
            let _ = rank.set(r);
        }
        let ctx = CommContext {
            version: args.version,
            id: self.rec.next_comm_id(),
            nranks: args.nranks.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            rank,
            name: args.name.clone().filter(|n| !n.is_empty()),
            comm_id: args.comm_id,
            defined: OnceLock::new(),
            finalized: AtomicBool::new(false),
        };
        let ctx: &'static CommContext = Box::leak(Box::new(ctx));
        self.comms.lock().unwrap_or_else(|e| e.into_inner()).push(ctx);
        if args.comm_id.is_some() {
            ctx.ensure_defined(&self.rec, None, args.rank.unwrap_or(0));
            self.rec.flush_definitions();
        }
        ctx
    }

    /// A communicator's `finalize`: everything recorded so far is written.
    pub fn finalize(&self, ctx: &CommContext) {
        ctx.finalized.store(true, Ordering::Relaxed);
        self.flush();
    }

    /// Writes the proxy and kernel events held back and every thread's
    /// buffer.
    pub fn flush(&self) {
        self.side.flush(self);
        self.rec.flush_all();
    }

    /// Ends the stream (at exit).
    pub fn finish(&self, exit_started: u64) {
        self.side.flush(self);
        self.rec.finish_from(exit_started);
    }

    /// A `startEvent`. Returns the handle to give NCCL, or `None` for an
    /// event not recorded (NCCL then reports nothing more about it).
    pub(crate) fn start(
        &self,
        th: &mut ThreadState,
        ctx: Option<&'static CommContext>,
        start: &crate::model::Start,
        now: &Stamp,
    ) -> Option<HandlePtr> {
        let l = &self.levels;
        match start.descr {
            Descr::Group => {
                // v5+ report the user's group as GroupApi.
                if !l.group || ctx.is_some_and(|c| c.version >= 5) {
                    return None;
                }
                let region = self.group_region();
                if let Some(region) = region {
                    th.emit(&self.rec, &[(now.get(), Event::Enter { region })]);
                }
                Some(handle::alloc(Kind::Group { region }))
            }
            Descr::GroupApi { depth, .. } => {
                // NCCL reports GroupApi also for the proxy and kernel levels.
                if !(l.group || l.coll || l.p2p) {
                    return None;
                }
                let h = handle::alloc(Kind::GroupApi);
                th.open_group(self, handle::key(h), depth, now.get());
                Some(h)
            }
            Descr::CollApi(call) | Descr::P2pApi(call) => {
                let is_coll = matches!(start.descr, Descr::CollApi(_));
                if !(if is_coll { l.coll } else { l.p2p }) {
                    return None;
                }
                let ctx = ctx?;
                let h = handle::alloc(Kind::Api { stopped: false, group_closed: false, captured: call.graph_captured });
                if call.graph_captured {
                    let mut c = self.captured.lock().unwrap_or_else(|e| e.into_inner());
                    if c.len() < CAPTURED_LIMIT {
                        c.insert(handle::key(h), false);
                    }
                }
                th.add_api_call(self, h, start.parent, ctx, call, is_coll, start.rank, now.get());
                Some(h)
            }
            Descr::KernelLaunch | Descr::Unsupported { .. } => None,
            Descr::Coll(coll) => {
                if !l.coll {
                    return None;
                }
                let ctx = ctx?;
                if th.attach_coll(start.parent, &coll) {
                    return None;
                }
                let standalone = start.parent == 0 || ctx.version < 5 || self.launch_of_captured(start.parent);
                if !standalone {
                    // The user's call, recorded already (its group ended
                    // before NCCL launched it: a non-blocking communicator).
                    return None;
                }
                ctx.ensure_defined(&self.rec, coll.comm, start.rank);
                Some(handle::alloc(Kind::Coll { ctx, coll, start: now.get() }))
            }
            Descr::P2p(p2p) => {
                if !l.p2p {
                    return None;
                }
                let ctx = ctx?;
                if th.attach_p2p(start.parent, &p2p) {
                    return None;
                }
                self.launch_of_captured(start.parent);
                ctx.ensure_defined(&self.rec, p2p.comm, start.rank);
                Some(handle::alloc(Kind::P2p { ctx, p2p, start: now.get() }))
            }
            Descr::ProxyOp(op) => {
                if !l.proxy {
                    return None;
                }
                let h = handle::alloc(Kind::ProxyOp { ctx, op, start: now.get() });
                th.proxy_ops.insert(handle::key(h), 0);
                Some(h)
            }
            Descr::ProxyStep { .. } => {
                if !l.proxy || !th.proxy_ops.contains_key(&start.parent) {
                    return None;
                }
                Some(handle::alloc(Kind::ProxyStep { op_key: start.parent, bytes: 0 }))
            }
            Descr::ProxyCtrl => l.proxy.then(|| handle::alloc(Kind::ProxyCtrl { since: None, appended: None })),
            Descr::KernelCh { channel, gpu_start } => {
                if !l.kernel {
                    return None;
                }
                let now = now.get();
                if let Some(g) = gpu_start {
                    self.side.clock.observe(now, g);
                }
                Some(handle::alloc(Kind::KernelCh { ctx, channel, host_start: now, gpu_start, gpu_stop: None }))
            }
        }
    }

    /// A `recordEventState`.
    ///
    /// # Safety
    ///
    /// `h` came from [`start`](Self::start) and has not been stopped.
    pub(crate) unsafe fn state(&self, th: &mut ThreadState, h: HandlePtr, st: &StateChange, now: &Stamp) {
        // SAFETY: per the contract, `h` is a live handle of ours, used by
        // one thread at a time (NCCL's calls for one event are ordered).
        let kind = unsafe { &mut (*h.as_ptr()).kind };
        match kind {
            Kind::GroupApi if st.code == state::GROUP_END_API_START => th.group_end_called(handle::key(h), now.get()),
            Kind::ProxyOp { .. } => {
                // v1–v3 report bytes so far with each proxy-op state.
                if let (Some(bytes), Some(total)) = (st.trans_size, th.proxy_ops.get_mut(&handle::key(h))) {
                    *total = (*total).max(bytes);
                }
            }
            Kind::ProxyStep { bytes, .. } => {
                if let Some(b) = st.trans_size {
                    *bytes = (*bytes).max(b);
                }
            }
            Kind::ProxyCtrl { since, appended } => match st.code {
                state::PROXY_CTRL_SLEEP | state::PROXY_CTRL_APPEND => *since = Some((st.code, now.get())),
                state::PROXY_CTRL_WAKEUP | state::PROXY_CTRL_APPEND_END => {
                    if st.appended.is_some() {
                        *appended = st.appended;
                    }
                    if let Some((code, t0)) = since.take() {
                        let which = if code == state::PROXY_CTRL_SLEEP { PROXY_SLEEP } else { PROXY_APPEND };
                        self.proxy_ctrl_region(th, which, t0, now.get(), *appended);
                    }
                }
                _ => {}
            },
            Kind::KernelCh { gpu_stop, .. } if st.code == state::KERNEL_CH_STOP => {
                if let Some(g) = st.gpu_timer {
                    self.side.clock.observe(now.get(), g);
                    *gpu_stop = Some(g);
                }
            }
            _ => {}
        }
    }

    /// A `stopEvent`.
    ///
    /// # Safety
    ///
    /// `h` came from [`start`](Self::start) and is not used after this call.
    pub(crate) unsafe fn stop(&self, th: &mut ThreadState, h: HandlePtr, now: &Stamp) {
        let key = handle::key(h);
        let now = now.get();
        // SAFETY: per the contract, `h` is a live handle of ours.
        let kind = unsafe { &mut (*h.as_ptr()).kind };
        let mut free = true;
        match kind {
            Kind::Group { region } => {
                if let Some(region) = *region {
                    th.emit(&self.rec, &[(now, Event::Leave { region })]);
                }
            }
            Kind::GroupApi => th.close_group_by_key(self, key, now),
            Kind::Api { stopped, group_closed, captured } => {
                *stopped = true;
                // The open group holds the call until it is written, and a
                // captured call is never freed (its address is a key).
                free = *group_closed && !*captured;
                th.api_call_stopped(self, key, now);
            }
            Kind::Coll { ctx, coll, start } => th.write_coll(self, ctx, coll, *start, now),
            Kind::P2p { ctx, p2p, start } => th.write_p2p(self, ctx, p2p, *start, now),
            Kind::ProxyOp { ctx, op, start } => {
                let bytes = th.proxy_ops.remove(&key).unwrap_or(0);
                self.side.proxy_op(self, *ctx, op, *start, now, bytes);
            }
            Kind::ProxyStep { op_key, bytes } => {
                if let Some(total) = th.proxy_ops.get_mut(op_key) {
                    *total += *bytes;
                }
            }
            Kind::ProxyCtrl { .. } => {}
            Kind::KernelCh { ctx, channel, host_start, gpu_start, gpu_stop } => {
                self.side.kernel_channel(self, *ctx, *channel, *host_start, now, *gpu_start, *gpu_stop);
            }
        }
        if free {
            // SAFETY: `h` is ours and, per the contract, unused from now on.
            unsafe { handle::free(h) };
        }
    }

    /// Whether `parent` is a graph-captured call, whose launch NCCL
    /// reports now; the first time, the raw stream says so (see
    /// [`raw::Definition::GraphLaunchReported`]).
    fn launch_of_captured(&self, parent: usize) -> bool {
        let mut captured = self.captured.lock().unwrap_or_else(|e| e.into_inner());
        let Some(reported) = captured.get_mut(&parent) else {
            return false;
        };
        if !*reported {
            *reported = true;
            self.rec.define(&raw::Definition::GraphLaunchReported { call: parent as u64 });
        }
        true
    }

    fn group_region(&self) -> Option<u32> {
        *self.regions.group.get_or_init(|| define(&self.rec, "ncclGroup", RegionRole::Function))
    }

    fn group_end_region(&self) -> Option<u32> {
        *self.regions.group_end.get_or_init(|| define(&self.rec, "ncclGroupEnd", RegionRole::Function))
    }

    /// The region of an API function: "ncclAllReduce", "ncclSend", ...
    fn func_region(&self, func: Func) -> Option<u32> {
        let make = || define(&self.rec, &func.api_name(), crate::bytes::role(func));
        match func.index() {
            Some(i) => *self.regions.funcs[i].get_or_init(make),
            None => {
                let Func::Other(sym) = func else { return None };
                let mut other = self.regions.other.lock().unwrap_or_else(|e| e.into_inner());
                *other.entry(sym).or_insert_with(make)
            }
        }
    }

    fn proxy_region(&self, which: usize) -> Option<u32> {
        *self.regions.proxy[which].get_or_init(|| define(&self.rec, PROXY_NAMES[which], RegionRole::Function))
    }

    fn kernel_region(&self, channel: u8) -> Option<u32> {
        let mut k = self.regions.kernel.lock().unwrap_or_else(|e| e.into_inner());
        *k.entry(channel)
            .or_insert_with(|| define(&self.rec, &format!("NCCL kernel channel {channel}"), RegionRole::Function))
    }

    /// A proxy thread's sleep or append, on that thread.
    fn proxy_ctrl_region(&self, th: &mut ThreadState, which: usize, t0: u64, t1: u64, appended: Option<i32>) {
        let Some(region) = self.proxy_region(which) else { return };
        let mut ev = Vec::with_capacity(3);
        if which == PROXY_APPEND
            && let Some(n) = appended
        {
            ev.push((t0, Event::Attribute { name: self.attrs.appended, value: n.max(0) as u64 }));
        }
        ev.push((t0, Event::Enter { region }));
        ev.push((t1.max(t0), Event::Leave { region }));
        th.emit(&self.rec, &ev);
    }

    fn attr(&self, name: u32, value: u64, t: u64) -> (u64, Event) {
        (t, Event::Attribute { name, value })
    }

    fn attr_str(&self, name: u32, value: Sym, t: u64) -> (u64, Event) {
        (t, Event::AttributeString { name, value: self.strings.get(&self.rec, value) })
    }
}
