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

mod collectives;
mod finish;
mod gpu;
mod host;
mod messages;
mod nccl_gpu;
mod path;
mod unfinished;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use otf2::reader::{EventContext, EventVisitor, GlobalDefs, TraceReader};
use otf2::{AttributeRef, CommRef, LocationRef, RegionRef};

use super::critical::{self, Timelines};
use super::stragglers::Stragglers;
use super::{Analysis, Finding, GpuTime, Imbalance, Options, Pattern, RankTime, Window, Worst};
use crate::Result;
use crate::model::{LocationKind, Model};

use collectives::Collective;
pub(crate) use finish::Extra;
pub use gpu::is_nccl_kernel;
use gpu::{Gpu, Launch, Proc, Stream};
use host::Host;
pub(crate) use host::is_sync_api;
use messages::Msg;
#[cfg(test)]
pub(crate) use unfinished::launches_a_kernel;

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

struct Loc {
    location: LocationRef,
    kind: LocationKind,
    process: usize,
    gpu: Option<usize>,
    name: String,
    host: Host,
    stream: Stream,
}

/// The attributes the pass reads.
#[derive(Clone, Copy, Default)]
struct Attrs {
    correlation: Option<AttributeRef>,
    bytes: Option<AttributeRef>,
    src_memory: Option<AttributeRef>,
    dst_memory: Option<AttributeRef>,
    /// The merge's mark on the Leave of a call still open at its
    /// location's end ([`super::stuck`]).
    in_flight: Option<AttributeRef>,
    /// A collective's number in its communicator's order, where the
    /// flight recorder gave the older ones back.
    collective_number: Option<AttributeRef>,
    /// The kernel a launch call launched (`CUDA kernel`, the CUDA agent's)
    /// and NCCL's sequence number of a collective (`sequence`).
    kernel: Option<AttributeRef>,
    sequence: Option<AttributeRef>,
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
    /// NCCL kernels joined to their collectives, GPU clocks (stragglers).
    nccl_gpu: nccl_gpu::NcclGpu,
    /// The calls still in flight when their locations' recording ended.
    noted: super::stuck::Noted,
    /// Kernel launches whose GPU work has not come, NCCL's last
    /// collectives ([`super::unfinished`]).
    unfinished: unfinished::Tracker,
    /// Region changes and wait states per host thread (critical path).
    timelines: Timelines,
    /// The instances of the region that marks iterations.
    marks: Option<super::iterations::Marks>,
    sampled: super::sampled::Counts,
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
    let mut metric_locations = Map::default();
    let clocks = model.metric_names.values().any(|n| n == "SM clock");
    for loc in reader.locations() {
        let Some(info) = model.locations.get(&loc) else { continue };
        if info.kind == LocationKind::Metrics {
            // NVML's GPU metrics (`GPU d metrics`): the stragglers' clocks.
            if clocks
                && let Some(g) = info.gpu
                && info.name.ends_with(" metrics")
            {
                metric_locations.insert(loc, g);
                selected.push(loc);
            }
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
            "GPUTRACE::IN_FLIGHT" => &mut attrs.in_flight,
            "GPUTRACE::COLLECTIVE_NUMBER" => &mut attrs.collective_number,
            "CUDA kernel" => &mut attrs.kernel,
            "sequence" => &mut attrs.sequence,
            _ => continue,
        };
        slot.get_or_insert(a);
    }
    let pageable = defs.strings.iter().find(|(_, s)| s.as_str() == "pageable").map(|(r, _)| *r);
    let location_count = locs.len();
    let region_names = defs.regions.iter().map(|(r, def)| (*r, defs.string(def.name)));
    let marks =
        options.iterations.as_deref().and_then(|n| super::iterations::Marks::new(n, region_names, location_count));
    let mut stragglers = Stragglers::default();
    if marks.is_some() {
        stragglers.ops = Some(Vec::new());
    }
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
        stragglers,
        nccl_gpu: nccl_gpu::NcclGpu::default(),
        noted: super::stuck::Noted::default(),
        unfinished: unfinished::Tracker::default(),
        timelines: Timelines::new(location_count),
        marks,
        sampled: Default::default(),
        launches: Map::default(),
        launch_order: VecDeque::new(),
        gpus: (0..model.gpus.len()).map(|_| Gpu::default()).collect(),
        procs: (0..model.processes.len()).map(|_| Proc::default()).collect(),
        events: 0,
    };
    pass.nccl_gpu.metric_locations = metric_locations;
    let summary = reader.read_by_time(&selected, &mut pass).map_err(|e| {
        crate::Error::BadInput(format!("{}: reading the events by time: {e}", reader.anchor_path().display()))
    })?;
    pass.events = summary.events.saturating_sub(pass.nccl_gpu.metric_events);
    let mut analysis = pass.finish(reader.anchor_path().display().to_string());
    analysis.program = defs
        .regions
        .values()
        .find(|r| r.paradigm == otf2::Paradigm::MeasurementSystem && r.role == otf2::RegionRole::Artificial)
        .map(|r| defs.string(r.name).to_string());
    Ok(analysis)
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

    /// A call the merge marked as still open at the location's end.
    fn note_in_flight(&mut self, l: usize, t: u64, region: RegionRef) {
        let stack = &self.locs[l].host.stack;
        let Some(frame) = stack.iter().rposition(|f| f.region == region).map(|i| &stack[i]) else { return };
        let (enter, node) = (frame.enter, frame.node);
        let path: Vec<&str> = self.paths.regions(node).iter().map(|r| self.region_name(*r)).collect();
        let call = self.region_name(region).to_owned();
        self.noted.note(l, call, path.join(" > "), enter, t);
    }

    fn mpi_comm(&self, comm: CommRef) -> bool {
        self.model.comms.get(&comm).is_some_and(|c| !c.is_nccl && !c.is_self)
    }
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
            LocationKind::HostThread => {
                if self.attrs.in_flight.is_some_and(|a| ev.attributes.get(a).is_some()) {
                    self.note_in_flight(l, ev.time, region);
                }
                self.host_leave(l, ev.time, region)
            }
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

    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.recv(l, ev.time, sender, comm, (tag, length), None);
        }
    }

    fn mpi_irecv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, len: u64, id: u64) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            self.recv(l, ev.time, sender, comm, (tag, len), Some(id));
        }
    }

    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, collective: &otf2::Collective) {
        if let Some(&l) = self.loc_index.get(&ev.location) {
            let number = self.attrs.collective_number.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64());
            self.collective_end(l, ev.time, collective, number);
        }
    }

    fn metric(&mut self, ev: &EventContext<'_>, metric: otf2::MetricRef, values: &[otf2::MetricValue]) {
        self.nccl_metric(ev, metric, values);
    }

    fn calling_context_sample(
        &mut self,
        ev: &EventContext<'_>,
        c: otf2::CallingContextRef,
        _: u32,
        _: otf2::InterruptGeneratorRef,
    ) {
        // Counted while the thread computes: in no MPI, NCCL or sync call.
        if let Some(&l) = self.loc_index.get(&ev.location)
            && self.locs[l].kind == LocationKind::HostThread
            && self.locs[l].host.excluded_depth == 0
        {
            self.sampled.add(self.locs[l].process, c);
        }
    }
}

#[cfg(test)]
mod tests;
