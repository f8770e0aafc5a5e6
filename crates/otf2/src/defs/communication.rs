//! Who talks to whom: groups, communicators and RMA windows.
//!
//! OTF2's MPI model, which Vampir relies on: one group of type
//! `CommLocations` per paradigm lists the location of every rank, in rank
//! order; each communicator refers to a `CommGroup` group whose members are
//! ranks (indices into that list). The ranks in events (`receiver`,
//! `sender`, `root`, RMA `remote`) are ranks of the event's communicator or
//! window.

use super::{Definitions, next_id};
use crate::error::Result;
use crate::ffi::global_defs::GlobalDefWriter;
use crate::refs::{CommRef, GroupRef, RmaWinRef, StringRef};
use crate::types::{CommFlags, GroupFlags, GroupType, Paradigm, RmaWinFlags};

struct GroupRecord {
    name: StringRef,
    ty: GroupType,
    paradigm: Paradigm,
    flags: GroupFlags,
    members: Vec<u64>,
}

struct CommRecord {
    name: StringRef,
    group: GroupRef,
    parent: Option<CommRef>,
    flags: CommFlags,
}

struct RmaWinRecord {
    name: StringRef,
    comm: CommRef,
    flags: RmaWinFlags,
}

#[derive(Default)]
pub(super) struct CommunicationDefs {
    groups: Vec<GroupRecord>,
    comms: Vec<CommRecord>,
    rma_wins: Vec<RmaWinRecord>,
}

impl CommunicationDefs {
    pub(super) fn write(&self, out: &mut GlobalDefWriter<'_>) -> Result<()> {
        for (id, g) in self.groups.iter().enumerate() {
            out.group(GroupRef(id as u32), g.name, g.ty, g.paradigm, g.flags, &g.members)?;
        }
        for (id, c) in self.comms.iter().enumerate() {
            out.comm(CommRef(id as u32), c.name, c.group, c.parent, c.flags)?;
        }
        for (id, w) in self.rma_wins.iter().enumerate() {
            out.rma_win(RmaWinRef(id as u32), w.name, w.comm, w.flags)?;
        }
        Ok(())
    }
}

impl Definitions {
    /// A group (`Group`). What `members` holds depends on `ty`: location
    /// ids (`Locations`, `CommLocations`), ranks (`CommGroup`), region ids
    /// (`Regions`), metric ids (`Metric`); `CommSelf` has none.
    ///
    /// # Panics
    ///
    /// With more than `u32::MAX` members, which OTF2 cannot store.
    pub fn group(
        &mut self,
        name: &str,
        ty: GroupType,
        paradigm: Paradigm,
        flags: GroupFlags,
        members: &[u64],
    ) -> GroupRef {
        assert!(u32::try_from(members.len()).is_ok(), "an OTF2 group holds at most u32::MAX members");
        let id = GroupRef(next_id(self.communication.groups.len(), "group"));
        let record = GroupRecord { name: self.string(name), ty, paradigm, flags, members: members.to_vec() };
        self.communication.groups.push(record);
        id
    }

    /// A communicator (`Comm`) over a group of type `CommGroup` or
    /// `CommSelf`; `parent` is the communicator it was derived from.
    pub fn comm(&mut self, name: &str, group: GroupRef, parent: Option<CommRef>, flags: CommFlags) -> CommRef {
        let id = CommRef(next_id(self.communication.comms.len(), "communicator"));
        let record = CommRecord { name: self.string(name), group, parent, flags };
        self.communication.comms.push(record);
        id
    }

    /// An RMA window (`RmaWin`) over a communicator; RMA events name their
    /// peer by its rank in `comm`.
    pub fn rma_win(&mut self, name: &str, comm: CommRef, flags: RmaWinFlags) -> RmaWinRef {
        let id = RmaWinRef(next_id(self.communication.rma_wins.len(), "RMA window"));
        let record = RmaWinRecord { name: self.string(name), comm, flags };
        self.communication.rma_wins.push(record);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_per_kind() {
        let mut defs = Definitions::new();
        let locations = defs.group("", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &[0, 1 << 32]);
        let world = defs.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &[0, 1]);
        let comm = defs.comm("MPI_COMM_WORLD", world, None, CommFlags::NONE);
        let win = defs.rma_win("win", comm, RmaWinFlags::NONE);
        assert_eq!((locations.id(), world.id(), comm.id(), win.id()), (0, 1, 0, 0));
        assert_eq!(defs.communication.groups[0].members, vec![0, 1 << 32]);
    }
}
