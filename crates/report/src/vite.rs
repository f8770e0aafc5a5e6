//! `gputrace export --format vite-otf2`: a copy of an archive that ViTE
//! displays, written with otf2 from what the reader reads; the
//! original archive is never touched.
//!
//! ViTE's OTF2 reader (Debian's 1.2+svn) falls short of OTF2 in ways an
//! archive cannot work around by itself (docs/analysis.md has the
//! details), so the copy differs from the original in two points:
//! - each communicator refers to a COMM_LOCATIONS group listing its
//!   members' locations in rank order, instead of a COMM_GROUP of ranks:
//!   ViTE resolves a message's peer only in the former, and crashes
//!   (segmentation fault) on a message whose peer it cannot find;
//! - RMA windows and events (gputrace's copies as one-sided
//!   communication) are left out: ViTE implements none of them and prints
//!   a warning for every record;
//!
//! Regions, attributes, locations (streams included), MPI messages and
//! collectives, and metrics (ViTE draws the NVLink counters as variables
//! of their `NVLink GPU d` containers) are copied as they are; timestamps are the reader's, clock
//! offsets applied, so the copy needs none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{Error, Result};
use otf2::reader::{EventContext, EventVisitor, GlobalDefs, MetricDef, TraceReader};
use otf2::{
    ArchiveWriter, AttributeRef, AttributeValue, Collective, CommRef, EventWriter, GroupRef, GroupType,
    LocationGroupRef, LocationRef, MetricMember, MetricRef, MetricScope, MetricValue, Paradigm, RegionRef, StringRef,
    SystemTreeNodeRef,
};

/// Writes the ViTE copy of `input` into the directory `output` (created;
/// it must not hold an archive already). Returns the copy's anchor file.
pub fn export(input: &Path, output: &Path) -> Result<PathBuf> {
    let mut reader = super::open(input)?;
    let existed = output.exists();
    let result = copy(&mut reader, output);
    if result.is_err() && !existed {
        // Only what this export created; an existing directory was
        // refused before anything was written into it.
        let _ = std::fs::remove_dir_all(output);
    }
    result
}

fn copy(reader: &mut TraceReader, output: &Path) -> Result<PathBuf> {
    let defs = reader.defs().clone();
    let mut archive = ArchiveWriter::create(output, "traces").map_err(|e| Error::writing(output)(e.into()))?;
    archive.set_creator(&format!("gputrace {} (ViTE copy)", env!("CARGO_PKG_VERSION")))?;
    archive.set_description(&format!("ViTE copy of {}", reader.anchor_path().display()))?;
    if let Some(c) = defs.clock_properties {
        archive.set_clock_properties(c.timer_resolution, c.global_offset, c.trace_length, c.realtime_timestamp);
    }
    let map = copy_definitions(&defs, &mut archive)?;
    for loc in reader.locations() {
        let Some(&new_loc) = map.locations.get(&loc) else { continue };
        let writer = archive.event_writer(new_loc)?;
        let mut copier = Copier { defs: &defs, map: &map, writer, error: None };
        let read = reader.read_location(loc, &mut copier);
        if let Some(e) = copier.error.take() {
            return Err(Error::step("writing the ViTE copy")(e.into()));
        }
        read.map_err(|e| super::read_error(reader, loc, e))?;
        copier.writer.close()?;
    }
    let anchor = archive.anchor_path().to_owned();
    archive.close().map_err(|e| Error::step("closing the ViTE copy")(e.into()))?;
    Ok(anchor)
}

/// Old handles to new ones.
#[derive(Default)]
struct Map {
    attributes: HashMap<AttributeRef, AttributeRef>,
    nodes: HashMap<SystemTreeNodeRef, SystemTreeNodeRef>,
    groups: HashMap<LocationGroupRef, LocationGroupRef>,
    locations: HashMap<LocationRef, LocationRef>,
    regions: HashMap<RegionRef, RegionRef>,
    comms: HashMap<CommRef, CommRef>,
    groups_by_ref: HashMap<GroupRef, GroupRef>,
    metrics: HashMap<MetricRef, MetricRef>,
}

fn copy_definitions(defs: &GlobalDefs, archive: &mut ArchiveWriter) -> Result<Map> {
    let mut map = Map::default();
    let s = |r: StringRef| defs.string(r);
    let out = archive.defs();
    for p in &defs.paradigms {
        out.paradigm(p.paradigm, s(p.name), p.class);
    }
    for (p, prop, value) in &defs.paradigm_properties {
        let v = value_in(defs, out, *value);
        out.paradigm_property(*p, *prop, v);
    }
    for (&a, def) in &defs.attributes {
        map.attributes.insert(a, out.attribute(s(def.name), s(def.description), def.ty));
    }
    // Parents are defined before their children in any archive OTF2
    // accepts, so id order works for nodes and location groups.
    for (&n, def) in &defs.system_tree_nodes {
        let parent = def.parent.and_then(|p| map.nodes.get(&p).copied());
        map.nodes.insert(n, out.system_tree_node(s(def.name), s(def.class_name), parent));
    }
    for p in &defs.system_tree_node_properties {
        if let Some(&n) = map.nodes.get(&p.owner) {
            let v = value_in(defs, out, p.value);
            out.system_tree_node_property(n, s(p.name), v);
        }
    }
    for (n, d) in &defs.system_tree_node_domains {
        if let Some(&n) = map.nodes.get(n) {
            out.system_tree_node_domain(n, *d);
        }
    }
    for (&g, def) in &defs.location_groups {
        let parent = def.system_tree_parent.and_then(|p| map.nodes.get(&p).copied());
        let Some(parent) = parent.or_else(|| map.nodes.values().next().copied()) else { continue };
        let creator = def.creating_group.and_then(|c| map.groups.get(&c).copied());
        map.groups.insert(g, out.location_group(s(def.name), def.ty, parent, creator));
    }
    for (&l, def) in &defs.locations {
        let Some(&group) = map.groups.get(&def.group) else { continue };
        map.locations.insert(l, out.location(l.id(), s(def.name), def.ty, group)?);
    }
    for (&r, def) in &defs.regions {
        let mut region = otf2::Region::new(s(def.name), def.role, def.paradigm);
        region.canonical_name = s(def.canonical_name);
        region.description = s(def.description);
        region.flags = def.flags;
        region.source_file = s(def.source_file);
        region.begin_line = def.begin_line;
        region.end_line = def.end_line;
        map.regions.insert(r, out.region(region));
    }
    // Groups: the paradigms' COMM_LOCATIONS groups as they are (OTF2's
    // readers need them); each communicator then gets a COMM_LOCATIONS
    // group of its own members, which is what ViTE looks up.
    for (&g, def) in &defs.groups {
        if matches!(def.ty, GroupType::CommLocations | GroupType::Locations | GroupType::CommSelf) {
            map.groups_by_ref.insert(g, out.group(s(def.name), def.ty, def.paradigm, def.flags, &def.members));
        }
    }
    for (&c, def) in &defs.comms {
        let Some(group) = defs.groups.get(&def.group) else { continue };
        let new_group = match group.ty {
            GroupType::CommGroup => {
                let members: Vec<u64> = (0..group.members.len() as u32)
                    .map(|rank| defs.comm_rank_location(c, rank).map_or(u64::MAX, |l| l.id()))
                    .collect();
                if members.contains(&u64::MAX) {
                    out.group(s(group.name), group.ty, group.paradigm, group.flags, &group.members)
                } else {
                    out.group(s(def.name), GroupType::CommLocations, group.paradigm, group.flags, &members)
                }
            }
            _ => match map.groups_by_ref.get(&def.group) {
                Some(g) => *g,
                None => out.group(s(group.name), group.ty, group.paradigm, group.flags, &group.members),
            },
        };
        let parent = def.parent.and_then(|p| map.comms.get(&p).copied());
        map.comms.insert(c, out.comm(s(def.name), new_group, parent, def.flags));
    }
    copy_metrics(defs, out, &mut map)?;
    Ok(map)
}

/// Metric members, classes, instances and class recorders.
fn copy_metrics(defs: &GlobalDefs, out: &mut otf2::Definitions, map: &mut Map) -> Result<()> {
    let s = |r: StringRef| defs.string(r);
    let mut members = HashMap::new();
    for (&m, def) in &defs.metric_members {
        let mut member = MetricMember::new(s(def.name), s(def.unit), def.mode, def.value_type);
        member.description = s(def.description);
        member.metric_type = def.metric_type;
        member.base = def.base;
        member.exponent = def.exponent;
        members.insert(m, out.metric_member(member));
    }
    // Classes before instances: an instance names its class, defined
    // earlier in OTF2's one id space for both.
    for (&m, def) in &defs.metrics {
        match def {
            MetricDef::Class { members: list, occurrence, recorder_kind } => {
                let list: Option<Vec<_>> = list.iter().map(|x| members.get(x).copied()).collect();
                if let Some(list) = list {
                    map.metrics.insert(m, out.metric_class(&list, *occurrence, *recorder_kind)?);
                }
            }
            MetricDef::Instance { class, recorder, scope: Some(scope) } => {
                let scope = match *scope {
                    MetricScope::Location(l) => map.locations.get(&l).map(|&l| MetricScope::Location(l)),
                    MetricScope::LocationGroup(g) => map.groups.get(&g).map(|&g| MetricScope::LocationGroup(g)),
                    MetricScope::SystemTreeNode(n) => map.nodes.get(&n).map(|&n| MetricScope::SystemTreeNode(n)),
                    MetricScope::Group(g) => map.groups_by_ref.get(&g).map(|&g| MetricScope::Group(g)),
                };
                if let (Some(&class), Some(&recorder), Some(scope)) =
                    (map.metrics.get(class), map.locations.get(recorder), scope)
                {
                    map.metrics.insert(m, out.metric_instance(class, recorder, scope));
                }
            }
            _ => {}
        }
    }
    for (class, recorder) in &defs.metric_class_recorders {
        if let (Some(&c), Some(&r)) = (map.metrics.get(class), map.locations.get(recorder)) {
            out.metric_class_recorder(c, r);
        }
    }
    Ok(())
}

/// An attribute or property value, its references translated (strings
/// re-interned; other references are kept only where they mean the same).
fn value_in(defs: &GlobalDefs, out: &mut otf2::Definitions, v: AttributeValue) -> AttributeValue {
    match v {
        AttributeValue::String(r) => AttributeValue::String(out.string(defs.string(r))),
        other => other,
    }
}

/// Copies one location's events.
struct Copier<'a, 'w> {
    defs: &'a GlobalDefs,
    map: &'a Map,
    writer: EventWriter<'w>,
    error: Option<otf2::Error>,
}

impl Copier<'_, '_> {
    /// Attaches the event's attributes to the next record.
    fn attributes(&mut self, ev: &EventContext<'_>) {
        if ev.attributes.is_empty() || self.error.is_some() {
            return;
        }
        let mut list = Vec::with_capacity(ev.attributes.len());
        for (a, v) in ev.attributes.iter() {
            let Some(&a) = self.map.attributes.get(&a) else { continue };
            let v = match v {
                AttributeValue::String(r) => AttributeValue::String(self.writer.defs().string(self.defs.string(r))),
                AttributeValue::Region(r) => match self.map.regions.get(&r) {
                    Some(&r) => AttributeValue::Region(r),
                    None => continue,
                },
                AttributeValue::Location(_) | AttributeValue::U8(_) | AttributeValue::U16(_) => v,
                AttributeValue::U32(_) | AttributeValue::U64(_) | AttributeValue::I8(_) | AttributeValue::I16(_) => v,
                AttributeValue::I32(_) | AttributeValue::I64(_) | AttributeValue::F32(_) | AttributeValue::F64(_) => v,
                // References to definitions this copy renumbers or drops.
                _ => continue,
            };
            list.push((a, v));
        }
        if let Err(e) = self.writer.attributes(&list) {
            self.error = Some(e);
        }
    }

    fn run(&mut self, ev: &EventContext<'_>, f: impl FnOnce(&mut EventWriter<'_>) -> otf2::Result<()>) {
        if self.error.is_some() {
            return;
        }
        self.attributes(ev);
        if let Err(e) = f(&mut self.writer) {
            self.error.get_or_insert(e);
        }
    }

    fn comm(&self, c: CommRef) -> Option<CommRef> {
        self.map.comms.get(&c).copied()
    }

    fn collective(&self, c: &Collective) -> Option<Collective> {
        Some(Collective { comm: self.comm(c.comm)?, ..*c })
    }
}

impl EventVisitor for Copier<'_, '_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        if let Some(&r) = self.map.regions.get(&region) {
            self.run(ev, |w| w.enter(ev.time, r));
        }
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        if let Some(&r) = self.map.regions.get(&region) {
            self.run(ev, |w| w.leave(ev.time, r));
        }
    }

    fn mpi_send(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, length: u64) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.mpi_send(ev.time, receiver, c, tag, length));
        }
    }

    fn mpi_isend(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, length: u64, id: u64) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.mpi_isend(ev.time, receiver, c, tag, length, id));
        }
    }

    fn mpi_isend_complete(&mut self, ev: &EventContext<'_>, id: u64) {
        self.run(ev, |w| w.mpi_isend_complete(ev.time, id));
    }

    fn mpi_irecv_request(&mut self, ev: &EventContext<'_>, id: u64) {
        self.run(ev, |w| w.mpi_irecv_request(ev.time, id));
    }

    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.mpi_recv(ev.time, sender, c, tag, length));
        }
    }

    fn mpi_irecv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64, id: u64) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.mpi_irecv(ev.time, sender, c, tag, length, id));
        }
    }

    fn mpi_request_test(&mut self, ev: &EventContext<'_>, id: u64) {
        self.run(ev, |w| w.mpi_request_test(ev.time, id));
    }

    fn mpi_request_cancelled(&mut self, ev: &EventContext<'_>, id: u64) {
        self.run(ev, |w| w.mpi_request_cancelled(ev.time, id));
    }

    fn mpi_collective_begin(&mut self, ev: &EventContext<'_>) {
        self.run(ev, |w| w.mpi_collective_begin(ev.time));
    }

    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, collective: &Collective) {
        if let Some(c) = self.collective(collective) {
            self.run(ev, |w| w.mpi_collective_end(ev.time, &c));
        }
    }

    fn non_blocking_collective_request(&mut self, ev: &EventContext<'_>, id: u64) {
        self.run(ev, |w| w.non_blocking_collective_request(ev.time, id));
    }

    fn non_blocking_collective_complete(&mut self, ev: &EventContext<'_>, collective: &Collective, id: u64) {
        if let Some(c) = self.collective(collective) {
            self.run(ev, |w| w.non_blocking_collective_complete(ev.time, &c, id));
        }
    }

    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        if let Some(&m) = self.map.metrics.get(&metric) {
            self.run(ev, |w| w.metric(ev.time, m, values));
        }
    }

    fn thread_fork(&mut self, ev: &EventContext<'_>, model: Paradigm, threads: u32) {
        self.run(ev, |w| w.thread_fork(ev.time, model, threads));
    }

    fn thread_join(&mut self, ev: &EventContext<'_>, model: Paradigm) {
        self.run(ev, |w| w.thread_join(ev.time, model));
    }

    fn comm_create(&mut self, ev: &EventContext<'_>, comm: CommRef) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.comm_create(ev.time, c));
        }
    }

    fn comm_destroy(&mut self, ev: &EventContext<'_>, comm: CommRef) {
        if let Some(c) = self.comm(comm) {
            self.run(ev, |w| w.comm_destroy(ev.time, c));
        }
    }

    fn measurement_on_off(&mut self, ev: &EventContext<'_>, on: bool) {
        self.run(ev, |w| w.measurement_on_off(ev.time, on));
    }
}
