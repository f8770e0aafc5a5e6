//! Per iteration: its length, the activity with the most time on its
//! critical path, its worst straggler and its best projection; and one
//! line for the longest iteration.

use crate::analyze::iterations::{Iteration, Iterations};
use crate::names;
use crate::numbers::{human_ns, thousands};
use crate::table::{Cell, Table};

use super::secs;

/// The best projection of an iteration: (what, % shorter).
fn best_what_if(i: &Iteration) -> Option<(String, f64)> {
    let host = i.what_if.first().map(|w| (format!("{} at the median", w.process), w.shorter));
    let gpu = i.what_if_gpu.first().map(|w| {
        let what = match (&w.activity, w.kind) {
            (Some(k), _) => format!("{} at its median", names::for_terminal(k, 30)),
            (None, "host_gap_at_median") => "host gaps at their median".to_string(),
            (None, _) => "communication overlapped".to_string(),
        };
        (what, w.shorter)
    });
    [host, gpu].into_iter().flatten().max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The activity with the most time on the iteration's path: `compute on
/// rank 2 (Master thread)` and its time.
fn top_step(i: &Iteration) -> Option<(String, u64)> {
    let s = i.critical_path.steps.first()?;
    Some((format!("{} on {} ({})", names::cut(&s.activity, 36), s.process, s.location), s.time_ns))
}

/// The iterations, at most `top` (the longest, shown in order).
pub(super) fn table(it: &Iterations, top: usize) -> Table {
    let mut t = Table::new(
        "iterations",
        &format!("Iterations ({}): critical path, straggler and projection per iteration", it.region),
        &[
            "Iteration",
            "Start (s)",
            "Length",
            "Most on Path",
            "Its Time",
            "Straggler",
            "Lateness",
            "Cause",
            "Best What-If",
            "Shorter (%)",
        ],
    );
    let mut shown: Vec<&Iteration> = it.items.iter().collect();
    if shown.len() > top {
        shown.sort_by(|a, b| b.length_ns.cmp(&a.length_ns).then(a.number.cmp(&b.number)));
        shown.truncate(top);
        shown.sort_by_key(|i| i.number);
    }
    for i in shown {
        let (step, on) = top_step(i).unwrap_or_default();
        let s = i.straggler.as_ref();
        let best = best_what_if(i).filter(|(_, s)| *s > 0.0);
        t.rows.push(vec![
            Cell::Int(u128::from(i.number)),
            Cell::Text(secs(i.start_ns)),
            Cell::Text(human_ns(i.length_ns)),
            Cell::Text(step),
            Cell::Text(if on > 0 { human_ns(on) } else { String::new() }),
            Cell::Text(s.map(|s| s.process.clone()).unwrap_or_default()),
            Cell::Text(s.map(|s| human_ns(s.lateness_ns)).unwrap_or_default()),
            Cell::Text(s.and_then(|s| s.cause.as_deref()).map(|c| names::cut(c, 30)).unwrap_or_default()),
            Cell::Text(best.as_ref().map(|b| b.0.clone()).unwrap_or_default()),
            best.map_or(Cell::Text(String::new()), |b| Cell::Float(b.1, 2)),
        ]);
    }
    t.notes.push(format!(
        "{} iterations (instances of {} per thread, the k-th on each thread is iteration k), median length {}. \
         Most on path: the activity with the most time on the iteration's critical path, from its latest end \
         back to its earliest start. Straggler: the rank that made the others wait the most at the collectives \
         that began in it, late by (summed over them) and why. Best what-if: the projection that shortens the \
         iteration most.",
        thousands(it.count),
        it.region,
        human_ns(it.median_length_ns)
    ));
    t
}

/// `Longest iteration: 4 of 6 (iteration), 81.20 ms, median 41.02 ms; on
/// its path most: compute on rank 2 (Master thread) 40.10 ms; straggler
/// rank 2, 20.05 ms late (compute); rank 2 at the median: 24.61% shorter`,
/// where the longest is at least 10 % above the median.
pub fn longest_line(it: &Iterations) -> Option<String> {
    let i = it.items.iter().max_by(|a, b| a.length_ns.cmp(&b.length_ns).then(b.number.cmp(&a.number)))?;
    if it.items.len() < 2 || i.length_ns.saturating_mul(10) < it.median_length_ns.saturating_mul(11) {
        return None;
    }
    let mut line = format!(
        "Longest iteration: {} of {} ({}), {}, median {}",
        i.number,
        thousands(it.count),
        it.region,
        human_ns(i.length_ns),
        human_ns(it.median_length_ns)
    );
    if let Some((step, on)) = top_step(i) {
        line.push_str(&format!("; on its path most: {step} {}", human_ns(on)));
    }
    if let Some(s) = &i.straggler {
        let cause = s.cause.as_deref().map(|c| format!(" ({})", names::cut(c, 40))).unwrap_or_default();
        line.push_str(&format!("; straggler {}, {} late{cause}", s.process, human_ns(s.lateness_ns)));
    }
    if let Some((what, shorter)) = best_what_if(i).filter(|(_, s)| *s > 0.0) {
        line.push_str(&format!("; {what}: {shorter:.2}% shorter"));
    }
    Some(line)
}
