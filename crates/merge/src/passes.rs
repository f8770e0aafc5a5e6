//! The event passes: every location's events, read and translated, into
//! the archive's event writers (or none), the summary's counters and the
//! caller's [`Extra`] sink, on several threads; in a merge run as an MPI
//! job, the ranks' results gathered on rank 0.

use std::path::Path;

use gputrace_summary::{Counters, RunSummary};
use otf2::ArchiveWriter;

use crate::archive::{archive_size, describe, reference_realtime, remove_archive, timers, write_clock_offsets};
use crate::clock::ClockMap;
use crate::inputs::Process;
use crate::{Defined, Error, Extra, Observer, Repairs, Result, Target, correct, layout, write};

/// The event passes over every location.
pub(crate) struct Passes<'a> {
    pub(crate) processes: &'a [Process],
    pub(crate) raw_dir: &'a Path,
    pub(crate) observer: &'a dyn Observer,
    pub(crate) summary: &'a mut RunSummary,
    /// The archive's regions by the merge's region index, once defined.
    pub(crate) region_names: Vec<(String, raw::Paradigm)>,
    pub(crate) mpi_complete: bool,
    pub(crate) jobs: usize,
    /// Whether this merge writes each process (a merge rank's share).
    pub(crate) mine: &'a [bool],
    /// The other merge ranks, in a merge run as an MPI job.
    pub(crate) comm: Option<std::sync::Arc<dyn otf2::Collectives>>,
    /// Receives moved by the clock correction, and what follows them.
    pub(crate) floors: &'a correct::Floors,
    /// The pass uses fewer threads than `jobs` allows: a location may be
    /// read on a thread of its own while it is written.
    pub(crate) spare_thread: bool,
    /// Per process, when it was seen stopped (`run::stopped_at`).
    pub(crate) stopped_at: &'a [Option<u64>],
}

/// One location to write: its process, its place in the process's plan,
/// and its events (from the chunk headers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    pub(crate) process: usize,
    pub(crate) location: usize,
    pub(crate) events: u64,
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
    pub(crate) fn archive<E: Extra>(
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
    pub(crate) fn exchange<E: Extra>(&mut self, extra: &mut E) -> Result<()> {
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
    pub(crate) fn count_only<E: Extra>(&mut self, extra: &mut E) -> Result<()> {
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
        // Threads allowed but not used (fewer locations than threads): a
        // large location is read on one of them while it is written.
        self.spare_thread = self.jobs > jobs;
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
        let pipelined = self.spare_thread && u.events >= write::PIPELINE_EVENTS;
        let stopped_at = self.stopped_at.get(u.process).copied().flatten();
        let cx = write::Context {
            process: p,
            plan,
            layout,
            attributes,
            observer: self.observer,
            floors,
            pipelined,
            stopped_at,
        };
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
pub(crate) fn balance(units: &[Unit], jobs: usize) -> Vec<Vec<Unit>> {
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
