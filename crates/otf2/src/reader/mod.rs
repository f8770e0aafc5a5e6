//! A minimal streaming OTF2 reader: the definitions of an archive as
//! typed records, and its events location by location through an
//! [`EventVisitor`].
//!
//! Only one location's event stream is open at a time and OTF2 reads it
//! chunk by chunk, so memory stays bounded by the definitions plus one
//! chunk, however large the trace. Timestamps come with the clock offsets
//! of the location's local definitions applied (OTF2's default).
//!
//! [`TraceReader::read_by_time`] reads several locations merged by time
//! instead (OTF2's global event reader), for analyses that follow what
//! happened across locations as it happened (wait states): one chunk per
//! location is open then.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ffi::reader::Reader;
use crate::ffi::reader_events::{EvtCallbacks, GlobalEvtCallbacks};
use crate::refs::LocationRef;

pub(crate) mod chunks;
pub(crate) mod defs;
mod visitor;

pub use crate::ffi::attributes::Attributes;
pub use defs::*;
pub use visitor::{EventContext, EventVisitor};

/// How much a read covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadSummary {
    /// Records delivered to the visitor.
    pub events: u64,
    /// Whether the visitor stopped the read early.
    pub stopped: bool,
}

/// An OTF2 archive opened for reading.
///
/// ```no_run
/// use otf2::reader::{EventContext, EventVisitor, TraceReader};
/// use otf2::RegionRef;
///
/// struct CountEnters(u64);
/// impl EventVisitor for CountEnters {
///     fn enter(&mut self, _ev: &EventContext<'_>, _region: RegionRef) {
///         self.0 += 1;
///     }
/// }
///
/// # fn main() -> otf2::Result<()> {
/// let mut trace = TraceReader::open("traces.otf2".as_ref())?;
/// let mut count = CountEnters(0);
/// trace.read_all(&mut count)?;
/// println!("{} enters in {} locations", count.0, trace.defs().locations.len());
/// # Ok(()) }
/// ```
pub struct TraceReader {
    // Declared before `raw` so the callbacks object is freed first; OTF2
    // keeps its own copy once registered either way.
    callbacks: EvtCallbacks,
    raw: Reader,
    defs: GlobalDefs,
    anchor: PathBuf,
    /// Set once the events were read by time: OTF2's local readers were
    /// consumed by it, so the reader reads no more events.
    read_by_time: bool,
}

impl TraceReader {
    /// Opens the archive whose anchor file is `anchor` (`<name>.otf2`) and
    /// reads its global definitions and every location's local
    /// definitions.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if a file cannot be read, [`Error::NotAnArchive`]
    /// for a file that is empty, not an OTF2 anchor, or whose definitions
    /// are incomplete, [`Error::CutEvents`] for an event file cut short,
    /// [`Error::Otf2`] for what OTF2 rejects.
    pub fn open(anchor: &Path) -> Result<Self> {
        let not_an_archive = |reason: String| Error::NotAnArchive { path: anchor.to_owned(), reason };
        let metadata = std::fs::metadata(anchor).map_err(|source| Error::Io { path: anchor.to_owned(), source })?;
        if !metadata.is_file() {
            return Err(not_an_archive("not a regular file".into()));
        }
        if metadata.len() == 0 {
            return Err(not_an_archive("the anchor file is empty".into()));
        }
        if anchor.extension().is_none_or(|ext| ext != "otf2") {
            return Err(not_an_archive("an anchor file's name ends in .otf2".into()));
        }

        let mut raw = Reader::open(anchor).map_err(|e| not_an_archive(e.to_string()))?;
        let announced = raw.number_of_locations().map_err(|e| not_an_archive(e.to_string()))?;
        let announced_defs = raw.number_of_global_definitions().map_err(|e| not_an_archive(e.to_string()))?;
        let mut defs = GlobalDefs::default();
        let read = raw.read_global_defs(&mut defs).map_err(|e| not_an_archive(format!("global definitions: {e}")))?;
        // A definitions file cut at a record boundary reads without error;
        // the counts in the anchor file tell.
        if read != announced_defs {
            return Err(not_an_archive(format!(
                "the anchor file announces {announced_defs} global definitions, the definitions file holds {read}"
            )));
        }
        if defs.locations.len() as u64 != announced {
            return Err(not_an_archive(format!(
                "the anchor file announces {announced} locations, the global definitions define {}",
                defs.locations.len()
            )));
        }
        if defs.clock_properties.is_none() {
            return Err(not_an_archive("the global definitions lack clock properties".into()));
        }
        if let Some(chunk_size) = raw.plain_event_chunk_size()? {
            check_event_files(anchor, &defs, chunk_size)?;
        }
        raw.prepare_locations(&mut defs)?;
        if let Some((&last, _)) = defs.calling_contexts.last_key_value() {
            raw.leaves = vec![u32::MAX; last.id() as usize + 1];
            for (c, d) in &defs.calling_contexts {
                raw.leaves[c.id() as usize] = d.region.id();
            }
        }
        Ok(Self { callbacks: EvtCallbacks::new()?, raw, defs, anchor: anchor.to_owned(), read_by_time: false })
    }

    /// The archive's definitions.
    pub fn defs(&self) -> &GlobalDefs {
        &self.defs
    }

    /// The anchor file this reader opened.
    pub fn anchor_path(&self) -> &Path {
        &self.anchor
    }

    /// Every location, in id order.
    pub fn locations(&self) -> Vec<LocationRef> {
        self.defs.locations.keys().copied().collect()
    }

    /// Reads every event of `location`, in stream order, into `visitor`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownLocation`] for a location the archive does not
    /// define; [`Error::Otf2`] for a missing or corrupt event file, and
    /// [`Error::TruncatedEvents`] for one with fewer events than its
    /// definition announces (the visitor has seen the events before the
    /// damage either way).
    pub fn read_location(&mut self, location: LocationRef, visitor: &mut dyn EventVisitor) -> Result<ReadSummary> {
        if !self.defs.locations.contains_key(&location) || !self.raw.evt_files_open() {
            return Err(Error::UnknownLocation { id: location.id() });
        }
        if self.read_by_time {
            return Err(Error::AlreadyReadByTime);
        }
        let outcome = self.raw.read_location_events(&self.callbacks, location, visitor)?;
        // A file cut at a chunk boundary reads without error; the count in
        // the definition tells.
        let announced = self.defs.locations[&location].number_of_events;
        if !outcome.stopped && outcome.events < announced {
            return Err(Error::TruncatedEvents { location: location.id(), announced, read: outcome.events });
        }
        Ok(ReadSummary { events: outcome.events, stopped: outcome.stopped })
    }

    /// Reads the events of `locations` merged by time: each record in
    /// timestamp order across all of them (ties in the order OTF2's global
    /// reader takes them), into one visitor, which tells them apart by
    /// [`EventContext::location`]. Memory: one event chunk per location.
    /// The reader reads no events after this (OTF2's readers of these
    /// locations are used up): open the archive again for another pass.
    ///
    /// # Errors
    ///
    /// As [`read_location`](Self::read_location), for any of the
    /// locations; [`Error::AlreadyReadByTime`] for a second call.
    pub fn read_by_time(&mut self, locations: &[LocationRef], visitor: &mut dyn EventVisitor) -> Result<ReadSummary> {
        for location in locations {
            if !self.defs.locations.contains_key(location) || !self.raw.evt_files_open() {
                return Err(Error::UnknownLocation { id: location.id() });
            }
        }
        if self.read_by_time {
            return Err(Error::AlreadyReadByTime);
        }
        self.read_by_time = true;
        if locations.is_empty() {
            return Ok(ReadSummary::default());
        }
        let callbacks = GlobalEvtCallbacks::new()?;
        let outcome = self.raw.read_events_by_time(&callbacks, locations, visitor)?;
        if !outcome.stopped {
            for (location, &read) in locations.iter().zip(&outcome.events) {
                let announced = self.defs.locations[location].number_of_events;
                if read < announced {
                    return Err(Error::TruncatedEvents { location: location.id(), announced, read });
                }
            }
        }
        Ok(ReadSummary { events: outcome.events.iter().sum(), stopped: outcome.stopped })
    }

    /// Reads the events of every location, one location after the other
    /// in id order, until the visitor asks to stop.
    pub fn read_all(&mut self, visitor: &mut dyn EventVisitor) -> Result<ReadSummary> {
        let mut total = ReadSummary::default();
        for location in self.locations() {
            let summary = self.read_location(location, visitor)?;
            total.events += summary.events;
            if summary.stopped {
                total.stopped = true;
                break;
            }
        }
        Ok(total)
    }
}

/// Checks that every location's event file ends as OTF2 ends one, before
/// libotf2 reads any (it would read a cut one for ever: [`chunks`]). Reads
/// at most one chunk per file.
fn check_event_files(anchor: &Path, defs: &GlobalDefs, chunk_size: u64) -> Result<()> {
    // `<dir>/<name>.otf2` keeps its events in `<dir>/<name>/<location>.evt`.
    let folder = anchor.with_extension("");
    let mut buf = Vec::new();
    for location in defs.locations.keys() {
        let path = folder.join(format!("{}.evt", location.id()));
        match chunks::check_event_file(&path, chunk_size, &mut buf) {
            Ok(None) => {}
            Ok(Some(cut)) => {
                let chunks::Cut { at, chunk, why } = cut;
                return Err(Error::CutEvents { path, location: location.id(), at, chunk, chunk_size, why });
            }
            Err(source) => return Err(Error::Io { path, source }),
        }
    }
    Ok(())
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("anchor", &self.anchor)
            .field("locations", &self.defs.locations.len())
            .finish_non_exhaustive()
    }
}
