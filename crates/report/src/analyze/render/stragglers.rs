//! The stragglers' table and the line of the worst.

use super::{Analysis, communicator, names, secs};
use crate::numbers::{human_ns, thousands};
use crate::table::{Cell, Table};

/// The ranks that arrived at collectives last, the most waiting caused
/// first (at most `top`).
pub(super) fn stragglers_table(a: &Analysis, top: usize) -> Table {
    let mut t = Table::new(
        "stragglers",
        "Stragglers: the rank that arrived at each collective last",
        &["Communicator", "Process", "Last", "Lateness", "Wait Caused", "Of Run (%)", "Worst", "Cause"],
    );
    for s in a.stragglers.iter().take(top) {
        let share = if a.run_ns > 0 { 100.0 * s.wait_caused_ns as f64 / a.run_ns as f64 } else { 0.0 };
        t.rows.push(vec![
            Cell::Text(format!(
                "{} {}",
                s.paradigm,
                communicator(Some(&s.communicator), Some(s.communicator_size), Some(&s.communicator_ranks))
            )),
            Cell::Text(format!("{}, {}", s.process, s.location)),
            Cell::Text(format!(
                "{} of {}{}",
                thousands(s.times_last),
                thousands(s.operations),
                if s.by_kernel > 0 { format!(" ({} on the GPU)", thousands(s.by_kernel)) } else { String::new() }
            )),
            Cell::Text(human_ns(s.lateness_ns)),
            Cell::Text(human_ns(s.wait_caused_ns)),
            Cell::Float(share, 2),
            Cell::Text(format!("{} at {} s", human_ns(s.worst_lateness_ns), secs(s.worst_start_ns))),
            Cell::Text(match (&s.cause, s.cause_kind) {
                (Some(c), Some("gpu clock" | "link")) => {
                    format!("{} (+{})", names::cut(c, 100), human_ns(s.cause_excess_ns))
                }
                (Some(c), Some("kernel")) => {
                    format!("kernel {} (+{})", names::for_terminal(c, 40), human_ns(s.cause_excess_ns))
                }
                (Some(c), _) => format!("{} (+{})", names::cut(c, 40), human_ns(s.cause_excess_ns)),
                (None, _) => "-".into(),
            }),
        ]);
    }
    t.notes.push(
        "Last: the collectives (MPI, or NCCL by sequence) it arrived at after every other rank: it entered the \
         call, or (on the GPU) its NCCL kernel started. Lateness: its arrival minus the next latest rank's, summed; \
         wait caused: minus every other rank's. Cause: a kernel its GPU spent longer in since the previous NCCL \
         kernel, its GPU's lower SM clock, a slower link (its messages received or GPU copies took longer than the \
         next latest rank's), or the region (exclusive time since the previous collective on the thread) it spent \
         longer in than the next latest rank, where that explains at least half of a lateness; the program's own \
         region is computation nothing annotated."
            .into(),
    );
    t
}

/// The worst straggler in one line, when the waiting it caused is at
/// least 1% of the run and it came last more than once.
pub fn straggler_line(a: &Analysis) -> Option<String> {
    let s = a.stragglers.first()?;
    if s.times_last < 2 || a.run_ns == 0 || s.wait_caused_ns.saturating_mul(100) < a.run_ns {
        return None;
    }
    let excess = human_ns(s.cause_excess_ns);
    let cause = match (&s.cause, s.cause_kind) {
        (Some(c), Some("kernel")) => {
            format!("; its GPU spent {excess} longer in kernel {}", names::for_terminal(c, 40))
        }
        (Some(c), Some("gpu clock")) => format!("; its GPU ran at a lower clock ({c})"),
        (Some(c), Some("link")) => format!("; its transfers took {excess} longer, a slower link ({c})"),
        (Some(c), _) => format!("; it spent {excess} longer in {}", names::cut(c, 40)),
        (None, _) => String::new(),
    };
    // Judged by the NCCL kernels' starts: its GPU started them last.
    let (who, verb) = if s.by_kernel * 2 > s.times_last {
        (format!("{}'s GPU", s.process), "started")
    } else {
        (s.process.clone(), "entered")
    };
    Some(format!(
        "Straggler: {who} {verb} {} of {} {} collectives on {} last, {} after the next rank in all, \
         the others waited {} for it{cause}",
        thousands(s.times_last),
        thousands(s.operations),
        s.paradigm,
        communicator(Some(&s.communicator), Some(s.communicator_size), Some(&s.communicator_ranks)),
        human_ns(s.lateness_ns),
        human_ns(s.wait_caused_ns),
    ))
}
