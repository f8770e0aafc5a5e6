//! Collective operations: each rank's part kept until every rank of the
//! communicator has ended the operation, then its wait states computed.

use otf2::{CollectiveOp, CommRef, RegionRef};

use super::{Key, Pass, Pattern, Place, What};
use crate::analyze::stragglers::{Arrival, GpuSamples, Transfers};
use crate::model::RegionKind;

pub(super) struct Participant {
    pub(super) loc: usize,
    pub(super) rank: u32,
    pub(super) enter: u64,
    pub(super) exit: u64,
    pub(super) node: u32,
    pub(super) sent: u64,
    pub(super) received: u64,
    /// Its thread's time per region since its previous collective.
    pub(super) since: Vec<(RegionRef, u64)>,
    /// The messages its thread received since then.
    pub(super) transfers: Transfers,
}

pub(super) struct Collective {
    pub(super) op: CollectiveOp,
    pub(super) root: Option<u32>,
    pub(super) size: usize,
    pub(super) parts: Vec<Participant>,
}

impl Pass<'_> {
    /// `number`: the collective's place in its communicator's order, where
    /// the archive says (a flight recorder's, whose ranks' windows begin
    /// at different collectives); counted from the first one otherwise.
    pub(super) fn collective_end(&mut self, l: usize, t: u64, c: &otf2::Collective, number: Option<u64>) {
        let model = self.model;
        let Some(info) = model.comms.get(&c.comm) else { return };
        let size = info.locations.len();
        if info.is_self || size < 2 {
            return;
        }
        let mpi = !info.is_nccl;
        if !mpi
            && !*self.distinct.entry(c.comm).or_insert_with(|| {
                let mut p: Vec<Option<usize>> = info.processes.clone();
                p.sort_unstable();
                p.dedup();
                p.len() == info.processes.len() && p.iter().all(Option::is_some)
            })
        {
            return;
        }
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, c.comm) else { return };
        let frame = if mpi {
            self.mpi_frame(l)
        } else {
            self.locs[l].host.stack.iter().rposition(|f| f.kind == RegionKind::Nccl)
        };
        let since = self.locs[l].host.clock.take();
        let transfers = self.locs[l].host.transfers.take();
        let (enter, node) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                (f.enter, f.node)
            }
            None => (t, 0),
        };
        // NCCL numbers its collectives itself (the `sequence` of the call's
        // Enter): the ranks of a flight recorder's archive, whose windows
        // begin at different collectives, match by it.
        let number = number.or_else(|| {
            let region = self.locs[l].host.stack.get(frame?)?.region;
            (!mpi).then(|| self.unfinished.sequence.get(&l).filter(|(r, _)| *r == region).map(|(_, s)| *s))?
        });
        let seq = self.coll_seq.entry((process, c.comm)).or_insert(0);
        if let Some(n) = number {
            *seq = n;
        }
        let key = (c.comm, *seq);
        *seq += 1;
        if !mpi {
            self.nccl_call_ended(l, c.comm, key.1, enter);
            self.note_nccl_collective(l, c.comm, frame, key.1 + 1);
        }
        let part = Participant {
            loc: l,
            rank: me,
            enter,
            exit: t,
            node,
            sent: c.bytes_sent,
            received: c.bytes_received,
            since,
            transfers,
        };
        let coll = self.colls.entry(key).or_insert_with(|| Collective {
            op: c.op,
            root: c.root,
            size,
            parts: Vec::with_capacity(size),
        });
        coll.parts.push(part);
        if coll.parts.len() >= coll.size {
            let coll = self.colls.remove(&key).expect("just filled");
            self.evaluate_collective(key, coll, mpi);
        }
    }

    fn evaluate_collective(&mut self, (comm, seq): (CommRef, u64), mut coll: Collective, mpi: bool) {
        use CollectiveOp as Op;
        let arrivals: Vec<Arrival> = coll
            .parts
            .iter_mut()
            .map(|p| Arrival {
                loc: p.loc,
                process: self.locs[p.loc].process,
                enter: p.enter,
                since: std::mem::take(&mut p.since),
                gpu: None,
                transfers: p.transfers.take(),
            })
            .collect();
        if !mpi {
            // Judged once the ranks' NCCL kernels have started.
            self.nccl_operation(comm, seq, arrivals);
            return;
        }
        self.stragglers.operation(comm, &arrivals, &GpuSamples::default());
        let latest = |parts: &[Participant], senders_only: bool| {
            parts.iter().filter(|p| !senders_only || p.sent > 0).max_by_key(|p| p.enter).map(|p| (p.enter, p.rank))
        };
        let mut waits: Vec<(Pattern, usize, u64, u64, Option<u32>)> = Vec::new();
        match coll.op {
            Op::Barrier => {
                if let Some((last, who)) = latest(&coll.parts, false) {
                    for (i, p) in coll.parts.iter().enumerate() {
                        waits.push((Pattern::WaitAtBarrier, i, p.enter, last.min(p.exit), Some(who)));
                    }
                }
            }
            Op::Allreduce
            | Op::Allgather
            | Op::Allgatherv
            | Op::Alltoall
            | Op::ReduceScatter
            | Op::ReduceScatterBlock => {
                if let Some((last, who)) = latest(&coll.parts, true) {
                    for (i, p) in coll.parts.iter().enumerate() {
                        if p.received > 0 {
                            waits.push((Pattern::WaitAtNxN, i, p.enter, last.min(p.exit), Some(who)));
                        }
                    }
                }
            }
            Op::Bcast | Op::Scatter | Op::Scatterv => {
                let root = coll.root.and_then(|r| coll.parts.iter().find(|p| p.rank == r));
                if let Some(root) = root {
                    for (i, p) in coll.parts.iter().enumerate() {
                        if p.rank != root.rank && p.received > 0 {
                            waits.push((Pattern::LateBroadcast, i, p.enter, root.enter.min(p.exit), Some(root.rank)));
                        }
                    }
                }
            }
            Op::Reduce | Op::Gather | Op::Gatherv => {
                let root = coll.root.and_then(|r| coll.parts.iter().position(|p| p.rank == r));
                if let Some(ri) = root {
                    let r = &coll.parts[ri];
                    let first = coll
                        .parts
                        .iter()
                        .filter(|p| p.rank != r.rank && p.sent > 0)
                        .min_by_key(|p| p.enter)
                        .map(|p| (p.enter, p.rank));
                    if let Some((first, who)) = first
                        && r.received > 0
                    {
                        waits.push((Pattern::EarlyReduce, ri, r.enter, first.min(r.exit), Some(who)));
                    }
                }
            }
            _ => {}
        }
        for (pattern, i, from, to, partner_rank) in waits {
            if to <= from {
                continue;
            }
            let p = &coll.parts[i];
            if let Some(culprit) = partner_rank.and_then(|r| coll.parts.iter().find(|q| q.rank == r)) {
                self.timelines.wait(p.loc, to, culprit.loc);
            }
            let partner = partner_rank.and_then(|r| self.world_rank(comm, r));
            let key = Key { pattern, place: Place::Loc(p.loc), what: What::Path(p.node), comm: Some(comm) };
            let process = self.locs[p.loc].process;
            self.record(key, from, to, to - from, partner, process);
        }
    }
}
