//! What `analyze` leads with: per pattern, the time lost over all its
//! findings (each a rank's thread, call path and communicator), its share
//! of the run, the rank that lost the most and the longest instance. The
//! findings stay the detail underneath: at 256 ranks they are thousands of
//! rows, the totals one per pattern.

use serde::Serialize;

use super::{Finding, Pattern, RankTime, Window};

/// The instance of a pattern that lost the most time, and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorstInstance {
    pub process: String,
    pub rank: Option<u32>,
    pub location: String,
    /// The call path (outermost first) or, for a GPU finding, empty.
    pub call_path: Vec<String>,
    pub kernel: Option<String>,
    pub communicator: Option<String>,
    pub communicator_size: Option<u64>,
    pub communicator_ranks: Option<String>,
    pub time_lost_ns: u64,
    pub window: Window,
    pub partner_rank: Option<u32>,
}

/// The process that lost the most time to a pattern, all its findings of
/// the pattern together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorstRank {
    pub process: String,
    pub rank: Option<u32>,
    pub time_lost_ns: u64,
}

/// One pattern over all its findings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatternTotal {
    pub pattern: Pattern,
    pub title: &'static str,
    pub category: &'static str,
    /// The findings' time lost, summed.
    pub time_lost_ns: u64,
    /// `time_lost_ns` as a share of the run's time ([`run_ns`]), in %.
    pub share_of_run: f64,
    /// How many findings (rows of the detail) the pattern has.
    pub findings: u64,
    /// Their instances, summed.
    pub instances: u64,
    pub worst_rank: WorstRank,
    pub worst_instance: WorstInstance,
}

/// The run's time that shares are of: every process's span (its busiest
/// host thread's first event to its last) summed, as Scalasca states
/// wait states against the time of all processes; the trace's length
/// where no process has a span (a GPU-only archive).
pub fn run_ns(ranks: &[RankTime], trace_ns: u64) -> u64 {
    let sum: u64 = ranks.iter().map(|r| r.span_ns).sum();
    if sum > 0 { sum } else { trace_ns }
}

/// The totals per pattern of `findings`, largest time lost first.
pub fn totals(findings: &[Finding], run_ns: u64) -> Vec<PatternTotal> {
    let mut out: Vec<PatternTotal> = Vec::new();
    for p in Pattern::ALL {
        let mine: Vec<&Finding> = findings.iter().filter(|f| f.pattern == p).collect();
        let Some(first) = mine.first() else { continue };
        let time_lost_ns: u64 = mine.iter().map(|f| f.time_lost_ns).sum();
        // Per process, in the order first seen (ties go to the first).
        let mut per_process: Vec<(&str, Option<u32>, u64)> = Vec::new();
        for f in &mine {
            match per_process.iter_mut().find(|(name, _, _)| *name == f.process) {
                Some(entry) => entry.2 += f.time_lost_ns,
                None => per_process.push((&f.process, f.rank, f.time_lost_ns)),
            }
        }
        let (process, rank, lost) =
            per_process.iter().copied().reduce(|a, b| if b.2 > a.2 { b } else { a }).unwrap_or(("", None, 0));
        let w = mine.iter().copied().reduce(|a, b| if b.worst.time_lost_ns > a.worst.time_lost_ns { b } else { a });
        let w = w.unwrap_or(first);
        out.push(PatternTotal {
            pattern: p,
            title: p.title(),
            category: p.category(),
            time_lost_ns,
            share_of_run: if run_ns > 0 { 100.0 * time_lost_ns as f64 / run_ns as f64 } else { 0.0 },
            findings: mine.len() as u64,
            instances: mine.iter().map(|f| f.instances).sum(),
            worst_rank: WorstRank { process: process.to_owned(), rank, time_lost_ns: lost },
            worst_instance: WorstInstance {
                process: w.process.clone(),
                rank: w.rank,
                location: w.location.clone(),
                call_path: w.call_path.clone(),
                kernel: w.kernel.clone(),
                communicator: w.communicator.clone(),
                communicator_size: w.communicator_size,
                communicator_ranks: w.communicator_ranks.clone(),
                time_lost_ns: w.worst.time_lost_ns,
                window: w.worst.window,
                partner_rank: w.worst.partner_rank,
            },
        });
    }
    out.sort_by(|a, b| b.time_lost_ns.cmp(&a.time_lost_ns).then(a.pattern.cmp(&b.pattern)));
    out
}

/// World ranks as runs: `0-3`, `1,3,5-7`; at most `max` runs, then
/// `… (n more)`; `?` for a rank the definitions do not name.
pub fn rank_list(ranks: &[Option<u32>], max: usize) -> String {
    let mut known: Vec<u32> = ranks.iter().flatten().copied().collect();
    known.sort_unstable();
    known.dedup();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in known {
        match runs.last_mut() {
            Some(last) if last.1 + 1 == r => last.1 = r,
            _ => runs.push((r, r)),
        }
    }
    let mut parts: Vec<String> =
        runs.iter().take(max).map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    if runs.len() > max {
        parts.push(format!("… ({} more)", runs.len() - max));
    }
    if ranks.iter().any(Option::is_none) {
        parts.push("?".into());
    }
    parts.join(",")
}
