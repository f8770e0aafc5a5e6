//! The archive's files and what is written of the processes into its
//! definitions beside the events: clock offsets, the wall-clock time of
//! the first event, the timers property, the losses' property names, the
//! description; removing an archive and measuring one.

use std::path::Path;

use otf2::ArchiveWriter;

use crate::clock::ClockMap;
use crate::inputs::Process;
use crate::{Error, Result};

/// ClockOffset definitions of a location: its process's clock map, which
/// OTF2 readers apply exactly as [`ClockMap::global`] computes it. MPI
/// processes always get theirs, zero offsets included.
pub(crate) fn write_clock_offsets(
    archive: &mut ArchiveWriter,
    location: otf2::LocationRef,
    clock: &ClockMap,
) -> Result<()> {
    for &(t, offset, stddev) in &clock.points {
        archive.clock_offset(location, t, offset, stddev)?;
    }
    Ok(())
}

/// Wall-clock time of `first`, from the reference process's clock pair.
pub(crate) fn reference_realtime(processes: &[Process], first: u64) -> Option<u64> {
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

/// The name of the location-group property that carries a process's
/// losses of kind `what`: `GPUTRACE::LOST::CUPTI_DROPPED`.
pub fn lost_property(what: raw::SourceLoss) -> String {
    format!("GPUTRACE::LOST::{}", what.key())
}

/// The attribute on the Leave of a region still open at its location's
/// end: a call that had not returned when the process was stopped
/// (`write`'s `close_open_regions`; `analyze` reads it).
pub const IN_FLIGHT: &str = "GPUTRACE::IN_FLIGHT";

/// The archive's description: how many processes, and the first one's
/// command line.
pub(crate) fn describe(processes: &[Process]) -> String {
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
