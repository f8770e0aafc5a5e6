//! gputrace's merge: an experiment's raw streams into one OTF2 archive
//! and its run summary (a [`RunSummary`], which the `report` crate
//! renders).
//!
//! 1. [`inputs`] reads every stream's header and definitions (event chunks
//!    are only indexed) and joins the streams of each process;
//! 2. [`clock`] puts every process on rank 0's clock, and [`correct`]
//!    refines it by the MPI messages when the job spans several hosts;
//! 3. [`layout`] defines the archive's system tree, locations, regions and
//!    communicators;
//! 4. [`write`] streams each location's events through its [`timeline`]
//!    into a [`Sink`] — the archive's event writer, the summary's
//!    [`Counters`] and the caller's [`Extra`] sink (the Cube profile) —
//!    one location at a time, so memory does not grow with the trace.
//!
//! A library: it prints nothing (warnings and progress go to the caller's
//! [`Observer`]) and knows nothing of the command or of the processes
//! that wrote the streams. It depends on `raw`, `otf2` (and never on the
//! in-process `runtime` or a producer).

pub mod clock;
pub mod correct;
mod error;
pub mod inputs;
pub mod layout;
pub mod sink;
pub mod summary;
pub mod timeline;
pub mod write;
pub mod writers;

use std::path::{Path, PathBuf};
use std::time::Instant;

use otf2::ArchiveWriter;

use clock::{ClockMap, clock_maps};
pub use error::{Error, Result};
use gputrace_summary::Counters;
use gputrace_summary::RunSummary;
use inputs::Process;
pub use inputs::{NotTraced, Part};
pub use sink::{Extra, Record, Sink, Work};
pub use write::Repairs;

/// What to merge, and where to.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// The directory of raw streams (`*.gtr`).
    pub raw_dir: &'a Path,
    /// Where the archive goes; `None`: only the summary is made.
    pub archive: Option<Target<'a>>,
    /// What the caller knows was not traced, and why (the program ran
    /// under nsys; `GPUTRACE_CUDA_ENABLE=no`): said with what the streams
    /// say, in the summary or in [`Error::NothingRecorded`].
    pub not_traced: &'a [NotTraced],
    /// When the traced program ended, as its launcher saw it ([`gputrace_clock::now`]'s
    /// clock): the summary's time to the archive runs from there. Without
    /// it, from the last process's exit on this host.
    pub program_ended: Option<u64>,
    /// Whether the MPI processes recorded all their communication (the
    /// point-to-point, collective and non-blocking groups were on): the
    /// archive's `OTF2::MPI_COMMUNICATION_COMPLETE`, false too when a
    /// process dropped events.
    pub mpi_complete: bool,
    /// Threads that write locations at once ([`jobs`] for the default):
    /// 1 writes them one after the other on the calling thread.
    pub jobs: usize,
    /// The most sends and receives between hosts the clock correction
    /// reads ([`correct::MAX_MESSAGES`] but in tests).
    pub max_correction_messages: u64,
}

/// The number of threads a merge uses by default: the cores this process
/// may run on.
pub fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// An archive to write: `dir/name.otf2`, `dir/name.def`, `dir/name/`.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub dir: &'a Path,
    pub name: &'a str,
    /// Replace an archive that is there (else [`Error::ArchiveExists`]).
    pub force: bool,
}

impl Target<'_> {
    /// The anchor file readers open.
    pub fn anchor(&self) -> PathBuf {
        self.dir.join(format!("{}.otf2", self.name))
    }
}

/// Who hears of a merge as it goes: from every thread of the merge.
pub trait Observer: Sync {
    /// A problem in the input that the merge worked around (a damaged
    /// stream, a process numbered twice): one line.
    fn warning(&self, text: &str);
    /// The merge begins; it will read about this many events.
    fn started(&self, _total_events: u64) {}
    /// This many more events were read.
    fn progress(&self, _events: u64) {}
    /// The merge ended (successfully or not).
    fn finished(&self) {}
}

/// What the archive defines, as an [`Extra`] sink learns it before the
/// first event.
#[derive(Clone, Copy)]
pub struct Defined<'a> {
    /// Every definition (the system tree is read back with
    /// [`otf2::Definitions::system_tree`]).
    pub defs: &'a otf2::Definitions,
    /// Regions by summary index, the processes' locations.
    pub layout: &'a layout::Layout,
    /// The processes, in the layout's order.
    pub processes: &'a [Process],
}

/// Merges the raw streams of `options.raw_dir`, writing the archive when a
/// target is given, and returns the summary.
///
/// # Errors
///
/// Nothing to merge ([`Error::NothingRecorded`], [`Error::NothingToMerge`]),
/// an archive in the way, or a failed write. A half-written archive is
/// removed; the raw streams are never touched.
pub fn merge(options: &Options<'_>, observer: &dyn Observer) -> Result<RunSummary> {
    merge_with(options, observer, &mut ())
}

/// [`merge`], with `extra` fed the same events in the same pass (a
/// profile): with the archive and the summary, or with the summary alone.
pub fn merge_with<E: Extra>(options: &Options<'_>, observer: &dyn Observer, extra: &mut E) -> Result<RunSummary> {
    let summary = run(options, observer, extra, None)?;
    Ok(summary.expect("a merge on its own has the summary"))
}

/// [`merge_with`], as one of the `comm.size()` merge ranks of a merge run
/// as an MPI job: each rank merges its share of the processes (balanced
/// by their events) into the one archive the ranks write together
/// ([`otf2::ArchiveWriter::create_collective`]); rank 0 gets every rank's
/// counters and `extra` results and returns the summary (the others
/// `None`). Every rank reads every stream's header and definitions, and
/// defines the same archive.
///
/// A rank that gets an error must end the job (the others wait in a
/// collective operation); the error is the same on every rank when the
/// input is what is wrong ([`Error::is_bad_input`]).
///
/// # Errors
///
/// As [`merge_with`]; [`Error::TooManyRanks`] for more ranks than
/// processes; [`Error::Exchange`] when the ranks could not exchange their
/// results.
pub fn merge_collective<E: Extra>(
    options: &Options<'_>,
    observer: &dyn Observer,
    extra: &mut E,
    comm: std::sync::Arc<dyn otf2::Collectives>,
) -> Result<Option<RunSummary>> {
    run(options, observer, extra, Some(comm))
}

fn run<E: Extra>(
    options: &Options<'_>,
    observer: &dyn Observer,
    extra: &mut E,
    comm: Option<std::sync::Arc<dyn otf2::Collectives>>,
) -> Result<Option<RunSummary>> {
    let start = Instant::now();
    let root = comm.as_ref().is_none_or(|c| c.rank() == 0);
    let mut not_traced = options.not_traced.to_vec();
    let loaded = match inputs::load(options.raw_dir) {
        Err(Error::NothingRecorded { dir, .. }) => return Err(Error::NothingRecorded { dir, not_traced }),
        loaded => loaded?,
    };
    if root {
        for w in &loaded.warnings {
            observer.warning(w);
        }
    }
    let said_by_streams = !loaded.not_traced.is_empty();
    for fact in loaded.not_traced {
        inputs::add_not_traced(&mut not_traced, fact);
    }
    let processes = loaded.processes;
    if processes.is_empty() && said_by_streams {
        // Only producers that could not record: the program's work was
        // not traced, which is not the same as no work.
        return Err(Error::NothingRecorded { dir: options.raw_dir.to_path_buf(), not_traced });
    }
    if processes.is_empty() {
        return Err(Error::NothingToMerge {
            dir: options.raw_dir.to_path_buf(),
            why: "none of its raw streams could be read",
        });
    }
    let events_of = |p: &Process| -> u64 {
        p.streams.iter().flat_map(|s| s.chunks.iter().map(|c| u64::from(c.header.event_count))).sum()
    };
    // The processes this merge writes: all, or a merge rank's share.
    let mut mine = vec![true; processes.len()];
    if let Some(c) = &comm {
        if c.size() as usize > processes.len() {
            return Err(Error::TooManyRanks { ranks: c.size(), processes: processes.len() });
        }
        let units: Vec<Unit> =
            processes.iter().enumerate().map(|(i, p)| Unit { process: i, location: 0, events: events_of(p) }).collect();
        let shares = balance(&units, c.size() as usize);
        mine = vec![false; processes.len()];
        for u in &shares[c.rank() as usize] {
            mine[u.process] = true;
        }
    }
    let mut clocks = clock_maps(&processes);
    let (correction, floors) =
        match correct::correct(&processes, &mut clocks, options.jobs.max(1), options.max_correction_messages) {
            Some((report, floors)) => (Some(report), floors),
            None => (None, correct::Floors::default()),
        };
    let total: u64 = processes.iter().zip(&mine).filter(|m| *m.1).map(|(p, _)| events_of(p)).sum();
    observer.started(total);
    let mut summary = RunSummary {
        processes: processes.len(),
        mpi_ranks: processes.iter().filter(|p| p.mpi.is_some()).count(),
        hosts: processes.iter().map(|p| p.host.as_str()).collect::<std::collections::BTreeSet<_>>().len(),
        dropped: processes.iter().map(|p| p.dropped).sum(),
        endings: processes.iter().filter_map(Process::ending).collect(),
        lost: lost_by_process(&processes),
        not_traced: not_traced.iter().map(NotTraced::for_summary).collect(),
        clocks: correction.as_ref().map(correct::Report::for_summary),
        ..RunSummary::default()
    };
    let (first, mut last) = trace_bounds(&processes, &clocks);
    // Receives moved later may end a location.
    for (p, floor) in floors.latest() {
        last = last.max(clocks[p].global(floor));
    }
    summary.trace_length = last.saturating_sub(first);
    let mpi_complete = options.mpi_complete;
    let mut pass = Passes {
        processes: &processes,
        raw_dir: options.raw_dir,
        observer,
        summary: &mut summary,
        region_names: Vec::new(),
        mpi_complete,
        jobs: options.jobs.max(1),
        mine: &mine,
        comm: comm.clone(),
        floors: &floors,
    };
    let merged = match options.archive {
        Some(target) => pass.archive(&target, &clocks, (first, last), extra),
        None => pass.count_only(extra),
    };
    let merged = merged.and_then(|()| pass.exchange(extra));
    let region_names = std::mem::take(&mut pass.region_names);
    observer.finished();
    merged?;
    if !root {
        return Ok(None);
    }
    summary::tables(&mut summary, &region_names);
    summary.merge_time = start.elapsed();
    // From the program's end to the archive written. Without the
    // launcher's word, the last exit of a process of this host (another
    // host's clock is not ours).
    let here = gputrace_clock::domain();
    let last_exit = processes.iter().filter(|p| p.clock_domain == here).map(|p| p.exit_started).max().unwrap_or(0);
    let ended = options.program_ended.unwrap_or(last_exit);
    if ended > 0 && options.archive.is_some() {
        summary.exit_to_archive = Some(gputrace_clock::now().saturating_sub(ended));
    }
    Ok(Some(summary))
}

/// The event passes over every location.
struct Passes<'a> {
    processes: &'a [Process],
    raw_dir: &'a Path,
    observer: &'a dyn Observer,
    summary: &'a mut RunSummary,
    /// The archive's regions by the merge's region index, once defined.
    region_names: Vec<(String, raw::Paradigm)>,
    mpi_complete: bool,
    jobs: usize,
    /// Whether this merge writes each process (a merge rank's share).
    mine: &'a [bool],
    /// The other merge ranks, in a merge run as an MPI job.
    comm: Option<std::sync::Arc<dyn otf2::Collectives>>,
    /// Receives moved by the clock correction, and what follows them.
    floors: &'a correct::Floors,
}

/// One location to write: its process, its place in the process's plan,
/// and its events (from the chunk headers).
#[derive(Debug, Clone, Copy)]
struct Unit {
    process: usize,
    location: usize,
    events: u64,
}

/// What one worker thread made: its counters, its extra sink, and the
/// repairs of its locations.
struct Made<E> {
    counts: Counters,
    extra: E,
    repairs: Vec<Repairs>,
}

impl Passes<'_> {
    /// The trace properties Score-P sets (`OTF2::...`): MPI communication
    /// complete when every MPI event was recorded; the thread events
    /// complete while no process has threads of its own that gputrace
    /// does not follow (it records no thread fork, create or lock events);
    /// no pthread location reused.
    fn set_properties(&self, archive: &mut ArchiveWriter) -> Result<()> {
        let dropped = self.processes.iter().any(|p| p.dropped > 0);
        let mpi = self.mpi_complete && !dropped;
        let one_thread = self.processes.iter().all(|p| layout::host_threads(p).len() <= 1);
        let text = |b: bool| if b { "true" } else { "false" };
        for (name, value) in [
            ("OTF2::MPI_COMMUNICATION_COMPLETE", mpi),
            ("OTF2::THREAD_FORK_JOIN_EVENT_COMPLETE", one_thread),
            ("OTF2::THREAD_CREATE_WAIT_EVENT_COMPLETE", one_thread),
            ("OTF2::THREAD_LOCK_EVENT_COMPLETE", one_thread),
            ("OTF2::PTHREAD_LOCATION_REUSED", false),
        ] {
            archive
                .set_property(name, text(value))
                .map_err(|source| Error::Archive { what: "setting the archive's properties", source })?;
        }
        archive
            .set_property("GPUTRACE::TIMER", &timers(self.processes))
            .map_err(|source| Error::Archive { what: "setting the archive's properties", source })?;
        Ok(())
    }

    /// Writes the archive (removing what it wrote when that fails).
    fn archive<E: Extra>(
        &mut self,
        target: &Target<'_>,
        clocks: &[ClockMap],
        bounds: (u64, u64),
        extra: &mut E,
    ) -> Result<()> {
        // Rank 0 alone removes the archive there: the others would remove
        // what it has begun to write (create_collective waits for it).
        if target.force && self.comm.as_ref().is_none_or(|c| c.rank() == 0) {
            remove_archive(target.dir, target.name)?;
        }
        // Only what this merge created is removed when it fails: an archive
        // that was there before (merged without --force) is left alone.
        let created = match &self.comm {
            None => ArchiveWriter::create(target.dir, target.name),
            Some(c) => ArchiveWriter::create_collective(target.dir, target.name, std::sync::Arc::clone(c)),
        };
        let mut archive = created.map_err(|e| match e {
            otf2::Error::AlreadyExists { .. } => Error::ArchiveExists(target.dir.to_path_buf()),
            source => Error::Archive { what: "cannot create the archive", source },
        })?;
        let written = self.write_archive(&mut archive, clocks, bounds, extra);
        let written = match written {
            Ok(()) => {
                archive.close().map_err(|source| Error::Archive { what: "writing the archive's definitions", source })
            }
            Err(e) => {
                // Finalized (by drop) before its files are removed.
                drop(archive);
                Err(e)
            }
        };
        if let Err(e) = written {
            // A half-written archive helps nobody; the raw streams stay, so
            // the merge can be run again (a full disk freed, say).
            let _ = remove_archive(target.dir, target.name);
            return Err(e);
        }
        if self.comm.as_ref().is_none_or(|c| c.rank() == 0) {
            self.summary.archive = Some((target.anchor(), archive_size(target.dir, target.name)));
        }
        Ok(())
    }

    /// In a merge run as an MPI job, rank 0 adds every other rank's
    /// counters, repairs and `extra` results to its own.
    fn exchange<E: Extra>(&mut self, extra: &mut E) -> Result<()> {
        let Some(comm) = self.comm.clone() else { return Ok(()) };
        let bad = |why: &str| Error::Exchange { why: why.to_string() };
        let s = &*self.summary;
        let mut words = vec![s.locations as u64, s.raw_events, s.clamped, s.closed_open_regions, s.unmatched_leaves];
        let counts = s.counts.encode();
        words.push(counts.len() as u64);
        words.extend(counts);
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let encoded = extra.encode().ok_or_else(|| bad("the profile cannot be sent to rank 0"))?;
        bytes.extend_from_slice(&encoded);
        let all = otf2::collective::gather_bytes(&*comm, &bytes, 0).map_err(|e| bad(&e.to_string()))?;
        for bytes in all.iter().skip(1) {
            let word = |i: usize| -> Option<u64> {
                bytes.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            };
            let head: Option<Vec<u64>> = (0..6).map(word).collect();
            let head = head.ok_or_else(|| bad("a rank's results are cut short"))?;
            let n = usize::try_from(head[5]).map_err(|_| bad("a rank's results are garbled"))?;
            let counted: Option<Vec<u64>> = (6..6 + n).map(word).collect();
            let counted = counted.ok_or_else(|| bad("a rank's results are cut short"))?;
            let counts = Counters::decode(&counted).ok_or_else(|| bad("a rank's counters are garbled"))?;
            let s = &mut *self.summary;
            s.locations += head[0] as usize;
            s.raw_events += head[1];
            s.clamped += head[2];
            s.closed_open_regions += head[3];
            s.unmatched_leaves += head[4];
            s.counts.add(&counts);
            if !extra.join_encoded(&bytes[(6 + n) * 8..]) {
                return Err(bad("a rank's profile is garbled"));
            }
        }
        Ok(())
    }

    /// Writes the archive's definitions and every location's events; the
    /// caller closes it.
    fn write_archive<E: Extra>(
        &mut self,
        archive: &mut ArchiveWriter,
        clocks: &[ClockMap],
        (first, last): (u64, u64),
        extra: &mut E,
    ) -> Result<()> {
        archive.set_creator(concat!("gputrace ", env!("CARGO_PKG_VERSION")))?;
        archive.set_description(&describe(self.processes))?;
        self.set_properties(archive)?;
        let realtime = reference_realtime(self.processes, first);
        archive.set_clock_properties(gputrace_clock::TICKS_PER_SECOND, first, last.saturating_sub(first), realtime);
        let layout = layout::define(archive.defs(), self.processes, &|w| self.observer.warning(w))?;
        self.no_location_check(&layout)?;
        self.region_names = layout.region_names.clone();
        extra.defined(&Defined { defs: archive.defs(), layout: &layout, processes: self.processes });
        for (plan, clock) in layout.processes.iter().zip(clocks) {
            for loc in &plan.locations {
                write_clock_offsets(archive, loc.location, clock)?;
            }
        }
        let own = layout.processes.iter().zip(self.mine).filter(|m| *m.1).flat_map(|(p, _)| &p.locations);
        archive.write_only(own.map(|l| l.location));
        archive.concurrent(|writers| self.locations(&layout, Some(writers), extra))
    }

    /// No archive: the same pass into the summary's counters (and `extra`).
    fn count_only<E: Extra>(&mut self, extra: &mut E) -> Result<()> {
        let mut defs = otf2::Definitions::default();
        let layout = layout::define(&mut defs, self.processes, &|w| self.observer.warning(w))?;
        self.no_location_check(&layout)?;
        self.region_names = layout.region_names.clone();
        extra.defined(&Defined { defs: &defs, layout: &layout, processes: self.processes });
        self.locations(&layout, None, extra)
    }

    /// Every location's events, into the archive's `writers` when given,
    /// the summary's counters and `extra`: on up to `jobs` threads, each
    /// with its own counters and its own split of `extra`, one location at
    /// a time; the locations balanced among the threads by their events
    /// (the largest first, each to the least loaded thread), the threads'
    /// results joined in thread order.
    fn locations<E: Extra>(
        &mut self,
        layout: &layout::Layout,
        writers: Option<&otf2::ConcurrentWriters<'_>>,
        extra: &mut E,
    ) -> Result<()> {
        let units = self.units(layout);
        let mut jobs = self.jobs.min(units.len()).max(1);
        let mut parts = Vec::new();
        while parts.len() + 1 < jobs {
            match extra.split() {
                Some(part) => parts.push(part),
                None => {
                    // An extra sink that cannot be split: one thread.
                    tracing::debug!("the extra sink cannot be split: merging on one thread");
                    parts.clear();
                    jobs = 1;
                }
            }
        }
        let shares = balance(&units, jobs);
        let attributes = write::Attributes::default();
        let mut counts = std::mem::take(&mut self.summary.counts);
        let this = &*self;
        let failed = std::sync::atomic::AtomicBool::new(false);
        let run = |share: &[Unit], extra: &mut E, counts: &mut Counters| -> Result<Vec<Repairs>> {
            let mut attributes = attributes.worker();
            let mut repairs = Vec::with_capacity(share.len());
            for u in share {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let written = this.location(layout, *u, writers, counts, extra, &mut attributes);
                match written {
                    Ok(r) => repairs.push(r),
                    Err(e) => {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(repairs)
        };
        let (first, rest) = shares.split_first().expect("at least one share");
        let (mine, others) = std::thread::scope(|s| {
            let handles: Vec<_> = rest
                .iter()
                .zip(parts)
                .map(|(share, mut part)| {
                    let run = &run;
                    s.spawn(move || {
                        let mut counts = Counters::default();
                        run(share, &mut part, &mut counts).map(|repairs| Made { counts, extra: part, repairs })
                    })
                })
                .collect();
            let mine = run(first, extra, &mut counts);
            let others: Vec<Result<Made<E>>> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect();
            (mine, others)
        });
        let mut all = vec![mine?];
        for made in others {
            let made = made?;
            counts.add(&made.counts);
            extra.join(made.extra);
            all.push(made.repairs);
        }
        for r in all.into_iter().flatten() {
            self.add(r);
        }
        self.summary.counts = counts;
        Ok(())
    }

    /// The locations to write, in the layout's order.
    fn units(&self, layout: &layout::Layout) -> Vec<Unit> {
        let mut units = Vec::new();
        for (pi, (p, plan)) in self.processes.iter().zip(&layout.processes).enumerate() {
            for (li, loc) in plan.locations.iter().enumerate() {
                let events = loc
                    .feeds
                    .iter()
                    .flat_map(|&(stream, local)| {
                        p.streams[stream]
                            .chunks
                            .iter()
                            .filter(move |c| c.header.location == local)
                            .map(|c| u64::from(c.header.event_count))
                    })
                    .sum();
                if self.mine[pi] {
                    units.push(Unit { process: pi, location: li, events });
                }
            }
        }
        units
    }

    /// One location's events, into its event writer (when the archive is
    /// written), `counts` and `extra`.
    fn location<E: Extra>(
        &self,
        layout: &layout::Layout,
        u: Unit,
        writers: Option<&otf2::ConcurrentWriters<'_>>,
        counts: &mut Counters,
        extra: &mut E,
        attributes: &mut write::Attributes,
    ) -> Result<Repairs> {
        let p = &self.processes[u.process];
        let plan = &layout.processes[u.process];
        let loc = &plan.locations[u.location];
        let floors = if self.floors.is_empty() { Vec::new() } else { self.floors.of(u.process, &loc.feeds) };
        let cx = write::Context { process: p, plan, layout, attributes, observer: self.observer, floors };
        extra.begin_location(u.process, loc);
        let repairs = match writers {
            Some(writers) => {
                let mut writer = writers.event_writer(loc.location)?;
                let repairs = write::location_events(cx, loc, (&mut writer, (&mut *counts, &mut *extra)))?;
                writer.close().map_err(|source| Error::Archive { what: "closing an event writer", source })?;
                repairs
            }
            None => write::location_events(cx, loc, (&mut *counts, &mut *extra))?,
        };
        extra.end_location();
        Ok(repairs)
    }

    fn add(&mut self, r: Repairs) {
        let s = &mut *self.summary;
        s.locations += 1;
        s.raw_events += r.events;
        s.clamped += r.clamped;
        s.closed_open_regions += r.closed_open_regions;
        s.unmatched_leaves += r.unmatched_leaves;
    }

    /// An archive without locations is one that readers reject ("Find
    /// location definitions in global definition file"): refuse to write
    /// it.
    fn no_location_check(&self, layout: &layout::Layout) -> Result<()> {
        if layout.processes.iter().all(|p| p.locations.is_empty()) {
            return Err(Error::NothingToMerge {
                dir: self.raw_dir.to_path_buf(),
                why: "its raw streams define no location (thread, GPU stream)",
            });
        }
        Ok(())
    }
}

/// Splits `units` into `jobs` shares of about equal events: the largest
/// first, each to the share with the fewest events so far; each share in
/// the layout's order.
fn balance(units: &[Unit], jobs: usize) -> Vec<Vec<Unit>> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(units[i].events));
    let mut load = vec![0u64; jobs.max(1)];
    let mut picked: Vec<Vec<usize>> = vec![Vec::new(); jobs.max(1)];
    for i in order {
        let least = (0..load.len()).min_by_key(|&w| (load[w], w)).unwrap_or(0);
        // A location without events still costs its files.
        load[least] += units[i].events.max(1);
        picked[least].push(i);
    }
    picked
        .into_iter()
        .map(|mut share| {
            share.sort_unstable();
            share.into_iter().map(|i| units[i]).collect()
        })
        .collect()
}

/// ClockOffset definitions of a location: its process's clock map, which
/// OTF2 readers apply exactly as [`ClockMap::global`] computes it. MPI
/// processes always get theirs, zero offsets included.
fn write_clock_offsets(archive: &mut ArchiveWriter, location: otf2::LocationRef, clock: &ClockMap) -> Result<()> {
    for &(t, offset, stddev) in &clock.points {
        archive.clock_offset(location, t, offset, stddev)?;
    }
    Ok(())
}

/// The earliest and latest event times, on the reference clock.
fn trace_bounds(processes: &[Process], clocks: &[ClockMap]) -> (u64, u64) {
    let mut first = u64::MAX;
    let mut last = 0;
    for (p, c) in processes.iter().zip(clocks) {
        for chunk in p.streams.iter().flat_map(|s| s.chunks.iter()) {
            first = first.min(c.global(chunk.header.min_time));
            last = last.max(c.global(chunk.header.max_time));
        }
    }
    if first == u64::MAX { (0, 0) } else { (first, last) }
}

/// Wall-clock time of `first`, from the reference process's clock pair.
fn reference_realtime(processes: &[Process], first: u64) -> Option<u64> {
    let p = processes.iter().find(|p| p.mpi.is_some_and(|(r, _)| r == 0)).or(processes.first())?;
    let (mono, real) = p.clock_pair;
    (mono > 0 && real > 0).then(|| real.wrapping_add(first).wrapping_sub(mono))
}

/// The timers the processes read, for the archive's `GPUTRACE::TIMER`
/// property: `tsc`, `clock_gettime`, or both with their counts.
pub fn timers(processes: &[Process]) -> String {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for p in processes {
        let name = p.timer.unwrap_or_default().name();
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => names.push((name, 1)),
        }
    }
    match &names[..] {
        [(one, _)] => (*one).to_string(),
        _ => names.iter().map(|(n, c)| format!("{n} ({c} processes)")).collect::<Vec<_>>().join(", "),
    }
}

/// What each process's sources lost, for the summary: the processes
/// with losses, in rank order.
fn lost_by_process(processes: &[Process]) -> Vec<gputrace_summary::Lost> {
    let mut lost: Vec<gputrace_summary::Lost> = processes
        .iter()
        .filter(|p| !p.lost.is_empty())
        .map(|p| gputrace_summary::Lost {
            rank: p.rank,
            pid: p.pid,
            host: p.host.clone(),
            counts: p.lost.iter().map(|(k, n)| (k.key(), *n)).collect(),
        })
        .collect();
    lost.sort_by_key(|l| l.rank);
    lost
}

/// The name of the location-group property that carries a process's
/// losses of kind `what`: `GPUTRACE::LOST::CUPTI_DROPPED`.
pub fn lost_property(what: raw::SourceLoss) -> String {
    format!("GPUTRACE::LOST::{}", what.key())
}

fn describe(processes: &[Process]) -> String {
    let command = processes.first().map(|p| p.command.join(" ")).unwrap_or_default();
    format!("gputrace trace of {} process(es): {command}", processes.len())
}

/// Removes the archive `name` in `dir` (its anchor, definitions and
/// event directory), what of it is there.
pub fn remove_archive(dir: &Path, name: &str) -> Result<()> {
    for file in [format!("{name}.otf2"), format!("{name}.def")] {
        let path = dir.join(file);
        if path.exists() {
            std::fs::remove_file(&path).map_err(|source| Error::Remove { path, source })?;
        }
    }
    let path = dir.join(name);
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(|source| Error::Remove { path, source })?;
    }
    Ok(())
}

/// Bytes of the archive's files.
pub fn archive_size(dir: &Path, name: &str) -> u64 {
    fn walk(p: &Path) -> u64 {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                std::fs::read_dir(p).map(|rd| rd.filter_map(|e| e.ok()).map(|e| walk(&e.path())).sum()).unwrap_or(0)
            }
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    [format!("{name}.otf2"), format!("{name}.def"), name.to_string()].iter().map(|n| walk(&dir.join(n))).sum()
}
