//! The critical path on GPU streams. A host thread's CUDA synchronization
//! that returned after GPU work of its process ended becomes a wait for
//! the stream of the latest such work, until that work's end. On a stream
//! the path goes back over each activity to its start; there, why did it
//! start then?
//!
//! - Its launch call ended after the activity before it on the stream (or
//!   there was none): the GPU waited for the host. The path moves to the
//!   launch's thread at the launch call's end (or at the activity's start,
//!   for a kernel that began before its launch call returned); the time
//!   between is the stream's idle time.
//! - Otherwise it was queued behind the activity before it, or waited for
//!   a dependency the trace does not name (an event of another stream):
//!   the gap, if any, is the stream's idle time, and the path goes on
//!   with the activity before it.
//!
//! NCCL kernels of one collective end together on every rank; the rank
//! whose kernel started last made the others wait: from an NCCL kernel
//! the path moves to the one of its collective that started last, at its
//! start. A collective's kernels are matched across streams by their
//! order, as [`stragglers`](super::super::stragglers) matches collectives:
//! the n-th NCCL kernel of one name on each stream.

use std::collections::HashMap;

use otf2::RegionRef;

use super::{Describe, IDLE, Timelines};

/// The launch call of a GPU activity: its thread and when it returned
/// (`u64::MAX` while it had not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Launched {
    pub(crate) loc: usize,
    pub(crate) end: u64,
}

/// One activity of a GPU stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The kernel, copy or memset.
    pub(crate) region: RegionRef,
    pub(crate) launch: Option<Launched>,
    /// An NCCL kernel.
    pub(crate) nccl: bool,
    /// A compute kernel (not a copy, memset or NCCL kernel).
    pub(crate) compute: bool,
}

/// What a piece of the path was spent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Act {
    /// A host thread in a call-path node ([`NONE`](super::NONE): outside
    /// any region).
    Node(u32),
    /// A GPU stream running a kernel, copy or memset.
    Work(RegionRef),
    /// A GPU stream idle.
    Idle,
}

impl Act {
    pub(super) fn on_gpu(self) -> bool {
        !matches!(self, Act::Node(_))
    }

    pub(super) fn name(self, names: &dyn Describe) -> String {
        match self {
            Act::Node(n) => names.activity(n),
            Act::Work(r) => names.region(r),
            Act::Idle => IDLE.to_string(),
        }
    }
}

/// Where the walk is.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pos {
    /// On a host thread at `t`; `launched`: the GPU waited for what this
    /// thread did before it launched the work the path came from.
    Host { loc: usize, t: u64, launched: bool },
    /// On a GPU stream at `t`; `start_of`: at the start of this activity
    /// (why did it start then?), else at or after the activity before `t`.
    Stream { loc: usize, t: u64, start_of: Option<usize> },
}

impl Pos {
    pub(super) fn time(self) -> u64 {
        match self {
            Pos::Host { t, .. } | Pos::Stream { t, .. } => t,
        }
    }
}

/// What the walk adds up as it goes.
pub(super) struct Walk {
    /// Ticks on the path per location and activity.
    pub(super) on: HashMap<(usize, Act), u64>,
    pub(super) jumps: u64,
    /// The stretches of host time (thread, call-path node, ticks, the
    /// ticks of it its streams sat idle) on the path while the GPU waited
    /// for that host's launch: each from one change of the thread's
    /// innermost region to the next.
    pub(super) starved: Vec<(usize, u32, u64, u64)>,
    /// Per host thread, the streams it launched work on.
    fed_by: HashMap<usize, Vec<usize>>,
    /// Per stream and kernel: its instances' ticks on the path beyond the
    /// kernel's median duration (over every instance of its name), each
    /// at most the slack after it, and how many instances were on the
    /// path.
    pub(super) excess: HashMap<(usize, RegionRef), (u64, u64)>,
    /// Per kernel (or copy), the median duration of its name's instances.
    pub(super) median: HashMap<RegionRef, u64>,
    /// How much earlier the activities after the one being walked could
    /// have run had it ended sooner: the least, over them back to where
    /// the path came to the stream, of their start less their launch
    /// call's end (a kernel cannot start before it is launched).
    slack: u64,
    /// Ticks on the path in compute kernels and in NCCL kernels.
    pub(super) kernels: u64,
    pub(super) nccl: u64,
    /// Where the walk stops (an iteration's start; 0: the run's start):
    /// nothing before it is credited.
    pub(super) floor: u64,
    /// Per stream and NCCL activity: its collective (an index into `groups`).
    member: HashMap<(usize, usize), usize>,
    /// Per NCCL collective: (stream, activity) of every rank's kernel.
    groups: Vec<Vec<(usize, usize)>>,
}

impl Walk {
    /// Prepares the walk over `t`'s streams: the kernels' medians and the
    /// NCCL collectives.
    pub(super) fn new(t: &Timelines, names: &dyn Describe) -> Walk {
        let mut durations: HashMap<RegionRef, Vec<u64>> = HashMap::new();
        let mut member = HashMap::new();
        let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut index: HashMap<(String, u64), usize> = HashMap::new();
        let mut region_names: HashMap<RegionRef, String> = HashMap::new();
        let mut fed_by: HashMap<usize, Vec<usize>> = HashMap::new();
        for (s, works) in t.works.iter().enumerate() {
            for l in works.iter().filter_map(|w| w.launch) {
                let streams = fed_by.entry(l.loc).or_default();
                if streams.last() != Some(&s) {
                    streams.push(s);
                }
            }
            let mut nth: HashMap<RegionRef, u64> = HashMap::new();
            for (i, w) in works.iter().enumerate() {
                durations.entry(w.region).or_default().push(w.end.saturating_sub(w.start));
                if !w.nccl {
                    continue;
                }
                let n = nth.entry(w.region).or_default();
                let name = region_names.entry(w.region).or_insert_with(|| names.region(w.region)).clone();
                let g = *index.entry((name, *n)).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                *n += 1;
                groups[g].push((s, i));
                member.insert((s, i), g);
            }
        }
        // The median per name, over every region of that name.
        let mut by_name: HashMap<String, Vec<u64>> = HashMap::new();
        for (r, d) in &durations {
            let name = region_names.entry(*r).or_insert_with(|| names.region(*r)).clone();
            by_name.entry(name).or_default().extend_from_slice(d);
        }
        let medians: HashMap<String, u64> = by_name
            .into_iter()
            .map(|(name, mut d)| {
                d.sort_unstable();
                let m = d.get(d.len() / 2).copied().unwrap_or(0);
                (name, m)
            })
            .collect();
        let median = durations.keys().filter_map(|r| Some((*r, *medians.get(region_names.get(r)?)?))).collect();
        Walk {
            on: HashMap::new(),
            jumps: 0,
            starved: Vec::new(),
            fed_by,
            excess: HashMap::new(),
            median,
            slack: u64::MAX,
            kernels: 0,
            nccl: 0,
            floor: 0,
            member,
            groups,
        }
    }

    /// Forgets what the last walk added up, for a walk down to `floor`.
    pub(super) fn restart(&mut self, floor: u64) {
        self.on.clear();
        self.jumps = 0;
        self.starved.clear();
        self.excess.clear();
        self.slack = u64::MAX;
        self.kernels = 0;
        self.nccl = 0;
        self.floor = floor;
    }

    /// The ticks of `from..to` at or after the floor.
    fn clip(&self, from: u64, to: u64) -> u64 {
        to.saturating_sub(from.max(self.floor))
    }

    /// The streams host thread `loc` launched work on.
    pub(super) fn streams_fed_by(&self, loc: usize) -> &[usize] {
        self.fed_by.get(&loc).map_or(&[], Vec::as_slice)
    }

    /// The path comes to a stream from a host's synchronization: nothing
    /// after it on the stream limits how much sooner it could end.
    pub(super) fn enter_stream(&mut self) {
        self.slack = u64::MAX;
    }

    /// Host thread `loc` spent `ticks` of the path in `node`.
    pub(super) fn host(&mut self, loc: usize, node: u32, ticks: u64, launched: bool, idle: u64) {
        *self.on.entry((loc, Act::Node(node))).or_default() += ticks;
        if launched && ticks > 0 {
            self.starved.push((loc, node, ticks, idle.min(ticks)));
        }
    }

    /// Stream `loc` spent `ticks` of the path in `work` (one instance).
    fn work(&mut self, loc: usize, work: &Work, ticks: u64) {
        *self.on.entry((loc, Act::Work(work.region))).or_default() += ticks;
        if work.nccl {
            self.nccl += ticks;
        }
        if work.compute && ticks > 0 {
            self.kernels += ticks;
            let median = self.median.get(&work.region).copied().unwrap_or(ticks);
            let e = self.excess.entry((loc, work.region)).or_default();
            e.0 += ticks.saturating_sub(median).min(self.slack);
            e.1 += 1;
        }
    }

    fn idle(&mut self, loc: usize, ticks: u64) {
        if ticks > 0 {
            *self.on.entry((loc, Act::Idle)).or_default() += ticks;
        }
    }
}

impl Timelines {
    /// Each synchronization that returned after GPU work of its process
    /// ended, as a wait until the latest such end, for its stream. The
    /// synchronizations go.
    pub(super) fn resolve_syncs(&mut self, names: &dyn Describe) {
        for works in &mut self.works {
            works.sort_by_key(|w| (w.start, w.end));
        }
        let mut streams: HashMap<usize, Vec<usize>> = HashMap::new();
        for (s, works) in self.works.iter().enumerate() {
            if !works.is_empty() {
                streams.entry(names.process_of(s)).or_default().push(s);
            }
        }
        let syncs = std::mem::take(&mut self.syncs);
        for (l, syncs) in syncs.into_iter().enumerate() {
            let Some(mine) = streams.get(&names.process_of(l)) else { continue };
            for (enter, leave) in syncs {
                let latest = mine
                    .iter()
                    .filter_map(|&s| {
                        let works = &self.works[s];
                        let i = works.partition_point(|w| w.end <= leave);
                        i.checked_sub(1).map(|i| (works[i].end, s))
                    })
                    .filter(|&(end, _)| end > enter)
                    .max();
                if let Some((end, s)) = latest {
                    self.wait(l, end, s);
                }
            }
        }
    }

    /// One step back on GPU stream `loc` from `t`.
    pub(super) fn stream_step(&self, loc: usize, t: u64, start_of: Option<usize>, walk: &mut Walk) -> Result<Pos, u64> {
        let Some(works) = self.works.get(loc) else { return Err(t) };
        let Some(k) = start_of.filter(|&k| k < works.len()) else {
            // Back over the activity that started last before `t`.
            let i = works.partition_point(|w| w.start < t);
            let Some(k) = i.checked_sub(1) else { return Err(t) };
            let w = works[k];
            walk.idle(loc, walk.clip(w.end, t));
            let to = t.min(w.end);
            if let Some((other, j, started)) = self.last_to_start(loc, k, walk)
                && started > w.start
            {
                let started = started.min(to);
                walk.work(loc, &w, walk.clip(started, to));
                walk.jumps += 1;
                // The collective could have begun no sooner than its
                // next latest kernel did.
                walk.slack = walk.slack.min(started.saturating_sub(self.next_latest(loc, k, walk)));
                return Ok(Pos::Stream { loc: other, t: started, start_of: Some(j) });
            }
            walk.work(loc, &w, walk.clip(w.start, to));
            return Ok(Pos::Stream { loc, t: w.start, start_of: Some(k) });
        };
        // At the start of activity `k`.
        let w = works[k];
        let t = t.min(w.start);
        if let Some(l) = w.launch {
            walk.slack = walk.slack.min(w.start.saturating_sub(l.end));
        }
        let before = k.checked_sub(1).map(|j| works[j]);
        if let Some(l) = w.launch
            && before.is_none_or(|b| l.end > b.end)
            && self.changes.get(l.loc).is_some_and(|c| !c.is_empty())
        {
            // The GPU waited for the host to launch it.
            let at = l.end.min(t);
            walk.idle(loc, walk.clip(at, t));
            walk.jumps += 1;
            return Ok(Pos::Host { loc: l.loc, t: at, launched: true });
        }
        match before {
            Some(b) => {
                let to = b.end.min(t);
                walk.idle(loc, walk.clip(to, t));
                Ok(Pos::Stream { loc, t: to, start_of: None })
            }
            None => Err(t),
        }
    }

    /// For NCCL activity `k` of stream `loc`: the start of the kernel of
    /// its collective that started next to last.
    fn next_latest(&self, loc: usize, k: usize, walk: &Walk) -> u64 {
        let Some(members) = walk.member.get(&(loc, k)).and_then(|g| walk.groups.get(*g)) else { return 0 };
        let mut starts: Vec<u64> =
            members.iter().filter_map(|&(s, j)| self.works.get(s)?.get(j).map(|w| w.start)).collect();
        starts.sort_unstable();
        starts.len().checked_sub(2).map_or(0, |i| starts[i])
    }

    /// For NCCL activity `k` of stream `loc`: the kernel of its collective
    /// that started last, on another stream (stream, activity, start).
    fn last_to_start(&self, loc: usize, k: usize, walk: &Walk) -> Option<(usize, usize, u64)> {
        let g = walk.member.get(&(loc, k))?;
        walk.groups
            .get(*g)?
            .iter()
            .filter_map(|&(s, j)| self.works.get(s)?.get(j).map(|w| (w.start, s, j)))
            .max()
            .filter(|&(_, s, _)| s != loc)
            .map(|(start, s, j)| (s, j, start))
    }
}
