//! Stragglers: per collective operation (MPI or NCCL, matched across ranks
//! by their order on the communicator, as NCCL's sequence numbers count
//! them), the rank that arrived last, by how much, and why.
//!
//! A rank arrives at an MPI operation when it enters the call; at an NCCL
//! operation when its NCCL kernel starts on its GPU, where the pass joined
//! every rank's kernel to the call (else, as for MPI, at the call's entry,
//! which only queues the kernel).
//!
//! Per communicator and rank the pass sums, over the operations that rank
//! arrived at last:
//! - its *lateness*: its arrival minus the next latest rank's (how much
//!   sooner the operation could have begun had it been as early as that
//!   rank);
//! - the *wait it caused*: its arrival minus each other rank's, summed
//!   (the others' time in the call, or kernel, before it came);
//! - the *cause*, the first of:
//!   - a *kernel*: since each rank's previous NCCL kernel, the time per
//!     kernel on its GPU compared with the next latest rank's; the kernel
//!     with the largest excess, where that excess is at least half the
//!     lateness and the next rank did not run that kernel at all;
//!   - a *slower link* on the GPU: its copies since then took at least
//!     half the lateness longer than the next latest rank's
//!     ([`links`]);
//!   - the *GPU clock*: its GPU's mean sampled SM clock over that interval
//!     at least 10 % below the other ranks' GPUs' over the same interval;
//!   - the kernel of the first rule where the next rank ran it too (a
//!     kernel that ran longer at the same clock);
//!   - a *slower link* for MPI: the messages its thread received since
//!     its previous collective took at least half the lateness longer to
//!     arrive than the next latest rank's, waiting for late senders left
//!     out;
//!   - a *region*: since each rank's previous collective on its thread,
//!     the time in each region (exclusive of its children; MPI, NCCL and
//!     synchronization calls left out) compared with the next latest
//!     rank's, the region with the largest excess where that excess is at
//!     least half the lateness. Time outside any region the program or a
//!     library annotated is its program's region: computation that
//!     nothing named.
//!
//! What it does not see: throttling reasons (NVML's are not sampled; a
//! lower clock is what shows), and a slower link inside NCCL's own
//! kernels (it shows as a later kernel start).

use std::collections::HashMap;

use otf2::{CommRef, RegionRef};
use serde::Serialize;

use super::describe::Describe;

#[cfg(test)]
mod archive_tests;
mod iteration;
mod links;
mod samples;

pub(crate) use iteration::{Op, worst_of};
use links::LinkSums;
pub(crate) use links::{Link, Transfers};
pub(crate) use samples::{GpuSamples, Sampled};

/// One rank's arrival at a collective operation.
pub(crate) struct Arrival {
    pub loc: usize,
    pub process: usize,
    /// Its call's entry, or its NCCL kernel's start (with `gpu`).
    pub enter: u64,
    /// Time per region on its thread since its previous collective.
    pub since: Vec<(RegionRef, u64)>,
    /// Where it is judged by its NCCL kernel's start: its GPU's side.
    pub gpu: Option<GpuArrival>,
    /// The messages its thread received since its previous collective.
    pub transfers: Transfers,
}

/// A rank's NCCL kernel and the GPU work before it.
#[derive(Clone, Debug, Default)]
pub(crate) struct GpuArrival {
    /// The GPU it ran on (index into the model's GPUs).
    pub gpu: Option<usize>,
    /// When the process's previous NCCL kernel started: the interval the
    /// comparison covers begins there.
    pub prev: Option<u64>,
    /// Time per kernel on the process's streams since then.
    pub kernels: Vec<(RegionRef, u64)>,
    /// The copies on its streams since then.
    pub copies: Transfers,
}

/// Why a rank came last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Cause {
    Region(RegionRef),
    Kernel(RegionRef),
    Clock,
    Link,
}

impl Cause {
    /// A total order, for ties.
    fn order(self) -> (u8, u32) {
        match self {
            Cause::Kernel(r) => (0, r.id()),
            Cause::Clock => (1, 0),
            Cause::Region(r) => (2, r.id()),
            Cause::Link => (3, 0),
        }
    }
}

/// The sampled clocks and power behind the clock causes, summed.
#[derive(Default)]
struct ClockSums {
    n: u64,
    mine: u64,
    others: u64,
    power_n: u64,
    my_power: u64,
    others_power: u64,
}

#[derive(Default)]
struct Row {
    loc: usize,
    times_last: u64,
    lateness: u64,
    wait_caused: u64,
    /// (entry, lateness) of the operation it was latest by the most.
    worst: (u64, u64),
    /// Of those, how many were judged by the NCCL kernels' starts.
    by_kernel: u64,
    /// Excess time per cause over the next latest rank, where one
    /// explained the lateness (for the clock, the lateness).
    causes: HashMap<Cause, u64>,
    clock: ClockSums,
    links: LinkSums,
}

/// The stragglers found so far.
#[derive(Default)]
pub(crate) struct Stragglers {
    rows: HashMap<(CommRef, usize), Row>,
    operations: HashMap<CommRef, u64>,
    /// Each operation judged, where iterations are marked.
    pub(crate) ops: Option<Vec<Op>>,
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
    /// Of those, how many it arrived at last.
    pub times_last: u64,
    /// Of those, how many were judged by when its NCCL kernel started on
    /// the GPU (the others by the call's entry).
    pub by_kernel: u64,
    /// Its entry minus the next latest rank's, summed (ns).
    pub lateness_ns: u64,
    /// Its entry minus each other rank's, summed over them and the
    /// operations (ns): the others' waiting for it.
    pub wait_caused_ns: u64,
    /// When the operation it was latest by the most began (its entry, ns
    /// since the trace's start), and by how much.
    pub worst_start_ns: u64,
    pub worst_lateness_ns: u64,
    /// Why, where a cause explains a lateness (the one that explained the
    /// most): `kernel` (a kernel its GPU spent longer in), `gpu clock`
    /// (its GPU's SM clock was lower), `region` (a region its thread
    /// spent longer in).
    pub cause_kind: Option<&'static str>,
    /// The kernel or region, or the clocks (`SM clock 1095 MHz, the
    /// others' 1980 MHz`).
    pub cause: Option<String>,
    /// The excess time in the kernel or region summed (ns); for the clock,
    /// the lateness it explained.
    pub cause_excess_ns: u64,
}

impl Stragglers {
    /// One operation on `comm` that every rank ended; `samples` holds the
    /// GPUs' sampled clocks.
    pub(crate) fn operation(&mut self, comm: CommRef, arrivals: &[Arrival], samples: &GpuSamples) {
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
        if last.gpu.is_some() {
            row.by_kernel += 1;
        }
        if lateness >= row.worst.1 {
            row.worst = (last.enter, lateness);
        }
        let why = cause(last, next, arrivals, lateness, samples, &mut row.clock, &mut row.links);
        if let Some((cause, excess)) = why {
            *row.causes.entry(cause).or_default() += excess;
        }
        if let Some(ops) = &mut self.ops {
            ops.push(Op::new(last.enter, last.process, lateness, wait, why));
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
                let top = row.causes.iter().max_by_key(|(c, ns)| (**ns, std::cmp::Reverse(c.order())));
                let (kind, cause, cause_excess) = match top {
                    Some((Cause::Region(r), ns)) => (Some("region"), Some(d.region(*r)), *ns),
                    Some((Cause::Kernel(r), ns)) => (Some("kernel"), Some(d.region(*r)), *ns),
                    Some((Cause::Clock, ns)) => (Some("gpu clock"), Some(row.clock.describe()), *ns),
                    Some((Cause::Link, ns)) => (Some("link"), Some(row.links.describe(d)), *ns),
                    None => (None, None, 0),
                };
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
                    by_kernel: row.by_kernel,
                    lateness_ns: d.ns(row.lateness),
                    wait_caused_ns: d.ns(row.wait_caused),
                    worst_start_ns: d.since_start(row.worst.0),
                    worst_lateness_ns: d.ns(row.worst.1),
                    cause_kind: kind,
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

/// Why `last` came after `next` by `lateness`, and the excess that says
/// it (for the clock, the lateness; its clocks added to `clock`).
fn cause(
    last: &Arrival,
    next: &Arrival,
    all: &[Arrival],
    lateness: u64,
    samples: &GpuSamples,
    clock: &mut ClockSums,
    links: &mut LinkSums,
) -> Option<(Cause, u64)> {
    if lateness == 0 {
        return None;
    }
    let explains = |e: u64| e.saturating_mul(2) >= lateness;
    if let (Some(mine), Some(theirs)) = (&last.gpu, &next.gpu) {
        let kernel = excess(&mine.kernels, &theirs.kernels).filter(|(_, e)| explains(*e));
        // A kernel the next rank did not run at all: no clock explains it.
        if let Some((k, e)) = kernel
            && !theirs.kernels.iter().any(|(r, _)| *r == k)
        {
            return Some((Cause::Kernel(k), e));
        }
        // Copies that took longer: a slower link (no SM clock slows a
        // copy engine).
        if let Some(e) = links::excess(&mine.copies, &theirs.copies, lateness) {
            links.add(&mine.copies, &theirs.copies);
            return Some((Cause::Link, e));
        }
        if clock.slower(last, all, samples) {
            return Some((Cause::Clock, lateness));
        }
        if let Some((k, e)) = kernel {
            return Some((Cause::Kernel(k), e));
        }
    }
    if let Some(e) = links::excess(&last.transfers, &next.transfers, lateness) {
        links.add(&last.transfers, &next.transfers);
        return Some((Cause::Link, e));
    }
    excess(&last.since, &next.since).filter(|(_, e)| explains(*e)).map(|(r, e)| (Cause::Region(r), e))
}

impl ClockSums {
    /// Whether `last`'s GPU ran at a mean SM clock at least 10 % below the
    /// other ranks' GPUs' (their mean) since its previous NCCL kernel;
    /// if so its clocks and power are added.
    fn slower(&mut self, last: &Arrival, all: &[Arrival], samples: &GpuSamples) -> bool {
        let Some((gpu, from)) = last.gpu.as_ref().and_then(|g| Some((g.gpu?, g.prev?))) else { return false };
        let to = last.enter;
        let Some(mine) = samples.mean(Sampled::SmClock, gpu, from, to) else { return false };
        let others_of = |which| {
            let v: Vec<u64> = all
                .iter()
                .filter_map(|a| a.gpu.as_ref()?.gpu)
                .filter(|g| *g != gpu)
                .filter_map(|g| samples.mean(which, g, from, to))
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<u64>() / v.len() as u64)
        };
        let Some(others) = others_of(Sampled::SmClock) else { return false };
        if mine.saturating_mul(10) > others.saturating_mul(9) {
            return false;
        }
        self.n += 1;
        self.mine += mine;
        self.others += others;
        if let (Some(p), Some(o)) = (samples.mean(Sampled::Power, gpu, from, to), others_of(Sampled::Power)) {
            self.power_n += 1;
            self.my_power += p;
            self.others_power += o;
        }
        true
    }

    /// `SM clock 1095 MHz, the others' 1980 MHz; power 210 W, the others' 480 W`.
    fn describe(&self) -> String {
        let n = self.n.max(1);
        let mut s = format!("SM clock {} MHz, the others' {} MHz", self.mine / n, self.others / n);
        if self.power_n > 0 {
            let w = |mw: u64| mw / self.power_n / 1000;
            s.push_str(&format!("; power {} W, the others' {} W", w(self.my_power), w(self.others_power)));
        }
        s
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
mod tests;
