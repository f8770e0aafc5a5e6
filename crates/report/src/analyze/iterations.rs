//! Iterations: the instances of one region that marks them — an NVTX
//! range or user region named by `analyze --iterations NAME`. The k-th outermost
//! instance on each thread that has one is iteration k (counted from 1,
//! as `--capture-range nvtx:NAME@N` counts). Per iteration: its critical
//! path ([`critical`](super::critical), from its latest end back to its
//! earliest start), the what-if projections for that path, and the rank
//! that arrived last at the collectives that began in it, by how much and
//! why ([`stragglers`](super::stragglers)).

use std::collections::HashSet;

use otf2::RegionRef;
use serde::Serialize;

use super::critical::{self, CriticalPath, GpuWhatIf, IterationPath, Span, WhatIf};
use super::describe::Describe;
use super::stragglers::Op;

/// Iterations analysed at most (the first ones; the rest are counted).
pub const MAX_ITERATIONS: usize = 10_000;

/// Path steps kept per iteration (the most time first).
const STEPS: usize = 10;

/// Whether a region named `name` marks an iteration named `pattern`: the
/// same name, or the name followed by a number, after `#`, a space or `_`
/// or none (`step#3`, `iteration 7`, `iteration7`).
pub fn matches(pattern: &str, name: &str) -> bool {
    match name.strip_prefix(pattern) {
        Some("") => true,
        Some(rest) => {
            let digits = rest.strip_prefix(['#', ' ', '_']).unwrap_or(rest);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// The iteration marks seen by the pass, per location.
pub(crate) struct Marks {
    pub(crate) name: String,
    regions: HashSet<RegionRef>,
    /// Per location: how deep in marking regions, since when.
    depth: Vec<(u32, u64)>,
    /// Per location: (start, end) of each outermost instance.
    instances: Vec<Vec<(u64, u64)>>,
}

impl Marks {
    /// The marks of the regions named `name`, none when no region is so
    /// named.
    pub(crate) fn new<'a>(
        name: &str,
        regions: impl Iterator<Item = (RegionRef, &'a str)>,
        locations: usize,
    ) -> Option<Marks> {
        let regions: HashSet<RegionRef> = regions.filter(|(_, n)| matches(name, n)).map(|(r, _)| r).collect();
        (!regions.is_empty()).then(|| Marks {
            name: name.to_string(),
            regions,
            depth: vec![(0, 0); locations],
            instances: vec![Vec::new(); locations],
        })
    }

    pub(crate) fn enter(&mut self, loc: usize, region: RegionRef, t: u64) {
        if self.regions.contains(&region)
            && let Some(d) = self.depth.get_mut(loc)
        {
            if d.0 == 0 {
                d.1 = t;
            }
            d.0 += 1;
        }
    }

    pub(crate) fn leave(&mut self, loc: usize, region: RegionRef, t: u64) {
        if self.regions.contains(&region)
            && let Some(d) = self.depth.get_mut(loc)
            && d.0 > 0
        {
            d.0 -= 1;
            if d.0 == 0 {
                self.instances[loc].push((d.1, t));
            }
        }
    }

    /// The iterations' spans, in order (at most [`MAX_ITERATIONS`]), and
    /// how many there were.
    pub(crate) fn spans(&self) -> (Vec<Span>, usize) {
        let count = self.instances.iter().map(Vec::len).max().unwrap_or(0);
        let spans = (0..count.min(MAX_ITERATIONS))
            .filter_map(|k| {
                let parts: Vec<(usize, u64, u64)> =
                    self.instances.iter().enumerate().filter_map(|(l, v)| v.get(k).map(|&(s, e)| (l, s, e))).collect();
                let start = parts.iter().map(|p| p.1).min()?;
                let &(end_loc, _, end) = parts.iter().max_by_key(|p| (p.2, std::cmp::Reverse(p.0)))?;
                Some(Span { start, end, end_loc, parts })
            })
            .collect();
        (spans, count)
    }
}

/// Every iteration of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Iterations {
    /// The region that marks them (`iteration`, `ProfilerStep`).
    pub region: String,
    /// How many there were (the most instances on one thread).
    pub count: u64,
    /// The median iteration's length (ns).
    pub median_length_ns: u64,
    /// The first [`MAX_ITERATIONS`], in order.
    pub items: Vec<Iteration>,
}

/// One iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Iteration {
    /// Counted from 1.
    pub number: u64,
    /// Its earliest start on any thread (ns since the trace's start), and
    /// from there to its latest end (ns).
    pub start_ns: u64,
    pub length_ns: u64,
    /// Its critical path, the [`STEPS`] activities with the most time on it.
    pub critical_path: CriticalPath,
    /// Had the process that computed the most in it computed the median's.
    pub what_if: Vec<WhatIf>,
    pub what_if_gpu: Vec<GpuWhatIf>,
    /// The rank that caused the most waiting at the collectives that
    /// began in it.
    pub straggler: Option<IterationStraggler>,
}

/// The worst straggler of one iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IterationStraggler {
    pub rank: Option<u32>,
    pub process: String,
    /// Collectives that began in the iteration, and how many it arrived at
    /// last.
    pub operations: u64,
    pub times_last: u64,
    pub lateness_ns: u64,
    pub wait_caused_ns: u64,
    pub cause_kind: Option<&'static str>,
    pub cause: Option<String>,
}

/// The iterations' paths and stragglers, as reported.
pub(crate) fn report(
    name: String,
    count: usize,
    spans: &[Span],
    paths: Vec<IterationPath>,
    mut ops: Vec<Op>,
    d: &dyn Describe,
) -> Iterations {
    ops.sort_by_key(|o| o.enter);
    let items: Vec<Iteration> = spans
        .iter()
        .zip(paths)
        .enumerate()
        .map(|(k, (span, p))| {
            let ranks: Vec<super::RankTime> = p
                .computation
                .iter()
                .map(|&(process, computation_ns)| super::RankTime {
                    process: d.process(process),
                    rank: d.rank(process),
                    computation_ns,
                    ..Default::default()
                })
                .collect();
            let what_if = critical::what_if(&p.path, &ranks);
            let mut path = p.path;
            path.steps.truncate(STEPS);
            let lo = ops.partition_point(|o| o.enter < span.start);
            let hi = ops.partition_point(|o| o.enter <= span.end);
            Iteration {
                number: k as u64 + 1,
                start_ns: d.since_start(span.start),
                length_ns: d.ns(span.end - span.start),
                critical_path: path,
                what_if,
                what_if_gpu: p.gpu_what_if,
                straggler: super::stragglers::worst_of(&ops[lo..hi], d),
            }
        })
        .collect();
    let mut lengths: Vec<u64> = items.iter().map(|i| i.length_ns).collect();
    lengths.sort_unstable();
    Iterations {
        region: name,
        count: count as u64,
        median_length_ns: lengths.get(lengths.len() / 2).copied().unwrap_or(0),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_its_name_and_numbered_names() {
        assert!(matches("iteration", "iteration"));
        assert!(matches("ProfilerStep", "ProfilerStep#12"));
        assert!(matches("step", "step 3") && matches("step", "step_3") && matches("step", "step3"));
        assert!(!matches("step", "stepper") && !matches("step", "step#") && !matches("step", "step#1a"));
        assert!(!matches("ProfilerStep", "Profiler") && !matches("step", "step 3b"));
    }

    /// Nested instances count once; the k-th on each location is
    /// iteration k; the span runs from the earliest start to the latest
    /// end.
    #[test]
    fn the_kth_outermost_instance_on_each_thread_is_iteration_k() {
        let names = [(RegionRef::from_id(1), "iteration"), (RegionRef::from_id(2), "other")];
        let mut m = Marks::new("iteration", names.iter().copied(), 2).unwrap();
        let it = RegionRef::from_id(1);
        for (l, s, e) in [(0, 10, 50), (1, 12, 60), (0, 50, 90), (1, 60, 80)] {
            m.enter(l, it, s);
            if (l, s) == (0, 10) {
                m.enter(l, it, 20);
                m.leave(l, it, 30);
            }
            m.leave(l, it, e);
        }
        let (spans, count) = m.spans();
        assert_eq!(count, 2);
        assert_eq!((spans[0].start, spans[0].end, spans[0].end_loc), (10, 60, 1));
        assert_eq!((spans[1].start, spans[1].end, spans[1].end_loc), (50, 90, 0));
        assert_eq!(spans[1].parts, vec![(0, 50, 90), (1, 60, 80)]);
        assert!(Marks::new("step", names.iter().copied(), 2).is_none(), "no region named step");
    }
}
