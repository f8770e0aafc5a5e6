//! The definitions of an archive being read, as typed records.
//!
//! Every field keeps OTF2's references (`StringRef`, `GroupRef`...) rather
//! than resolving them, because OTF2 does not promise that a string is
//! defined before a record that names it; resolve through
//! [`GlobalDefs::string`] and the maps once reading is done.

use std::collections::{BTreeMap, HashMap};

use crate::refs::{
    AttributeRef, CallingContextRef, CommRef, GroupRef, InterruptGeneratorRef, LocationGroupRef, LocationRef,
    MetricMemberRef, MetricRef, RegionRef, RmaWinRef, SourceCodeLocationRef, StringRef, SystemTreeNodeRef,
};
use crate::types::{
    Base, CommFlags, GroupFlags, GroupType, LocationGroupType, LocationType, MetricMode, MetricOccurrence, MetricType,
    Paradigm, ParadigmClass, ParadigmProperty, RecorderKind, RegionFlags, RegionRole, RmaWinFlags, SystemTreeDomain,
    Type,
};
use crate::values::{AttributeValue, ClockOffset, ClockProperties, MetricScope};

/// A `Paradigm` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ParadigmDef {
    pub paradigm: Paradigm,
    pub name: StringRef,
    pub class: ParadigmClass,
}

/// An `Attribute` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AttributeDef {
    pub name: StringRef,
    pub description: StringRef,
    pub ty: Type,
}

/// A `SystemTreeNode` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SystemTreeNodeDef {
    pub name: StringRef,
    pub class_name: StringRef,
    pub parent: Option<SystemTreeNodeRef>,
}

/// A `LocationGroup` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LocationGroupDef {
    pub name: StringRef,
    pub ty: LocationGroupType,
    pub system_tree_parent: Option<SystemTreeNodeRef>,
    pub creating_group: Option<LocationGroupRef>,
}

/// A `Location` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LocationDef {
    pub name: StringRef,
    pub ty: LocationType,
    /// The event count the writer recorded.
    pub number_of_events: u64,
    pub group: LocationGroupRef,
}

/// A `Region` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RegionDef {
    pub name: StringRef,
    pub canonical_name: StringRef,
    pub description: StringRef,
    pub role: RegionRole,
    pub paradigm: Paradigm,
    pub flags: RegionFlags,
    pub source_file: StringRef,
    pub begin_line: u32,
    pub end_line: u32,
}

/// A `CallingContext` definition: a node of the call-path tree.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallingContextDef {
    pub region: RegionRef,
    pub location: Option<SourceCodeLocationRef>,
    /// `None` at the root.
    pub parent: Option<CallingContextRef>,
}

/// An `InterruptGenerator` definition: `mode` is OTF2's
/// (`OTF2_INTERRUPT_GENERATOR_MODE_TIME` 0, `_COUNT` 1), the period
/// `period × base^exponent` (seconds for TIME).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InterruptGeneratorDef {
    pub name: StringRef,
    pub mode: u8,
    pub base: Base,
    pub exponent: i64,
    pub period: u64,
}

/// A `Group` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GroupDef {
    pub name: StringRef,
    pub ty: GroupType,
    pub paradigm: Paradigm,
    pub flags: GroupFlags,
    pub members: Vec<u64>,
}

/// A `Comm` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CommDef {
    pub name: StringRef,
    pub group: GroupRef,
    pub parent: Option<CommRef>,
    pub flags: CommFlags,
}

/// An `RmaWin` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RmaWinDef {
    pub name: StringRef,
    pub comm: CommRef,
    pub flags: RmaWinFlags,
}

/// A `MetricMember` definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MetricMemberDef {
    pub name: StringRef,
    pub description: StringRef,
    pub metric_type: MetricType,
    pub mode: MetricMode,
    pub value_type: Type,
    pub base: Base,
    pub exponent: i64,
    pub unit: StringRef,
}

/// A `MetricClass` or `MetricInstance` definition (one id space).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MetricDef {
    Class {
        members: Vec<MetricMemberRef>,
        occurrence: MetricOccurrence,
        recorder_kind: RecorderKind,
    },
    Instance {
        class: MetricRef,
        recorder: LocationRef,
        /// `None` for a scope kind this crate does not know.
        scope: Option<MetricScope>,
    },
}

/// A property of a definition `owner` (location, location group, system
/// tree node).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PropertyDef<T> {
    pub owner: T,
    pub name: StringRef,
    pub value: AttributeValue,
}

/// All global definitions of an archive, plus each location's clock
/// offsets from its local definition file.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GlobalDefs {
    pub clock_properties: Option<ClockProperties>,
    pub strings: HashMap<StringRef, String>,
    pub paradigms: Vec<ParadigmDef>,
    pub paradigm_properties: Vec<(Paradigm, ParadigmProperty, AttributeValue)>,
    pub attributes: BTreeMap<AttributeRef, AttributeDef>,
    pub system_tree_nodes: BTreeMap<SystemTreeNodeRef, SystemTreeNodeDef>,
    pub system_tree_node_properties: Vec<PropertyDef<SystemTreeNodeRef>>,
    pub system_tree_node_domains: Vec<(SystemTreeNodeRef, SystemTreeDomain)>,
    pub location_groups: BTreeMap<LocationGroupRef, LocationGroupDef>,
    pub location_group_properties: Vec<PropertyDef<LocationGroupRef>>,
    /// In id order, which is also the order events are read in.
    pub locations: BTreeMap<LocationRef, LocationDef>,
    pub location_properties: Vec<PropertyDef<LocationRef>>,
    pub regions: BTreeMap<RegionRef, RegionDef>,
    pub groups: BTreeMap<GroupRef, GroupDef>,
    pub comms: BTreeMap<CommRef, CommDef>,
    pub rma_wins: BTreeMap<RmaWinRef, RmaWinDef>,
    pub metric_members: BTreeMap<MetricMemberRef, MetricMemberDef>,
    pub metrics: BTreeMap<MetricRef, MetricDef>,
    pub metric_class_recorders: Vec<(MetricRef, LocationRef)>,
    /// File and line of each source code location.
    pub source_code_locations: BTreeMap<SourceCodeLocationRef, (StringRef, u32)>,
    pub calling_contexts: BTreeMap<CallingContextRef, CallingContextDef>,
    pub interrupt_generators: BTreeMap<InterruptGeneratorRef, InterruptGeneratorDef>,
    /// Clock offsets per location (local definitions), already applied by
    /// OTF2 to the timestamps the reader reports.
    pub clock_offsets: BTreeMap<LocationRef, Vec<ClockOffset>>,
}

impl GlobalDefs {
    /// The text of a string, or `""` if it is undefined.
    pub fn string(&self, string: StringRef) -> &str {
        self.strings.get(&string).map_or("", String::as_str)
    }

    /// The name of a region, or `""`.
    pub fn region_name(&self, region: RegionRef) -> &str {
        self.regions.get(&region).map_or("", |r| self.string(r.name))
    }

    /// The name of a location, or `""`.
    pub fn location_name(&self, location: LocationRef) -> &str {
        self.locations.get(&location).map_or("", |l| self.string(l.name))
    }

    /// The name of an attribute, or `""`.
    pub fn attribute_name(&self, attribute: AttributeRef) -> &str {
        self.attributes.get(&attribute).map_or("", |a| self.string(a.name))
    }

    /// The location of rank `rank` of communicator `comm`: the rank's
    /// member of the comm's group, looked up in the paradigm's
    /// `CommLocations` group. `None` if any link is missing, and for
    /// self-communicators, whose only rank is the event's own location.
    pub fn comm_rank_location(&self, comm: CommRef, rank: u32) -> Option<LocationRef> {
        let group = self.groups.get(&self.comms.get(&comm)?.group)?;
        let index = match group.ty {
            GroupType::CommGroup => *group.members.get(rank as usize)?,
            _ => return None,
        };
        let locations =
            self.groups.values().find(|g| g.ty == GroupType::CommLocations && g.paradigm == group.paradigm)?;
        locations.members.get(usize::try_from(index).ok()?).map(|&id| LocationRef(id))
    }
}
