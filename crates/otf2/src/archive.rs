//! [`ArchiveWriter`]: creates an OTF2 archive, owns its definitions, hands
//! out one event writer at a time, and finalizes everything at close.
//!
//! The archive is written post-mortem by one process: events go to disk in
//! chunks as they are written (OTF2 keeps at most its buffer of each open
//! writer in memory), definitions stay in memory until [`close`], which
//! writes the local definition file of every location and then the global
//! definitions, clock properties first.
//!
//! [`close`]: ArchiveWriter::close

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::defs::Definitions;
use crate::error::{Error, Result};
use crate::events::{EventWriter, Home, lock};
use crate::ffi::archive::{Archive, SharedArchive};
use crate::refs::LocationRef;
use crate::values::{ClockOffset, ClockProperties};

/// An OTF2 archive being written: `dir/<name>.otf2` (anchor),
/// `dir/<name>.def` (global definitions) and `dir/<name>/` (one event and
/// one local definition file per location).
///
/// ```no_run
/// use otf2::*;
/// # fn main() -> Result<()> {
/// let mut archive = ArchiveWriter::create("out".as_ref(), "traces")?;
/// let defs = archive.defs();
/// let machine = defs.system_tree_node("machine", "machine", None);
/// let rank0 = defs.location_group("MPI Rank 0", LocationGroupType::Process, machine, None);
/// let thread = defs.location(0, "Master thread", LocationType::CpuThread, rank0)?;
/// let main = defs.region(Region::new("main", RegionRole::Function, Paradigm::User));
///
/// let mut events = archive.event_writer(thread)?;
/// events.enter(1_000, main)?;
/// events.leave(2_000, main)?;
/// events.close()?;
/// archive.close()
/// # }
/// ```
pub struct ArchiveWriter {
    // Field order matters for the split borrows in `event_writer`.
    archive: Archive,
    defs: Definitions,
    clock: Option<ClockProperties>,
    anchor: PathBuf,
    /// The first error of an event writer that was dropped instead of
    /// closed; `close` reports it.
    deferred: Option<Error>,
    finished: bool,
}

impl ArchiveWriter {
    /// Creates the archive `dir/<name>.otf2`, creating `dir` if needed.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyExists`] if `dir/<name>.otf2`, `dir/<name>.def` or
    /// `dir/<name>` exists: an archive is never overwritten.
    /// [`Error::InvalidName`] for an empty name or one with `/` or NUL.
    pub fn create(dir: &Path, name: &str) -> Result<Self> {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Err(Error::InvalidName { name: name.to_owned() });
        }
        std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
        let anchor = dir.join(format!("{name}.otf2"));
        for path in [dir.join(format!("{name}.def")), dir.join(name)] {
            if path.symlink_metadata().is_ok() {
                return Err(Error::AlreadyExists { path });
            }
        }
        // Creating the anchor file with create_new is the atomic claim on
        // the name: of two writers racing for it, one gets AlreadyExists.
        OpenOptions::new().write(true).create_new(true).open(&anchor).map_err(|source| match source.kind() {
            io::ErrorKind::AlreadyExists => Error::AlreadyExists { path: anchor.clone() },
            _ => Error::Io { path: anchor.clone(), source },
        })?;
        let c_name = CString::new(name).expect("checked for NUL above");
        let mut archive = match Archive::create(dir, &c_name) {
            Ok(archive) => archive,
            Err(err) => {
                let _ = std::fs::remove_file(&anchor);
                return Err(err);
            }
        };
        let creator = CString::new(concat!("otf2 ", env!("CARGO_PKG_VERSION"))).expect("no NUL in a version");
        archive.set_creator(&creator)?;
        Ok(Self { archive, defs: Definitions::new(), clock: None, anchor, deferred: None, finished: false })
    }

    /// The anchor file, `dir/<name>.otf2`: what readers and Vampir open.
    pub fn anchor_path(&self) -> &Path {
        &self.anchor
    }

    /// Sets the creator recorded in the anchor file (default
    /// `otf2 <version>`).
    pub fn set_creator(&mut self, creator: &str) -> Result<()> {
        self.archive.set_creator(&c_string(creator))
    }

    /// Sets the free-text description recorded in the anchor file.
    pub fn set_description(&mut self, description: &str) -> Result<()> {
        self.archive.set_description(&c_string(description))
    }

    /// Sets the machine name recorded in the anchor file.
    pub fn set_machine_name(&mut self, machine: &str) -> Result<()> {
        self.archive.set_machine_name(&c_string(machine))
    }

    /// Sets an archive property (`NAMESPACE::NAME`, such as
    /// `GPUTRACE::VERSION`), replacing an earlier value.
    pub fn set_property(&mut self, name: &str, value: &str) -> Result<()> {
        self.archive.set_property(&c_string(name), &c_string(value))
    }

    /// Sets the clock properties, written as the first global definition:
    /// ticks per second, the timestamp where the trace starts, its length in
    /// ticks, and the wall-clock time (ns since the Unix epoch) of
    /// `global_offset` when known.
    ///
    /// If never called, close writes nanosecond resolution and the span
    /// from the earliest to the latest event timestamp written.
    pub fn set_clock_properties(
        &mut self,
        timer_resolution: u64,
        global_offset: u64,
        trace_length: u64,
        realtime_timestamp: Option<u64>,
    ) {
        self.clock = Some(ClockProperties { timer_resolution, global_offset, trace_length, realtime_timestamp });
    }

    /// The definition builder.
    pub fn defs(&mut self) -> &mut Definitions {
        &mut self.defs
    }

    /// Records a clock offset of `location` (a `ClockOffset` in its local
    /// definition file): at local time `time`, global = local + `offset`.
    /// Readers apply the offsets to the location's timestamps, interpolating
    /// linearly between them; give them in increasing `time`.
    pub fn clock_offset(
        &mut self,
        location: LocationRef,
        time: u64,
        offset: i64,
        standard_deviation: f64,
    ) -> Result<()> {
        let slot = self.defs.location_slot(location)?;
        self.defs.location_record(slot).clock_offsets.push(ClockOffset { time, offset, standard_deviation });
        Ok(())
    }

    /// The event writer of `location`. One writer at a time, one per
    /// location: write all its events, close it, go on with the next.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownLocation`] if the location is not defined,
    /// [`Error::EventsAlreadyWritten`] if it had a writer before (OTF2 would
    /// truncate its event file).
    pub fn event_writer(&mut self, location: LocationRef) -> Result<EventWriter<'_>> {
        let slot = self.defs.location_slot(location)?;
        if self.defs.location_record(slot).events.is_some() {
            return Err(Error::EventsAlreadyWritten { id: location.id() });
        }
        let raw = self.archive.evt_writer(location)?;
        self.defs.location_record(slot).events = Some(Default::default());
        Ok(EventWriter::new(raw, Home::Own { defs: &mut self.defs, deferred: &mut self.deferred }, slot, location))
    }

    /// Runs `work` with [`ConcurrentWriters`]: event writers for several
    /// threads at once (one location per writer, each writer on one
    /// thread), sharing the definitions behind a lock. The archive is
    /// whole again when `work` returns.
    ///
    /// ```no_run
    /// # use otf2::*;
    /// # fn f(archive: &mut ArchiveWriter, a: LocationRef, b: LocationRef, r: RegionRef) -> Result<()> {
    /// archive.concurrent(|writers| {
    ///     std::thread::scope(|s| {
    ///         for loc in [a, b] {
    ///             s.spawn(move || -> Result<u64> {
    ///                 let mut w = writers.event_writer(loc)?;
    ///                 w.enter(1, r)?;
    ///                 w.leave(2, r)?;
    ///                 w.close()
    ///             });
    ///         }
    ///     })
    /// });
    /// # Ok(()) }
    /// ```
    pub fn concurrent<R>(&mut self, work: impl FnOnce(&ConcurrentWriters<'_>) -> R) -> R {
        let defs = Mutex::new(std::mem::take(&mut self.defs));
        let deferred = Mutex::new(self.deferred.take());
        let result = {
            let writers =
                ConcurrentWriters { archive: SharedArchive::new(&mut self.archive), defs: &defs, deferred: &deferred };
            work(&writers)
        };
        self.defs = defs.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.deferred = deferred.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        result
    }

    /// Writes the empty event file of every location without events, the
    /// local definitions of every location, the global definitions, and
    /// closes the archive.
    ///
    /// # Errors
    ///
    /// The first error: of an event writer dropped without `close`, or of
    /// finalizing. The archive is closed either way.
    pub fn close(mut self) -> Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let written = self.write_remaining();
        let closed = self.archive.close();
        match self.deferred.take() {
            Some(err) => Err(err),
            None => written.and(closed),
        }
    }

    fn write_remaining(&mut self) -> Result<()> {
        // Readers expect an event file for every location they are told of.
        for slot in 0..self.defs.location_records().len() {
            let record = self.defs.location_record(slot);
            if record.events.is_none() {
                let location = record.id;
                self.event_writer(location)?.close()?;
            }
        }
        self.archive.close_evt_files()?;

        self.archive.open_def_files()?;
        for record in self.defs.location_records() {
            self.archive.write_local_defs(record.id, &record.clock_offsets)?;
        }
        self.archive.close_def_files()?;

        let clock = self.clock.unwrap_or_else(|| self.defs.observed_clock());
        let mut global = self.archive.global_def_writer()?;
        self.defs.write(&mut global, &clock)?;
        global.close()
    }
}

/// Event writers for several threads at once, from
/// [`ArchiveWriter::concurrent`]: `Sync`, so threads share it by reference.
pub struct ConcurrentWriters<'a> {
    archive: SharedArchive<'a>,
    defs: &'a Mutex<Definitions>,
    deferred: &'a Mutex<Option<Error>>,
}

impl ConcurrentWriters<'_> {
    /// The event writer of `location`, for the calling thread; as
    /// [`ArchiveWriter::event_writer`], any number at a time (one per
    /// location).
    ///
    /// # Errors
    ///
    /// As [`ArchiveWriter::event_writer`].
    pub fn event_writer(&self, location: LocationRef) -> Result<EventWriter<'_>> {
        let slot = {
            let mut defs = lock(self.defs);
            let slot = defs.location_slot(location)?;
            if defs.location_record(slot).events.is_some() {
                return Err(Error::EventsAlreadyWritten { id: location.id() });
            }
            // Claimed under the lock: no second writer of this location.
            defs.location_record(slot).events = Some(Default::default());
            slot
        };
        let raw = match self.archive.evt_writer(location) {
            Ok(raw) => raw,
            Err(e) => {
                lock(self.defs).location_record(slot).events = None;
                return Err(e);
            }
        };
        Ok(EventWriter::new(raw, Home::Shared { defs: self.defs, deferred: self.deferred }, slot, location))
    }

    /// The shared definitions, locked while the guard lives.
    pub fn defs(&self) -> crate::DefsMut<'_> {
        crate::DefsMut::Locked(lock(self.defs))
    }
}

impl Drop for ArchiveWriter {
    /// Finalizes an archive that was not closed, so that what was written
    /// stays readable; errors are lost, so prefer [`ArchiveWriter::close`].
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl std::fmt::Debug for ArchiveWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveWriter")
            .field("anchor", &self.anchor)
            .field("locations", &self.defs.location_count())
            .finish_non_exhaustive()
    }
}

/// A C string for a metadata value; an interior NUL, which C cannot carry,
/// becomes U+FFFD, as in interned strings.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{FFFD}")).expect("NUL bytes were replaced")
}
