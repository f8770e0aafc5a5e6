//! Where events happen: the system tree (machine, nodes, devices),
//! location groups (processes, accelerator contexts) and locations
//! (threads, streams), with their properties.
//!
//! Locations also carry what the archive learns while writing: the event
//! count and time span each event writer measured, and the clock offsets
//! that go into the location's local definition file.

use std::collections::HashMap;

use super::{Definitions, next_id};
use crate::error::{Error, Result};
use crate::ffi::global_defs::GlobalDefWriter;
use crate::refs::{LocationGroupRef, LocationRef, StringRef, SystemTreeNodeRef};
use crate::types::{LocationGroupType, LocationType, SystemTreeDomain};
use crate::values::{AttributeValue, ClockOffset, ClockProperties};

struct SystemTreeNodeRecord {
    name: StringRef,
    class_name: StringRef,
    parent: Option<SystemTreeNodeRef>,
}

struct LocationGroupRecord {
    name: StringRef,
    ty: LocationGroupType,
    parent: SystemTreeNodeRef,
    creating: Option<LocationGroupRef>,
}

/// What an event writer measured on one location.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EventSummary {
    pub(crate) count: u64,
    pub(crate) first_time: u64,
    pub(crate) last_time: u64,
}

pub(crate) struct LocationRecord {
    pub(crate) id: LocationRef,
    name: StringRef,
    ty: LocationType,
    group: LocationGroupRef,
    /// `None` until the location's event writer was opened.
    pub(crate) events: Option<EventSummary>,
    pub(crate) clock_offsets: Vec<ClockOffset>,
}

/// The system tree of a [`Definitions`], read back
/// ([`Definitions::system_tree`]); nodes, groups and locations in
/// definition order, so that a [`SystemTreeNodeRef`] or
/// [`LocationGroupRef`] indexes its list.
#[derive(Debug, Clone, Default)]
pub struct SystemTree {
    pub nodes: Vec<TreeNode>,
    pub groups: Vec<TreeGroup>,
    pub locations: Vec<TreeLocation>,
}

/// A system-tree node: the machine, a host, a GPU.
#[derive(Debug, Clone)]
pub struct TreeNode {
    pub name: String,
    pub class: String,
    pub parent: Option<SystemTreeNodeRef>,
}

/// A location group: a process, an accelerator context.
#[derive(Debug, Clone)]
pub struct TreeGroup {
    pub name: String,
    pub ty: LocationGroupType,
    pub parent: SystemTreeNodeRef,
    /// The process that created an accelerator context.
    pub creating: Option<LocationGroupRef>,
}

/// A location: a thread, a GPU stream, a metric location.
#[derive(Debug, Clone)]
pub struct TreeLocation {
    pub location: LocationRef,
    pub name: String,
    pub ty: LocationType,
    pub group: LocationGroupRef,
}

#[derive(Default)]
pub(super) struct SystemDefs {
    nodes: Vec<SystemTreeNodeRecord>,
    node_properties: Vec<(SystemTreeNodeRef, StringRef, AttributeValue)>,
    node_domains: Vec<(SystemTreeNodeRef, SystemTreeDomain)>,
    location_groups: Vec<LocationGroupRecord>,
    location_group_properties: Vec<(LocationGroupRef, StringRef, AttributeValue)>,
    locations: Vec<LocationRecord>,
    location_index: HashMap<u64, usize>,
    location_properties: Vec<(LocationRef, StringRef, AttributeValue)>,
}

impl SystemDefs {
    pub(super) fn write(&self, out: &mut GlobalDefWriter<'_>) -> Result<()> {
        for (id, n) in self.nodes.iter().enumerate() {
            out.system_tree_node(SystemTreeNodeRef(id as u32), n.name, n.class_name, n.parent)?;
        }
        for (node, name, value) in &self.node_properties {
            out.system_tree_node_property(*node, *name, value)?;
        }
        for &(node, domain) in &self.node_domains {
            out.system_tree_node_domain(node, domain)?;
        }
        for (id, g) in self.location_groups.iter().enumerate() {
            out.location_group(LocationGroupRef(id as u32), g.name, g.ty, g.parent, g.creating)?;
        }
        for (group, name, value) in &self.location_group_properties {
            out.location_group_property(*group, *name, value)?;
        }
        for l in &self.locations {
            let count = l.events.map_or(0, |e| e.count);
            out.location(l.id, l.name, l.ty, count, l.group)?;
        }
        for (location, name, value) in &self.location_properties {
            out.location_property(*location, *name, value)?;
        }
        Ok(())
    }
}

impl Definitions {
    /// A node of the system tree (`SystemTreeNode`): the machine at the
    /// root (`parent` = `None`), then hosts, devices. `class_name` says what
    /// it is (`machine`, `node`, `GPU`...). Define parents first.
    pub fn system_tree_node(
        &mut self,
        name: &str,
        class_name: &str,
        parent: Option<SystemTreeNodeRef>,
    ) -> SystemTreeNodeRef {
        let id = SystemTreeNodeRef(next_id(self.system.nodes.len(), "system tree node"));
        let record = SystemTreeNodeRecord { name: self.string(name), class_name: self.string(class_name), parent };
        self.system.nodes.push(record);
        id
    }

    /// A named property of a system tree node, such as an NVLink count.
    pub fn system_tree_node_property(&mut self, node: SystemTreeNodeRef, name: &str, value: AttributeValue) {
        let name = self.string(name);
        self.system.node_properties.push((node, name, value));
    }

    /// Declares which hardware domain a system tree node stands for.
    pub fn system_tree_node_domain(&mut self, node: SystemTreeNodeRef, domain: SystemTreeDomain) {
        self.system.node_domains.push((node, domain));
    }

    /// A location group (`LocationGroup`): a process (type `Process`) or an
    /// accelerator context (type `Accelerator`, with the process that
    /// created it as `creating_group`), placed under `system_tree_parent`.
    /// Ids count from 0 in definition order, so defining processes by rank
    /// makes a process's id its rank.
    pub fn location_group(
        &mut self,
        name: &str,
        ty: LocationGroupType,
        system_tree_parent: SystemTreeNodeRef,
        creating_group: Option<LocationGroupRef>,
    ) -> LocationGroupRef {
        let id = LocationGroupRef(next_id(self.system.location_groups.len(), "location group"));
        let record =
            LocationGroupRecord { name: self.string(name), ty, parent: system_tree_parent, creating: creating_group };
        self.system.location_groups.push(record);
        id
    }

    /// A named property of a location group.
    pub fn location_group_property(&mut self, group: LocationGroupRef, name: &str, value: AttributeValue) {
        let name = self.string(name);
        self.system.location_group_properties.push((group, name, value));
    }

    /// A location (`Location`) with a caller-chosen id, unique in the
    /// archive. Score-P's convention, `rank << 32 | thread`, keeps ids
    /// stable across runs and readable in tools; any scheme works.
    ///
    /// The definition's event count is filled in at close with the number
    /// of records the location's [`EventWriter`](crate::EventWriter) wrote.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateLocation`] for an id already defined,
    /// [`Error::InvalidLocationId`] for `u64::MAX` (OTF2's "undefined").
    pub fn location(&mut self, id: u64, name: &str, ty: LocationType, group: LocationGroupRef) -> Result<LocationRef> {
        if id == otf2_sys::OTF2_UNDEFINED_LOCATION {
            return Err(Error::InvalidLocationId { id });
        }
        if self.system.location_index.contains_key(&id) {
            return Err(Error::DuplicateLocation { id });
        }
        let record = LocationRecord {
            id: LocationRef(id),
            name: self.string(name),
            ty,
            group,
            events: None,
            clock_offsets: Vec::new(),
        };
        self.system.location_index.insert(id, self.system.locations.len());
        self.system.locations.push(record);
        Ok(LocationRef(id))
    }

    /// A named property of a location.
    pub fn location_property(&mut self, location: LocationRef, name: &str, value: AttributeValue) {
        let name = self.string(name);
        self.system.location_properties.push((location, name, value));
    }

    /// Number of locations defined so far.
    pub fn location_count(&self) -> usize {
        self.system.locations.len()
    }

    /// Whether `location` was defined here.
    pub fn has_location(&self, location: LocationRef) -> bool {
        self.system.location_index.contains_key(&location.0)
    }

    pub(crate) fn location_slot(&self, location: LocationRef) -> Result<usize> {
        self.system.location_index.get(&location.0).copied().ok_or(Error::UnknownLocation { id: location.0 })
    }

    pub(crate) fn location_record(&mut self, slot: usize) -> &mut LocationRecord {
        &mut self.system.locations[slot]
    }

    pub(crate) fn location_records(&self) -> &[LocationRecord] {
        &self.system.locations
    }

    /// The system tree as defined so far, names resolved: for those who
    /// describe the same machine elsewhere (a profile of the trace).
    pub fn system_tree(&self) -> SystemTree {
        let text = |s: StringRef| self.text(s).to_string();
        SystemTree {
            nodes: self
                .system
                .nodes
                .iter()
                .map(|n| TreeNode { name: text(n.name), class: text(n.class_name), parent: n.parent })
                .collect(),
            groups: self
                .system
                .location_groups
                .iter()
                .map(|g| TreeGroup { name: text(g.name), ty: g.ty, parent: g.parent, creating: g.creating })
                .collect(),
            locations: self
                .system
                .locations
                .iter()
                .map(|l| TreeLocation { location: l.id, name: text(l.name), ty: l.ty, group: l.group })
                .collect(),
        }
    }

    /// Clock properties covering every event written: nanosecond
    /// resolution, from the earliest to the latest timestamp. Used when the
    /// caller set none.
    pub(crate) fn observed_clock(&self) -> ClockProperties {
        let spans = self.system.locations.iter().filter_map(|l| l.events).filter(|e| e.count > 0);
        let (first, last) =
            spans.fold((u64::MAX, 0), |(first, last), e| (first.min(e.first_time), last.max(e.last_time)));
        let (global_offset, trace_length) =
            if first == u64::MAX { (0, 0) } else { (first, last.saturating_sub(first)) };
        ClockProperties { timer_resolution: 1_000_000_000, global_offset, trace_length, realtime_timestamp: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_unique() {
        let mut defs = Definitions::new();
        let machine = defs.system_tree_node("machine", "machine", None);
        let rank0 = defs.location_group("MPI Rank 0", LocationGroupType::Process, machine, None);
        let loc = defs.location(7, "Master thread", LocationType::CpuThread, rank0).unwrap();
        assert_eq!(loc.id(), 7);
        assert!(matches!(
            defs.location(7, "again", LocationType::CpuThread, rank0),
            Err(Error::DuplicateLocation { id: 7 })
        ));
        assert!(matches!(
            defs.location(u64::MAX, "x", LocationType::CpuThread, rank0),
            Err(Error::InvalidLocationId { .. })
        ));
        assert!(defs.has_location(loc));
        assert!(matches!(defs.location_slot(LocationRef(8)), Err(Error::UnknownLocation { id: 8 })));
    }

    #[test]
    fn observed_clock_spans_all_locations() {
        let mut defs = Definitions::new();
        let machine = defs.system_tree_node("m", "machine", None);
        let group = defs.location_group("p", LocationGroupType::Process, machine, None);
        for (id, first, last) in [(0, 100, 200), (1, 50, 150)] {
            let loc = defs.location(id, "t", LocationType::CpuThread, group).unwrap();
            let slot = defs.location_slot(loc).unwrap();
            defs.location_record(slot).events = Some(EventSummary { count: 2, first_time: first, last_time: last });
        }
        let clock = defs.observed_clock();
        assert_eq!((clock.global_offset, clock.trace_length), (50, 150));
        assert_eq!(Definitions::new().observed_clock().trace_length, 0);
    }

    #[test]
    fn the_system_tree_reads_back_as_defined() {
        let mut defs = Definitions::new();
        let machine = defs.system_tree_node("machine", "machine", None);
        let node = defs.system_tree_node("host", "node", Some(machine));
        let rank = defs.location_group("MPI Rank 0", LocationGroupType::Process, node, None);
        let gpu = defs.system_tree_node("CUDA Device 0", "GPU", Some(node));
        let ctx = defs.location_group("CUDA Context 1", LocationGroupType::Accelerator, gpu, Some(rank));
        defs.location(5, "Master thread", LocationType::CpuThread, rank).unwrap();
        defs.location(9, "CUDA[0:7]", LocationType::AcceleratorStream, ctx).unwrap();
        let tree = defs.system_tree();
        assert_eq!(tree.nodes.len(), 3);
        assert_eq!((tree.nodes[2].name.as_str(), tree.nodes[2].class.as_str()), ("CUDA Device 0", "GPU"));
        assert_eq!(tree.nodes[2].parent, Some(node));
        assert_eq!(tree.groups[ctx.id() as usize].creating, Some(rank));
        assert_eq!(tree.groups[1].ty, LocationGroupType::Accelerator);
        let l = &tree.locations[1];
        assert_eq!(
            (l.location.id(), l.name.as_str(), l.ty, l.group),
            (9, "CUDA[0:7]", LocationType::AcceleratorStream, ctx)
        );
    }
}
