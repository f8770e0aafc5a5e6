//! The definitions of an archive being written: a builder that hands out
//! `Copy` handles and keeps every definition until the archive is closed.
//!
//! OTF2 wants the global definitions in one file, written once, with every
//! reference defined before it is used. Keeping them here until
//! [`ArchiveWriter::close`](crate::ArchiveWriter::close) lets a caller define
//! things in any order, and while events are being written (a kernel first
//! seen halfway through a stream), and lets the location definitions carry
//! the event counts the writers measured. Definitions are small (strings,
//! ids, member lists), so holding them costs little next to the events,
//! which never stay in memory.
//!
//! Ids are assigned in definition order from 0, per kind; locations are the
//! exception: their ids are chosen by the caller (see
//! [`Definitions::location`]).

use std::collections::HashMap;
use std::ffi::CString;

use crate::error::Result;
use crate::ffi::global_defs::GlobalDefWriter;
use crate::refs::{AttributeRef, RegionRef, StringRef};
use crate::types::{Paradigm, ParadigmClass, ParadigmProperty, RegionFlags, RegionRole, Type};
use crate::values::{AttributeValue, ClockProperties};

mod calling;
mod communication;
mod metrics;
mod system;

pub use metrics::MetricMember;
pub(crate) use system::EventSummary;
pub use system::{SystemTree, TreeGroup, TreeLocation, TreeNode};

/// A region to define; [`Region::new`] fills in the usual defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region<'a> {
    /// The name shown by tools, such as `MPI_Send` or a demangled kernel.
    pub name: &'a str,
    /// The unique name (a mangled symbol); defaults to `name`.
    pub canonical_name: &'a str,
    /// Free text.
    pub description: &'a str,
    /// What the region is.
    pub role: RegionRole,
    /// The paradigm it belongs to.
    pub paradigm: Paradigm,
    /// Region flags.
    pub flags: RegionFlags,
    /// Source file, or empty.
    pub source_file: &'a str,
    /// First source line, or 0.
    pub begin_line: u32,
    /// Last source line, or 0.
    pub end_line: u32,
}

impl<'a> Region<'a> {
    /// A region with this name, role and paradigm; canonical name = name,
    /// no description, flags or source location.
    pub fn new(name: &'a str, role: RegionRole, paradigm: Paradigm) -> Self {
        Self {
            name,
            canonical_name: name,
            description: "",
            role,
            paradigm,
            flags: RegionFlags::NONE,
            source_file: "",
            begin_line: 0,
            end_line: 0,
        }
    }
}

struct RegionRecord {
    name: StringRef,
    canonical_name: StringRef,
    description: StringRef,
    role: RegionRole,
    paradigm: Paradigm,
    flags: RegionFlags,
    source_file: StringRef,
    begin_line: u32,
    end_line: u32,
}

struct AttributeRecord {
    name: StringRef,
    description: StringRef,
    ty: Type,
}

/// The definition builder of one archive; reach it through
/// [`ArchiveWriter::defs`](crate::ArchiveWriter::defs) or
/// [`EventWriter::defs`](crate::EventWriter::defs).
///
/// Handles from one archive's builder mean nothing in another's; nothing
/// checks that a handle passed in was made here.
///
/// # Panics
///
/// Defining more than `u32::MAX - 1` items of one kind (the last id is
/// OTF2's "undefined") panics; long before that, memory runs out.
pub struct Definitions {
    strings: Vec<CString>,
    string_ids: HashMap<Box<str>, StringRef>,
    paradigms: Vec<(Paradigm, StringRef, ParadigmClass)>,
    paradigm_properties: Vec<(Paradigm, ParadigmProperty, AttributeValue)>,
    attributes: Vec<AttributeRecord>,
    regions: Vec<RegionRecord>,
    system: system::SystemDefs,
    communication: communication::CommunicationDefs,
    metrics: metrics::MetricDefs,
    calling: calling::CallingDefs,
}

impl Default for Definitions {
    fn default() -> Self {
        Self::new()
    }
}

/// The next id of a table with `len` entries.
fn next_id(len: usize, kind: &str) -> u32 {
    match u32::try_from(len) {
        Ok(id) if id < u32::MAX => id,
        _ => panic!("more than {} {kind} definitions", u32::MAX - 1),
    }
}

impl Definitions {
    /// An empty builder. An archive makes its own; a standalone one serves a
    /// caller that needs the same ids without writing an archive.
    pub fn new() -> Self {
        Self {
            strings: Vec::new(),
            string_ids: HashMap::new(),
            paradigms: Vec::new(),
            paradigm_properties: Vec::new(),
            attributes: Vec::new(),
            regions: Vec::new(),
            system: Default::default(),
            communication: Default::default(),
            metrics: Default::default(),
            calling: Default::default(),
        }
    }

    /// Interns `text`: the same text always gives the same handle, and is
    /// written once. An interior NUL, which C strings cannot hold, is
    /// replaced by U+FFFD.
    pub fn string(&mut self, text: &str) -> StringRef {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = StringRef(next_id(self.strings.len(), "string"));
        let c_text = CString::new(text)
            .unwrap_or_else(|_| CString::new(text.replace('\0', "\u{FFFD}")).expect("NUL bytes were replaced"));
        self.strings.push(c_text);
        self.string_ids.insert(text.into(), id);
        id
    }

    /// The text of an interned string (U+FFFD where it held a NUL).
    fn text(&self, s: StringRef) -> std::borrow::Cow<'_, str> {
        self.strings.get(s.0 as usize).map_or(std::borrow::Cow::Borrowed(""), |c| c.to_string_lossy())
    }

    /// Number of distinct strings interned so far.
    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    /// Number of attributes defined.
    pub fn attribute_count(&self) -> usize {
        self.attributes.len()
    }

    /// The strings from the `first`-th on, in id order.
    pub(crate) fn strings_since(&self, first: usize) -> impl Iterator<Item = &str> {
        self.strings.iter().skip(first).map(|s| s.to_str().unwrap_or(""))
    }

    /// The attributes from the `first`-th on, in id order: name,
    /// description, type.
    pub(crate) fn attributes_since(&self, first: usize) -> impl Iterator<Item = (&str, &str, Type)> {
        let text = |r: StringRef| self.strings.get(r.0 as usize).map_or("", |s| s.to_str().unwrap_or(""));
        self.attributes.iter().skip(first).map(move |a| (text(a.name), text(a.description), a.ty))
    }

    /// Names a paradigm (a `Paradigm` definition). Defining the same
    /// paradigm again replaces the earlier name and class.
    pub fn paradigm(&mut self, paradigm: Paradigm, name: &str, class: ParadigmClass) {
        let name = self.string(name);
        match self.paradigms.iter_mut().find(|(p, _, _)| *p == paradigm) {
            Some(entry) => *entry = (paradigm, name, class),
            None => self.paradigms.push((paradigm, name, class)),
        }
    }

    /// A property of a paradigm, such as its communicator name template.
    pub fn paradigm_property(&mut self, paradigm: Paradigm, property: ParadigmProperty, value: AttributeValue) {
        self.paradigm_properties.push((paradigm, property, value));
    }

    /// An attribute that events can carry, with the type of its values.
    pub fn attribute(&mut self, name: &str, description: &str, ty: Type) -> AttributeRef {
        let id = AttributeRef(next_id(self.attributes.len(), "attribute"));
        let name = self.string(name);
        let description = self.string(description);
        self.attributes.push(AttributeRecord { name, description, ty });
        id
    }

    /// A code region. Regions are not deduplicated: two calls give two
    /// regions even with equal fields, so keep the handle.
    pub fn region(&mut self, region: Region<'_>) -> RegionRef {
        let id = RegionRef(next_id(self.regions.len(), "region"));
        let record = RegionRecord {
            name: self.string(region.name),
            canonical_name: self.string(region.canonical_name),
            description: self.string(region.description),
            role: region.role,
            paradigm: region.paradigm,
            flags: region.flags,
            source_file: self.string(region.source_file),
            begin_line: region.begin_line,
            end_line: region.end_line,
        };
        self.regions.push(record);
        id
    }

    /// Number of regions defined so far.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// Writes every definition, `clock` first, in an order where each
    /// reference is defined before it is used.
    pub(crate) fn write(&self, out: &mut GlobalDefWriter<'_>, clock: &ClockProperties) -> Result<()> {
        out.clock_properties(clock)?;
        for (id, text) in self.strings.iter().enumerate() {
            out.string(StringRef(id as u32), text)?;
        }
        for &(paradigm, name, class) in &self.paradigms {
            out.paradigm(paradigm, name, class)?;
        }
        for (paradigm, property, value) in &self.paradigm_properties {
            out.paradigm_property(*paradigm, *property, value)?;
        }
        for (id, a) in self.attributes.iter().enumerate() {
            out.attribute(AttributeRef(id as u32), a.name, a.description, a.ty)?;
        }
        // System tree, location groups, locations, then their properties.
        self.system.write(out)?;
        for (id, r) in self.regions.iter().enumerate() {
            out.region(
                RegionRef(id as u32),
                r.name,
                r.canonical_name,
                r.description,
                r.role,
                r.paradigm,
                r.flags,
                r.source_file,
                r.begin_line,
                r.end_line,
            )?;
        }
        // Source code locations, calling contexts (which name regions) and
        // interrupt generators.
        self.calling.write(out)?;
        // Groups (whose members may be locations), comms, RMA windows.
        self.communication.write(out)?;
        // Metric members, classes and instances (which name locations).
        self.metrics.write(out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_interned() {
        let mut defs = Definitions::new();
        let a = defs.string("MPI_Send");
        let b = defs.string("MPI_Recv");
        assert_ne!(a, b);
        assert_eq!(defs.string("MPI_Send"), a);
        assert_eq!(defs.string_count(), 2);
        let nul = defs.string("a\0b");
        assert_eq!(defs.strings[nul.id() as usize].to_str().unwrap(), "a\u{FFFD}b");
    }

    #[test]
    fn regions_intern_their_strings() {
        let mut defs = Definitions::new();
        let r1 = defs.region(Region::new("k", RegionRole::Function, Paradigm::Cuda));
        let r2 =
            defs.region(Region { description: "kernel", ..Region::new("k", RegionRole::Function, Paradigm::Cuda) });
        assert_eq!((r1.id(), r2.id()), (0, 1));
        // "k" and "" and "kernel".
        assert_eq!(defs.string_count(), 3);
    }

    #[test]
    fn paradigm_redefinition_replaces() {
        let mut defs = Definitions::new();
        defs.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
        defs.paradigm(Paradigm::Mpi, "Open MPI", ParadigmClass::Process);
        assert_eq!(defs.paradigms.len(), 1);
    }
}
