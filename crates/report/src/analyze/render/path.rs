//! The critical path's tables: its activities and the what-if
//! projections.

use crate::analyze::{CriticalPath, GpuWhatIf, WhatIf};
use crate::names;
use crate::numbers::{human_ns, plural, thousands};
use crate::table::{Cell, Table};

/// The critical path's projections: a process computing as the median
/// process does (at most `top`).
pub(super) fn what_if_table(w: &[WhatIf], top: usize) -> Table {
    let mut t = Table::new(
        "what_if",
        "What if a process computed as the median process does",
        &["Process", "Computation", "Median", "On Path", "Run Shorter By", "Projected", "Shorter (%)"],
    );
    for p in w.iter().take(top) {
        t.rows.push(vec![
            Cell::Text(p.process.clone()),
            Cell::Text(human_ns(p.computation_ns)),
            Cell::Text(human_ns(p.median_ns)),
            Cell::Text(human_ns(p.on_path_ns)),
            Cell::Text(human_ns(p.saved_ns)),
            Cell::Text(human_ns(p.projected_ns)),
            Cell::Float(p.shorter, 2),
        ]);
    }
    t.notes.push(
        "Its computation on the critical path shrunk in proportion (on path x (1 - median / its computation)): a \
         first-order estimate, as Scalasca's; another process may become critical sooner."
            .into(),
    );
    t
}

/// The critical path's activities, the most time first (at most `top`).
pub(super) fn critical_table(p: &CriticalPath, top: usize) -> Table {
    let mut t = Table::new(
        "critical_path",
        "Critical path: the activities that decided the run's length",
        &["Process", "Location", "Activity", "On Path", "Of Path (%)"],
    );
    for s in p.steps.iter().take(top) {
        t.rows.push(vec![
            Cell::Text(s.process.clone()),
            Cell::Text(s.location.clone()),
            Cell::Text(names::cut(&s.activity, 50)),
            Cell::Text(human_ns(s.time_ns)),
            Cell::Float(s.share, 2),
        ]);
    }
    let per: Vec<String> = p.processes.iter().take(8).map(|(name, ns)| format!("{name} {}", human_ns(*ns))).collect();
    t.notes.push(format!(
        "Length {}, {} move{} between locations; per process: {}. Backwards from the last event: where a thread \
         waited (a wait state, a CUDA synchronization), the path goes on in the thread or GPU stream it waited \
         for; on a stream, to the launch the GPU waited for or to the rank whose NCCL kernel started last.",
        human_ns(p.length_ns),
        thousands(p.jumps),
        plural(p.jumps, "s"),
        per.join(", ")
    ));
    t
}

/// The projections for GPU work and communication (at most `top`).
pub(super) fn gpu_what_if_table(w: &[GpuWhatIf], top: usize) -> Table {
    let mut t = Table::new(
        "what_if_gpu",
        "What if GPU work or communication changed",
        &["Projection", "Process", "Location", "On Path", "Reference", "Run Shorter By", "Projected", "Shorter (%)"],
    );
    for p in w.iter().take(top) {
        let what = match &p.activity {
            Some(kernel) => format!("{} at its median", names::cut(kernel, 40)),
            None if p.kind == "host_gap_at_median" => "host gaps at their median".to_string(),
            None => "communication overlapped".to_string(),
        };
        t.rows.push(vec![
            Cell::Text(what),
            Cell::Text(p.process.clone().unwrap_or_else(|| "(all)".into())),
            Cell::Text(p.location.clone().unwrap_or_default()),
            Cell::Text(human_ns(p.on_path_ns)),
            Cell::Text(if p.reference_ns > 0 { human_ns(p.reference_ns) } else { String::new() }),
            Cell::Text(human_ns(p.saved_ns)),
            Cell::Text(human_ns(p.projected_ns)),
            Cell::Float(p.shorter, 2),
        ]);
    }
    t.notes.push(
        "A kernel at its median: its instances on the path beyond its median instance (reference) taken off. Host \
         gaps at their median: the thread's stretches of computation on the path before launches the GPU waited \
         for, beyond the median stretch (reference), taken off. Communication overlapped: NCCL kernels and MPI calls on the path hidden behind the compute \
         kernels on it (reference), the smaller of the two taken off. First-order estimates, as Scalasca's: \
         another chain may become critical sooner."
            .into(),
    );
    t
}
