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

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::collective::{Collectives, Reader, Wire, gather_bytes, scatter_bytes};
use crate::defs::{Definitions, EventSummary};
use crate::error::{Error, Result};
use crate::events::{EventWriter, Home, lock};
use crate::ffi::archive::{Archive, SharedArchive};
use crate::refs::{AttributeRef, LocationRef};
use crate::types::Type;
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
    /// Written with other processes: how they talk, the locations whose
    /// events and local definitions this process writes, and the numbers
    /// of strings and attributes every process defined alike.
    shared: Option<Shared>,
}

struct Shared {
    comm: Arc<dyn Collectives>,
    own: HashSet<LocationRef>,
    common: (usize, usize),
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
        let anchor = claim(dir, name)?;
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
        Ok(Self {
            archive,
            defs: Definitions::new(),
            clock: None,
            anchor,
            deferred: None,
            finished: false,
            shared: None,
        })
    }

    /// Creates the archive `dir/<name>.otf2` as one of `comm.size()`
    /// processes that write it together (each calls this, with the same
    /// arguments): OTF2's collective callbacks go through `comm`. Each
    /// process defines the same definitions, says with
    /// [`write_only`](Self::write_only) which locations it writes, and
    /// writes their events; at [`close`](Self::close) rank 0 gets every
    /// location's event count and every string and attribute the others
    /// defined while writing events (their files get mapping tables to its
    /// ids), and writes the global definitions.
    ///
    /// Dropping it unclosed does not finalize it (that would wait for the
    /// others): a process that fails should end the job.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create), on every process when rank 0 cannot
    /// create the archive.
    pub fn create_collective(dir: &Path, name: &str, comm: Arc<dyn Collectives>) -> Result<Self> {
        // Rank 0 claims the name; the others learn whether it could.
        let claimed = if comm.rank() == 0 { claim(dir, name) } else { Ok(dir.join(format!("{name}.otf2"))) };
        let mut ok = [u8::from(claimed.is_ok())];
        if !comm.bcast(&mut ok, 0) {
            return Err(Error::Collective { what: "agreeing on the archive's creation" });
        }
        let anchor = match (claimed, ok[0]) {
            (Err(e), _) => return Err(e),
            (Ok(_), 0) => return Err(Error::AlreadyExists { path: dir.join(format!("{name}.otf2")) }),
            (Ok(anchor), _) => anchor,
        };
        let c_name = CString::new(name).expect("checked for NUL by the claim");
        let mut archive = match Archive::create_with(dir, &c_name, Some(Arc::clone(&comm))) {
            Ok(archive) => archive,
            Err(err) => {
                if comm.rank() == 0 {
                    let _ = std::fs::remove_file(&anchor);
                }
                return Err(err);
            }
        };
        let creator = CString::new(concat!("otf2 ", env!("CARGO_PKG_VERSION"))).expect("no NUL in a version");
        archive.set_creator(&creator)?;
        let shared = Shared { comm, own: HashSet::new(), common: (0, 0) };
        Ok(Self {
            archive,
            defs: Definitions::new(),
            clock: None,
            anchor,
            deferred: None,
            finished: false,
            shared: Some(shared),
        })
    }

    /// Of an archive written together: this process writes the events and
    /// local definitions of `locations` (and of no other); the definitions
    /// made so far are the same on every process.
    pub fn write_only(&mut self, locations: impl IntoIterator<Item = LocationRef>) {
        let common = (self.defs.string_count(), self.defs.attribute_count());
        if let Some(shared) = &mut self.shared {
            shared.own = locations.into_iter().collect();
            shared.common = common;
        }
    }

    /// Whether this process writes the events of `location`.
    fn owns(&self, location: LocationRef) -> bool {
        self.shared.as_ref().is_none_or(|s| s.own.contains(&location))
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
        if written.is_err() && self.shared.is_some() {
            // Closing is collective, and the others are elsewhere: the
            // caller ends the job.
            return written;
        }
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
            let (location, written) = (record.id, record.events.is_some());
            if !written && self.owns(location) {
                self.event_writer(location)?.close()?;
            }
        }
        self.archive.close_evt_files()?;
        let mappings = match &self.shared {
            Some(shared) => {
                let comm = Arc::clone(&shared.comm);
                let common = shared.common;
                self.gather_event_counts(&*comm)?;
                self.unify(&*comm, common)?
            }
            None => (Vec::new(), Vec::new()),
        };

        self.archive.open_def_files()?;
        let maps = [
            (otf2_sys::OTF2_MAPPING_STRING as otf2_sys::OTF2_MappingType, mappings.0.as_slice()),
            (otf2_sys::OTF2_MAPPING_ATTRIBUTE as otf2_sys::OTF2_MappingType, mappings.1.as_slice()),
        ];
        let maps: Vec<_> = maps.into_iter().filter(|(_, m)| !m.is_empty()).collect();
        for record in self.defs.location_records() {
            if self.owns(record.id) {
                self.archive.write_local_defs(record.id, &record.clock_offsets, &maps)?;
            }
        }
        self.archive.close_def_files()?;

        if !self.archive.is_primary()? {
            return Ok(());
        }
        let clock = self.clock.unwrap_or_else(|| self.defs.observed_clock());
        let mut global = self.archive.global_def_writer()?;
        self.defs.write(&mut global, &clock)?;
        global.close()
    }

    /// Rank 0 learns the event count and time span of every location the
    /// others wrote.
    fn gather_event_counts(&mut self, comm: &dyn Collectives) -> Result<()> {
        let mut wire = Wire::default();
        for record in self.defs.location_records() {
            if let (Some(e), true) = (record.events, self.owns(record.id)) {
                for v in [record.id.0, e.count, e.first_time, e.last_time] {
                    wire.u64(v);
                }
            }
        }
        let all = gather_bytes(comm, &wire.0, 0)?;
        for bytes in all.iter().skip(1) {
            let mut r = Reader(bytes);
            while !r.0.is_empty() {
                let id = LocationRef(r.u64()?);
                let (count, first_time, last_time) = (r.u64()?, r.u64()?, r.u64()?);
                let slot = self.defs.location_slot(id)?;
                self.defs.location_record(slot).events = Some(EventSummary { count, first_time, last_time });
            }
        }
        Ok(())
    }

    /// The strings and attributes each process defined beyond the common
    /// ones, made rank 0's (the same text or the same attribute is one
    /// definition); returns this process's mapping of its ids to rank 0's
    /// (dense: one global id per local id; empty where there is nothing to
    /// map).
    fn unify(&mut self, comm: &dyn Collectives, (strings, attributes): (usize, usize)) -> Result<(Vec<u64>, Vec<u64>)> {
        let mut wire = Wire::default();
        wire.u64(strings as u64);
        wire.u64(attributes as u64);
        let new_strings: Vec<&str> = self.defs.strings_since(strings).collect();
        wire.u64(new_strings.len() as u64);
        for s in new_strings {
            wire.text(s);
        }
        let new_attributes: Vec<(&str, &str, Type)> = self.defs.attributes_since(attributes).collect();
        wire.u64(new_attributes.len() as u64);
        for (name, description, ty) in new_attributes {
            wire.text(name);
            wire.text(description);
            wire.u64(u64::from(ty.to_raw()));
        }
        let all = gather_bytes(comm, &wire.0, 0)?;
        let mut replies = Vec::new();
        if comm.rank() == 0 {
            let mut known: HashMap<(String, u8), AttributeRef> = HashMap::new();
            for (i, (name, _, ty)) in self.defs.attributes_since(attributes).enumerate() {
                known.entry((name.to_string(), ty.to_raw())).or_insert(AttributeRef((attributes + i) as u32));
            }
            for (rank, bytes) in all.iter().enumerate() {
                let mut r = Reader(bytes);
                if (r.u64()?, r.u64()?) != (strings as u64, attributes as u64) {
                    return Err(Error::Collective { what: "to define the same definitions before the events" });
                }
                let mut reply = Wire::default();
                let n = r.u64()?;
                let mut string_ids = Vec::new();
                for _ in 0..n {
                    let text = r.text()?;
                    string_ids.push(u64::from(self.defs.string(&text).0));
                }
                let n = r.u64()?;
                let mut attribute_ids = Vec::new();
                for _ in 0..n {
                    let (name, description, ty) = (r.text()?, r.text()?, r.u64()? as u8);
                    let defs = &mut self.defs;
                    let id = *known
                        .entry((name.clone(), ty))
                        .or_insert_with(|| defs.attribute(&name, &description, Type::from_raw(ty)));
                    attribute_ids.push(u64::from(id.0));
                }
                // Rank 0's own are where they are.
                if rank == 0 {
                    string_ids.clear();
                    attribute_ids.clear();
                }
                reply.u64(string_ids.len() as u64);
                string_ids.iter().for_each(|&id| reply.u64(id));
                reply.u64(attribute_ids.len() as u64);
                attribute_ids.iter().for_each(|&id| reply.u64(id));
                replies.push(reply.0);
            }
        }
        let mine = scatter_bytes(comm, &replies, 0)?;
        let mut r = Reader(&mine);
        let dense = |r: &mut Reader<'_>, common: usize| -> Result<Vec<u64>> {
            let n = r.u64()? as usize;
            if n == 0 {
                return Ok(Vec::new());
            }
            let mut map: Vec<u64> = (0..common as u64).collect();
            for _ in 0..n {
                map.push(r.u64()?);
            }
            Ok(map)
        };
        let strings_map = dense(&mut r, strings)?;
        let attributes_map = dense(&mut r, attributes)?;
        Ok((strings_map, attributes_map))
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
        if self.shared.is_some() {
            // Finalizing is collective: see `create_collective`.
            return;
        }
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

/// Checks the name, makes `dir`, and claims `dir/<name>.otf2` (creating
/// it empty) unless any part of an archive of that name is there.
fn claim(dir: &Path, name: &str) -> Result<PathBuf> {
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
    Ok(anchor)
}

/// A C string for a metadata value; an interior NUL, which C cannot carry,
/// becomes U+FFFD, as in interned strings.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{FFFD}")).expect("NUL bytes were replaced")
}
