//! What was in flight when the recording ended: the calls that had not
//! returned on each thread (a hung job stopped, a rank killed), and per
//! communicator the collective some ranks wait in that others never
//! entered.
//!
//! The merge closes a region still open at its location's end — its last
//! event, or for a process of the launcher's host that never closed its
//! trace, when the launcher saw the job end — and marks its Leave with
//! `GPUTRACE::IN_FLIGHT`; the pass notes
//! each such call with its thread (the innermost first). Per communicator
//! (MPI, and NCCL's of distinct processes) the pass counts the collectives
//! each rank ended; when the recording ended, the next one, numbered from
//! 1 in the communicator's order, was *waited in* by the ranks that had
//! ended as many as the most and were inside a collective call, and
//! *never entered* by the others. A call's communicator is recorded when
//! it returns: a rank inside any collective call of the communicator's
//! paradigm (MPI's, NCCL's) counts as having entered the next one on each
//! of its communicators of that paradigm.
//!
//! NCCL's calls are asynchronous: a rank returns from `ncclAllReduce` once
//! the kernel is queued and waits for it in a CUDA synchronization (or an
//! MPI call) instead. On an NCCL communicator where no rank waits inside a
//! collective call, the collective numbered by the most any rank entered
//! (its call returned) is the stuck one: *entered* by those ranks, which
//! wait in whatever they are in, and *never entered* by the others; its
//! number as NCCL counts it (the `sequence` attribute of its region) is
//! given too.

use serde::Serialize;

use super::describe::Describe;

/// A call that had not returned on a thread when its recording ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InFlight {
    pub rank: Option<u32>,
    pub process: String,
    pub location: String,
    /// The innermost open region.
    pub call: String,
    /// The regions open, outermost first (`main > solve > MPI_Allreduce`).
    pub path: String,
    /// When it was entered (ns since the trace's start) and how long it
    /// had been running when the recording ended.
    pub since_ns: u64,
    pub for_ns: u64,
}

/// A collective some ranks of a communicator wait in and others never
/// entered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stuck {
    /// `MPI` or `NCCL`.
    pub paradigm: &'static str,
    pub communicator: String,
    pub communicator_size: u64,
    pub communicator_ranks: String,
    /// Its place in the communicator's order of collectives, from 1.
    pub operation: u64,
    /// NCCL's sequence number of it (the `sequence` attribute of the
    /// waiting ranks' last collective region), when the archive has it.
    pub sequence: Option<u64>,
    /// The ranks inside a collective call, in runs (`0-2`), and the calls;
    /// on NCCL, the ranks that entered it and returned (`returned`), and
    /// the collective call they made.
    pub waiting: String,
    pub calls: Vec<String>,
    pub returned: bool,
    /// What each waiting rank was doing (`rank 0: cudaStreamSynchronize`).
    pub waiting_doing: Vec<String>,
    /// The ranks that never entered it, in runs, and what each was doing
    /// (`rank 3: (outside any region)`).
    pub missing: String,
    pub missing_doing: Vec<String>,
}

/// What the pass noted: per location the innermost call in flight
/// (location index, region name, call path, entered, ended: ticks).
#[derive(Default)]
pub(crate) struct Noted {
    calls: Vec<(usize, String, String, u64, u64)>,
}

/// One member of a communicator, as the pass saw it at the end.
pub(crate) struct Member {
    pub process: usize,
    /// Collectives it ended on the communicator.
    pub ended: u64,
    /// Of an NCCL communicator: its last collective call (region name)
    /// and NCCL's sequence number of it.
    pub last: Option<(String, Option<u64>)>,
}

/// Whether `name` is a blocking collective call (MPI's or NCCL's).
pub fn is_collective_call(name: &str) -> bool {
    const MPI: &[&str] = &[
        "Allreduce",
        "Reduce",
        "Bcast",
        "Barrier",
        "Allgather",
        "Gather",
        "Scatter",
        "Alltoall",
        "Scan",
        "Exscan",
        "Neighbor_",
    ];
    const NCCL: &[&str] = &["AllReduce", "Reduce", "Broadcast", "Bcast", "AllGather", "ReduceScatter", "AlltoAll"];
    if let Some(op) = name.strip_prefix("MPI_") {
        return MPI.iter().any(|p| op.starts_with(p));
    }
    name.strip_prefix("nccl").is_some_and(|op| NCCL.iter().any(|p| op.starts_with(p)))
}

impl Noted {
    /// Notes a call in flight at location `loc`; the merge closes the
    /// innermost first, which is the one kept.
    pub(crate) fn note(&mut self, loc: usize, call: String, path: String, enter: u64, end: u64) {
        if !self.calls.iter().any(|(l, ..)| *l == loc) {
            self.calls.push((loc, call, path, enter, end));
        }
    }

    /// The in-flight calls, the innermost per thread, longest running first.
    pub(crate) fn in_flight(&self, d: &dyn Describe) -> Vec<InFlight> {
        let mut out: Vec<InFlight> = Vec::new();
        for (loc, call, path, enter, end) in &self.calls {
            let process = d.process_of(*loc);
            out.push(InFlight {
                rank: d.rank(process),
                process: d.process(process),
                location: d.location(*loc),
                call: call.clone(),
                path: path.clone(),
                since_ns: d.since_start(*enter),
                for_ns: d.ns(end.saturating_sub(*enter)),
            });
        }
        out.sort_by(|a, b| b.for_ns.cmp(&a.for_ns).then(a.rank.cmp(&b.rank)));
        out
    }

    /// The innermost in-flight collective call of `process` of
    /// `paradigm` (`MPI_...` for MPI, `nccl...` for NCCL), if any.
    fn collective_of<'a>(&'a self, process: usize, paradigm: &str, d: &'a dyn Describe) -> Option<&'a str> {
        let prefix = if paradigm == "NCCL" { "nccl" } else { "MPI_" };
        self.calls_of(process, d).find(|call| call.starts_with(prefix) && is_collective_call(call))
    }

    /// The innermost in-flight calls of `process`'s threads.
    fn calls_of<'a>(&'a self, process: usize, d: &'a dyn Describe) -> impl Iterator<Item = &'a str> + use<'a> {
        self.calls.iter().filter(move |(loc, ..)| d.process_of(*loc) == process).map(|(_, call, ..)| call.as_str())
    }

    /// What `process` was doing at the end: its threads' innermost
    /// in-flight calls, or that none was in flight.
    fn doing(&self, process: usize, d: &dyn Describe) -> String {
        let calls: Vec<&str> = self.calls_of(process, d).collect();
        if calls.is_empty() {
            "in no call (computing, or outside any recorded region)".into()
        } else {
            calls.join(", ")
        }
    }

    /// The communicator's stuck collective, if some of `members` wait in
    /// it and others never entered it: inside a collective call, or on
    /// NCCL after one returned ([`Self::stuck_returned`]).
    pub(crate) fn stuck(
        &self,
        comm: (&'static str, String, u64, String),
        members: &[Member],
        d: &dyn Describe,
    ) -> Option<Stuck> {
        let most = members.iter().map(|m| m.ended).max()?;
        let (mut waiting, mut calls, mut missing) = (Vec::new(), Vec::new(), Vec::new());
        for m in members {
            match self.collective_of(m.process, comm.0, d).filter(|_| m.ended == most) {
                Some(call) => {
                    waiting.push(m);
                    if !calls.iter().any(|c| c == call) {
                        calls.push(call.to_string());
                    }
                }
                None => missing.push(m),
            }
        }
        if waiting.is_empty() && comm.0 == "NCCL" {
            return self.stuck_returned(comm, members, most, d);
        }
        self.report(comm, (most + 1, None), (&waiting, calls, false), &missing, d)
    }

    /// NCCL's stuck collective when no rank waits inside a collective
    /// call: collective `most` was entered (its call returned) by the
    /// ranks that ended `most`, never by the others.
    fn stuck_returned(
        &self,
        comm: (&'static str, String, u64, String),
        members: &[Member],
        most: u64,
        d: &dyn Describe,
    ) -> Option<Stuck> {
        let (entered, missing): (Vec<&Member>, Vec<&Member>) = members.iter().partition(|m| m.ended == most);
        let mut calls: Vec<String> = Vec::new();
        for (call, _) in entered.iter().filter_map(|m| m.last.as_ref()) {
            if !calls.contains(call) {
                calls.push(call.clone());
            }
        }
        let sequence = entered.iter().find_map(|m| m.last.as_ref().and_then(|l| l.1));
        self.report(comm, (most, sequence), (&entered, calls, true), &missing, d)
    }

    fn report(
        &self,
        comm: (&'static str, String, u64, String),
        (operation, sequence): (u64, Option<u64>),
        (waiting, calls, returned): (&[&Member], Vec<String>, bool),
        missing: &[&Member],
        d: &dyn Describe,
    ) -> Option<Stuck> {
        if waiting.is_empty() || missing.is_empty() || operation == 0 {
            return None;
        }
        let doing = |ms: &[&Member]| -> Vec<String> {
            ms.iter().map(|m| format!("{}: {}", d.process(m.process), self.doing(m.process, d))).collect()
        };
        let ranks = |ms: &[&Member]| -> Vec<Option<u32>> { ms.iter().map(|m| d.rank(m.process)).collect() };
        let (paradigm, communicator, communicator_size, communicator_ranks) = comm;
        Some(Stuck {
            paradigm,
            communicator,
            communicator_size,
            communicator_ranks,
            operation,
            sequence,
            waiting: super::totals::rank_list(&ranks(waiting), 8),
            calls,
            returned,
            waiting_doing: doing(waiting),
            missing: super::totals::rank_list(&ranks(missing), 8),
            missing_doing: doing(missing),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::describe::Plain;

    #[test]
    fn collective_calls_are_told_from_the_others() {
        for c in ["MPI_Allreduce", "MPI_Barrier", "MPI_Reduce_scatter_block", "MPI_Bcast", "ncclAllReduce"] {
            assert!(is_collective_call(c), "{c}");
        }
        for c in ["MPI_Recv", "MPI_Wait", "MPI_Iallreduce", "ncclGroupEnd", "ncclSend", "cudaStreamSynchronize"] {
            assert!(!is_collective_call(c), "{c}");
        }
    }

    #[test]
    fn the_ranks_outside_the_collective_the_others_wait_in_are_named() {
        // Ranks 0 and 1 in their 6th all-reduce, rank 2 computing after 5.
        let mut noted = Noted::default();
        noted.note(0, "MPI_Allreduce".into(), "main > MPI_Allreduce".into(), 100, 900);
        // An outer region of the same thread, closed after its call: not kept.
        noted.note(0, "main".into(), "main".into(), 0, 900);
        noted.note(1, "MPI_Allreduce".into(), "main > MPI_Allreduce".into(), 300, 900);
        let members: Vec<Member> = (0..3).map(|p| Member { process: p, ended: 5, last: None }).collect();
        let comm = ("MPI", "world".to_string(), 3, "0-2".to_string());
        let s = noted.stuck(comm.clone(), &members, &Plain).expect("stuck");
        assert_eq!((s.operation, s.waiting.as_str(), s.missing.as_str()), (6, "0-1", "2"));
        assert_eq!(s.calls, vec!["MPI_Allreduce".to_string()]);
        assert!(s.missing_doing[0].starts_with("rank 2: in no call"), "{:?}", s.missing_doing);
        let flights = noted.in_flight(&Plain);
        assert_eq!((flights[0].rank, flights[0].for_ns), (Some(0), 800));
        // Everyone waiting, or nobody: nothing stuck.
        let mut all = Noted::default();
        (0..3).for_each(|l| all.note(l, "MPI_Barrier".into(), String::new(), 0, 1));
        assert!(all.stuck(comm.clone(), &members, &Plain).is_none());
        assert!(Noted::default().stuck(comm, &members, &Plain).is_none());
    }

    #[test]
    fn on_nccl_the_ranks_that_returned_from_the_stuck_collective_are_told_from_those_that_never_made_it() {
        // Ranks 0-2 returned from their 6th ncclAllReduce (NCCL's sequence
        // number 5) and wait in cudaStreamSynchronize; rank 3 made 5 and
        // waits in MPI_Barrier.
        let mut noted = Noted::default();
        (0..3).for_each(|l| noted.note(l, "cudaStreamSynchronize".into(), String::new(), 10, 90));
        noted.note(3, "MPI_Barrier".into(), String::new(), 20, 90);
        let last = |seq| Some(("ncclAllReduce".to_string(), Some(seq)));
        let mut members: Vec<Member> = (0..3).map(|p| Member { process: p, ended: 6, last: last(5) }).collect();
        members.push(Member { process: 3, ended: 5, last: last(4) });
        let comm = ("NCCL", "nccl".to_string(), 4, "0-3".to_string());
        let s = noted.stuck(comm.clone(), &members, &Plain).expect("stuck");
        assert_eq!((s.operation, s.sequence, s.returned), (6, Some(5), true));
        assert_eq!((s.waiting.as_str(), s.missing.as_str()), ("0-2", "3"));
        assert_eq!(s.calls, vec!["ncclAllReduce".to_string()]);
        assert_eq!(s.waiting_doing[1], "rank 1: cudaStreamSynchronize");
        assert_eq!(s.missing_doing, vec!["rank 3: MPI_Barrier".to_string()]);
        // The same counts on MPI: nobody inside a collective call, nothing
        // said (MPI's calls return when the collective is done).
        assert!(noted.stuck(("MPI", "world".into(), 4, "0-3".into()), &members, &Plain).is_none());
        // Every rank made as many: nothing stuck on the communicator (rank
        // 3's MPI_Barrier is not one of its collectives).
        members[3].ended = 6;
        assert!(noted.stuck(comm.clone(), &members, &Plain).is_none());
        // A rank inside a (blocking) NCCL collective call: the next one,
        // as on MPI.
        let mut inside = Noted::default();
        inside.note(0, "ncclAllReduce".into(), String::new(), 10, 90);
        let s = inside.stuck(comm, &members, &Plain).expect("stuck");
        assert_eq!((s.operation, s.sequence, s.returned, s.waiting.as_str()), (7, None, false, "0"));
    }
}
