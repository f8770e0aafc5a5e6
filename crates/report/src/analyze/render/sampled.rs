//! The computation's sampled functions per process.

use crate::analyze::sampled::{DEPTH, HotFunction, TOP};
use crate::names;
use crate::numbers::{human_ns, thousands};
use crate::table::{Cell, Table};

pub(super) fn table(hot: &[HotFunction]) -> Table {
    let mut t = Table::new(
        "hot_functions",
        "Where the computation went: the sampled functions per process",
        &["Process", "Call Path (deepest frames)", "Source", "Samples", "Of Computation (%)", "Est. Time"],
    );
    for h in hot {
        t.rows.push(vec![
            Cell::Text(h.process.clone()),
            Cell::Text(names::cut(&h.call_path, 60)),
            Cell::Text(h.source.clone().unwrap_or_default()),
            Cell::Text(thousands(h.samples)),
            Cell::Float(h.share, 1),
            Cell::Text(human_ns(h.time_ns)),
        ]);
    }
    t.notes.push(format!(
        "The samples (gputrace --sampling) taken while the thread computed, in no MPI, NCCL or CUDA \
         synchronization call, by the deepest {DEPTH} frames of their call path and the innermost one's line; at \
         most {TOP} per process. Est. time: that share of the process's computation."
    ));
    t
}
