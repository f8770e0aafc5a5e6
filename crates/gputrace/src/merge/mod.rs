//! The merge: an experiment's raw streams into one OTF2 archive and a
//! summary.
//!
//! 1. [`inputs`] reads every stream's header and definitions (event chunks
//!    are only indexed) and joins the streams of each process;
//! 2. [`clock`] puts every process on rank 0's clock;
//! 3. [`layout`] defines the archive's system tree, locations, regions and
//!    communicators;
//! 4. [`write`] streams each location's events through its [`timeline`]
//!    into its event writer, one location at a time, so memory does not
//!    grow with the trace.

pub mod clock;
pub mod inputs;
pub mod isolate;
pub mod layout;
pub mod progress;
pub mod summary;
pub mod timeline;
pub mod write;
pub mod writers;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use config::Config;
use otf2_writer::ArchiveWriter;

use crate::experiment::{ARCHIVE_NAME, Experiment};
use clock::{ClockMap, clock_maps};
use inputs::{NothingToMerge, Process};
use progress::Progress;
use summary::Summary;

/// Merges `experiment` (writing the archive unless tracing is off) and
/// returns the summary. `force` replaces an existing archive.
pub fn run(experiment: &Experiment, config: &Config, force: bool) -> Result<Summary> {
    let start = Instant::now();
    let (processes, warnings) = inputs::load(&experiment.raw_dir())?;
    for w in &warnings {
        say!("[gputrace] warning: {w}");
    }
    if processes.is_empty() {
        return Err(NothingToMerge(format!(
            "nothing to merge in {}: none of its raw streams could be read",
            experiment.raw_dir().display()
        ))
        .into());
    }
    let clocks = clock_maps(&processes);
    let total: u64 = processes
        .iter()
        .flat_map(|p| p.streams.iter().flat_map(|s| s.chunks.iter().map(|c| u64::from(c.header.event_count))))
        .sum();
    let progress = Progress::new(total);
    let mut summary = Summary {
        processes: processes.len(),
        mpi_ranks: processes.iter().filter(|p| p.mpi.is_some()).count(),
        hosts: processes.iter().map(|p| p.host.clone()).collect(),
        dropped: processes.iter().map(|p| p.dropped).sum(),
        incomplete_processes: processes.iter().filter_map(inputs::Process::ending).collect(),
        ..Summary::default()
    };
    let (first, last) = trace_bounds(&processes, &clocks);
    let mut attributes = std::collections::HashMap::new();
    summary.trace_length = last.saturating_sub(first);

    if config.enable_tracing {
        if force {
            remove_archive(&experiment.dir)?;
        }
        // Only what this merge created is removed when it fails: an archive
        // that was there before (merged without --force) is left alone.
        let mut archive = ArchiveWriter::create(&experiment.dir, ARCHIVE_NAME).map_err(|e| match e {
            otf2_writer::Error::AlreadyExists { .. } => crate::UsageError(format!(
                "{} already holds an archive: `gputrace merge --force {}` replaces it",
                experiment.dir.display(),
                experiment.dir.display()
            ))
            .into(),
            e => anyhow::Error::new(e).context("cannot create the archive"),
        })?;
        let mut out = write::Outputs { summary: &mut summary, attributes: &mut attributes, progress: &progress };
        let written = write_archive(experiment, &mut archive, &processes, &clocks, (first, last), &mut out);
        let written = match written {
            Ok(()) => archive.close().context("writing the archive's definitions"),
            Err(e) => {
                // Finalized (by drop) before its files are removed.
                drop(archive);
                Err(e)
            }
        };
        if let Err(e) = written {
            // A half-written archive helps nobody; the raw streams stay, so
            // the merge can be run again (a full disk freed, say).
            let _ = remove_archive(&experiment.dir);
            if e.is::<NothingToMerge>() {
                return Err(e);
            }
            return Err(e.context(format!(
                "the archive could not be written; the raw streams are kept: `gputrace merge {}` tries again",
                experiment.dir.display()
            )));
        }
        summary.archive = Some((experiment.anchor(), archive_size(&experiment.dir)));
    } else {
        // Only the summary: the same pass with nothing written.
        let mut defs = otf2_writer::Definitions::default();
        let layout = layout::define(&mut defs, &processes)?;
        no_location_check(&layout, experiment)?;
        summary.region_names = layout.region_names.clone();
        for (p, plan) in processes.iter().zip(&layout.processes) {
            for loc in &plan.locations {
                let mut out =
                    write::Outputs { summary: &mut summary, attributes: &mut attributes, progress: &progress };
                write::location_events(p, plan, &layout, loc, None, &mut out)?;
                summary.locations += 1;
            }
        }
    }
    progress.finish();
    summary.merge_time = start.elapsed();
    // From the end of the program's work to the archive written: only
    // meaningful when the processes ran on this host (their clock is ours).
    let here = raw::clock::domain();
    let last_exit = processes.iter().filter(|p| p.clock_domain == here).map(|p| p.exit_started).max().unwrap_or(0);
    if last_exit > 0 && config.enable_tracing {
        summary.exit_to_archive = Some(raw::clock::now().saturating_sub(last_exit));
    }
    Ok(summary)
}

/// Writes the archive's definitions and every location's events; the
/// caller closes it.
fn write_archive(
    experiment: &Experiment,
    archive: &mut ArchiveWriter,
    processes: &[Process],
    clocks: &[ClockMap],
    (first, last): (u64, u64),
    out: &mut write::Outputs<'_>,
) -> Result<()> {
    archive.set_creator(concat!("gputrace ", env!("CARGO_PKG_VERSION")))?;
    archive.set_description(&describe(processes))?;
    let realtime = reference_realtime(processes, first);
    archive.set_clock_properties(raw::clock::TICKS_PER_SECOND, first, last.saturating_sub(first), realtime);
    let layout = layout::define(archive.defs(), processes)?;
    no_location_check(&layout, experiment)?;
    out.summary.region_names = layout.region_names.clone();
    for ((p, plan), clock) in processes.iter().zip(&layout.processes).zip(clocks) {
        for loc in &plan.locations {
            write_clock_offsets(archive, loc.location, clock)?;
            let writer = archive.event_writer(loc.location)?;
            write::location_events(p, plan, &layout, loc, Some(writer), out)?;
            out.summary.locations += 1;
        }
    }
    Ok(())
}

/// An archive without locations is one that readers reject ("Find
/// location definitions in global definition file"): refuse to write it.
fn no_location_check(layout: &layout::Layout, experiment: &Experiment) -> Result<()> {
    if layout.processes.iter().all(|p| p.locations.is_empty()) {
        return Err(NothingToMerge(format!(
            "nothing to merge in {}: its raw streams define no location (thread, GPU stream)",
            experiment.raw_dir().display()
        ))
        .into());
    }
    Ok(())
}

/// ClockOffset definitions of a location: its process's clock map, which
/// OTF2 readers apply exactly as [`ClockMap::global`] computes it. MPI
/// processes always get theirs, zero offsets included.
fn write_clock_offsets(
    archive: &mut ArchiveWriter,
    location: otf2_writer::LocationRef,
    clock: &ClockMap,
) -> Result<()> {
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

fn describe(processes: &[Process]) -> String {
    let command = processes.first().map(|p| p.command.join(" ")).unwrap_or_default();
    format!("gputrace trace of {} process(es): {command}", processes.len())
}

fn remove_archive(dir: &Path) -> Result<()> {
    for name in [format!("{ARCHIVE_NAME}.otf2"), format!("{ARCHIVE_NAME}.def")] {
        let p = dir.join(name);
        if p.exists() {
            std::fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    let d = dir.join(ARCHIVE_NAME);
    if d.exists() {
        std::fs::remove_dir_all(&d).with_context(|| format!("cannot remove {}", d.display()))?;
    }
    Ok(())
}

/// Bytes of the archive's files.
pub fn archive_size(dir: &Path) -> u64 {
    fn walk(p: &Path) -> u64 {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                std::fs::read_dir(p).map(|rd| rd.filter_map(|e| e.ok()).map(|e| walk(&e.path())).sum()).unwrap_or(0)
            }
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    [format!("{ARCHIVE_NAME}.otf2"), format!("{ARCHIVE_NAME}.def"), ARCHIVE_NAME.to_string()]
        .iter()
        .map(|n| walk(&dir.join(n)))
        .sum()
}
