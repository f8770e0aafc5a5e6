//! Definitions: strings, regions, locations and the producer's own
//! records, encoded under one lock into the pending definitions, and
//! written as a definitions chunk before any event that could name them
//! is committed (with the loss counts that changed since the last).

use std::sync::atomic::Ordering;

use raw::chunk::ChunkKind;
use raw::{Definition, LocationKind, Paradigm, RegionRole};

use crate::deftable::{DefTable, Defs};
use crate::{Recorder, lost};

impl Recorder {
    /// The id of `s`, defining it on first use.
    pub fn intern(&self, s: &str) -> u32 {
        let mut defs = self.defs();
        Self::intern_locked(&mut defs, s)
    }

    pub(crate) fn intern_locked(defs: &mut DefTable, s: &str) -> u32 {
        if let Some(&id) = defs.strings.get(s) {
            return id;
        }
        let id = defs.strings.len() as u32 + 1;
        defs.strings.insert(s.to_string(), id);
        Definition::String { id, value: s.to_string() }.encode(&mut defs.pending);
        id
    }

    /// Defines a region; `None` when the filter leaves it out. `group` is a
    /// free-form grouping (the MPI function group, say), "" for none.
    pub fn region(
        &self,
        name: &str,
        mangled: Option<&str>,
        paradigm: Paradigm,
        role: RegionRole,
        group: &str,
    ) -> Option<u32> {
        if self.0.filter.as_ref().is_some_and(|f| f.excludes(name, mangled)) {
            return None;
        }
        let mut defs = self.defs();
        let name = Self::intern_locked(&mut defs, name);
        let canonical = mangled.map_or(0, |m| Self::intern_locked(&mut defs, m));
        let group = if group.is_empty() { 0 } else { Self::intern_locked(&mut defs, group) };
        let id = defs.next_region;
        defs.next_region += 1;
        Definition::Region { id, name, canonical, paradigm, role, group }.encode(&mut defs.pending);
        Some(id)
    }

    /// Defines a location whose events the caller writes itself with
    /// [`write_batch`](Self::write_batch) (a GPU stream, a metric source),
    /// rather than the calling thread's.
    pub fn define_location(&self, kind: LocationKind, name: &str) -> u32 {
        let mut defs = self.defs();
        let name = Self::intern_locked(&mut defs, name);
        let id = defs.next_location;
        defs.next_location += 1;
        Definition::Location { id, kind, name }.encode(&mut defs.pending);
        id
    }

    /// A fresh communicator id.
    pub fn next_comm_id(&self) -> u32 {
        self.0.next_comm.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds a definition (rank, communicator, clock sync, ...).
    pub fn define(&self, def: &Definition) {
        def.encode(&mut self.defs().pending);
    }

    /// Writes the definitions made so far.
    pub fn flush_definitions(&self) {
        let mut defs = self.defs();
        self.write_definitions(&mut defs);
    }

    pub(crate) fn defs(&self) -> Defs<'_> {
        Defs { guard: self.0.defs.lock().unwrap_or_else(|e| e.into_inner()), flag: &self.0.defs_pending }
    }

    pub(crate) fn write_definitions(&self, defs: &mut Defs<'_>) {
        if !self.is_active() {
            return;
        }
        let totals = self.lost_totals();
        if lost::changed(&totals, &self.0.lost_written) {
            lost::encode_changed(&totals, &self.0.lost_written, &mut defs.pending);
        }
        if defs.pending.is_empty() {
            return;
        }
        match self.0.stream.write_chunk(ChunkKind::Definitions, None, &defs.pending) {
            Ok(_) => defs.pending.clear(),
            Err(e) => self.fail(&e),
        }
    }
}
