//! `cuda_graph_sum`: CUDA graphs, per graph — how often each was launched,
//! how long one execution took, and what one launch ran.
//!
//! An execution is one launch of one graph: with node-level tracing, the
//! kernels, copies and memsets that carry the graph's id and the launch's
//! correlation id, from the first one's start to the last one's end
//! (whatever streams they ran on); with `GPUTRACE_CUDA_ENABLE=graph`, the
//! graph-execution region CUPTI reported. Graph ids are a process's own,
//! so graphs are told apart by process.

use std::collections::BTreeMap;

use crate::durations;
use crate::model::Model;
use crate::regions::RegionKind;
use crate::table::{Cell, Table};

/// One launch of one graph, as its nodes' activities add up.
#[derive(Debug, Clone, Copy)]
struct Execution {
    /// Ticks.
    start: u64,
    end: u64,
    kernels: u64,
    copies: u64,
    memsets: u64,
    /// Reported whole by CUPTI (graph-level trace): nodes unknown.
    whole: bool,
}

/// Every graph execution of an archive, by (process, graph id,
/// correlation id).
#[derive(Debug, Default)]
pub struct GraphExecutions {
    executions: BTreeMap<(usize, u64, u64), Execution>,
}

impl GraphExecutions {
    /// An activity of kind `kind` from `start` to `end` (ticks) that
    /// belongs to graph `graph`'s launch `correlation` in `process`.
    pub fn add(&mut self, process: usize, graph: u64, correlation: u64, kind: RegionKind, start: u64, end: u64) {
        let e = self.executions.entry((process, graph, correlation)).or_insert(Execution {
            start,
            end,
            kernels: 0,
            copies: 0,
            memsets: 0,
            whole: false,
        });
        e.start = e.start.min(start);
        e.end = e.end.max(end);
        match kind {
            RegionKind::Kernel => e.kernels += 1,
            RegionKind::Copy(_) => e.copies += 1,
            RegionKind::Memset => e.memsets += 1,
            RegionKind::Graph => e.whole = true,
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.executions.is_empty()
    }
}

/// What one graph's launches add up to.
struct PerGraph {
    time: usize,
    launches: u64,
    /// Launches whose nodes were traced, and their nodes by kind.
    traced: u64,
    counts: [Vec<u64>; 3],
}

pub const COLUMNS: &[&str] = &[
    "Graph",
    "Total Time (ns)",
    "Launches",
    "Avg (ns)",
    "Med (ns)",
    "Min (ns)",
    "Max (ns)",
    "StdDev (ns)",
    "Nodes/Launch",
    "Kernels/Launch",
    "Copies/Launch",
    "Memsets/Launch",
];

/// The report's table.
pub fn table(g: &GraphExecutions, model: &Model, times: &mut durations::Table, estimated: &mut bool) -> Table {
    let mut t = Table::new("cuda_graph_sum", "CUDA Graph Summary", COLUMNS);
    let mut graphs: BTreeMap<(usize, u64), PerGraph> = BTreeMap::new();
    for (&(process, graph, _), e) in &g.executions {
        let per = graphs.entry((process, graph)).or_insert_with(|| PerGraph {
            time: times.slot(),
            launches: 0,
            traced: 0,
            counts: Default::default(),
        });
        per.launches += 1;
        times.add(per.time, model.ns(e.end.saturating_sub(e.start)));
        if !e.whole {
            per.traced += 1;
            for (i, n) in [e.kernels, e.copies, e.memsets].into_iter().enumerate() {
                per.counts[i].push(n);
            }
        }
    }
    let processes: std::collections::BTreeSet<usize> = graphs.keys().map(|(p, _)| *p).collect();
    for ((process, graph), per) in &graphs {
        let label = if processes.len() > 1 {
            let name = model.processes.get(*process).map_or_else(|| format!("process {process}"), |p| p.name.clone());
            format!("{graph} ({name})")
        } else {
            graph.to_string()
        };
        let nodes: Vec<u64> = (0..per.counts[0].len()).map(|i| per.counts.iter().map(|c| c[i]).sum()).collect();
        let rest =
            [per_launch(&nodes), per_launch(&per.counts[0]), per_launch(&per.counts[1]), per_launch(&per.counts[2])];
        let s = times.get_mut(per.time);
        t.rows.push(super::summaries::stat_row(Some(Cell::Text(label)), s, estimated, rest));
    }
    if graphs.values().any(|p| p.traced < p.launches) {
        t.notes
            .push("-: executions recorded whole (GPUTRACE_CUDA_ENABLE=graph): their nodes are not known.".to_owned());
    }
    t
}

/// Nodes per launch: the number when every launch ran the same, the mean
/// otherwise, `-` when no launch's nodes were traced.
fn per_launch(counts: &[u64]) -> Cell {
    match counts {
        [] => Cell::Text("-".into()),
        [first, ..] if counts.iter().all(|c| c == first) => Cell::Int(u128::from(*first)),
        _ => Cell::Float(counts.iter().sum::<u64>() as f64 / counts.len() as f64, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_per_launch_exact_mean_or_unknown() {
        assert_eq!(per_launch(&[6, 6, 6]), Cell::Int(6));
        assert_eq!(per_launch(&[5, 6]), Cell::Float(5.5, 1));
        assert_eq!(per_launch(&[]), Cell::Text("-".into()));
    }

    #[test]
    fn a_launch_spans_its_first_to_its_last_node_whatever_their_order() {
        let mut g = GraphExecutions::default();
        g.add(0, 7, 100, RegionKind::Kernel, 50, 60);
        g.add(0, 7, 100, RegionKind::Copy(crate::model::CopyKind::HtoD), 10, 20);
        g.add(0, 7, 100, RegionKind::Memset, 30, 90);
        g.add(0, 7, 101, RegionKind::Kernel, 200, 210);
        g.add(1, 7, 100, RegionKind::Graph, 0, 5);
        let e = g.executions[&(0, 7, 100)];
        assert_eq!((e.start, e.end, e.kernels, e.copies, e.memsets, e.whole), (10, 90, 1, 1, 1, false));
        assert_eq!(g.executions.len(), 3, "graph ids are per process");
        assert!(g.executions[&(1, 7, 100)].whole);
    }
}
