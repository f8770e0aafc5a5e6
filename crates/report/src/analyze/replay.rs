//! The analysis pass: host threads and GPU streams read merged by time,
//! one event after the other as they happened, through a state machine
//! that sees each wait state when its last piece arrives.
//!
//! - **Messages.** A send and its receive are matched on (communicator,
//!   sender, receiver, tag), the n-th send with the n-th receive (MPI's
//!   non-overtaking rule), from whichever end comes first: the unmatched
//!   end waits in a queue, so what is kept is the messages in flight.
//!   The n-th is counted in time, over all the threads of the sending and
//!   of the receiving process (MPI matches per process, whichever thread
//!   calls), which is why the pass pairs the messages for the Chrome
//!   export's arrows too ([`Sink::message`]): counted per thread, as
//!   locations are read one after the other, a receive on a second thread
//!   got the send of a later message, received before it was sent.
//!   Late Sender is evaluated when both ends are known, Late Receiver once
//!   the blocking send's call has also ended. Messages on NCCL
//!   communicators and `MPI_COMM_SELF` are paired, not analysed.
//! - **Collectives.** The k-th collective a rank ends on a communicator is
//!   the k-th of every rank of it (MPI orders collectives per
//!   communicator): each rank's (enter, exit, bytes) is kept until every
//!   rank of the communicator has ended it, then the operation's wait
//!   states are computed and it is dropped.
//! - **GPU work** is joined to its launch call by (process, correlation
//!   id): the launch's end decides how much of the idle time before the
//!   work was the host's, and whether a kernel was shorter than its launch.
//!   Launches are kept in arrival order, at most [`MAX_LAUNCHES`].

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use otf2::reader::{EventContext, EventVisitor, GlobalDefs, TraceReader};
use otf2::{AttributeRef, AttributeValue, CollectiveOp, CommRef, LocationRef, RegionRef};

use super::critical::{self, Timelines};
use super::stragglers::{Arrival, Describe, RegionClock, Stragglers};
use super::{Analysis, Finding, GpuTime, Imbalance, Options, Pattern, RankTime, Window, Worst};
use crate::Result;
use crate::model::{LocationKind, Model, RegionKind};

/// Launch calls kept for the GPU work that may still come (the oldest go
/// first): CUDA queues about a thousand launches per device before a
/// launch blocks, far fewer than this.
pub const MAX_LAUNCHES: usize = 1 << 16;

/// A map with a cheap hash: its keys are small integers (location indices,
/// references, ranks), hashed several times per event, where SipHash took
/// a fifth of the pass.
type Map<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// Multiply-and-rotate word hashing (the scheme of Firefox's and rustc's
/// hashers): no protection against chosen keys, none needed for ids read
/// from an archive.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, word: u32) {
        self.write_u64(word.into());
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One instance of a finding, handed out as it is found (for the Chrome
/// export's analysis tracks).
#[derive(Clone, Debug)]
pub struct Instance {
    pub pattern: Pattern,
    /// Index into [`Model::processes`].
    pub process: usize,
    /// Where the time was lost: a thread's or stream's name, or a GPU's.
    pub location: String,
    /// The waiting window, ns since the trace's start.
    pub window: Window,
    pub time_lost_ns: u64,
    pub partner_rank: Option<u32>,
    /// The call (innermost region) or kernel.
    pub what: String,
}

/// A message's two ends, as the pass paired them: where and when (the
/// archive's timestamps, clock offsets applied) the send and the receive
/// records are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessagePair {
    pub sender: LocationRef,
    pub sent: u64,
    pub receiver: LocationRef,
    pub received: u64,
}

/// What the pass hands out as it goes; both hooks do nothing by default.
pub trait Sink {
    /// An instance of a finding.
    fn instance(&mut self, _instance: &Instance) {}
    /// A message, once both its ends are read.
    fn message(&mut self, _pair: &MessagePair) {}
}

/// No sink: the analysis alone.
impl Sink for () {}

impl<F: FnMut(&Instance)> Sink for F {
    fn instance(&mut self, instance: &Instance) {
        self(instance)
    }
}

/// Where a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Loc(usize),
    Gpu(usize),
}

/// What a finding is about at its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum What {
    Path(u32),
    /// A kernel (or copy), with the call path of its launch (0: unknown).
    Region(RegionRef, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    pattern: Pattern,
    place: Place,
    what: What,
    comm: Option<CommRef>,
}

#[derive(Debug, Default)]
struct Agg {
    lost: u64,
    instances: u64,
    first: u64,
    last: u64,
    worst: (u64, u64, u64, Option<u32>),
    bytes: Option<u64>,
    /// For the short-kernel rule: kernels whose launch is known, and the
    /// time of those shorter than their launch and of their launches.
    all: u64,
    kernel_ns: u64,
    launch_ns: u64,
}

/// Call paths as a tree: node 0 is the root; (parent, region) → node.
#[derive(Default)]
struct CallPaths {
    nodes: Vec<(u32, RegionRef)>,
    index: Map<(u32, RegionRef), u32>,
}

impl CallPaths {
    fn child(&mut self, parent: u32, region: RegionRef) -> u32 {
        if self.nodes.is_empty() {
            self.nodes.push((0, RegionRef::from_id(u32::MAX)));
        }
        let next = self.nodes.len() as u32;
        *self.index.entry((parent, region)).or_insert_with(|| {
            self.nodes.push((parent, region));
            next
        })
    }

    fn regions(&self, mut node: u32) -> Vec<RegionRef> {
        let mut out = Vec::new();
        while node != 0 {
            let (parent, region) = self.nodes[node as usize];
            out.push(region);
            node = parent;
        }
        out.reverse();
        out
    }
}

/// What a host frame's close reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    None,
    SyncMemcpy,
    SyncMemset,
    SyncApi,
}

struct Frame {
    region: RegionRef,
    kind: RegionKind,
    enter: u64,
    node: u32,
    /// Counts as not computing (MPI, NCCL, CUDA synchronization).
    excluded: bool,
    /// An outermost MPI call (communication, for the overlap).
    mpi_outer: bool,
    rule: Rule,
    /// The launch this CUDA call made (process, correlation id).
    launch: Option<(usize, u64)>,
    /// Late Sender in a wait for several messages: up to when the waiting
    /// was already counted.
    ls_until: u64,
    /// Blocking sends made in this call whose Late Receiver needs its end.
    sends: Vec<usize>,
}

#[derive(Default)]
struct Host {
    stack: Vec<Frame>,
    first: Option<u64>,
    last: u64,
    excluded_depth: u32,
    excluded_since: u64,
    excluded_ns: u64,
    mpi_since: u64,
    mpi_ns: u64,
    /// Time per region since the thread's last collective (stragglers).
    clock: RegionClock,
}

struct Work {
    kind: RegionKind,
    nccl: bool,
    region: RegionRef,
    start: u64,
    launch: Option<(usize, u64)>,
    pageable_async: bool,
    bytes: u64,
}

#[derive(Default)]
struct Stream {
    open: Vec<Work>,
    first: Option<u64>,
    last_end: Option<u64>,
    time: GpuTime,
    /// The memory kinds of each copy region's last Enter here (the merge
    /// writes them only when they change).
    memory: Map<RegionRef, (Option<otf2::StringRef>, Option<otf2::StringRef>)>,
}

#[derive(Default)]
struct Gpu {
    active: u32,
    first: Option<u64>,
    last_change: u64,
    idle_since: Option<u64>,
    time: GpuTime,
    process: Option<usize>,
}

#[derive(Default)]
struct Proc {
    last: u64,
    compute: u32,
    comm_gpu: u32,
    comm_host: u32,
    compute_ns: u64,
    comm_ns: u64,
    overlap_ns: u64,
}

impl Proc {
    fn advance(&mut self, t: u64) {
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

struct Loc {
    location: LocationRef,
    kind: LocationKind,
    process: usize,
    gpu: Option<usize>,
    name: String,
    host: Host,
    stream: Stream,
}

/// A CUDA API call that may have launched GPU work.
struct Launch {
    loc: usize,
    region: RegionRef,
    node: u32,
    enter: u64,
    end: Option<u64>,
    /// The synchronous copy or memset finding its bytes go to.
    bytes_to: Option<Key>,
    /// A kernel that ended before its launch did: (stream loc, kernel,
    /// start, end).
    pending_kernel: Option<(usize, RegionRef, u64, u64)>,
}

struct SendSide {
    loc: usize,
    /// The send record's time.
    time: u64,
    enter: u64,
    leave: Option<u64>,
    node: u32,
    blocking: bool,
}

struct RecvSide {
    loc: usize,
    wait_enter: u64,
    complete: u64,
    post: u64,
    node: u32,
    test: bool,
}

struct Msg {
    comm: CommRef,
    /// On an MPI communicator other than `MPI_COMM_SELF`: its wait states
    /// are analysed (the others are only paired).
    analysed: bool,
    send: Option<SendSide>,
    recv: Option<RecvSide>,
}

struct Participant {
    loc: usize,
    rank: u32,
    enter: u64,
    exit: u64,
    node: u32,
    sent: u64,
    received: u64,
    /// Its thread's time per region since its previous collective.
    since: Vec<(RegionRef, u64)>,
}

struct Collective {
    op: CollectiveOp,
    root: Option<u32>,
    size: usize,
    parts: Vec<Participant>,
}

/// The attributes the pass reads.
#[derive(Clone, Copy, Default)]
struct Attrs {
    correlation: Option<AttributeRef>,
    bytes: Option<AttributeRef>,
    src_memory: Option<AttributeRef>,
    dst_memory: Option<AttributeRef>,
}

struct Pass<'a> {
    model: &'a Model,
    defs: &'a GlobalDefs,
    options: &'a Options,
    sink: &'a mut dyn Sink,
    attrs: Attrs,
    pageable: Option<otf2::StringRef>,
    loc_index: Map<LocationRef, usize>,
    locs: Vec<Loc>,
    paths: CallPaths,
    findings: Map<Key, Agg>,
    // Messages.
    msgs: Vec<Option<Msg>>,
    free: Vec<usize>,
    queues: Map<(CommRef, u32, u32, u32), VecDeque<usize>>,
    irecv_posts: Map<(usize, u64), u64>,
    own_ranks: Map<(usize, CommRef), Option<u32>>,
    pairs: super::MessageCount,
    // Collectives.
    colls: Map<(CommRef, u64), Collective>,
    coll_seq: Map<(usize, CommRef), u64>,
    /// NCCL communicators whose ranks are distinct processes (those of
    /// one process driving several GPUs are not compared).
    distinct: Map<CommRef, bool>,
    stragglers: Stragglers,
    /// Region changes and wait states per host thread (critical path).
    timelines: Timelines,
    // CUDA.
    launches: Map<(usize, u64), Launch>,
    launch_order: VecDeque<(usize, u64)>,
    gpus: Vec<Gpu>,
    procs: Vec<Proc>,
    events: u64,
}

/// The analysis of `reader`'s archive; `sink` sees each instance as found.
pub fn run(reader: &mut TraceReader, options: &Options, sink: &mut dyn Sink) -> Result<Analysis> {
    let defs = reader.defs().clone();
    let model = Model::new(&defs);
    let mut selected = Vec::new();
    let mut locs = Vec::new();
    let mut loc_index = Map::default();
    for loc in reader.locations() {
        let Some(info) = model.locations.get(&loc) else { continue };
        if info.kind == LocationKind::Metrics {
            continue;
        }
        loc_index.insert(loc, locs.len());
        locs.push(Loc {
            location: loc,
            kind: info.kind,
            process: info.process,
            gpu: info.gpu,
            name: info.name.clone(),
            host: Host::default(),
            stream: Stream::default(),
        });
        selected.push(loc);
    }
    let mut attrs = Attrs::default();
    for (&a, def) in &defs.attributes {
        let slot = match defs.string(def.name) {
            "CUDA correlation id" => &mut attrs.correlation,
            "bytes" => &mut attrs.bytes,
            "source memory" => &mut attrs.src_memory,
            "destination memory" => &mut attrs.dst_memory,
            _ => continue,
        };
        slot.get_or_insert(a);
    }
    let pageable = defs.strings.iter().find(|(_, s)| s.as_str() == "pageable").map(|(r, _)| *r);
    let location_count = locs.len();
    let mut pass = Pass {
        model: &model,
        defs: &defs,
        options,
        sink,
        attrs,
        pageable,
        loc_index,
        locs,
        paths: CallPaths::default(),
        findings: Map::default(),
        msgs: Vec::new(),
        free: Vec::new(),
        queues: Map::default(),
        irecv_posts: Map::default(),
        own_ranks: Map::default(),
        pairs: super::MessageCount::default(),
        colls: Map::default(),
        coll_seq: Map::default(),
        distinct: Map::default(),
        stragglers: Stragglers::default(),
        timelines: Timelines::new(location_count),
        launches: Map::default(),
        launch_order: VecDeque::new(),
        gpus: (0..model.gpus.len()).map(|_| Gpu::default()).collect(),
        procs: (0..model.processes.len()).map(|_| Proc::default()).collect(),
        events: 0,
    };
    let summary = reader.read_by_time(&selected, &mut pass).map_err(|e| {
        crate::Error::BadInput(format!("{}: reading the events by time: {e}", reader.anchor_path().display()))
    })?;
    pass.events = summary.events;
    let mut analysis = pass.finish(reader.anchor_path().display().to_string());
    analysis.program = defs
        .regions
        .values()
        .find(|r| r.paradigm == otf2::Paradigm::MeasurementSystem && r.role == otf2::RegionRole::Artificial)
        .map(|r| defs.string(r.name).to_string());
    Ok(analysis)
}

fn is_init_or_finalize(name: &str) -> bool {
    matches!(name, "MPI_Init" | "MPI_Init_thread" | "MPI_Finalize")
}

/// Whether a CUDA API call (by name) waits for the GPU.
fn is_sync_api(name: &str) -> bool {
    name.contains("Synchronize")
}

fn copy_rule(name: &str) -> Rule {
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

/// A kernel launch call (not a graph's).
fn is_kernel_launch(name: &str) -> bool {
    name.contains("Launch") && !name.contains("Graph")
}

/// NCCL's kernels: `ncclKernel_...`, `ncclDevKernel_...`.
pub fn is_nccl_kernel(name: &str) -> bool {
    let name = name.strip_prefix("void ").unwrap_or(name);
    name.starts_with("ncclKernel") || name.starts_with("ncclDevKernel")
}

impl Pass<'_> {
    fn ns(&self, t: u64) -> u64 {
        self.model.ns_since_start(t)
    }

    fn region_name(&self, r: RegionRef) -> &str {
        self.model.region(r).map_or("", |i| i.name.as_str())
    }

    fn rank_of_loc(&self, loc: usize) -> Option<u32> {
        self.model.processes.get(self.locs[loc].process).and_then(|p| p.rank)
    }

    /// Adds one instance to a finding and hands it to the sink.
    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, key: Key, start: u64, end: u64, lost: u64, partner: Option<u32>, process: usize) {
        if lost == 0 {
            return;
        }
        let (s, e) = (self.ns(start), self.ns(end));
        let lost = self.model.ns(lost);
        let agg = self.findings.entry(key).or_default();
        if agg.instances == 0 || s < agg.first {
            agg.first = s;
        }
        agg.last = agg.last.max(e);
        agg.instances += 1;
        agg.lost += lost;
        if lost > agg.worst.2 {
            agg.worst = (s, e, lost, partner);
        }
        if key.pattern == Pattern::SyncApi {
            // Often thousands of short calls: aggregated only.
            return;
        }
        let location = match key.place {
            Place::Loc(l) => self.locs[l].name.clone(),
            Place::Gpu(g) => self.model.gpus[g].label.clone(),
        };
        let what = match key.what {
            What::Path(n) => self.paths.regions(n).last().map(|r| self.region_name(*r).to_owned()).unwrap_or_default(),
            What::Region(r, _) => self.region_name(r).to_owned(),
        };
        let instance = Instance {
            pattern: key.pattern,
            process,
            location,
            window: Window { start_ns: s, end_ns: e },
            time_lost_ns: lost,
            partner_rank: partner,
            what,
        };
        self.sink.instance(&instance);
    }

    fn own_rank(&mut self, process: usize, comm: CommRef) -> Option<u32> {
        let model = self.model;
        *self.own_ranks.entry((process, comm)).or_insert_with(|| {
            let info = model.comms.get(&comm)?;
            if info.is_self {
                return Some(0);
            }
            info.processes.iter().position(|p| *p == Some(process)).map(|r| r as u32)
        })
    }

    /// The world rank of rank `rank` of `comm`.
    fn world_rank(&self, comm: CommRef, rank: u32) -> Option<u32> {
        let p = self.model.comms.get(&comm)?.processes.get(rank as usize).copied().flatten()?;
        self.model.processes[p].rank
    }

    fn mpi_comm(&self, comm: CommRef) -> bool {
        self.model.comms.get(&comm).is_some_and(|c| !c.is_nccl && !c.is_self)
    }

    // ---- host threads -------------------------------------------------

    fn host_enter(&mut self, l: usize, ev: &EventContext<'_>, region: RegionRef) {
        let t = ev.time;
        let info = self.model.region(region);
        let kind = info.map_or(RegionKind::Other, |i| i.on_host);
        let name = info.map_or("", |i| i.name.as_str());
        let process = self.locs[l].process;
        let host = &mut self.locs[l].host;
        host.first.get_or_insert(t);
        host.last = host.last.max(t);
        host.clock.credit(host.stack.last().filter(|f| !f.excluded).map(|f| f.region), t);
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
            }
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

    fn host_leave(&mut self, l: usize, t: u64, region: RegionRef) {
        let host = &mut self.locs[l].host;
        host.last = host.last.max(t);
        host.clock.credit(host.stack.last().filter(|f| !f.excluded).map(|f| f.region), t);
        let Some(depth) = host.stack.iter().rposition(|f| f.region == region) else { return };
        while self.locs[l].host.stack.len() > depth {
            let frame = self.locs[l].host.stack.pop().expect("depth < len");
            self.close_frame(l, frame, t);
        }
        let top = self.locs[l].host.stack.last().map_or(critical::NONE, |f| f.node);
        self.timelines.change(l, t, top);
    }

    fn close_frame(&mut self, l: usize, frame: Frame, t: u64) {
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
    fn mpi_frame(&self, l: usize) -> Option<usize> {
        self.locs[l].host.stack.iter().rposition(|f| f.kind == RegionKind::Mpi)
    }

    // ---- messages ------------------------------------------------------

    fn new_msg(&mut self, msg: Msg) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.msgs[id] = Some(msg);
                id
            }
            None => {
                self.msgs.push(Some(msg));
                self.msgs.len() - 1
            }
        }
    }

    fn free_msg(&mut self, id: usize) {
        self.msgs[id] = None;
        self.free.push(id);
    }

    fn send(&mut self, l: usize, t: u64, receiver: u32, comm: CommRef, tag: u32, blocking_record: bool) {
        let analysed = self.mpi_comm(comm);
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, comm) else { return };
        let frame = self.mpi_frame(l).filter(|_| analysed);
        let (enter, node, blocking) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                let name = self.region_name(f.region);
                let blocking = blocking_record && matches!(name, "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend");
                (f.enter, f.node, blocking)
            }
            None => (t, 0, false),
        };
        let side = SendSide { loc: l, time: t, enter, leave: None, node, blocking };
        let key = (comm, me, receiver, tag);
        let waiting_recv = self
            .queues
            .get(&key)
            .and_then(|q| q.front())
            .is_some_and(|&id| self.msgs[id].as_ref().is_some_and(|m| m.recv.is_some()));
        if waiting_recv {
            let id = self.queues.get_mut(&key).and_then(VecDeque::pop_front).expect("a waiting receive");
            if self.queues.get(&key).is_some_and(VecDeque::is_empty) {
                self.queues.remove(&key);
            }
            if let Some(m) = self.msgs[id].as_mut() {
                m.send = Some(side);
            }
            self.paired(id);
            self.late_sender(id, None);
            if blocking {
                // Late Receiver needs the send call's end.
                if let Some(i) = frame {
                    self.locs[l].host.stack[i].sends.push(id);
                }
            } else {
                self.free_msg(id);
            }
        } else {
            let id = self.new_msg(Msg { comm, analysed, send: Some(side), recv: None });
            self.queues.entry(key).or_default().push_back(id);
            if blocking && let Some(i) = frame {
                self.locs[l].host.stack[i].sends.push(id);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn recv(&mut self, l: usize, t: u64, sender: u32, comm: CommRef, tag: u32, request: Option<u64>) {
        let analysed = self.mpi_comm(comm);
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, comm) else { return };
        let frame = self.mpi_frame(l).filter(|_| analysed);
        let (wait_enter, node, test) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                (f.enter, f.node, self.region_name(f.region).starts_with("MPI_Test"))
            }
            None => (t, 0, true),
        };
        let post = request.and_then(|r| self.irecv_posts.remove(&(l, r))).unwrap_or(wait_enter);
        let side = RecvSide { loc: l, wait_enter, complete: t, post, node, test };
        let key = (comm, sender, me, tag);
        let waiting_send = self
            .queues
            .get(&key)
            .and_then(|q| q.front())
            .is_some_and(|&id| self.msgs[id].as_ref().is_some_and(|m| m.send.is_some()));
        if waiting_send {
            let id = self.queues.get_mut(&key).and_then(VecDeque::pop_front).expect("a waiting send");
            if let Some(m) = self.msgs[id].as_mut() {
                m.recv = Some(side);
            }
            self.paired(id);
            self.late_sender(id, frame);
            let send = self.msgs[id].as_ref().and_then(|m| m.send.as_ref());
            let done = send.is_none_or(|s| !s.blocking || s.leave.is_some());
            if done {
                self.late_receiver(id);
                self.free_msg(id);
            }
        } else {
            let id = self.new_msg(Msg { comm, analysed, send: None, recv: Some(side) });
            self.queues.entry(key).or_default().push_back(id);
        }
        if self.queues.get(&key).is_some_and(VecDeque::is_empty) {
            self.queues.remove(&key);
        }
    }

    /// A message whose second end was just read: counted, handed out.
    fn paired(&mut self, id: usize) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        let pair = MessagePair {
            sender: self.locs[send.loc].location,
            sent: send.time,
            receiver: self.locs[recv.loc].location,
            received: recv.complete,
        };
        self.pairs.matched += 1;
        if pair.received < pair.sent {
            self.pairs.received_before_sent += 1;
        }
        self.sink.message(&pair);
    }

    /// Late Sender of a matched message: the receive waited from its
    /// (wait) call's enter until the send's enter. `frame`: the receiving
    /// call, still open, whose earlier messages' waiting is not counted
    /// twice (a wait for several messages counts the latest sender).
    fn late_sender(&mut self, id: usize, frame: Option<usize>) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        if recv.test || !msg.analysed {
            return;
        }
        let (l, comm) = (recv.loc, msg.comm);
        let upper = send.enter.min(recv.complete);
        let mut base = recv.wait_enter;
        if let Some(i) = frame {
            let f = &mut self.locs[l].host.stack[i];
            base = base.max(f.ls_until);
            f.ls_until = f.ls_until.max(upper);
        }
        if upper <= base {
            return;
        }
        let partner = self.rank_of_loc(send.loc);
        let culprit = send.loc;
        let key =
            Key { pattern: Pattern::LateSender, place: Place::Loc(l), what: What::Path(recv.node), comm: Some(comm) };
        let process = self.locs[l].process;
        self.record(key, base, upper, upper - base, partner, process);
        self.timelines.wait(l, upper, culprit);
    }

    /// Late Receiver of a matched message whose blocking send has ended:
    /// the send waited from its enter until the receive was posted, if the
    /// send was still in progress then.
    fn late_receiver(&mut self, id: usize) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        let Some(leave) = send.leave else { return };
        if !msg.analysed || !send.blocking || leave < recv.post || recv.post <= send.enter {
            return;
        }
        let (l, comm, node, enter, post) = (send.loc, msg.comm, send.node, send.enter, recv.post);
        let partner = self.rank_of_loc(recv.loc);
        let culprit = recv.loc;
        let key =
            Key { pattern: Pattern::LateReceiver, place: Place::Loc(l), what: What::Path(node), comm: Some(comm) };
        let process = self.locs[l].process;
        self.record(key, enter, post, post - enter, partner, process);
        self.timelines.wait(l, post, culprit);
    }

    // ---- collectives ---------------------------------------------------

    fn collective_end(&mut self, l: usize, t: u64, c: &otf2::Collective) {
        let model = self.model;
        let Some(info) = model.comms.get(&c.comm) else { return };
        let size = info.locations.len();
        if info.is_self || size < 2 {
            return;
        }
        let mpi = !info.is_nccl;
        if !mpi
            && !*self.distinct.entry(c.comm).or_insert_with(|| {
                let mut p: Vec<Option<usize>> = info.processes.clone();
                p.sort_unstable();
                p.dedup();
                p.len() == info.processes.len() && p.iter().all(Option::is_some)
            })
        {
            return;
        }
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, c.comm) else { return };
        let frame = if mpi {
            self.mpi_frame(l)
        } else {
            self.locs[l].host.stack.iter().rposition(|f| f.kind == RegionKind::Nccl)
        };
        let since = self.locs[l].host.clock.take();
        let (enter, node) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                (f.enter, f.node)
            }
            None => (t, 0),
        };
        let seq = self.coll_seq.entry((process, c.comm)).or_insert(0);
        let key = (c.comm, *seq);
        *seq += 1;
        let part = Participant {
            loc: l,
            rank: me,
            enter,
            exit: t,
            node,
            sent: c.bytes_sent,
            received: c.bytes_received,
            since,
        };
        let coll = self.colls.entry(key).or_insert_with(|| Collective {
            op: c.op,
            root: c.root,
            size,
            parts: Vec::with_capacity(size),
        });
        coll.parts.push(part);
        if coll.parts.len() >= coll.size {
            let coll = self.colls.remove(&key).expect("just filled");
            self.evaluate_collective(c.comm, coll, mpi);
        }
    }

    fn evaluate_collective(&mut self, comm: CommRef, mut coll: Collective, mpi: bool) {
        use CollectiveOp as Op;
        let arrivals: Vec<Arrival> = coll
            .parts
            .iter_mut()
            .map(|p| Arrival {
                loc: p.loc,
                process: self.locs[p.loc].process,
                enter: p.enter,
                since: std::mem::take(&mut p.since),
            })
            .collect();
        self.stragglers.operation(comm, &arrivals);
        if !mpi {
            return;
        }
        let latest = |parts: &[Participant], senders_only: bool| {
            parts.iter().filter(|p| !senders_only || p.sent > 0).max_by_key(|p| p.enter).map(|p| (p.enter, p.rank))
        };
        let mut waits: Vec<(Pattern, usize, u64, u64, Option<u32>)> = Vec::new();
        match coll.op {
            Op::Barrier => {
                if let Some((last, who)) = latest(&coll.parts, false) {
                    for (i, p) in coll.parts.iter().enumerate() {
                        waits.push((Pattern::WaitAtBarrier, i, p.enter, last.min(p.exit), Some(who)));
                    }
                }
            }
            Op::Allreduce
            | Op::Allgather
            | Op::Allgatherv
            | Op::Alltoall
            | Op::ReduceScatter
            | Op::ReduceScatterBlock => {
                if let Some((last, who)) = latest(&coll.parts, true) {
                    for (i, p) in coll.parts.iter().enumerate() {
                        if p.received > 0 {
                            waits.push((Pattern::WaitAtNxN, i, p.enter, last.min(p.exit), Some(who)));
                        }
                    }
                }
            }
            Op::Bcast | Op::Scatter | Op::Scatterv => {
                let root = coll.root.and_then(|r| coll.parts.iter().find(|p| p.rank == r));
                if let Some(root) = root {
                    for (i, p) in coll.parts.iter().enumerate() {
                        if p.rank != root.rank && p.received > 0 {
                            waits.push((Pattern::LateBroadcast, i, p.enter, root.enter.min(p.exit), Some(root.rank)));
                        }
                    }
                }
            }
            Op::Reduce | Op::Gather | Op::Gatherv => {
                let root = coll.root.and_then(|r| coll.parts.iter().position(|p| p.rank == r));
                if let Some(ri) = root {
                    let r = &coll.parts[ri];
                    let first = coll
                        .parts
                        .iter()
                        .filter(|p| p.rank != r.rank && p.sent > 0)
                        .min_by_key(|p| p.enter)
                        .map(|p| (p.enter, p.rank));
                    if let Some((first, who)) = first
                        && r.received > 0
                    {
                        waits.push((Pattern::EarlyReduce, ri, r.enter, first.min(r.exit), Some(who)));
                    }
                }
            }
            _ => {}
        }
        for (pattern, i, from, to, partner_rank) in waits {
            if to <= from {
                continue;
            }
            let p = &coll.parts[i];
            if let Some(culprit) = partner_rank.and_then(|r| coll.parts.iter().find(|q| q.rank == r)) {
                self.timelines.wait(p.loc, to, culprit.loc);
            }
            let partner = partner_rank.and_then(|r| self.world_rank(comm, r));
            let key = Key { pattern, place: Place::Loc(p.loc), what: What::Path(p.node), comm: Some(comm) };
            let process = self.locs[p.loc].process;
            self.record(key, from, to, to - from, partner, process);
        }
    }

    // ---- GPU streams ---------------------------------------------------

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

    fn stream_enter(&mut self, l: usize, ev: &EventContext<'_>, region: RegionRef) {
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
        let p = &mut self.procs[process];
        p.advance(t);
        match kind {
            RegionKind::Kernel if nccl => p.comm_gpu += 1,
            RegionKind::Kernel | RegionKind::Graph => p.compute += 1,
            _ => {}
        }
    }

    fn stream_leave(&mut self, l: usize, t: u64, region: RegionRef) {
        let Some(i) = self.locs[l].stream.open.iter().rposition(|w| w.region == region) else { return };
        let work = self.locs[l].stream.open.remove(i);
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
    fn short_kernel(&mut self, stream: usize, kernel: RegionRef, node: u32, start: u64, end: u64, launch_ticks: u64) {
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

    // ---- the end -------------------------------------------------------

    fn finish(mut self, archive: String) -> Analysis {
        let model = self.model;
        let mut notes = Vec::new();
        let unmatched = self.msgs.iter().flatten().filter(|m| m.analysed).count();
        if unmatched > 0 {
            notes.push(format!("{unmatched} point-to-point messages had no matching send or receive (not analysed)"));
        }
        if self.pairs.received_before_sent > 0 {
            notes.push(format!(
                "{} of {} messages were received before they were sent: the clocks of their hosts disagree",
                self.pairs.received_before_sent, self.pairs.matched
            ));
        }
        if !self.colls.is_empty() {
            notes.push(format!(
                "{} collective operations were not ended by every rank of their communicator (not analysed)",
                self.colls.len()
            ));
        }
        // Per process: the busiest host thread's computation.
        let mut ranks: Vec<RankTime> = model
            .processes
            .iter()
            .enumerate()
            .map(|(p, info)| RankTime { process: model.process_label(p), rank: info.rank, ..RankTime::default() })
            .collect();
        let mut has_host = vec![false; ranks.len()];
        for loc in &self.locs {
            if loc.kind != LocationKind::HostThread {
                continue;
            }
            let Some(first) = loc.host.first else { continue };
            let span = model.ns(loc.host.last.saturating_sub(first));
            let r = &mut ranks[loc.process];
            if !has_host[loc.process] || span > r.span_ns {
                has_host[loc.process] = true;
                r.span_ns = span;
                r.computation_ns = span.saturating_sub(model.ns(loc.host.excluded_ns));
                r.mpi_ns = model.ns(loc.host.mpi_ns);
            }
        }
        for (p, acc) in self.procs.iter().enumerate() {
            let r = &mut ranks[p];
            r.gpu_compute_ns = model.ns(acc.compute_ns);
            r.communication_ns = model.ns(acc.comm_ns);
            r.overlap_ns = model.ns(acc.overlap_ns);
        }
        // Streams and GPUs.
        let mut streams = Vec::new();
        for loc in &self.locs {
            if loc.kind != LocationKind::GpuStream {
                continue;
            }
            let s = &loc.stream;
            let (Some(first), Some(last)) = (s.first, s.last_end) else { continue };
            let mut time = s.time.clone();
            time.process = model.process_label(loc.process);
            time.rank = model.processes[loc.process].rank;
            time.location = loc.name.clone();
            time.gpu = loc.gpu.map(|g| model.gpus[g].label.clone());
            time.span_ns = model.ns(last.saturating_sub(first));
            time.busy_ns = time.kernels_ns + time.communication_ns + time.copies_ns + time.memsets_ns;
            time.idle_host_ns = model.ns(time.idle_host_ns);
            time.idle_dependency_ns = model.ns(time.idle_dependency_ns);
            time.idle_unattributed_ns = model.ns(time.idle_unattributed_ns);
            time.busy_ns = time.busy_ns.min(time.span_ns);
            time.idle_ns = time.span_ns - time.busy_ns;
            streams.push(time);
        }
        let mut gpus = Vec::new();
        for (g, gpu) in self.gpus.iter().enumerate() {
            let (Some(first), Some(last)) = (gpu.first, gpu.idle_since) else { continue };
            let mut time = gpu.time.clone();
            if let Some(p) = gpu.process {
                time.process = model.process_label(p);
                time.rank = model.processes[p].rank;
            }
            time.location = model.gpus[g].label.clone();
            time.gpu = Some(model.gpus[g].label.clone());
            time.span_ns = model.ns(last.saturating_sub(first));
            time.busy_ns = time.busy_ns.min(time.span_ns);
            time.idle_ns = time.span_ns - time.busy_ns;
            time.idle_host_ns = model.ns(time.idle_host_ns);
            time.idle_dependency_ns = model.ns(time.idle_dependency_ns);
            time.idle_unattributed_ns = model.ns(time.idle_unattributed_ns);
            gpus.push(time);
        }
        // Load imbalance over the processes with host threads (the MPI
        // ranks, when there are any).
        let mpi = ranks.iter().any(|r| r.rank.is_some());
        let pool: Vec<&RankTime> = ranks
            .iter()
            .enumerate()
            .filter(|(p, r)| has_host[*p] && (!mpi || r.rank.is_some()))
            .map(|(_, r)| r)
            .collect();
        let mut imbalance = None;
        if pool.len() >= 2 {
            let sum: u64 = pool.iter().map(|r| r.computation_ns).sum();
            let mean = sum / pool.len() as u64;
            let slowest = pool.iter().max_by_key(|r| r.computation_ns).expect("two or more");
            let min = pool.iter().map(|r| r.computation_ns).min().unwrap_or(0);
            let ratio = if mean > 0 { slowest.computation_ns as f64 / mean as f64 } else { 1.0 };
            imbalance = Some(Imbalance {
                max_ns: slowest.computation_ns,
                mean_ns: mean,
                min_ns: min,
                ratio,
                slowest: slowest.process.clone(),
                slowest_rank: slowest.rank,
            });
        }
        let mut findings = self.findings_list();
        if let Some(im) = &imbalance
            && im.ratio >= self.options.imbalance_min_ratio
        {
            let lost = im.max_ns - im.mean_ns;
            findings.push(Finding {
                pattern: Pattern::LoadImbalance,
                title: Pattern::LoadImbalance.title(),
                category: Pattern::LoadImbalance.category(),
                rank: im.slowest_rank,
                process: im.slowest.clone(),
                location: String::new(),
                call_path: Vec::new(),
                kernel: None,
                communicator: None,
                communicator_size: None,
                communicator_ranks: None,
                time_lost_ns: lost,
                instances: 1,
                window: Window { start_ns: 0, end_ns: model.ns(model.length) },
                worst: Worst {
                    window: Window { start_ns: 0, end_ns: model.ns(model.length) },
                    time_lost_ns: lost,
                    partner_rank: None,
                },
                bytes: None,
                detail: format!(
                    "{} computes {} outside MPI, NCCL and CUDA synchronization, {:.2}x the mean of {} over {} \
                     ranks (min {}); the others wait for it",
                    im.slowest,
                    crate::numbers::human_ns(im.max_ns),
                    im.ratio,
                    crate::numbers::human_ns(im.mean_ns),
                    pool.len(),
                    crate::numbers::human_ns(im.min_ns)
                ),
            });
        }
        findings.sort_by(|a, b| b.time_lost_ns.cmp(&a.time_lost_ns).then(a.pattern.cmp(&b.pattern)));
        ranks.retain(|r| r.span_ns > 0 || r.gpu_compute_ns > 0 || r.communication_ns > 0);
        let trace_ns = model.ns(model.length);
        let run_ns = super::totals::run_ns(&ranks, trace_ns);
        let stragglers = std::mem::take(&mut self.stragglers).finish(&self);
        let timelines = std::mem::take(&mut self.timelines);
        if timelines.overflow {
            notes.push(format!(
                "no critical path: the run has more than {} region changes on its threads",
                critical::MAX_CHANGES
            ));
        }
        let critical_path = timelines.path(&self);
        Analysis {
            archive,
            options: self.options.clone(),
            events: self.events,
            trace_ns,
            run_ns,
            totals: super::totals::totals(&findings, run_ns),
            findings,
            streams,
            gpus,
            ranks,
            imbalance,
            stragglers,
            critical_path,
            messages: self.pairs,
            notes,
            program: None,
        }
    }

    fn findings_list(&mut self) -> Vec<Finding> {
        let model = self.model;
        let mut out = Vec::new();
        let findings = std::mem::take(&mut self.findings);
        for (key, agg) in findings {
            match key.pattern {
                Pattern::SyncApi if agg.instances < self.options.sync_min_calls => continue,
                Pattern::ShortKernels if agg.instances < self.options.short_kernel_min => continue,
                _ if agg.instances == 0 => continue,
                _ => {}
            }
            let (process, location) = match key.place {
                Place::Loc(l) => (Some(self.locs[l].process), self.locs[l].name.clone()),
                Place::Gpu(g) => (self.gpus[g].process, model.gpus[g].label.clone()),
            };
            let (call_path, kernel) = match key.what {
                What::Path(n) => {
                    (self.paths.regions(n).iter().map(|r| self.region_name(*r).to_owned()).collect(), None)
                }
                What::Region(r, n) => (
                    self.paths.regions(n).iter().map(|r| self.region_name(*r).to_owned()).collect(),
                    Some(self.region_name(r).to_owned()),
                ),
            };
            let communicator =
                key.comm.and_then(|c| self.defs.comms.get(&c)).map(|c| self.defs.string(c.name).to_owned());
            let members = key.comm.and_then(|c| model.comms.get(&c)).map(|c| {
                let ranks: Vec<Option<u32>> =
                    c.processes.iter().map(|p| p.and_then(|p| model.processes[p].rank)).collect();
                (ranks.len() as u64, super::totals::rank_list(&ranks, 8))
            });
            let (ws, we, wl, partner) = agg.worst;
            let worst = Worst { window: Window { start_ns: ws, end_ns: we }, time_lost_ns: wl, partner_rank: partner };
            let mut f = Finding {
                pattern: key.pattern,
                title: key.pattern.title(),
                category: key.pattern.category(),
                rank: process.and_then(|p| model.processes[p].rank),
                process: process.map_or_else(String::new, |p| model.process_label(p)),
                location,
                call_path,
                kernel,
                communicator,
                communicator_size: members.as_ref().map(|m| m.0),
                communicator_ranks: members.map(|m| m.1),
                time_lost_ns: agg.lost,
                instances: agg.instances,
                window: Window { start_ns: agg.first, end_ns: agg.last },
                worst,
                bytes: agg.bytes,
                detail: String::new(),
            };
            f.detail = super::render::detail(&f, &agg_extra(&agg));
            out.push(f);
        }
        out
    }
}

impl Describe for Pass<'_> {
    fn communicator(&self, comm: CommRef) -> Option<(&'static str, String, u64, String)> {
        let info = self.model.comms.get(&comm)?;
        let name = self.defs.comms.get(&comm).map(|c| self.defs.string(c.name).to_owned())?;
        let ranks: Vec<Option<u32>> =
            info.processes.iter().map(|p| p.and_then(|p| self.model.processes[p].rank)).collect();
        let paradigm = if info.is_nccl { "NCCL" } else { "MPI" };
        Some((paradigm, name, ranks.len() as u64, super::totals::rank_list(&ranks, 8)))
    }

    fn rank(&self, process: usize) -> Option<u32> {
        self.model.processes.get(process).and_then(|p| p.rank)
    }

    fn process(&self, process: usize) -> String {
        self.model.process_label(process)
    }

    fn location(&self, loc: usize) -> String {
        self.locs[loc].name.clone()
    }

    fn region(&self, region: RegionRef) -> String {
        self.region_name(region).to_owned()
    }

    fn ns(&self, ticks: u64) -> u64 {
        self.model.ns(ticks)
    }

    fn since_start(&self, ticks: u64) -> u64 {
        self.model.ns_since_start(ticks)
    }
}

impl critical::Names for Pass<'_> {
    fn process_of(&self, loc: usize) -> (String, Option<u32>) {
        let p = self.locs[loc].process;
        (self.model.process_label(p), self.model.processes.get(p).and_then(|i| i.rank))
    }

    fn location(&self, loc: usize) -> String {
        self.locs[loc].name.clone()
    }

    fn activity(&self, node: u32) -> String {
        let outside = || "(outside any region)".to_string();
        if node == critical::NONE {
            return outside();
        }
        self.paths.regions(node).last().map_or_else(outside, |r| self.region_name(*r).to_owned())
    }

    fn ns(&self, ticks: u64) -> u64 {
        self.model.ns(ticks)
    }
}

/// The short-kernel rule's totals, for its sentence.
pub(crate) struct Extra {
    pub all: u64,
    pub kernel_ns: u64,
    pub launch_ns: u64,
}

fn agg_extra(agg: &Agg) -> Extra {
    Extra { all: agg.all, kernel_ns: agg.kernel_ns, launch_ns: agg.launch_ns }
}

impl EventVisitor for Pass<'_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let Some(&l) = self.loc_index.get(&ev.location) else { return };
        match self.locs[l].kind {
            LocationKind::HostThread => self.host_enter(l, ev, region),
            LocationKind::GpuStream => self.stream_enter(l, ev, region),
            LocationKind::Metrics => {}
        }
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let Some(&l) = self.loc_index.get(&ev.location) else { return };
        match self.locs[l].kind {
            LocationKind::HostThread => self.host_leave(l, ev.time, region),
            LocationKind::GpuStream => self.stream_leave(l, ev.time, region),
            LocationKind::Metrics => {}
        }
    }

    fn mpi_send(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, _length: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.send(l, ev.time, receiver, comm, tag, true);
        }
    }

    fn mpi_isend(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, _len: u64, _id: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.send(l, ev.time, receiver, comm, tag, false);
        }
    }

    fn mpi_irecv_request(&mut self, ev: &EventContext<'_>, request_id: u64) {
        let Some(&l) = self.loc_index.get(&ev.location) else { return };
        let post = self.mpi_frame(l).map_or(ev.time, |i| self.locs[l].host.stack[i].enter);
        self.irecv_posts.insert((l, request_id), post);
    }

    fn mpi_request_cancelled(&mut self, ev: &EventContext<'_>, request_id: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.irecv_posts.remove(&(l, request_id));
        }
    }

    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, _length: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.recv(l, ev.time, sender, comm, tag, None);
        }
    }

    fn mpi_irecv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, _len: u64, id: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.recv(l, ev.time, sender, comm, tag, Some(id));
        }
    }

    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, collective: &otf2::Collective) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.collective_end(l, ev.time, collective);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_what_a_call_is() {
        assert!(is_sync_api("cudaStreamSynchronize") && is_sync_api("cuCtxSynchronize"));
        assert!(!is_sync_api("cudaStreamWaitEvent"));
        assert_eq!(copy_rule("cudaMemcpy"), Rule::SyncMemcpy);
        assert_eq!(copy_rule("cudaMemcpy2D"), Rule::SyncMemcpy);
        assert_eq!(copy_rule("cuMemcpyDtoH"), Rule::SyncMemcpy);
        assert_eq!(copy_rule("cudaMemcpyAsync"), Rule::None);
        assert_eq!(copy_rule("cudaMemset"), Rule::SyncMemset);
        assert_eq!(copy_rule("cuMemsetD32Async"), Rule::None);
        assert_eq!(copy_rule("cudaLaunchKernel"), Rule::None);
        assert!(is_kernel_launch("cudaLaunchKernel") && is_kernel_launch("cuLaunchKernelEx"));
        assert!(!is_kernel_launch("cudaGraphLaunch"));
        assert!(is_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
        assert!(is_nccl_kernel("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
        assert!(!is_nccl_kernel("void axpy<float>(float*, float const*, float, int)"));
    }

    #[test]
    fn call_paths_are_a_tree() {
        let mut p = CallPaths::default();
        let (a, b) = (RegionRef::from_id(1), RegionRef::from_id(2));
        let n1 = p.child(0, a);
        let n2 = p.child(n1, b);
        assert_eq!(p.child(0, a), n1);
        assert_ne!(p.child(0, b), n2);
        assert_eq!(p.regions(n2), vec![a, b]);
        assert_eq!(p.regions(0), Vec::<RegionRef>::new());
    }
}
