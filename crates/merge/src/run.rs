//! The merge from start to end: the raw streams loaded, a merge rank's
//! share picked, the clocks mapped and corrected, the event passes run
//! ([`crate::passes`]) and the summary completed.

use std::time::Instant;

use gputrace_summary::RunSummary;

use crate::clock::{ClockMap, clock_maps};
use crate::inputs::{self, NotTraced, Process};
use crate::passes::{Passes, Unit, balance};
use crate::{Error, Extra, Observer, Options, Result, correct, summary};

/// The merge, alone (`comm` `None`) or as one merge rank: the summary on
/// rank 0, `None` on the others.
pub(crate) fn run<E: Extra>(
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
        expired: processes.iter().map(|p| p.expired).sum(),
        endings: endings(&processes, options.running),
        lost: lost_by_process(&processes),
        not_traced: not_traced.iter().map(NotTraced::for_summary).collect(),
        clocks: correction.as_ref().map(correct::Report::for_summary),
        ..RunSummary::default()
    };
    let stopped_at = stopped_at(&processes, options.program_ended);
    let (first, mut last) = trace_bounds(&processes, &clocks, &stopped_at);
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
        spare_thread: false,
        stopped_at: &stopped_at,
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
    // (A snapshot of a running job has no program's end to count from.)
    if ended > 0 && options.archive.is_some() && !options.running {
        summary.exit_to_archive = Some(gputrace_clock::now().saturating_sub(ended));
    }
    Ok(Some(summary))
}

/// How the processes ended, for the summary; of a snapshot of a running
/// job (`running`), not that they have not closed their traces yet.
fn endings(processes: &[Process], running: bool) -> Vec<gputrace_summary::Ending> {
    let still_running = |e: &gputrace_summary::Ending| running && e.how == gputrace_summary::Ended::Unclosed;
    processes.iter().filter_map(Process::ending).filter(|e| !still_running(e)).collect()
}

/// Per process, when it was seen stopped, on its own clock: the time of
/// the signal that ended it (its guardian's Signal record), or for a
/// process of this host that never closed its trace (SIGKILL), the moment
/// the launcher saw the job end. The calls it had in flight end there
/// rather than at its last event. Processes that finished, and killed
/// ones of other hosts (whose clocks the launcher's does not read): `None`.
fn stopped_at(processes: &[Process], program_ended: Option<u64>) -> Vec<Option<u64>> {
    let here = gputrace_clock::domain();
    processes.iter().map(|p| p.signal_time.or(program_ended.filter(|_| p.unclosed && p.clock_domain == here))).collect()
}

/// The earliest and latest event times, on the reference clock; a
/// stopped process's calls in flight end when it was seen stopped
/// (`stopped_at`).
fn trace_bounds(processes: &[Process], clocks: &[ClockMap], stopped_at: &[Option<u64>]) -> (u64, u64) {
    let mut first = u64::MAX;
    let mut last = 0;
    for ((p, c), stopped) in processes.iter().zip(clocks).zip(stopped_at) {
        for chunk in p.streams.iter().flat_map(|s| s.chunks.iter()) {
            first = first.min(c.global(chunk.header.min_time));
            last = last.max(c.global(chunk.header.max_time));
        }
        if let Some(at) = stopped {
            last = last.max(c.global(*at));
        }
    }
    if first == u64::MAX { (0, 0) } else { (first, last) }
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
