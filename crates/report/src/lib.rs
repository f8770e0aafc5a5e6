//! gputrace's reports: what can be learnt from an OTF2 archive once it is
//! written — gputrace's own or Score-P's — and the run summary printed
//! after every merge ([`summary`]), with one set of number formatters
//! ([`numbers`]).
//!
//! Depends on the `otf2` crate only: never on the raw stream format, the
//! merge or anything that runs inside the traced program.
//!
//! Everything here reads the archive through `otf2::reader`,
//! location by location, and keeps per location only what it needs while
//! that location is read (an open-region stack), and across locations only
//! aggregates whose size does not grow with the number of events
//! (per-name statistics, matrices, pixel columns). [`model`] turns the
//! definitions into what the reports speak of: processes, GPUs, host
//! threads and streams, and what kind of work each region is. On top of it:
//! [`stats`] (nsys-style summary tables and the communication matrices),
//! [`chrome`] (Chrome trace-event JSON for Perfetto and chrome://tracing),
//! [`plot`] (PNG timeline and heatmaps), [`vite`] (a copy of an archive
//! that ViTE can display) and [`analyze`] (MPI wait states, GPU idle time
//! and rules, load imbalance: the one pass that reads the locations merged
//! by time rather than one after the other).

pub mod analyze;
pub mod chrome;
pub mod durations;
mod error;
pub mod lost;
pub mod matrix;
pub mod model;
pub mod names;
pub mod numbers;
pub mod output;
pub mod plot;
pub mod regions;
pub mod stats;
pub mod summary;
pub mod table;
pub mod vite;
pub mod window;

use std::path::{Path, PathBuf};

use otf2::reader::TraceReader;

pub use error::{Error, Result};

/// The anchor file (`traces.otf2`) an input names: the file itself, or the
/// archive inside an experiment directory.
pub fn anchor_of(input: &Path) -> Result<PathBuf> {
    // A missing input is bad input, as for `gputrace merge` (exit 2).
    let meta =
        std::fs::metadata(input).map_err(|e| Error::BadInput(format!("cannot read {}: {e}", input.display())))?;
    if meta.is_dir() {
        let anchor = input.join("traces.otf2");
        if !anchor.exists() {
            return Err(Error::BadInput(no_archive(input)));
        }
        return Ok(anchor);
    }
    Ok(input.to_owned())
}

/// What a directory without `traces.otf2` holds, and what to do: merge
/// its raw streams; or, a profile-only run (Score-P's or gputrace's,
/// tracing off), open its profile with Cube; or nothing of ours.
fn no_archive(dir: &Path) -> String {
    let d = dir.display();
    if dir.join("raw").is_dir() {
        return format!("{d} holds no OTF2 archive (no traces.otf2) but raw streams: run `gputrace merge {d}` first");
    }
    if dir.join("profile.cubex").exists() {
        let whose = if dir.join("scorep.cfg").exists() { "Score-P" } else { "a" };
        return format!(
            "{d} holds {whose} profile (profile.cubex) and no trace: the run had tracing off \
             (SCOREP_ENABLE_TRACING / GPUTRACE_ENABLE_TRACING=false); open the profile with Cube \
             (`cube {d}/profile.cubex`, `cube_stat`), or trace again with tracing on"
        );
    }
    format!("{d} holds no OTF2 archive (no traces.otf2) and no raw streams to merge")
}

/// Opens the archive an input names, with one clear line when it is not
/// an archive (empty, truncated, another format).
pub fn open(input: &Path) -> Result<TraceReader> {
    let anchor = anchor_of(input)?;
    // Not an archive is bad input (exit 2), as a directory without one is.
    TraceReader::open(&anchor).map_err(|e| match e {
        // Already names the file and what is wrong with it.
        otf2::Error::NotAnArchive { .. } | otf2::Error::CutEvents { .. } => Error::BadInput(e.to_string()),
        e => Error::BadInput(format!("{}: not a readable OTF2 archive: {e}", anchor.display())),
    })
}

/// The reader's error for a location, with the location named: a damaged
/// archive is bad input (exit 2), as one that does not open is.
pub(crate) fn read_error(reader: &TraceReader, loc: otf2::LocationRef, e: otf2::Error) -> Error {
    Error::BadInput(format!(
        "{}: reading the events of location {} ({}): {e}",
        reader.anchor_path().display(),
        loc.id(),
        reader.defs().location_name(loc)
    ))
}
