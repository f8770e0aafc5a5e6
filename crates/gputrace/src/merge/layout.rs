//! The archive's definitions: system tree, processes, locations, regions
//! and communicators, laid out as Score-P lays them out so that Vampir
//! shows a gputrace archive as it shows a Score-P one.
//!
//! - system tree: `machine` → one `node` per host → `MPI Rank r` process
//!   groups (`Process r` for processes that never called MPI);
//! - host threads: `Master thread` and `Pthread n`, CPU_THREAD locations
//!   with id `rank << 32 | n`;
//! - regions: one per (name, paradigm, role) over all processes;
//! - MPI: a COMM_LOCATIONS group of every rank's master thread, one
//!   COMM_GROUP (members = world ranks) per distinct member list, one
//!   communicator per communicator key, and `MPI_COMM_SELF`.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use otf2_writer::{
    AttributeValue, CommFlags, CommRef, Definitions, GroupFlags, GroupType, LocationGroupType,
    LocationRef, LocationType, Paradigm as OtfParadigm, ParadigmClass, ParadigmProperty, Region,
    RegionRef, RegionRole as OtfRole,
};
use tracer::raw::defs::expand_runs;
use tracer::raw::{LocationKind, Paradigm, RegionRole};

use super::inputs::{Process, RegionDef};

/// A host thread of a process: its tid, whether it is the main thread, and
/// the (stream, stream-local location) pairs that recorded on it.
type HostThread = (u32, bool, Vec<(usize, u32)>);

/// One archive location and where its events come from.
#[derive(Debug)]
pub struct LocationPlan {
    pub location: LocationRef,
    /// (stream index, stream-local location id) pairs feeding it.
    pub feeds: Vec<(usize, u32)>,
}

/// The definitions of one process, translated.
#[derive(Debug, Default)]
pub struct ProcessPlan {
    pub locations: Vec<LocationPlan>,
    /// Per stream: stream-local region id → (archive region, summary index).
    pub regions: Vec<Vec<Option<(RegionRef, usize)>>>,
    /// Per stream: stream-local communicator id → archive communicator.
    pub comms: Vec<Vec<Option<CommRef>>>,
}

/// Everything the event pass needs.
#[derive(Debug, Default)]
pub struct Layout {
    pub processes: Vec<ProcessPlan>,
    /// Region names by summary index.
    pub region_names: Vec<(String, Paradigm)>,
}

fn otf2_paradigm(p: Paradigm) -> OtfParadigm {
    match p {
        Paradigm::User => OtfParadigm::User,
        Paradigm::Mpi => OtfParadigm::Mpi,
        Paradigm::Cuda => OtfParadigm::Cuda,
        // OTF2 3.0 has no NCCL paradigm; NCCL is CUDA's communication library.
        Paradigm::Nccl => OtfParadigm::Cuda,
        Paradigm::Measurement => OtfParadigm::MeasurementSystem,
    }
}

fn otf2_role(r: RegionRole) -> OtfRole {
    OtfRole::from_raw(r as u8)
}

/// Defines everything in `defs` and returns the translation tables.
pub fn define(defs: &mut Definitions, processes: &[Process]) -> Result<Layout> {
    defs.paradigm(OtfParadigm::Mpi, "MPI", ParadigmClass::Process);
    let template = defs.string("MPI_COMM_${id}");
    defs.paradigm_property(
        OtfParadigm::Mpi,
        ParadigmProperty::CommNameTemplate,
        AttributeValue::String(template),
    );
    let machine = defs.system_tree_node("machine", "machine", None);
    let mut nodes = BTreeMap::new();
    for p in processes {
        if !nodes.contains_key(&p.host) {
            let node = defs.system_tree_node(&p.host, "node", Some(machine));
            nodes.insert(p.host.clone(), node);
        }
    }

    let mut layout = Layout::default();
    let mut region_index: HashMap<RegionDef, (RegionRef, usize)> = HashMap::new();
    let mut masters: BTreeMap<u32, LocationRef> = BTreeMap::new();
    for p in processes {
        let name = if p.mpi.is_some() {
            format!("MPI Rank {}", p.rank)
        } else {
            format!("Process {}", p.rank)
        };
        let group = defs.location_group(&name, LocationGroupType::Process, nodes[&p.host], None);
        let mut plan = ProcessPlan::default();

        // Host threads: join the streams' thread locations by tid, main
        // thread first, then in order of first appearance.
        let mut threads: Vec<HostThread> = Vec::new();
        for (s, d) in p.defs.iter().enumerate() {
            let mut ids: Vec<_> = d.locations.iter().collect();
            ids.sort_by_key(|(id, _)| **id);
            for (id, (kind, _)) in ids {
                let LocationKind::HostThread { tid, is_main } = *kind else {
                    continue;
                };
                match threads.iter_mut().find(|t| t.0 == tid) {
                    Some(t) => t.2.push((s, *id)),
                    None => threads.push((tid, is_main, vec![(s, *id)])),
                }
            }
        }
        threads.sort_by_key(|t| !t.1);
        for (n, (_, is_main, feeds)) in threads.into_iter().enumerate() {
            let lname = if is_main || n == 0 {
                "Master thread".to_string()
            } else {
                format!("Pthread {n}")
            };
            let id = (u64::from(p.rank) << 32) | n as u64;
            let location = defs.location(id, &lname, LocationType::CpuThread, group)?;
            if n == 0 && p.mpi.is_some() {
                masters.insert(p.rank, location);
            }
            plan.locations.push(LocationPlan { location, feeds });
        }

        for d in &p.defs {
            let max = d.regions.keys().copied().max().unwrap_or(0) as usize;
            let mut table = vec![None; max + 1];
            for (id, r) in &d.regions {
                let entry = *region_index.entry(r.clone()).or_insert_with(|| {
                    let mut region =
                        Region::new(&r.name, otf2_role(r.role), otf2_paradigm(r.paradigm));
                    region.description = &r.group;
                    let rr = defs.region(region);
                    layout.region_names.push((r.name.clone(), r.paradigm));
                    (rr, layout.region_names.len() - 1)
                });
                table[*id as usize] = Some(entry);
            }
            plan.regions.push(table);
        }
        layout.processes.push(plan);
    }
    define_communicators(defs, processes, &masters, &mut layout);
    Ok(layout)
}

/// MPI groups and communicators, unified across processes by key.
fn define_communicators(
    defs: &mut Definitions,
    processes: &[Process],
    masters: &BTreeMap<u32, LocationRef>,
    layout: &mut Layout,
) {
    let world_size = processes
        .iter()
        .filter_map(|p| p.mpi.map(|(_, s)| s))
        .max()
        .unwrap_or(0);
    let any_comm = processes
        .iter()
        .any(|p| p.defs.iter().any(|d| !d.comms.is_empty()));
    if !any_comm {
        for plan in &mut layout.processes {
            plan.comms = vec![Vec::new(); plan.regions.len()];
        }
        return;
    }
    // Index i of the COMM_LOCATIONS group is world rank i; a rank that left
    // no trace gets the id its master thread would have had.
    let members: Vec<u64> = (0..world_size)
        .map(|r| masters.get(&r).map_or(u64::from(r) << 32, |l| l.id()))
        .collect();
    defs.group(
        "MPI_COMM_WORLD locations",
        GroupType::CommLocations,
        OtfParadigm::Mpi,
        GroupFlags::NONE,
        &members,
    );
    let self_group = defs.group(
        "",
        GroupType::CommSelf,
        OtfParadigm::Mpi,
        GroupFlags::NONE,
        &[],
    );
    let self_comm = defs.comm("MPI_COMM_SELF", self_group, None, CommFlags::NONE);

    let mut groups: HashMap<Vec<u64>, otf2_writer::GroupRef> = HashMap::new();
    let mut comms: HashMap<(u32, u64), CommRef> = HashMap::new();
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        for d in &p.defs {
            let max = d.comms.keys().copied().max().map_or(0, |m| m as usize + 1);
            let mut table = vec![None; max];
            let mut ids: Vec<_> = d.comms.keys().copied().collect();
            ids.sort_unstable();
            for id in ids {
                let c = &d.comms[&id];
                let comm = if c.key.1 == u64::MAX {
                    self_comm
                } else {
                    *comms.entry(c.key).or_insert_with(|| {
                        let ranks: Vec<u64> = expand_runs(&c.members).map(u64::from).collect();
                        let group = *groups.entry(ranks.clone()).or_insert_with(|| {
                            defs.group(
                                "",
                                GroupType::CommGroup,
                                OtfParadigm::Mpi,
                                GroupFlags::NONE,
                                &ranks,
                            )
                        });
                        defs.comm(&c.name, group, None, CommFlags::NONE)
                    })
                };
                table[id as usize] = Some(comm);
            }
            plan.comms.push(table);
        }
    }
}
