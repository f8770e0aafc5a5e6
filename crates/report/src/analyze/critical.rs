//! The critical path across ranks and GPUs: the chain of activity that
//! decided how long the run took, found backwards from the last event as
//! Scalasca does. On the location that ended last, time is on the path
//! back to the end of the latest wait state it suffered (a Late Sender,
//! Late Receiver, Wait at NxN or Barrier, Late Broadcast, Early Reduce);
//! there the path moves to the location that made it wait — the sender,
//! the receiver, the last rank to enter the collective, the root — at the
//! moment it arrived, and goes on backwards from there, until a location
//! suffered no earlier wait: back to its first event, or to the end of
//! its `MPI_Init` (start-up is not the run's steady state: the path
//! begins when the ranks are up, as `mpi_sum` keeps MPI_Init apart).
//!
//! A CUDA synchronization (a synchronizing call, a synchronous copy or
//! memset, a `[CUDA sync: ...]` record) that returned after GPU work it
//! waited for is a wait too: the path moves to the GPU stream at that
//! work's end and goes back along the stream ([`stream`]): each activity
//! back to its start, then to its launch call on the host where the GPU
//! waited for it, to the NCCL kernel of the rank that started the same
//! collective last, or to the activity before it on the stream.
//!
//! The pass keeps, per host thread, each change of its innermost region
//! (16 bytes an enter or leave), each wait state's end and culprit and
//! each synchronization; per GPU stream each activity (48 bytes, counted
//! as three changes); past [`MAX_CHANGES`] changes it keeps nothing more
//! and says so.

mod iteration;
mod stream;
mod what_if_gpu;

use std::collections::HashMap;

use serde::Serialize;

use super::describe::Describe;
pub(crate) use iteration::{IterationPath, Span};
pub(crate) use stream::{Launched, Work};
use stream::{Pos, Walk};
pub use what_if_gpu::GpuWhatIf;
use what_if_gpu::gpu_what_if;

/// The changes of innermost region kept at most, over all threads (about
/// half a gigabyte); a GPU activity counts as three, a synchronization as
/// one.
pub const MAX_CHANGES: usize = 32 << 20;

/// No region open.
pub(crate) const NONE: u32 = u32::MAX;

/// The activity of time outside any region: computation nothing annotated.
pub(crate) const OUTSIDE: &str = "(outside any region)";

/// The activity of a GPU stream's idle time on the path: between its
/// activities, or between a launch call's end and its work's start.
pub(crate) const IDLE: &str = "(stream idle)";

/// What the pass hands over: per host location its region changes, wait
/// states and synchronizations, per GPU stream its activities.
#[derive(Default)]
pub(crate) struct Timelines {
    /// Per location: (time, innermost call-path node from then on).
    changes: Vec<Vec<(u64, u32)>>,
    /// Per location: (end of the wait, the location that made it wait).
    waits: Vec<Vec<(u64, usize)>>,
    /// Per location: where the path may begin (the end of MPI_Init).
    starts: Vec<u64>,
    /// Per host location: (enter, leave) of each CUDA synchronization.
    syncs: Vec<Vec<(u64, u64)>>,
    /// Per GPU stream: its kernels, copies and memsets, as they ended.
    works: Vec<Vec<Work>>,
    kept: usize,
    pub(crate) overflow: bool,
}

/// The critical path and the projections only its walk can make.
pub(crate) struct Found {
    pub(crate) path: CriticalPath,
    pub(crate) gpu_what_if: Vec<GpuWhatIf>,
    /// Per iteration asked for, in order.
    pub(crate) iterations: Vec<IterationPath>,
}

/// One activity on the critical path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathStep {
    pub process: String,
    pub rank: Option<u32>,
    /// The thread.
    pub location: String,
    /// Whether the location is a GPU stream.
    pub on_gpu: bool,
    /// The innermost region (`MPI_Allreduce`, a user region, the
    /// program's region for computation nothing annotated); on a GPU
    /// stream the kernel, copy or memset, or [`IDLE`].
    pub activity: String,
    /// Its time on the path (ns).
    pub time_ns: u64,
    /// Of the path's length (%).
    pub share: f64,
}

/// The critical path.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CriticalPath {
    /// From its first activity to the run's last event (ns).
    pub length_ns: u64,
    /// How many times it moved to another location.
    pub jumps: u64,
    /// Per process, its time on the path (ns), the most first.
    pub processes: Vec<(String, u64)>,
    /// Per activity and location, the most time first.
    pub steps: Vec<PathStep>,
}

/// What the run would take if one process computed as the median process
/// does: the path's length without that process's excess computation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    pub process: String,
    pub rank: Option<u32>,
    /// Its computation on the path (ns).
    pub on_path_ns: u64,
    /// Its computation, and the median process's (ns).
    pub computation_ns: u64,
    pub median_ns: u64,
    /// What the path would lose (ns), and its projected length.
    pub saved_ns: u64,
    pub projected_ns: u64,
    /// The run shorter by (%).
    pub shorter: f64,
}

/// Whether a path activity is computation as `RankTime::computation_ns`
/// counts it: outside MPI, NCCL and CUDA synchronization calls.
fn is_computation(activity: &str) -> bool {
    !(activity.starts_with("MPI_") || activity.starts_with("nccl") || super::replay::is_sync_api(activity))
}

/// Projections for each process on the path that computed more than the
/// median process: had it computed the median's time, its computation on
/// the path would shrink in the same proportion (`on path × (1 − median /
/// its computation)`), and so would the path — a first-order estimate, as
/// Scalasca's: another process may become critical sooner. The largest
/// saving first; none under 1% of the path.
pub fn what_if(path: &CriticalPath, ranks: &[super::RankTime]) -> Vec<WhatIf> {
    let mut computations: Vec<u64> = ranks.iter().map(|r| r.computation_ns).filter(|&c| c > 0).collect();
    if computations.len() < 2 {
        return Vec::new();
    }
    computations.sort_unstable();
    let median_ns = computations[computations.len() / 2];
    let mut out: Vec<WhatIf> = ranks
        .iter()
        .filter(|r| r.computation_ns > median_ns)
        .filter_map(|r| {
            let on_path_ns: u64 = path
                .steps
                .iter()
                .filter(|s| s.process == r.process && is_computation(&s.activity))
                .map(|s| s.time_ns)
                .sum();
            let excess = 1.0 - median_ns as f64 / r.computation_ns as f64;
            let saved_ns = ((on_path_ns as f64 * excess) as u64).min(path.length_ns);
            // Below 1% of the path: noise, not a projection worth a row.
            (saved_ns > 0 && saved_ns * 100 >= path.length_ns).then(|| WhatIf {
                process: r.process.clone(),
                rank: r.rank,
                on_path_ns,
                computation_ns: r.computation_ns,
                median_ns,
                saved_ns,
                projected_ns: path.length_ns - saved_ns,
                shorter: 100.0 * saved_ns as f64 / path.length_ns.max(1) as f64,
            })
        })
        .collect();
    out.sort_by(|a, b| b.saved_ns.cmp(&a.saved_ns).then_with(|| a.process.cmp(&b.process)));
    out
}

impl Timelines {
    pub(crate) fn new(locations: usize) -> Self {
        Self {
            changes: vec![Vec::new(); locations],
            waits: vec![Vec::new(); locations],
            starts: vec![0; locations],
            syncs: vec![Vec::new(); locations],
            works: vec![Vec::new(); locations],
            kept: 0,
            overflow: false,
        }
    }

    /// Counts `n` more records against [`MAX_CHANGES`]: whether they may
    /// be kept (past it, everything kept goes).
    fn keep(&mut self, n: usize) -> bool {
        if self.overflow {
            return false;
        }
        if self.kept.saturating_add(n) > MAX_CHANGES {
            self.overflow = true;
            self.changes = Vec::new();
            self.waits = Vec::new();
            self.syncs = Vec::new();
            self.works = Vec::new();
            return false;
        }
        self.kept += n;
        true
    }

    /// Location `loc`'s innermost region is `node` from `t` on.
    pub(crate) fn change(&mut self, loc: usize, t: u64, node: u32) {
        if self.keep(1)
            && let Some(c) = self.changes.get_mut(loc)
        {
            c.push((t, node));
        }
    }

    /// Location `loc` is set up at `t` (its MPI_Init ended): the path does
    /// not go back beyond it there.
    pub(crate) fn started(&mut self, loc: usize, t: u64) {
        if let Some(s) = self.starts.get_mut(loc) {
            *s = t;
        }
    }

    /// Location `loc` waited until `to` for location `culprit`.
    pub(crate) fn wait(&mut self, loc: usize, to: u64, culprit: usize) {
        if !self.overflow
            && loc != culprit
            && let Some(w) = self.waits.get_mut(loc)
        {
            w.push((to, culprit));
        }
    }

    /// Host location `loc` synchronized with its GPU work from `enter` to
    /// `leave`.
    pub(crate) fn synchronized(&mut self, loc: usize, enter: u64, leave: u64) {
        if leave > enter
            && self.keep(1)
            && let Some(s) = self.syncs.get_mut(loc)
        {
            s.push((enter, leave));
        }
    }

    /// GPU stream `loc` ran `work`.
    pub(crate) fn ran(&mut self, loc: usize, work: Work) {
        if self.keep(3)
            && let Some(w) = self.works.get_mut(loc)
        {
            w.push(work);
        }
    }

    /// Whether `loc` is a GPU stream that ran something.
    fn is_stream(&self, loc: usize) -> bool {
        self.works.get(loc).is_some_and(|w| !w.is_empty())
    }

    /// The path, backwards from the host location whose last change is
    /// the latest; and one per iteration of `iterations`, backwards from
    /// the iteration's end to its start.
    pub(crate) fn path(mut self, names: &dyn Describe, iterations: &[Span]) -> Option<Found> {
        if self.overflow {
            return None;
        }
        self.resolve_syncs(names);
        for w in &mut self.waits {
            w.sort_unstable();
        }
        let (loc, t) = self
            .changes
            .iter()
            .enumerate()
            .filter_map(|(l, c)| c.last().map(|&(t, _)| (l, t)))
            .max_by_key(|&(l, t)| (t, std::cmp::Reverse(l)))?;
        let mut walk = Walk::new(&self, names);
        let path = self.walk_back(&mut walk, loc, t, names);
        let whole_gpu_what_if = gpu_what_if(&path, &walk, names);
        let iterations = iterations
            .iter()
            .map(|span| {
                walk.restart(span.start);
                let path = self.walk_back(&mut walk, span.end_loc, span.end, names);
                let gpu_what_if = gpu_what_if(&path, &walk, names);
                let computation = self.computation(span, names);
                IterationPath { path, gpu_what_if, computation }
            })
            .collect();
        Some(Found { path, gpu_what_if: whole_gpu_what_if, iterations })
    }

    /// The path backwards from host location `loc` at `end`, down to the
    /// walk's floor (none: the run's start).
    fn walk_back(&self, walk: &mut Walk, loc: usize, end: u64, names: &dyn Describe) -> CriticalPath {
        let mut pos = Pos::Host { loc, t: end, launched: false };
        // Each step goes back in time or to an earlier activity; the bound
        // only guards against an archive that breaks that.
        let mut budget = self.kept.saturating_mul(4).saturating_add(64);
        let start = loop {
            let next = match pos {
                Pos::Host { loc, t, launched } => self.host_step(loc, t, launched, walk),
                Pos::Stream { loc, t, start_of } => self.stream_step(loc, t, start_of, walk),
            };
            budget -= 1;
            match next {
                // An iteration's path ends at the iteration's start.
                Ok(p) if walk.floor > 0 && p.time() <= walk.floor => break walk.floor,
                Ok(p) if budget > 0 => pos = p,
                Ok(p) => break p.time(),
                Err(start) => break start,
            }
        };
        let length = names.ns(end.saturating_sub(start));
        let steps = steps(walk, length, names);
        let mut per: HashMap<&str, u64> = HashMap::new();
        for s in &steps {
            *per.entry(&s.process).or_default() += s.time_ns;
        }
        let mut processes: Vec<(String, u64)> = per.into_iter().map(|(p, t)| (p.to_owned(), t)).collect();
        processes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        CriticalPath { length_ns: length, jumps: walk.jumps, processes, steps }
    }

    /// One step back on host thread `loc` from `t`: to the end of its
    /// latest wait, then to the location it waited for; or to its
    /// beginning, where the path begins.
    fn host_step(&self, loc: usize, t: u64, launched: bool, walk: &mut Walk) -> Result<Pos, u64> {
        let empty = Vec::new();
        let waits = self.waits.get(loc).unwrap_or(&empty);
        let begin = self.starts.get(loc).copied().unwrap_or(0).max(walk.floor);
        // The latest wait that ended strictly before `t`, after the
        // location was set up.
        let i = waits.partition_point(|&(to, _)| to < t);
        match i.checked_sub(1).map(|i| waits[i]).filter(|&(to, _)| to > begin) {
            Some((to, culprit)) => {
                self.credit(loc, to, t, launched, walk);
                walk.jumps += 1;
                Ok(if self.is_stream(culprit) {
                    walk.enter_stream();
                    Pos::Stream { loc: culprit, t: to, start_of: None }
                } else {
                    Pos::Host { loc: culprit, t: to, launched: false }
                })
            }
            None => {
                let first = self.changes.get(loc).and_then(|c| c.first()).map_or(t, |&(t, _)| t).max(begin).min(t);
                self.credit(loc, first, t, launched, walk);
                Err(first)
            }
        }
    }

    /// Adds location `loc`'s time from `from` to `to` to its activities
    /// (and, where the GPU waited for this host to launch, to what it
    /// waited for).
    fn credit(&self, loc: usize, from: u64, to: u64, launched: bool, walk: &mut Walk) {
        let Some(changes) = self.changes.get(loc) else { return };
        // The state at `from`: the last change at or before it.
        let i = changes.partition_point(|&(t, _)| t <= from);
        let mut node = i.checked_sub(1).map_or(NONE, |i| changes[i].1);
        let mut at = from;
        for &(t, next) in &changes[i..] {
            if t >= to {
                break;
            }
            let idle = if launched { self.gpu_idle(walk.streams_fed_by(loc), at, t) } else { 0 };
            walk.host(loc, node, t - at, launched, idle);
            at = t;
            node = next;
        }
        let idle = if launched { self.gpu_idle(walk.streams_fed_by(loc), at, to) } else { 0 };
        walk.host(loc, node, to.saturating_sub(at), launched, idle);
    }

    /// How long `streams` (those a host thread launches work on) sat idle
    /// within `from..to` (the least over them: a stream busy all along
    /// kept the GPU from waiting for this host).
    fn gpu_idle(&self, streams: &[usize], from: u64, to: u64) -> u64 {
        let span = to.saturating_sub(from);
        let mut idle: Option<u64> = None;
        for works in streams.iter().filter_map(|&s| self.works.get(s)) {
            let i = works.partition_point(|w| w.end <= from);
            let busy: u64 = works[i..]
                .iter()
                .take_while(|w| w.start < to)
                .map(|w| w.end.min(to).saturating_sub(w.start.max(from)))
                .sum();
            let this = span.saturating_sub(busy);
            idle = Some(idle.map_or(this, |i| i.min(this)));
        }
        idle.unwrap_or(span)
    }
}

/// The walk's credits as steps, one per activity and location, the most
/// time first.
fn steps(walk: &Walk, length: u64, names: &dyn Describe) -> Vec<PathStep> {
    let mut steps: Vec<PathStep> = walk
        .on
        .iter()
        .filter(|&(_, &ticks)| ticks > 0)
        .map(|(&(l, act), &ticks)| {
            let p = names.process_of(l);
            let (process, rank) = (names.process(p), names.rank(p));
            let time_ns = names.ns(ticks);
            PathStep {
                process,
                rank,
                location: names.location(l),
                on_gpu: act.on_gpu(),
                activity: act.name(names),
                time_ns,
                share: if length > 0 { 100.0 * time_ns as f64 / length as f64 } else { 0.0 },
            }
        })
        .collect();
    // One node per call path: merge the steps of one activity name.
    steps.sort_by(|a, b| (&a.process, &a.location, &a.activity).cmp(&(&b.process, &b.location, &b.activity)));
    steps.dedup_by(|b, a| {
        let same = a.process == b.process && a.location == b.location && a.activity == b.activity;
        if same {
            a.time_ns += b.time_ns;
            a.share += b.share;
        }
        same
    });
    steps.sort_by(|a, b| {
        b.time_ns.cmp(&a.time_ns).then_with(|| a.process.cmp(&b.process)).then_with(|| a.location.cmp(&b.location))
    });
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::describe::Plain;

    /// Rank 0 computes 0–100 and sends; rank 1 computes 0–10, waits in a
    /// receive 10–100 (a Late Sender caused by rank 0), then computes to
    /// 150: the path is rank 1's 100–150 and rank 0's 0–100.
    #[test]
    fn the_path_crosses_to_the_late_sender() {
        let mut tl = Timelines::new(2);
        for (t, node) in [(0, 0), (100, 2), (101, 0), (120, NONE)] {
            tl.change(0, t, node);
        }
        for (t, node) in [(0, 0), (10, 1), (101, 0), (150, NONE)] {
            tl.change(1, t, node);
        }
        tl.wait(1, 100, 0);
        let p = tl.path(&Plain, &[]).unwrap().path;
        assert_eq!((p.length_ns, p.jumps), (150, 1));
        let got: Vec<(&str, &str, u64)> =
            p.steps.iter().map(|s| (s.process.as_str(), s.activity.as_str(), s.time_ns)).collect();
        assert_eq!(got, [("rank 0", "main", 100), ("rank 1", "main", 49), ("rank 1", "MPI_Recv", 1)]);
        assert_eq!(p.processes, [("rank 0".to_string(), 100), ("rank 1".to_string(), 50)]);
        let total: f64 = p.steps.iter().map(|s| s.share).sum();
        assert!((total - 100.0).abs() < 1e-9);
    }

    /// An iteration's path runs from its latest end back to its earliest
    /// start, and no further: rank 0's end of iteration 2 at 200, its
    /// wait for rank 1 until 150, rank 1's computation back to 100 (its
    /// wait before that, in iteration 1, is not followed).
    #[test]
    fn an_iteration_s_path_stops_at_its_start() {
        let mut tl = Timelines::new(2);
        for (t, node) in [(0, 0), (100, 1), (150, 0), (200, NONE)] {
            tl.change(0, t, node);
        }
        for (t, node) in [(0, 0), (10, 1), (100, 0), (150, 2), (151, 0), (210, NONE)] {
            tl.change(1, t, node);
        }
        tl.wait(0, 150, 1);
        tl.wait(1, 100, 0);
        let spans = [
            Span { start: 0, end: 100, end_loc: 0, parts: vec![(0, 0, 100), (1, 0, 100)] },
            Span { start: 100, end: 200, end_loc: 0, parts: vec![(0, 100, 200), (1, 100, 200)] },
        ];
        let found = tl.path(&Plain, &spans).unwrap();
        let p = &found.iterations[1].path;
        assert_eq!((p.length_ns, p.jumps), (100, 1));
        let got: Vec<(&str, &str, u64)> =
            p.steps.iter().map(|s| (s.process.as_str(), s.activity.as_str(), s.time_ns)).collect();
        assert_eq!(got, [("rank 0", "main", 50), ("rank 1", "main", 50)]);
        // Computation per process within its own instance: rank 0's
        // receive and rank 1's send are not.
        assert_eq!(found.iterations[1].computation, [(0, 50), (1, 99)]);
        // Iteration 1: rank 0 computed throughout.
        let p = &found.iterations[0].path;
        assert_eq!((p.length_ns, p.processes.clone()), (100, vec![("rank 0".to_string(), 100)]));
        // The run's path is unchanged by the iterations asked for.
        assert_eq!(found.path.length_ns, 210);
    }

    /// The path does not go back into MPI_Init: a wait that ended inside
    /// it leads nowhere, and the path begins at its end.
    #[test]
    fn the_path_begins_after_mpi_init() {
        let mut tl = Timelines::new(2);
        for (t, node) in [(0, 1), (50, 0), (120, NONE)] {
            tl.change(0, t, node);
        }
        tl.change(1, 0, 0);
        tl.wait(0, 40, 1);
        tl.started(0, 50);
        let p = tl.path(&Plain, &[]).unwrap().path;
        assert_eq!((p.length_ns, p.jumps), (70, 0));
        assert_eq!(p.processes, [("rank 0".to_string(), 70)]);
    }

    #[test]
    fn what_if_takes_a_process_s_excess_computation_off_the_path() {
        let step = |process: &str, activity: &str, time_ns| PathStep {
            process: process.into(),
            rank: None,
            location: "Master thread".into(),
            on_gpu: false,
            activity: activity.into(),
            time_ns,
            share: 0.0,
        };
        let path = CriticalPath {
            length_ns: 1_000,
            jumps: 1,
            processes: Vec::new(),
            steps: vec![step("rank 1", "(outside any region)", 800), step("rank 1", "MPI_Barrier", 50)],
        };
        let rank = |process: &str, computation_ns| super::super::RankTime {
            process: process.into(),
            computation_ns,
            ..Default::default()
        };
        let ranks = [rank("rank 0", 400), rank("rank 1", 800), rank("rank 2", 400), rank("rank 3", 400)];
        let w = what_if(&path, &ranks);
        assert_eq!(w.len(), 1, "{w:?}");
        // 800 on the path, half of it above the median's 400.
        assert_eq!((w[0].process.as_str(), w[0].saved_ns, w[0].projected_ns), ("rank 1", 400, 600));
        assert!((w[0].shorter - 40.0).abs() < 1e-9);
        // Balanced: nothing to project.
        assert!(what_if(&path, &[rank("rank 0", 400), rank("rank 1", 400)]).is_empty());
    }

    #[test]
    fn too_many_changes_give_no_path() {
        let mut tl = Timelines::new(1);
        tl.kept = MAX_CHANGES;
        tl.change(0, 1, 0);
        assert!(tl.path(&Plain, &[]).is_none());
    }
}
