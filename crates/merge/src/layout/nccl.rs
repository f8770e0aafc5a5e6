//! NCCL communicators, put together from every member's record.
//!
//! Each process's NCCL plugin defines the communicators it is a member of
//! by NCCL's communicator id, size and its own rank; the merge collects,
//! per id, which process is which rank, and defines one OTF2 communicator
//! (paradigm CUDA: OTF2 has no NCCL paradigm) whose group lists the
//! members' master threads by their index in the CUDA communicator's
//! COMM_LOCATIONS group. Collectives and send/receive events of the NCCL
//! stream then name their peers by NCCL rank, as OTF2 wants.

use std::collections::BTreeMap;

use otf2::{CommFlags, Definitions, GroupFlags, GroupType, Paradigm};

use super::Layout;
use crate::inputs::Process;

pub fn define(defs: &mut Definitions, processes: &[Process], layout: &mut Layout, warn: &dyn Fn(&str)) {
    // comm hash → (name, size, rank → process index)
    let mut comms: BTreeMap<u64, (String, u32, BTreeMap<u32, usize>)> = BTreeMap::new();
    for (pi, p) in processes.iter().enumerate() {
        for c in p.defs.iter().flat_map(|d| d.nccl_comms.values()) {
            let e = comms.entry(c.hash).or_insert_with(|| (c.name.clone(), c.nranks, BTreeMap::new()));
            e.2.insert(c.rank, pi);
        }
    }
    let mut refs = BTreeMap::new();
    for (hash, (name, nranks, members)) in &comms {
        // NCCL before 2.26 does not tell the plugin a communicator's size:
        // count the ranks seen.
        let nranks = &(*nranks).max(members.keys().next_back().map_or(0, |r| r + 1));
        let ranks: Vec<u64> = (0..*nranks)
            .filter_map(|r| members.get(&r).and_then(|&pi| layout.cuda_host_ranks.get(pi).copied().flatten()))
            .map(u64::from)
            .collect();
        if ranks.len() != *nranks as usize {
            warn(&format!(
                "NCCL communicator {name}: {} of its {nranks} ranks were traced; its messages may name the wrong \
                 peers",
                ranks.len()
            ));
        }
        let group = defs.group("", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &ranks);
        refs.insert(*hash, defs.comm(name, group, layout.cuda_comm, CommFlags::NONE));
    }
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        for (s, d) in p.defs.iter().enumerate() {
            for (id, c) in &d.nccl_comms {
                let table = &mut plan.comms[s];
                if table.len() <= *id as usize {
                    table.resize(*id as usize + 1, None);
                }
                table[*id as usize] = refs.get(&c.hash).copied();
            }
        }
    }
}
