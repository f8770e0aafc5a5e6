//! Finding the raw streams of an experiment and joining them into
//! processes.
//!
//! A process is (host, pid, start time): the streams its producers wrote
//! are joined by that identity. Its MPI stream, if any, says its rank;
//! processes without one are numbered after the MPI ranks, in start order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use gputrace_summary::{Ended, Ending};

use crate::sampled_defs::sampling_def;
pub use crate::sampled_defs::{FrameAt, PyCode};
use crate::{Error, Result};
use raw::{
    CommDef, Definition, DeviceDef, LocationKind, MetricDef, NvLinkDef, Paradigm, Problem, Producer, RawFile,
    RegionRole, SourceLoss, stream_file_name,
};

/// One stream's definitions, indexed.
#[derive(Debug, Default)]
pub struct StreamDefs {
    pub strings: HashMap<u32, String>,
    pub regions: HashMap<u32, RegionDef>,
    pub locations: HashMap<u32, (LocationKind, String)>,
    pub comms: HashMap<u32, CommDef>,
    /// Names the program gave communicators, by stream-local id.
    pub comm_names: HashMap<u32, String>,
    /// GPUs by the process's CUDA ordinal.
    pub devices: BTreeMap<u32, DeviceDef>,
    /// CUPTI context id → device ordinal.
    pub contexts: BTreeMap<u32, u32>,
    pub nvlinks: Vec<NvLinkDef>,
    pub metrics: BTreeMap<u32, MetricDef>,
    /// NCCL communicators by stream-local id.
    pub nccl_comms: BTreeMap<u32, NcclComm>,
    /// Names the program gave its threads (nvtxNameOsThread), by tid.
    pub thread_names: HashMap<u32, String>,
    /// Names the program gave CUDA objects through NVTX, by (kind, handle).
    pub cuda_names: HashMap<(raw::CudaObject, u64), String>,
    /// CUDA handles the agent saw created → (CUPTI context id, stream id).
    pub cuda_handles: HashMap<(raw::CudaObject, u64), (u32, u32)>,
    /// Why the producer recorded nothing (an Untraced record).
    pub untraced: Option<String>,
    /// CUDA graph kernel nodes made and cloned (see [`crate::graph_traffic`]).
    pub graph_nodes: Vec<GraphNode>,
    /// NCCL calls captured into CUDA graphs (see [`crate::graph_traffic`]).
    pub graph_captured: Vec<Captured>,
    /// Captured calls whose launches NCCL reported itself.
    pub graph_reported: HashSet<u64>,
    /// Locations the flight recorder cut: events given back, and the
    /// newest of them.
    pub expired: HashMap<u32, (u64, u64)>,
    /// Sampled stacks: the modules, the stack tree's nodes by id
    /// (parent, what), the Python code objects by id and the period (ns; 0
    /// when not sampled).
    pub modules: Vec<raw::Module>,
    pub frames: BTreeMap<u32, (u32, FrameAt)>,
    pub py_codes: HashMap<u32, PyCode>,
    pub sampling_period: u64,
}

/// A CUDA graph kernel node made on `thread` at `time`, or cloned from
/// `original` (non-zero).
#[derive(Debug, Clone, Copy)]
pub struct GraphNode {
    pub node: u64,
    pub original: u64,
    pub thread: u32,
    pub time: u64,
}

/// An NCCL call captured into a CUDA graph on `thread`, whose kernel
/// node was made within `start..=end`, and what each launch moves.
#[derive(Debug, Clone, Copy)]
pub struct Captured {
    pub call: u64,
    pub thread: u32,
    pub start: u64,
    pub end: u64,
    pub op: raw::CapturedOp,
}

/// A part of the program that was not traced, and why: a producer's
/// word (an Untraced record: CUPTI could not be loaded, another profiler
/// holds it) or the caller's (the program ran under nsys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotTraced {
    /// The source not traced (never [`Producer::Synthetic`]).
    pub what: Producer,
    pub why: String,
    /// The processes whose streams said so; 0 when the caller knew it.
    pub processes: usize,
}

impl NotTraced {
    /// As the run summary says it.
    pub fn for_summary(&self) -> gputrace_summary::NotTraced {
        gputrace_summary::NotTraced {
            what: self.what.title().to_string(),
            why: self.why.clone(),
            processes: self.processes,
        }
    }
}

/// Adds `fact` to `facts`, one entry per (what, why).
pub fn add_not_traced(facts: &mut Vec<NotTraced>, fact: NotTraced) {
    match facts.iter_mut().find(|f| f.what == fact.what && f.why == fact.why) {
        Some(f) => f.processes += fact.processes,
        None => facts.push(fact),
    }
}

/// An NCCL communicator as one member process saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclComm {
    pub hash: u64,
    pub nranks: u32,
    pub rank: u32,
    pub name: String,
}

/// A region as a stream defined it, names resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegionDef {
    pub name: String,
    /// The mangled name, or empty.
    pub canonical: String,
    pub paradigm: Paradigm,
    pub role: RegionRole,
    pub group: String,
}

/// A measured offset of this process's clock to the reference clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockPoint {
    pub local: u64,
    pub offset: i64,
    pub error: u64,
}

/// One traced process and its streams.
#[derive(Debug)]
pub struct Process {
    pub host: String,
    pub pid: u32,
    pub start: u64,
    pub clock_domain: u64,
    /// (monotonic, realtime) read together at the start of its first stream.
    pub clock_pair: (u64, u64),
    pub mpi: Option<(u32, u32)>,
    /// Rank in the archive: the MPI rank, or a number after all of them.
    pub rank: u32,
    pub rank_hint: Option<u32>,
    pub streams: Vec<RawFile>,
    pub defs: Vec<StreamDefs>,
    pub clock_points: Vec<ClockPoint>,
    pub dropped: u64,
    /// Events the flight recorder gave back (older than its window).
    pub expired: u64,
    /// What the sources (CUPTI, NCCL) or the producers' pipelines lost
    /// before it became events, by kind: the sum over its streams.
    pub lost: BTreeMap<SourceLoss, u64>,
    /// Every stream closed (StreamEnd) and none damaged.
    pub complete: bool,
    /// Some stream has no StreamEnd: the process ended while recording.
    pub unclosed: bool,
    /// Events that were being written when the process ended (torn, not
    /// kept).
    pub cut: u64,
    /// An MPI process that never called MPI_Finalize.
    pub no_finalize: bool,
    /// The signal that killed it, when it had time to say so, and when
    /// (its own clock).
    pub signal: Option<u32>,
    pub signal_time: Option<u64>,
    /// When the process's producers began their final flush (0: unknown).
    pub exit_started: u64,
    pub command: Vec<String>,
    /// The timer its producers read (`None`: streams older than the
    /// record, which read CLOCK_MONOTONIC).
    pub timer: Option<gputrace_clock::Timer>,
}

/// Problems met while reading, for the user.
pub type Warnings = Vec<String>;

/// What [`load`] found: the processes to merge, what was not traced, and
/// the problems met.
#[derive(Debug, Default)]
pub struct Loaded {
    pub processes: Vec<Process>,
    /// Producers that said why they recorded nothing. A process with
    /// nothing else (no location in any of its streams) is not among the
    /// processes: it would be an empty process in the archive.
    pub not_traced: Vec<NotTraced>,
    pub warnings: Warnings,
}

/// Reads every `*.gtr` file under `raw_dir` and groups them by process.
///
/// Only regular files (or links to them) are streams: anything else named
/// `*.gtr` (a FIFO, which would block the open, a device, a directory) is
/// skipped with a warning. A stream found twice (a copy of a file, whole
/// or cut short) is merged once.
pub fn load(raw_dir: &Path) -> Result<Loaded> {
    let mut warnings = Vec::new();
    let entries = std::fs::read_dir(raw_dir).map_err(|source| Error::Read { path: raw_dir.to_path_buf(), source })?;
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gtr"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(Error::NothingRecorded { dir: raw_dir.to_path_buf(), not_traced: Vec::new() });
    }
    let mut by_key: BTreeMap<(String, u32, u64), Vec<RawFile>> = BTreeMap::new();
    for path in paths {
        if let Some(what) = not_a_regular_file(&path) {
            warnings.push(format!("{} is {what}, not a raw stream; skipped", path.display()));
            continue;
        }
        match RawFile::open(&path) {
            Ok(raw) => {
                // An open slot is how a process that ended while recording
                // looks: the summary says how it ended, not a warning.
                for p in raw.problems.iter().filter(|p| p.is_damage()) {
                    warnings.push(format!("{}: {p}", path.display()));
                }
                let h = &raw.header;
                by_key.entry((h.host.clone(), h.pid, h.process_start)).or_default().push(raw);
            }
            Err(e) => warnings.push(format!("{e}; skipped")),
        }
    }
    let mut processes = Vec::new();
    let mut not_traced = Vec::new();
    for streams in by_key.into_values() {
        let p = build_process(drop_copies(streams, &mut warnings));
        for (s, d) in p.streams.iter().zip(&p.defs) {
            if let (Some(why), Some(what)) =
                (&d.untraced, raw::source::source(s.header.producer).map(|src| src.producer))
            {
                add_not_traced(&mut not_traced, NotTraced { what, why: why.clone(), processes: 1 });
            }
        }
        let untraced_only =
            p.defs.iter().all(|d| d.locations.is_empty()) && p.defs.iter().any(|d| d.untraced.is_some());
        if !untraced_only {
            processes.push(p);
        }
    }
    assign_ranks(&mut processes, &mut warnings);
    Ok(Loaded { processes, not_traced, warnings })
}

/// Removes the streams in `raw_dir` that hold nothing but why their
/// producer recorded nothing (an Untraced record; no location, no event
/// chunk, no damage), once that has been said: for the caller that
/// removes an experiment directory where nothing was recorded. The TSC
/// maps of hosts (`gputrace_clock::host_map`) go too: they were only for the
/// streams. Anything else is left as it is.
pub fn remove_untraced_only(raw_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(raw_dir) else { return };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        // The maps, and the recording windows' switches (`<host>.<pid>.window`).
        let shared = path.file_name().and_then(|n| n.to_str()).is_some_and(gputrace_clock::host_map::is_map_file)
            || path.extension().is_some_and(|x| x == "window");
        if shared && not_a_regular_file(&path).is_none() {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if path.extension().is_none_or(|x| x != "gtr") || not_a_regular_file(&path).is_some() {
            continue;
        }
        let Ok(raw) = RawFile::open(&path) else { continue };
        let untraced = raw.definitions.iter().any(|d| matches!(d, Definition::Untraced { .. }));
        let located = raw.definitions.iter().any(|d| matches!(d, Definition::Location { .. }));
        if untraced && !located && raw.chunks.is_empty() && raw.problems.is_empty() {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// What `path` is when it is not a regular file (following links): "a
/// FIFO", "a directory", ... Checked before opening, because opening a
/// FIFO for reading blocks until a writer comes.
fn not_a_regular_file(path: &Path) -> Option<String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Some(format!("unreadable ({e})")),
    };
    if meta.file_type().is_file() {
        return None;
    }
    let what = gputrace_clock::file_kind(&meta);
    let link = path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
    Some(if link { format!("a link to {what}") } else { what.to_string() })
}

/// Keeps one stream per producer of a process. Each process writes one
/// stream per producer, so a second one with the same identity (host,
/// pid, start time, producer) is a copy: the one holding the other (the
/// longer, when one is a prefix of the other) is merged, once.
fn drop_copies(mut streams: Vec<RawFile>, warnings: &mut Warnings) -> Vec<RawFile> {
    // Most complete first, so the kept one is the first of its producer;
    // of equals, the one under the name its producer gave it.
    let key = |s: &RawFile| {
        let h = &s.header;
        let own_name = s.path().file_name().is_some_and(|n| *n == *stream_file_name(&h.host, h.pid, h.producer));
        (h.producer, std::cmp::Reverse((s.chunks.len(), s.definitions.len(), s.size)), !own_name, s.path().to_owned())
    };
    streams.sort_by_cached_key(key);
    let mut kept: Vec<RawFile> = Vec::new();
    for s in streams {
        let Some(twin) = kept.iter().find(|k| k.header.producer == s.header.producer) else {
            kept.push(s);
            continue;
        };
        let h = &s.header;
        let who = format!("the {} stream of pid {} on {}", h.producer.name(), h.pid, h.host);
        if contains(twin, &s) {
            warnings.push(format!(
                "{} is a copy of {} ({who}): merged once",
                s.path().display(),
                twin.path().display()
            ));
        } else {
            warnings.push(format!(
                "{} and {} both hold {who} but differ: only the first is merged",
                twin.path().display(),
                s.path().display()
            ));
        }
    }
    kept
}

/// Whether every definition and event chunk of `part` is in `whole`: the
/// same file, or the same file cut short.
fn contains(whole: &RawFile, part: &RawFile) -> bool {
    whole.header == part.header
        && part.definitions.len() <= whole.definitions.len()
        && whole.definitions[..part.definitions.len()] == part.definitions[..]
        && part.chunks.len() <= whole.chunks.len()
        && whole.chunks[..part.chunks.len()] == part.chunks[..]
}

fn build_process(mut streams: Vec<RawFile>) -> Process {
    streams.sort_by_key(|s| s.header.producer);
    let first = &streams[0].header;
    let mut p = Process {
        host: first.host.clone(),
        pid: first.pid,
        start: first.process_start,
        clock_domain: first.clock_domain,
        clock_pair: (first.monotonic_ns, first.realtime_ns),
        mpi: None,
        rank: 0,
        rank_hint: streams.iter().find_map(|s| s.header.rank_hint),
        streams: Vec::new(),
        defs: Vec::new(),
        clock_points: Vec::new(),
        dropped: 0,
        expired: 0,
        lost: BTreeMap::new(),
        complete: true,
        unclosed: false,
        cut: 0,
        no_finalize: false,
        signal: None,
        signal_time: None,
        exit_started: 0,
        command: first.command.clone(),
        timer: None,
    };
    for s in &streams {
        let d = stream_defs(&mut p, s);
        p.defs.push(d);
    }
    p.clock_points.sort_by_key(|c| c.local);
    p.streams = streams;
    p
}

/// The definitions of one of `p`'s streams, and what they tell of the
/// process (its rank, clock points, how it ended, what it lost).
fn stream_defs(p: &mut Process, s: &RawFile) -> StreamDefs {
    let mut d = StreamDefs::default();
    let mut ended = false;
    // Each Dropped record counts all that its stream lost so far.
    let mut dropped = 0;
    // And each SourceLost record, what its kind lost so far.
    let mut lost: BTreeMap<SourceLoss, u64> = BTreeMap::new();
    for def in &s.definitions {
        match def {
            Definition::String { id, value } => {
                d.strings.insert(*id, value.clone());
            }
            Definition::MpiRank { rank, size } => p.mpi = Some((*rank, *size)),
            Definition::ClockSync { local, offset, error } => {
                p.clock_points.push(ClockPoint { local: *local, offset: *offset, error: *error })
            }
            Definition::Dropped { count, .. } => dropped = dropped.max(*count),
            Definition::SourceLost { what, count } => {
                let n = lost.entry(*what).or_default();
                *n = (*n).max(*count);
            }
            Definition::StreamEnd { exit_started, .. } => {
                ended = true;
                p.exit_started = p.exit_started.max(*exit_started);
            }
            Definition::Signal { signal, time } => {
                p.signal = Some(*signal);
                p.signal_time = Some(*time);
            }
            Definition::CommName { id, name } => {
                d.comm_names.insert(*id, name.clone());
            }
            Definition::ThreadName { tid, name } => {
                d.thread_names.insert(*tid, name.clone());
            }
            Definition::CudaName { kind, handle, name } => {
                d.cuda_names.insert((*kind, *handle), name.clone());
            }
            Definition::CudaHandle { kind, handle, context, stream } => {
                d.cuda_handles.insert((*kind, *handle), (*context, *stream));
            }
            Definition::Comm(c) => {
                d.comms.insert(c.id, c.clone());
            }
            Definition::Device(dev) => {
                d.devices.insert(dev.id, dev.clone());
            }
            Definition::Context { id, device } => {
                d.contexts.insert(*id, *device);
            }
            Definition::NvLink(l) => d.nvlinks.push(l.clone()),
            Definition::Metric(m) => {
                d.metrics.insert(m.id, m.clone());
            }
            Definition::NcclComm { id, comm_hash, nranks, rank, name } => {
                let c = NcclComm { hash: *comm_hash, nranks: *nranks, rank: *rank, name: name.clone() };
                d.nccl_comms.insert(*id, c);
            }
            Definition::Untraced { reason } => d.untraced = Some(reason.clone()),
            &Definition::GraphNode { node, original, thread, time } => {
                d.graph_nodes.push(GraphNode { node, original, thread, time })
            }
            &Definition::GraphCaptured { call, thread, start, end, op } => {
                d.graph_captured.push(Captured { call, thread, start, end, op })
            }
            Definition::GraphLaunchReported { call } => {
                d.graph_reported.insert(*call);
            }
            Definition::Timer(t) => p.timer = p.timer.or(Some(*t)),
            &Definition::Expired { location, events, until } => {
                let e = d.expired.entry(location).or_default();
                *e = (e.0.max(events), e.1.max(until));
            }
            Definition::Module(_)
            | Definition::Frame { .. }
            | Definition::PyFrame { .. }
            | Definition::PyCode { .. }
            | Definition::SamplingPeriod { .. } => sampling_def(&mut d, def),
            Definition::Region { .. } | Definition::Location { .. } => {}
        }
    }
    // Regions and locations name strings, which may be defined later
    // in the file than the record that uses them.
    let name = |id: &u32| d.strings.get(id).cloned().unwrap_or_default();
    for def in &s.definitions {
        match def {
            Definition::Region { id, name: n, canonical, paradigm, role, group } => {
                let r = RegionDef {
                    name: name(n),
                    canonical: if *canonical == 0 { String::new() } else { name(canonical) },
                    paradigm: *paradigm,
                    role: *role,
                    group: name(group),
                };
                d.regions.insert(*id, r);
            }
            Definition::Location { id, kind, name: n } => {
                d.locations.insert(*id, (*kind, name(n)));
            }
            _ => {}
        }
    }
    p.dropped += dropped;
    p.expired += d.expired.values().map(|e| e.0).sum::<u64>();
    for (what, n) in lost.into_iter().filter(|(_, n)| *n > 0) {
        *p.lost.entry(what).or_default() += n;
    }
    p.unclosed |= !ended;
    p.complete &= ended && !s.problems.iter().any(Problem::is_damage);
    p.cut += s
        .problems
        .iter()
        .map(|pr| if let Problem::OpenSlot { cut, .. } = pr { u64::from(*cut) } else { 0 })
        .sum::<u64>();
    if s.header.producer == Producer::Mpi {
        p.no_finalize = !d.regions.values().any(|r| r.name == "MPI_Finalize");
    }
    d
}

impl Process {
    /// The local times of its first and last events (0 without any), from
    /// the chunk headers.
    pub fn event_span(&self) -> (u64, u64) {
        let chunks = || self.streams.iter().flat_map(|s| s.chunks.iter());
        (chunks().map(|c| c.header.min_time).min().unwrap_or(0), chunks().map(|c| c.header.max_time).max().unwrap_or(0))
    }

    /// How the process ended, when not normally or with events lost: for
    /// the summary.
    pub fn ending(&self) -> Option<Ending> {
        let how = match (self.signal, self.unclosed) {
            (Some(sig), _) => Ended::Signal(sig),
            (None, true) => Ended::Unclosed,
            // (Its definition may be among what a full disk lost.)
            (None, false) if self.no_finalize && self.mpi.is_some() && self.dropped == 0 => Ended::NoFinalize,
            (None, false) if !self.complete => Ended::Damaged,
            (None, false) if self.dropped > 0 || self.cut > 0 => Ended::Finished,
            (None, false) => return None,
        };
        Some(Ending {
            rank: self.rank,
            pid: self.pid,
            host: self.host.clone(),
            how,
            cut: self.cut,
            dropped: self.dropped,
        })
    }
}

/// MPI ranks as recorded; the others follow in (rank hint, start) order.
fn assign_ranks(processes: &mut [Process], warnings: &mut Warnings) {
    let mut seen: HashMap<u32, usize> = HashMap::new();
    let mut next = processes.iter().filter_map(|p| p.mpi.map(|(r, _)| r + 1)).max().unwrap_or(0);
    let mut order: Vec<usize> = (0..processes.len()).collect();
    order.sort_by_key(|&i| (processes[i].mpi.is_none(), processes[i].rank_hint, processes[i].start, processes[i].pid));
    for i in order {
        let p = &mut processes[i];
        match p.mpi {
            Some((r, _)) if !seen.contains_key(&r) => {
                p.rank = r;
                seen.insert(r, i);
            }
            Some((r, _)) => {
                warnings.push(format!(
                    "two processes claim MPI rank {r} (pid {} on {}); the second is numbered {next}",
                    p.pid, p.host
                ));
                p.rank = next;
                next += 1;
            }
            None => {
                p.rank = next;
                next += 1;
            }
        }
    }
    processes.sort_by_key(|p| p.rank);
}

#[cfg(test)]
mod tests;
