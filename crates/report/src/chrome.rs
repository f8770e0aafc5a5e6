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
//! start with three decimals (ns exact).
//!
//! It streams: events are written as locations are read, never held.
//! Flow ends need no matching across locations because both ends derive
//! the same id on their own: a CUDA flow's id is (process, correlation id);
//! a message's is a hash of (communicator, sender, receiver, tag, n) — the
//! n-th send on that tuple matches the n-th receive, MPI's non-overtaking
//! rule. Streams are read before host threads, and a set of the
//! correlation ids that GPU work carries (a bitmap in 8 KiB pages) lets a
//! launch start a flow only when something on a stream will end it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::write::GzEncoder;
use otf2::reader::{EventContext, EventVisitor, GlobalDefs};
use otf2::{AttributeValue, CommRef, LocationRef, MetricRef, MetricValue, RegionRef};

use crate::model::{LocationKind, Model, RegionKind};

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// JSON events, metadata included.
    pub events: u64,
    pub slices: u64,
    pub counters: u64,
    /// Flow starts and ends written.
    pub flow_starts: u64,
    pub flow_ends: u64,
}

/// Writes the Chrome JSON of `input` to `output` (gzipped when it ends in `.gz`).
pub fn export(input: &Path, output: &Path) -> Result<ExportSummary> {
    let mut reader = super::open(input)?;
    let result = export_to(&mut reader, output);
    if result.is_err() {
        // A half-written file would look like a valid, short trace.
        let _ = std::fs::remove_file(output);
    }
    result
}

fn export_to(reader: &mut otf2::reader::TraceReader, output: &Path) -> Result<ExportSummary> {
    let file = File::create(output).with_context(|| format!("cannot create {}", output.display()))?;
    let context = || format!("writing {}", output.display());
    if output.extension().is_some_and(|e| e == "gz") {
        // The buffer in front matters: the encoder compresses each write
        // as it comes, and events are written a few bytes at a time. Fast
        // compression: the default level would cap the export well below
        // a million events per second.
        let mut sink = BufWriter::with_capacity(1 << 20, GzEncoder::new(file, Compression::fast()));
        let summary = write(reader, &mut sink).with_context(context)?;
        let encoder = sink.into_inner().map_err(|e| e.into_error()).with_context(context)?;
        encoder.finish().with_context(context)?;
        Ok(summary)
    } else {
        let mut sink = BufWriter::with_capacity(1 << 20, file);
        let summary = write(reader, &mut sink).with_context(context)?;
        sink.flush().with_context(context)?;
        Ok(summary)
    }
}

/// Where a location's events go.
#[derive(Clone, Copy)]
struct Track {
    pid: usize,
    tid: usize,
    process: usize,
    kind: LocationKind,
}

/// Writes the whole JSON document.
pub fn write(reader: &mut otf2::reader::TraceReader, out: &mut dyn Write) -> Result<ExportSummary> {
    let defs = reader.defs().clone();
    let model = Model::new(&defs);
    let mut summary = ExportSummary::default();
    writeln!(
        out,
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"exporter\":\"gputrace {}\",\"archive\":{}}},\"traceEvents\":[",
        env!("CARGO_PKG_VERSION"),
        json_string(&reader.anchor_path().display().to_string())
    )?;
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",\n")?;
        }
        Ok(())
    };

    // Processes and tracks, with names and a stable order: host threads,
    // then streams.
    for (p, info) in model.processes.iter().enumerate() {
        let name = if info.host.is_empty() { info.name.clone() } else { format!("{} ({})", info.name, info.host) };
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}",
            p + 1,
            json_string(&name)
        )?;
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{p}}}}}",
            p + 1
        )?;
        summary.events += 2;
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
        next_tid[info.process] += 1;
        let t = Track { pid: info.process + 1, tid: next_tid[info.process], process: info.process, kind: info.kind };
        tracks.insert(*loc, t);
        if info.kind == LocationKind::Metrics {
            continue;
        }
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            t.pid,
            t.tid,
            json_string(&info.name)
        )?;
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
            t.pid, t.tid, t.tid
        )?;
        summary.events += 2;
    }
    if !first {
        out.write_all(b",\n")?;
    }

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
    let names: Vec<String> = model.regions.iter().map(|r| json_string(&r.name)).collect();
    let attr_names: HashMap<otf2::AttributeRef, String> =
        defs.attributes.keys().map(|a| (*a, json_string(defs.attribute_name(*a)))).collect();
    let mut pass = Pass {
        out,
        defs: &defs,
        model: &model,
        names,
        attr_names,
        track: Track { pid: 0, tid: 0, process: 0, kind: LocationKind::HostThread },
        stack: Vec::new(),
        gpu_work: HashMap::new(),
        messages: HashMap::new(),
        my_rank: HashMap::new(),
        summary: &mut summary,
        first: true,
        error: None,
    };
    for loc in order {
        let Some(&track) = tracks.get(&loc) else { continue };
        pass.track = track;
        pass.my_rank.clear();
        let result = reader.read_location(loc, &mut pass);
        if let Some(e) = pass.error.take() {
            return Err(e.into());
        }
        result.map_err(|e| super::read_error(reader, loc, e))?;
        // Regions a location leaves open are cut at its last event by the
        // merge already; any left here are dropped rather than guessed.
        pass.stack.clear();
    }
    drop(pass);
    out.write_all(b"\n]}\n")?;
    Ok(summary)
}

struct Open {
    region: RegionRef,
    start: u64,
    args: Option<String>,
}

/// The correlation ids with GPU work, per process: a bitmap in pages of
/// 65,536 ids, so dense ids cost one bit each.
type CorrelationSet = HashMap<(usize, u32), Box<[u64; 1024]>>;

struct Pass<'a> {
    out: &'a mut dyn Write,
    defs: &'a GlobalDefs,
    model: &'a Model,
    /// JSON-quoted region and attribute names.
    names: Vec<String>,
    attr_names: HashMap<otf2::AttributeRef, String>,
    track: Track,
    stack: Vec<Open>,
    gpu_work: CorrelationSet,
    /// (comm, sender rank, receiver rank, tag) -> (sends, receives) so far.
    messages: HashMap<(CommRef, u32, u32, u32), (u64, u64)>,
    /// This location's own rank in each communicator.
    my_rank: HashMap<CommRef, Option<u32>>,
    summary: &'a mut ExportSummary,
    first: bool,
    error: Option<std::io::Error>,
}

impl Pass<'_> {
    fn ts(&self, time: u64) -> String {
        let ns = self.model.ns_since_start(time);
        format!("{}.{:03}", ns / 1000, ns % 1000)
    }

    /// Runs a write, keeping the first I/O error (visitors cannot fail).
    fn emit(&mut self, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if std::mem::take(&mut self.first) { b"" } else { b",\n" };
        let result = self.out.write_all(sep).and_then(|()| f(&mut *self.out));
        if let Err(e) = result {
            self.error = Some(e);
        }
        self.summary.events += 1;
    }

    fn args(&self, ev: &EventContext<'_>) -> Option<String> {
        if ev.attributes.is_empty() {
            return None;
        }
        let mut s = String::from("{");
        for (i, (a, v)) in ev.attributes.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let name = self.attr_names.get(&a).cloned().unwrap_or_else(|| json_string(&format!("attribute {a}")));
            s.push_str(&name);
            s.push(':');
            s.push_str(&self.value(v));
        }
        s.push('}');
        Some(s)
    }

    fn value(&self, v: AttributeValue) -> String {
        match v {
            AttributeValue::String(r) => json_string(self.defs.string(r)),
            AttributeValue::F32(f) => json_number(f.into()),
            AttributeValue::F64(f) => json_number(f),
            AttributeValue::I8(x) => x.to_string(),
            AttributeValue::I16(x) => x.to_string(),
            AttributeValue::I32(x) => x.to_string(),
            AttributeValue::I64(x) => x.to_string(),
            AttributeValue::Region(r) => json_string(self.defs.region_name(r)),
            AttributeValue::Location(l) => json_string(self.defs.location_name(l)),
            other => other.as_u64().map_or_else(|| json_string(&format!("{other:?}")), |x| x.to_string()),
        }
    }

    fn correlation(&self, ev: &EventContext<'_>) -> Option<u32> {
        let attr = self.model.attributes.correlation?;
        ev.attributes.get(attr)?.as_u64().and_then(|c| u32::try_from(c).ok())
    }

    fn flow(&mut self, start: bool, id: u64, cat: &str, time: u64) {
        let (ts, t) = (self.ts(time), self.track);
        let (ph, bp) = if start { ("s", "") } else { ("f", ",\"bp\":\"e\"") };
        let name = if cat == "cuda" { "launch" } else { "message" };
        self.emit(|o| {
            write!(
                o,
                "{{\"ph\":\"{ph}\",\"id\":{id},\"cat\":\"{cat}\",\"name\":\"{name}\",\"pid\":{},\"tid\":{},\"ts\":{ts}{bp}}}",
                t.pid, t.tid
            )
        });
        if start {
            self.summary.flow_starts += 1;
        } else {
            self.summary.flow_ends += 1;
        }
    }

    fn cuda_flow_id(&self, corr: u32) -> u64 {
        (1 << 52) | ((self.track.process as u64 & 0xfffff) << 32) | u64::from(corr)
    }

    fn own_rank(&mut self, comm: CommRef) -> Option<u32> {
        let (model, process) = (self.model, self.track.process);
        *self.my_rank.entry(comm).or_insert_with(|| {
            let info = model.comms.get(&comm)?;
            if info.is_self {
                return Some(0);
            }
            info.processes.iter().position(|p| *p == Some(process)).map(|r| r as u32)
        })
    }

    fn message(&mut self, ev: &EventContext<'_>, comm: CommRef, peer: u32, tag: u32, send: bool) {
        let Some(me) = self.own_rank(comm) else { return };
        let key = if send { (comm, me, peer, tag) } else { (comm, peer, me, tag) };
        let counts = self.messages.entry(key).or_insert((0, 0));
        let n = if send { &mut counts.0 } else { &mut counts.1 };
        let id = message_id(key.0.id(), key.1, key.2, key.3, *n);
        *n += 1;
        self.flow(send, id, "mpi", ev.time);
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
            RegionKind::Other => "other",
        }
    }
}

impl EventVisitor for Pass<'_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let args = self.args(ev);
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
        self.stack.push(Open { region, start: ev.time, args });
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let Some(depth) = self.stack.iter().rposition(|o| o.region == region) else { return };
        while self.stack.len() > depth {
            let open = self.stack.pop().expect("depth < len");
            let (ts, t) = (self.ts(open.start), self.track);
            let dur_ns = self.model.ns(ev.time.saturating_sub(open.start));
            let cat = self.category(open.region);
            let name = self.names.get(open.region.id() as usize).map_or("\"\"", String::as_str).to_owned();
            self.emit(|o| {
                write!(
                    o,
                    "{{\"ph\":\"X\",\"name\":{name},\"cat\":\"{cat}\",\"pid\":{},\"tid\":{},\"ts\":{ts},\"dur\":{}.{:03}",
                    t.pid,
                    t.tid,
                    dur_ns / 1000,
                    dur_ns % 1000
                )?;
                if let Some(a) = &open.args {
                    write!(o, ",\"args\":{a}")?;
                }
                o.write_all(b"}")
            });
            self.summary.slices += 1;
        }
    }

    fn mpi_send(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, _length: u64) {
        self.message(ev, comm, receiver, tag, true);
    }

    fn mpi_isend(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, _len: u64, _id: u64) {
        self.message(ev, comm, receiver, tag, true);
    }

    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, _length: u64) {
        self.message(ev, comm, sender, tag, false);
    }

    fn mpi_irecv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, _len: u64, _id: u64) {
        self.message(ev, comm, sender, tag, false);
    }

    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        let Some(value) = values.first() else { return };
        let metric_name = self.model.metric_names.get(&metric).map_or("metric", String::as_str);
        let location = self.defs.location_name(ev.location);
        let name = json_string(&format!("{metric_name} ({location})"));
        let v = match *value {
            MetricValue::U64(x) => x.to_string(),
            MetricValue::I64(x) => x.to_string(),
            MetricValue::F64(x) => json_number(x),
        };
        let (ts, pid) = (self.ts(ev.time), self.track.pid);
        self.emit(|o| {
            write!(o, "{{\"ph\":\"C\",\"name\":{name},\"pid\":{pid},\"ts\":{ts},\"args\":{{\"value\":{v}}}}}")
        });
        self.summary.counters += 1;
    }
}

/// A message's flow id, below 2^52 (exact in JavaScript's doubles, and
/// apart from CUDA's ids, which have bit 52 set).
fn message_id(comm: u32, sender: u32, receiver: u32, tag: u32, n: u64) -> u64 {
    let mut h = splitmix(u64::from(comm) << 32 | u64::from(tag));
    h = splitmix(h ^ (u64::from(sender) << 32 | u64::from(receiver)));
    h = splitmix(h ^ n);
    h & ((1 << 52) - 1)
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (NaN and infinities, which JSON lacks, as null).
fn json_number(x: f64) -> String {
    if x.is_finite() { format!("{x}") } else { "null".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_stable_and_below_2_pow_52() {
        let a = message_id(1, 0, 1, 5, 0);
        assert_eq!(a, message_id(1, 0, 1, 5, 0));
        assert_ne!(a, message_id(1, 0, 1, 5, 1));
        assert_ne!(a, message_id(1, 1, 0, 5, 0));
        assert!(a < 1 << 52);
        assert_eq!(json_string("a\"b\\\n\u{1}"), "\"a\\\"b\\\\\\n\\u0001\"");
    }
}
