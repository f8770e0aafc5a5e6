//! MPI groups and communicators, unified across processes by key.
//!
//! A COMM_LOCATIONS group lists every rank's master thread in rank order,
//! so its index is the world rank; each distinct member list becomes a
//! COMM_GROUP of world ranks; each communicator key one `Comm`; every
//! process's MPI_COMM_SELF the one `MPI_COMM_SELF` over a COMM_SELF group.
//! Communicators are named as the program named them (MPI_Comm_set_name),
//! else `MPI_COMM_WORLD` or `MPI_Comm <root>.<sequence>`.

use std::collections::{BTreeMap, HashMap};

use otf2::{CommFlags, CommRef, Definitions, GroupFlags, GroupRef, GroupType, LocationRef, Paradigm};
use raw::defs::expand_runs;

use super::Layout;
use crate::inputs::Process;

pub fn define(
    defs: &mut Definitions,
    processes: &[Process],
    masters: &BTreeMap<u32, LocationRef>,
    layout: &mut Layout,
) {
    let world_size = processes.iter().filter_map(|p| p.mpi.map(|(_, s)| s)).max().unwrap_or(0);
    let any_comm = processes.iter().any(|p| p.defs.iter().any(|d| !d.comms.is_empty()));
    if !any_comm {
        for plan in &mut layout.processes {
            plan.comms = vec![Vec::new(); plan.regions.len()];
        }
        return;
    }
    // Index i of the COMM_LOCATIONS group is world rank i; a rank that left
    // no trace gets the id its master thread would have had.
    let members: Vec<u64> =
        (0..world_size).map(|r| masters.get(&r).map_or(super::location_id(r, 0), |l| l.id())).collect();
    // Unnamed, as Score-P leaves it.
    defs.group("", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &members);
    let self_group = defs.group("", GroupType::CommSelf, Paradigm::Mpi, GroupFlags::NONE, &[]);
    let self_comm = defs.comm("MPI_COMM_SELF", self_group, None, CommFlags::NONE);

    // A name the program gave a communicator wins over ours, from whichever
    // member process gave it (the lowest rank's, if they differ).
    let mut named: HashMap<(u32, u64), &str> = HashMap::new();
    for d in processes.iter().flat_map(|p| &p.defs) {
        for (id, name) in &d.comm_names {
            if let Some(c) = d.comms.get(id) {
                named.entry(c.key).or_insert(name);
            }
        }
    }
    let mut groups: HashMap<Vec<u64>, GroupRef> = HashMap::new();
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
                            defs.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &ranks)
                        });
                        defs.comm(named.get(&c.key).copied().unwrap_or(&c.name), group, None, CommFlags::NONE)
                    })
                };
                table[id as usize] = Some(comm);
            }
            plan.comms.push(table);
        }
    }
}
