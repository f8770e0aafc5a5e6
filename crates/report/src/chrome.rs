//! `gputrace export --format chrome`: the archive as Chrome trace-event
//! JSON, which Perfetto UI and chrome://tracing open.
//!
//! Mapping: a process ("pid") per OTF2 process (MPI rank), a track ("tid")
//! per host thread and per GPU stream, named by `process_name` /
//! `thread_name` metadata events; a complete event ("X") per region, its
//! Enter's attributes as args; counter events ("C") for metrics (NVLink
//! bytes); flow events ("s" → "f", binding to the enclosing slice) from a
//! CUDA API call to the kernel or copy with its correlation id, and from
//! each MPI (or NCCL) send to its receive. Times are µs since the trace's
//! start, exact to the ns (see `Micros`). Every event is a serde type
//! that serde_json writes: no hand-made escaping.
//!
//! It streams: events are written as locations are read, never held.
//! A CUDA flow needs no matching across locations because both ends
//! derive its id, (process, correlation id), on their own. Streams are
//! read before host threads, and a set of the correlation ids that GPU
//! work carries (a bitmap in 8 KiB pages) lets a launch start a flow only
//! when something on a stream will end it. Messages are paired by the
//! analysis pass, which reads the archive by time (`analyze::replay`): a
//! receive gets the send MPI gave it — the n-th send on (communicator,
//! sender, receiver, tag) in time over the sender's threads, the n-th
//! receive in time over the receiver's — and both ends of a flow are
//! written when the pair is known. Counted location by location instead,
//! a process's second thread took the sends of its first one's later
//! messages: arrows that ended before they started.

use crate::output::OutputFile;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{Error, Result};
use flate2::Compression;
use flate2::write::GzEncoder;
use otf2::reader::{EventContext, EventVisitor, GlobalDefs};
use otf2::{
    AttributeRef, AttributeValue, CallingContextRef, InterruptGeneratorRef, LocationRef, MetricRef, MetricValue,
    RegionRef,
};

use crate::model::{LocationKind, Model, RegionKind};
use crate::window::{Cut, Window};

use self::format::{Args, CounterArgs, Event, MarkArgs, MetaArgs, Micros, Number, OtherData, SampleArgs};

mod format;

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// JSON events, metadata included.
    pub events: u64,
    pub slices: u64,
    /// Instances of `gputrace analyze`'s findings, on analysis tracks.
    pub marked: u64,
    pub counters: u64,
    /// Sampled call stacks, as instants on their threads.
    pub samples: u64,
    /// Flow starts and ends written.
    pub flow_starts: u64,
    pub flow_ends: u64,
}

/// Writes the Chrome JSON of `input` to `output` (gzipped when it ends in `.gz`).
/// Only what is inside `window` is written (see [`crate::window`]):
/// regions clipped at its edges, messages whose send and receive are both
/// inside, analysis instances clipped; times stay those of the archive.
pub fn export(input: &Path, output: &Path, window: &Window) -> Result<ExportSummary> {
    let mut reader = super::open(input)?;
    // Checked before the output is made.
    let cut = window.resolve(&Model::new(reader.defs()))?;
    export_to(&mut reader, output, &cut)
}

fn export_to(reader: &mut otf2::reader::TraceReader, output: &Path, cut: &Cut) -> Result<ExportSummary> {
    // A new file renamed into place when complete: a failed export leaves
    // no half-written file (it would look like a valid, short trace) and
    // an existing one as it was; a link at `output` is replaced, never
    // written through.
    let mut file = OutputFile::create(output).map_err(|source| Error::Create { path: output.to_path_buf(), source })?;
    let context = Error::writing(output);
    let written = if output.extension().is_some_and(|e| e == "gz") {
        // The buffer in front matters: the encoder compresses each write
        // as it comes, and events are written a few bytes at a time. Fast
        // compression: the default level would cap the export well below
        // a million events per second.
        let mut sink = BufWriter::with_capacity(1 << 20, GzEncoder::new(&mut file, Compression::fast()));
        write(reader, &mut sink, cut).and_then(|summary| {
            let encoder = sink.into_inner().map_err(|e| e.into_error())?;
            encoder.finish()?;
            Ok(summary)
        })
    } else {
        let mut sink = BufWriter::with_capacity(1 << 20, &mut file);
        write(reader, &mut sink, cut).and_then(|summary| {
            sink.flush()?;
            Ok(summary)
        })
    };
    let summary = written.map_err(context)?;
    file.commit().map_err(|e| Error::writing(output)(e.into()))?;
    Ok(summary)
}

/// Where a location's events go.
#[derive(Clone, Copy)]
struct Track {
    pid: usize,
    tid: usize,
    process: usize,
    kind: LocationKind,
}

/// The `traceEvents` array as it is written: one event a line, the first
/// I/O error kept (visitors cannot fail).
struct Events<'a, W> {
    out: &'a mut W,
    first: bool,
    error: Option<std::io::Error>,
    written: u64,
}

impl<W: Write> Events<'_, W> {
    fn emit(&mut self, event: &Event<'_>) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if std::mem::take(&mut self.first) { b"" } else { b",\n" };
        let result = self.out.write_all(sep).and_then(|()| Ok(serde_json::to_writer(&mut *self.out, event)?));
        if let Err(e) = result {
            self.error = Some(e);
        }
        self.written += 1;
    }

    fn check(&mut self) -> std::io::Result<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// Writes the whole JSON document.
/// Generic in the writer: serde_json writes an event in a dozen small
/// pieces, each a call through a `dyn Write` otherwise (20% of the time).
pub fn write<W: Write>(reader: &mut otf2::reader::TraceReader, out: &mut W, cut: &Cut) -> Result<ExportSummary> {
    let defs = reader.defs().clone();
    let model = Model::new(&defs);
    let exporter = format!("gputrace {}", env!("CARGO_PKG_VERSION"));
    let archive = reader.anchor_path().display().to_string();
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut *out, &OtherData { exporter: &exporter, archive: &archive })?;
    out.write_all(b",\"traceEvents\":[\n")?;
    let mut events = Events { out, first: true, error: None, written: 0 };

    // Processes and tracks, with names and a stable order: host threads,
    // then streams.
    for (p, info) in model.processes.iter().enumerate() {
        if !cut.keeps_process(p) {
            continue;
        }
        let name = if info.host.is_empty() { info.name.clone() } else { format!("{} ({})", info.name, info.host) };
        let pid = p + 1;
        events.emit(&Event::Meta { name: "process_name", pid, tid: None, args: MetaArgs::Name { name: &name } });
        events.emit(&Event::Meta {
            name: "process_sort_index",
            pid,
            tid: None,
            args: MetaArgs::SortIndex { sort_index: p },
        });
    }
    let mut order: Vec<LocationRef> = reader.locations();
    order.sort_by_key(|l| {
        let kind = model.locations.get(l).map(|i| i.kind);
        (kind != Some(LocationKind::HostThread), *l)
    });
    let mut tracks: HashMap<LocationRef, Track> = HashMap::new();
    let mut next_tid = vec![0usize; model.processes.len()];
    for loc in &order {
        let Some(info) = model.locations.get(loc) else { continue };
        if !cut.keeps_process(info.process) {
            continue;
        }
        next_tid[info.process] += 1;
        let t = Track { pid: info.process + 1, tid: next_tid[info.process], process: info.process, kind: info.kind };
        tracks.insert(*loc, t);
        if info.kind == LocationKind::Metrics {
            continue;
        }
        let (pid, tid) = (t.pid, Some(t.tid));
        events.emit(&Event::Meta { name: "thread_name", pid, tid, args: MetaArgs::Name { name: &info.name } });
        events.emit(&Event::Meta {
            name: "thread_sort_index",
            pid,
            tid,
            args: MetaArgs::SortIndex { sort_index: t.tid },
        });
    }
    events.check()?;
    let mut summary = ExportSummary::default();
    let mut analysis = AnalysisTracks {
        events: &mut events,
        model: &model,
        tracks: &tracks,
        next_tid: &mut next_tid,
        analysis_tracks: HashMap::new(),
        summary: &mut summary,
        cut,
    };
    analysis.run(reader.anchor_path())?;

    // Events: streams first (they mark the correlation ids with GPU work),
    // then host threads, then metric locations.
    order.sort_by_key(|l| {
        let kind = model.locations.get(l).map(|i| i.kind);
        let rank = match kind {
            Some(LocationKind::GpuStream) => 0,
            Some(LocationKind::HostThread) => 1,
            _ => 2,
        };
        (rank, *l)
    });
    let mut pass = Pass {
        events,
        defs: &defs,
        model: &model,
        track: Track { pid: 0, tid: 0, process: 0, kind: LocationKind::HostThread },
        stack: Vec::new(),
        gpu_work: HashMap::new(),
        carried: HashMap::new(),
        stacks: HashMap::new(),
        summary,
    };
    for loc in order {
        let Some(&track) = tracks.get(&loc) else { continue };
        pass.track = track;
        pass.carried.clear();
        let result = cut.read_location(reader, loc, &mut pass);
        pass.events.check()?;
        result.map_err(|e| super::read_error(reader, loc, e))?;
        // Regions a location leaves open are cut at its last event by the
        // merge already; any left here are dropped rather than guessed.
        pass.stack.clear();
    }
    let Pass { events, mut summary, .. } = pass;
    summary.events = events.written;
    events.out.write_all(b"\n]}\n")?;
    Ok(summary)
}

/// The pass by time (`analyze::replay`): `gputrace analyze`'s instances
/// as slices on a track "analysis: <where>" per process and place
/// (thread, stream or GPU) that lost time, one slice per waiting window
/// (instances of one place do not overlap: a thread waits in one call at
/// a time, a GPU is idle once at a time); and each message, paired there,
/// as a flow from its send to its receive.
struct AnalysisTracks<'a, 'w, W> {
    events: &'a mut Events<'w, W>,
    model: &'a Model,
    tracks: &'a HashMap<LocationRef, Track>,
    next_tid: &'a mut [usize],
    /// (process, place) -> its analysis track.
    analysis_tracks: HashMap<(usize, String), usize>,
    summary: &'a mut ExportSummary,
    /// The window: instances clipped to it, messages inside it.
    cut: &'a Cut,
}

impl<W: Write> AnalysisTracks<'_, '_, W> {
    fn run(&mut self, anchor: &Path) -> Result<()> {
        let mut reader = super::open(anchor)?;
        let options = crate::analyze::Options::default();
        crate::analyze::replay::run(&mut reader, &options, self)?;
        Ok(self.events.check()?)
    }

    fn track_of(&mut self, process: usize, location: &str) -> Option<usize> {
        if let Some(&tid) = self.analysis_tracks.get(&(process, location.to_owned())) {
            return Some(tid);
        }
        let next = self.next_tid.get_mut(process)?;
        *next += 1;
        let tid = *next;
        self.analysis_tracks.insert((process, location.to_owned()), tid);
        let name = format!("analysis: {location}");
        let (pid, tid_some) = (process + 1, Some(tid));
        self.events.emit(&Event::Meta {
            name: "thread_name",
            pid,
            tid: tid_some,
            args: MetaArgs::Name { name: &name },
        });
        self.events.emit(&Event::Meta {
            name: "thread_sort_index",
            pid,
            tid: tid_some,
            args: MetaArgs::SortIndex { sort_index: tid },
        });
        Some(tid)
    }
}

impl<W: Write> crate::analyze::Sink for AnalysisTracks<'_, '_, W> {
    fn instance(&mut self, i: &crate::analyze::Instance) {
        let start = i.window.start_ns.max(self.cut.start_ns);
        let end = i.window.end_ns.min(self.cut.end_ns);
        let outside = i.window.end_ns < self.cut.start_ns || i.window.start_ns > self.cut.end_ns;
        if outside || !self.cut.keeps_process(i.process) {
            return;
        }
        let Some(tid) = self.track_of(i.process, &i.location) else { return };
        let ts = Micros(start);
        let dur = Micros(end.saturating_sub(start));
        let args = MarkArgs {
            time_lost: i.time_lost_ns,
            waited_for: i.partner_rank.map(|r| format!("rank {r}")),
            call: &i.what,
        };
        let pid = i.process + 1;
        self.events.emit(&Event::Marked { name: i.pattern.title(), cat: "analysis", pid, tid, ts, dur, args });
        self.summary.marked += 1;
    }

    fn message(&mut self, pair: &crate::analyze::MessagePair) {
        let (Some(from), Some(to)) = (self.tracks.get(&pair.sender), self.tracks.get(&pair.receiver)) else { return };
        if !self.cut.contains(pair.sent) || !self.cut.contains(pair.received) {
            return;
        }
        // The pairs in the order they were completed: ids below 2^52
        // (exact in JavaScript's doubles), apart from CUDA's (bit 52 set).
        let id = self.summary.flow_starts & ((1 << 52) - 1);
        let (cat, name) = ("mpi", "message");
        let ts = Micros(self.model.ns_since_start(pair.sent));
        self.events.emit(&Event::FlowStart { id, cat, name, pid: from.pid, tid: from.tid, ts });
        let ts = Micros(self.model.ns_since_start(pair.received));
        self.events.emit(&Event::FlowEnd { id, cat, name, pid: to.pid, tid: to.tid, ts, bp: "e" });
        self.summary.flow_starts += 1;
        self.summary.flow_ends += 1;
    }
}

struct Open {
    region: RegionRef,
    start: u64,
    attributes: Vec<(AttributeRef, AttributeValue)>,
}

/// The correlation ids with GPU work, per process: a bitmap in pages of
/// 65,536 ids, so dense ids cost one bit each.
type CorrelationSet = HashMap<(usize, u32), Box<[u64; 1024]>>;

struct Pass<'a, W> {
    events: Events<'a, W>,
    defs: &'a GlobalDefs,
    model: &'a Model,
    track: Track,
    stack: Vec<Open>,
    gpu_work: CorrelationSet,
    /// The attributes of each region's last Enter on this location: an
    /// attribute an Enter lacks has the value it had there (the merge
    /// writes a repeating launch configuration or memory kind once).
    carried: HashMap<RegionRef, Vec<(AttributeRef, AttributeValue)>>,
    /// Per sampled calling context: (innermost function, call path, line).
    stacks: HashMap<CallingContextRef, (String, String, Option<String>)>,
    summary: ExportSummary,
}

impl<W: Write> Pass<'_, W> {
    fn ts(&self, time: u64) -> Micros {
        Micros(self.model.ns_since_start(time))
    }

    fn correlation(&self, ev: &EventContext<'_>) -> Option<u32> {
        let attr = self.model.attributes.correlation?;
        ev.attributes.get(attr)?.as_u64().and_then(|c| u32::try_from(c).ok())
    }

    fn flow(&mut self, start: bool, id: u64, cat: &'static str, time: u64) {
        let (ts, t) = (self.ts(time), self.track);
        let name = if cat == "cuda" { "launch" } else { "message" };
        let (pid, tid) = (t.pid, t.tid);
        if start {
            self.events.emit(&Event::FlowStart { id, cat, name, pid, tid, ts });
            self.summary.flow_starts += 1;
        } else {
            self.events.emit(&Event::FlowEnd { id, cat, name, pid, tid, ts, bp: "e" });
            self.summary.flow_ends += 1;
        }
    }
    fn cuda_flow_id(&self, corr: u32) -> u64 {
        (1 << 52) | ((self.track.process as u64 & 0xfffff) << 32) | u64::from(corr)
    }

    fn category(&self, region: RegionRef) -> &'static str {
        let kind = self.model.region(region).map_or(RegionKind::Other, |r| {
            if self.track.kind == LocationKind::GpuStream { r.on_stream } else { r.on_host }
        });
        match kind {
            RegionKind::Kernel => "kernel",
            RegionKind::Copy(_) => "memcpy",
            RegionKind::Memset => "memset",
            RegionKind::Sync => "sync",
            RegionKind::CudaApi => "cuda_api",
            RegionKind::Mpi => "mpi",
            RegionKind::Nccl => "nccl",
            RegionKind::Nvtx => "nvtx",
            RegionKind::Graph => "graph",
            RegionKind::CudaMemory => "cuda_memory",
            RegionKind::Other => "other",
        }
    }
}

impl<W: Write> EventVisitor for Pass<'_, W> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let mut attributes: Vec<(AttributeRef, AttributeValue)> = ev.attributes.iter().collect();
        if self.track.kind == LocationKind::GpuStream {
            let last = self.carried.entry(region).or_default();
            for &(a, v) in last.iter() {
                if !attributes.iter().any(|(b, _)| *b == a) {
                    attributes.push((a, v));
                }
            }
            last.clone_from(&attributes);
        }
        if let Some(corr) = self.correlation(ev) {
            let key = (self.track.process, corr >> 16);
            let (word, bit) = ((corr & 0xffff) as usize / 64, corr % 64);
            if self.track.kind == LocationKind::GpuStream {
                self.gpu_work.entry(key).or_insert_with(|| Box::new([0; 1024]))[word] |= 1 << bit;
                self.flow(false, self.cuda_flow_id(corr), "cuda", ev.time);
            } else if self.gpu_work.get(&key).is_some_and(|page| page[word] & (1 << bit) != 0) {
                self.flow(true, self.cuda_flow_id(corr), "cuda", ev.time);
            }
        }
        self.stack.push(Open { region, start: ev.time, attributes });
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let Some(depth) = self.stack.iter().rposition(|o| o.region == region) else { return };
        while self.stack.len() > depth {
            let open = self.stack.pop().expect("depth < len");
            let (ts, t) = (self.ts(open.start), self.track);
            let dur = Micros(self.model.ns(ev.time.saturating_sub(open.start)));
            let cat = self.category(open.region);
            let name = self.model.regions.get(open.region.id() as usize).map_or("", |r| r.name.as_str());
            let args = (!open.attributes.is_empty()).then_some(Args { defs: self.defs, attributes: &open.attributes });
            self.events.emit(&Event::Slice { name, cat, pid: t.pid, tid: t.tid, ts, dur, args });
            self.summary.slices += 1;
        }
    }

    fn calling_context_sample(
        &mut self,
        ev: &EventContext<'_>,
        c: CallingContextRef,
        _: u32,
        _: InterruptGeneratorRef,
    ) {
        let (defs, ts, t) = (self.defs, self.ts(ev.time), self.track);
        let (name, stack, source) = self.stacks.entry(c).or_insert_with(|| stack_of(defs, c));
        let args = SampleArgs { stack, source: source.as_deref() };
        self.events.emit(&Event::Sample { name, cat: "sample", pid: t.pid, tid: t.tid, ts, s: "t", args });
        self.summary.samples += 1;
    }

    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        let Some(value) = values.first() else { return };
        let metric_name = self.model.metric_names.get(&metric).map_or("metric", String::as_str);
        let location = self.defs.location_name(ev.location);
        let name = format!("{metric_name} ({location})");
        let value = match *value {
            MetricValue::U64(x) => Number::U64(x),
            MetricValue::I64(x) => Number::I64(x),
            MetricValue::F64(x) => Number::F64(x),
        };
        let (ts, pid) = (self.ts(ev.time), self.track.pid);
        self.events.emit(&Event::Counter { name: &name, pid, ts, args: CounterArgs { value } });
        self.summary.counters += 1;
    }
}

/// A calling context's innermost function, its call path outermost first
/// (`main > hot_a > spin`), and the innermost frame's `file:line`.
fn stack_of(defs: &otf2::reader::GlobalDefs, c: CallingContextRef) -> (String, String, Option<String>) {
    let name = |r: RegionRef| defs.regions.get(&r).map_or("?", |d| defs.string(d.name)).to_string();
    let Some(first) = defs.calling_contexts.get(&c) else { return ("?".into(), "?".into(), None) };
    let source = crate::names::source_line(defs, first);
    let mut frames = vec![name(first.region)];
    let mut up = first.parent;
    // Bounded: a malformed archive's parents could loop.
    while let Some(p) = up.and_then(|p| defs.calling_contexts.get(&p))
        && frames.len() < 256
    {
        frames.push(name(p.region));
        up = p.parent;
    }
    let innermost = frames[0].clone();
    frames.reverse();
    (innermost, frames.join(" > "), source)
}
