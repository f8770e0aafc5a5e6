//! Stragglers: per collective operation (MPI or NCCL, matched across ranks
//! by their order on the communicator, as NCCL's sequence numbers count
//! them), the rank that entered last, by how much, and what it did longer
//! than the rank that entered just before it.
//!
//! Per communicator and rank the pass sums, over the operations that rank
//! entered last:
//! - its *lateness*: its entry minus the next latest rank's (how much
//!   sooner the operation could have begun had it been as early as that
//!   rank);
//! - the *wait it caused*: its entry minus each other rank's, summed
//!   (the others' time in the call before it came);
//! - the *cause*: since each rank's previous collective on its thread,
//!   the time in each region (exclusive of its children; MPI, NCCL and
//!   synchronization calls left out) is compared with the next latest
//!   rank's, and the region with the largest excess is named when that
//!   excess is at least half the lateness. Time outside any region the
//!   program or a library annotated is its program's region: computation
//!   that nothing named.
//!
//! What it does not see yet: GPU kernels (an NCCL call's host entry is
//! when it was queued, not when its kernel could start), the sampled GPU
//! clocks and power, and links.

use std::collections::HashMap;

use otf2::{CommRef, RegionRef};
use serde::Serialize;

use super::describe::Describe;

/// One rank's arrival at a collective operation.
pub(crate) struct Arrival {
    pub loc: usize,
    pub process: usize,
    pub enter: u64,
    /// Time per region on its thread since its previous collective.
    pub since: Vec<(RegionRef, u64)>,
}

#[derive(Default)]
struct Row {
    loc: usize,
    times_last: u64,
    lateness: u64,
    wait_caused: u64,
    /// (entry, lateness) of the operation it was latest by the most.
    worst: (u64, u64),
    /// Excess time per region over the next latest rank, where a region
    /// explained the lateness.
    causes: HashMap<RegionRef, u64>,
}

/// The stragglers found so far.
#[derive(Default)]
pub(crate) struct Stragglers {
    rows: HashMap<(CommRef, usize), Row>,
    operations: HashMap<CommRef, u64>,
}

/// A rank that entered collective operations last, with what it cost the
/// others and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Straggler {
    /// `MPI` or `NCCL`.
    pub paradigm: &'static str,
    pub communicator: String,
    pub communicator_size: u64,
    /// Its members as world ranks, in runs (`0-3`).
    pub communicator_ranks: String,
    pub rank: Option<u32>,
    pub process: String,
    /// The thread that made the calls.
    pub location: String,
    /// Operations on the communicator that every rank ended.
    pub operations: u64,
    /// Of those, how many it entered last.
    pub times_last: u64,
    /// Its entry minus the next latest rank's, summed (ns).
    pub lateness_ns: u64,
    /// Its entry minus each other rank's, summed over them and the
    /// operations (ns): the others' waiting for it.
    pub wait_caused_ns: u64,
    /// When the operation it was latest by the most began (its entry, ns
    /// since the trace's start), and by how much.
    pub worst_start_ns: u64,
    pub worst_lateness_ns: u64,
    /// The region where it spent longer than the next latest rank, where
    /// one explains at least half of a lateness (the one that did most
    /// often), and that excess summed (ns).
    pub cause: Option<String>,
    pub cause_excess_ns: u64,
}

impl Stragglers {
    /// One operation on `comm` that every rank ended.
    pub(crate) fn operation(&mut self, comm: CommRef, arrivals: &[Arrival]) {
        if arrivals.len() < 2 {
            return;
        }
        *self.operations.entry(comm).or_default() += 1;
        let mut order: Vec<usize> = (0..arrivals.len()).collect();
        order.sort_by_key(|&i| arrivals[i].enter);
        let last = &arrivals[order[order.len() - 1]];
        let next = &arrivals[order[order.len() - 2]];
        let lateness = last.enter - next.enter;
        let wait: u64 = arrivals.iter().map(|a| last.enter - a.enter).sum();
        let row = self.rows.entry((comm, last.process)).or_default();
        row.loc = last.loc;
        row.times_last += 1;
        row.lateness += lateness;
        row.wait_caused += wait;
        if lateness >= row.worst.1 {
            row.worst = (last.enter, lateness);
        }
        if let Some((region, excess)) = excess(&last.since, &next.since)
            && lateness > 0
            && excess.saturating_mul(2) >= lateness
        {
            *row.causes.entry(region).or_default() += excess;
        }
    }

    /// The rows, the most wait caused first: `describe` names a row's
    /// communicator, process, thread and region and converts times.
    pub(crate) fn finish(self, d: &dyn Describe) -> Vec<Straggler> {
        let mut out: Vec<Straggler> = self
            .rows
            .into_iter()
            .filter_map(|((comm, process), row)| {
                let (paradigm, communicator, size, ranks) = d.communicator(comm)?;
                let (cause, cause_excess) = row
                    .causes
                    .iter()
                    .max_by_key(|(r, ns)| (**ns, std::cmp::Reverse(r.id())))
                    .map_or((None, 0), |(r, ns)| (Some(d.region(*r)), *ns));
                Some(Straggler {
                    paradigm,
                    communicator,
                    communicator_size: size,
                    communicator_ranks: ranks,
                    rank: d.rank(process),
                    process: d.process(process),
                    location: d.location(row.loc),
                    operations: self.operations.get(&comm).copied().unwrap_or(0),
                    times_last: row.times_last,
                    lateness_ns: d.ns(row.lateness),
                    wait_caused_ns: d.ns(row.wait_caused),
                    worst_start_ns: d.since_start(row.worst.0),
                    worst_lateness_ns: d.ns(row.worst.1),
                    cause,
                    cause_excess_ns: d.ns(cause_excess),
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.wait_caused_ns
                .cmp(&a.wait_caused_ns)
                .then_with(|| a.communicator.cmp(&b.communicator))
                .then(a.rank.cmp(&b.rank))
        });
        out
    }
}

/// The region in which `late` spent the most time beyond `other`, and how
/// much.
fn excess(late: &[(RegionRef, u64)], other: &[(RegionRef, u64)]) -> Option<(RegionRef, u64)> {
    late.iter()
        .map(|&(r, t)| {
            let o = other.iter().find(|(q, _)| *q == r).map_or(0, |(_, t)| *t);
            (r, t.saturating_sub(o))
        })
        .filter(|(_, e)| *e > 0)
        .max_by_key(|&(r, e)| (e, std::cmp::Reverse(r.id())))
}

/// Time per region on one thread, exclusive of the regions it holds:
/// credited at each enter and leave to the region on top of the stack.
#[derive(Default)]
pub(crate) struct RegionClock {
    mark: u64,
    since: Vec<(RegionRef, u64)>,
}

impl RegionClock {
    /// Credits the time since the last change to `top` (the region that
    /// was innermost until `t`, if any, and if it counts).
    pub(crate) fn credit(&mut self, top: Option<RegionRef>, t: u64) {
        if let Some(r) = top {
            let dt = t.saturating_sub(self.mark);
            if dt > 0 {
                match self.since.iter_mut().find(|(q, _)| *q == r) {
                    Some((_, ns)) => *ns += dt,
                    None => self.since.push((r, dt)),
                }
            }
        }
        self.mark = self.mark.max(t);
    }

    /// The time per region since the last take, and a new count from
    /// here.
    pub(crate) fn take(&mut self) -> Vec<(RegionRef, u64)> {
        std::mem::take(&mut self.since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::describe::Plain;

    fn arrival(process: usize, enter: u64, since: &[(u32, u64)]) -> Arrival {
        Arrival {
            loc: process,
            process,
            enter,
            since: since.iter().map(|&(r, t)| (RegionRef::from_id(r), t)).collect(),
        }
    }

    /// The last rank, its lateness over the next, the others' waiting and
    /// the region it spent longer in, summed over the operations.
    #[test]
    fn the_last_rank_is_named_with_its_lateness_wait_and_cause() {
        let mut s = Stragglers::default();
        let comm = CommRef::from_id(0);
        for i in 0..3u64 {
            let base = i * 1000;
            s.operation(
                comm,
                &[
                    arrival(0, base + 100, &[(1, 100), (9, 10)]),
                    arrival(1, base + 110, &[(1, 100), (9, 20)]),
                    arrival(2, base + 200, &[(1, 190), (9, 10)]),
                ],
            );
        }
        // A balanced one: rank 0 last by 1, no region explains it.
        s.operation(
            comm,
            &[arrival(0, 5001, &[(1, 100)]), arrival(1, 5000, &[(1, 100)]), arrival(2, 5000, &[(1, 100)])],
        );
        let rows = s.finish(&Plain);
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!((r.rank, r.operations, r.times_last), (Some(2), 4, 3));
        assert_eq!(r.lateness_ns, 3 * 90);
        assert_eq!(r.wait_caused_ns, 3 * (100 + 90));
        assert_eq!((r.worst_start_ns, r.worst_lateness_ns), (2200, 90));
        assert_eq!((r.cause.as_deref(), r.cause_excess_ns), (Some("region 1"), 3 * 90));
        let b = &rows[1];
        assert_eq!((b.rank, b.times_last, b.lateness_ns, b.wait_caused_ns), (Some(0), 1, 1, 2));
        assert_eq!(b.cause, None, "no region spent longer: no cause");
    }

    #[test]
    fn the_clock_credits_the_innermost_region_only() {
        let mut c = RegionClock::default();
        c.credit(None, 10);
        c.credit(Some(RegionRef::from_id(1)), 30); // region 1 from 10 to 30
        c.credit(Some(RegionRef::from_id(2)), 35); // region 2 inside it, 30 to 35
        c.credit(Some(RegionRef::from_id(1)), 50); // back in region 1
        assert_eq!(c.take(), vec![(RegionRef::from_id(1), 35), (RegionRef::from_id(2), 5)]);
        assert!(c.take().is_empty());
    }
}
