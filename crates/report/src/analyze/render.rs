//! The analysis as the terminal shows it (totals per pattern, then the
//! findings ranked by time lost, then GPU time per stream and GPU, then computation, communication and
//! overlap per rank), as JSON, and as the few lines of the run summary.

use std::io::{self, Write};

use super::replay::Extra;
use super::unfinished::{self, stuck_lines};
use super::{Analysis, Finding, GpuTime, Pattern};
use crate::names;
use crate::numbers::{human_bytes, human_ns, plural, thousands};
use crate::table::{Cell, Table};

mod iterations;
mod path;
mod sampled;
mod stragglers;

pub use iterations::longest_line;

pub use stragglers::straggler_line;
use stragglers::stragglers_table;

/// Seconds since the trace's start, to the microsecond.
pub(super) fn secs(ns: u64) -> String {
    format!("{:.6}", ns as f64 / 1e9)
}

/// Where: `rank 1, Master thread`.
fn place(f: &Finding) -> String {
    match (f.process.is_empty(), f.location.is_empty()) {
        (false, false) => format!("{}, {}", f.process, f.location),
        (false, true) => f.process.clone(),
        (true, _) => f.location.clone(),
    }
}

/// A kernel's base name; a copy or memset (`[CUDA memcpy HtoD]`) as it is.
fn kernel_name(k: &str, width: usize) -> String {
    if k.starts_with('[') { names::cut(k, width) } else { names::for_terminal(k, width) }
}

/// The call path `a > b > MPI_Recv`, or the kernel's base name (after the
/// call path of its launch, when known).
fn what(f: &Finding, width: usize) -> String {
    match &f.kernel {
        Some(k) if f.call_path.is_empty() => kernel_name(k, width),
        Some(k) => {
            let name = kernel_name(k, width);
            let path = f.call_path.join(" > ");
            names::cut(&format!("{name} <- {path}"), width.max(name.chars().count()))
        }
        None => names::cut(&f.call_path.join(" > "), width),
    }
}

/// A communicator with its size and members: `MPI_Comm 0.3 (2 ranks:
/// 1,3)`.
pub(super) fn communicator(name: Option<&str>, size: Option<u64>, ranks: Option<&str>) -> String {
    match (name, size, ranks) {
        (None, ..) => "-".into(),
        (Some(n), Some(size), Some(ranks)) => format!("{n} ({size} rank{}: {ranks})", plural(size, "s")),
        (Some(n), ..) => n.to_owned(),
    }
}

/// The totals per pattern: time lost, share of the run, the rank that
/// lost the most, the longest instance.
fn totals_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "totals",
        "Totals per pattern, by time lost",
        &["Pattern", "Time Lost", "Of Run (%)", "Findings", "Instances", "Worst Rank", "Worst Instance"],
    );
    for p in &a.totals {
        let w = &p.worst_instance;
        let at = if w.process.is_empty() { w.location.clone() } else { w.process.clone() };
        t.rows.push(vec![
            Cell::Text(p.title.to_owned()),
            Cell::Text(human_ns(p.time_lost_ns)),
            Cell::Float(p.share_of_run, 2),
            Cell::Int(p.findings.into()),
            Cell::Int(p.instances.into()),
            Cell::Text(format!("{}: {}", p.worst_rank.process, human_ns(p.worst_rank.time_lost_ns))),
            Cell::Text(format!("{} at {} s, {at}", human_ns(w.time_lost_ns), secs(w.window.start_ns))),
        ]);
    }
    t.notes.push(format!(
        "Of run: the share of the processes' time together ({}: each one's busiest thread, first event to last).",
        human_ns(a.run_ns)
    ));
    t
}

/// A total's sentence: `Late Sender: 650.20 ms in total, 4.10 % of the
/// run, in 6 findings (60 instances); rank 1 lost the most, 400.10 ms;
/// the longest instance 20.10 ms, rank 1, Master thread in MPI_Recv on
/// MPI_COMM_WORLD (4 ranks: 0-3), waiting for rank 0, at 1.234567 s`.
fn total_sentence(p: &super::PatternTotal) -> String {
    let w = &p.worst_instance;
    let at = match (w.process.is_empty(), w.location.is_empty()) {
        (false, false) => format!("{}, {}", w.process, w.location),
        (false, true) => w.process.clone(),
        (true, _) => w.location.clone(),
    };
    let call = match (&w.kernel, w.call_path.last()) {
        (Some(k), _) => format!(" ended by {}", kernel_name(k, 48)),
        (None, Some(c)) => format!(" in {c}"),
        (None, None) => String::new(),
    };
    let on = match communicator(w.communicator.as_deref(), w.communicator_size, w.communicator_ranks.as_deref()) {
        c if c == "-" => String::new(),
        c => format!(" on {c}"),
    };
    let partner = w.partner_rank.map(|r| format!(", waiting for rank {r}")).unwrap_or_default();
    format!(
        "{}: {} in total, {:.2} % of the run, in {} finding{} ({} instance{}); {} lost the most, {}; the longest \
         instance {}, {at}{call}{on}{partner}, at {} s",
        p.title,
        human_ns(p.time_lost_ns),
        p.share_of_run,
        thousands(p.findings),
        plural(p.findings, "s"),
        thousands(p.instances),
        plural(p.instances, "s"),
        if p.worst_rank.process.is_empty() { "-" } else { &p.worst_rank.process },
        human_ns(p.worst_rank.time_lost_ns),
        human_ns(w.time_lost_ns),
        secs(w.window.start_ns)
    )
}

/// A finding's sentence, with its own numbers.
pub(crate) fn detail(f: &Finding, extra: &Extra) -> String {
    let lost = human_ns(f.time_lost_ns);
    let n = f.instances;
    let at = place(f);
    let call = f.call_path.last().cloned().unwrap_or_default();
    let on = f.communicator.as_deref().map(|c| format!(" on {c}")).unwrap_or_default();
    let partner = |what: &str| {
        f.worst
            .partner_rank
            .map(|r| format!("; the longest waited {} for {what} rank {r}", human_ns(f.worst.time_lost_ns)))
            .unwrap_or_default()
    };
    let times = format!("{n} time{}", plural(n, "s"));
    match f.pattern {
        Pattern::LateSender => {
            format!("{at} waited {lost} in {call}{on} for messages not yet sent, {times}{}", partner("sender"))
        }
        Pattern::LateReceiver => format!(
            "{at} waited {lost} in {call}{on} for the receiver to post its receive, {times}{}",
            partner("receiver")
        ),
        Pattern::WaitAtNxN => {
            format!("{at} waited {lost} in {call}{on} until the last rank entered it, {times}{}", partner("the last,"))
        }
        Pattern::WaitAtBarrier => {
            format!("{at} waited {lost} in {call}{on} until the last rank reached it, {times}{}", partner("the last,"))
        }
        Pattern::LateBroadcast => {
            format!("{at} waited {lost} in {call}{on} for the root to enter, {times}{}", partner("root"))
        }
        Pattern::EarlyReduce => format!(
            "{at} (the root) waited {lost} in {call}{on} until the first sender entered, {times}{}",
            partner("the first sender,")
        ),
        Pattern::SyncMemcpy | Pattern::SyncMemset => format!(
            "{at}: {n} synchronous {call} call{} ({}) blocked the host for {lost}; the Async form on a stream \
             lets the host go on",
            plural(n, "s"),
            human_bytes(f.bytes.unwrap_or(0))
        ),
        Pattern::PageableAsyncMemcpy => format!(
            "{at}: {n} {call} call{} copied {} from or to pageable memory, {lost} of copying that cannot overlap: \
             pin the host buffer (cudaMallocHost, cudaHostRegister)",
            plural(n, "s"),
            human_bytes(f.bytes.unwrap_or(0))
        ),
        Pattern::SyncApi => format!("{at}: {n} {call} call{} waited {lost} for the GPU", plural(n, "s")),
        Pattern::GpuGap => format!(
            "{at} was idle {lost} in {n} gap{} of at least the threshold; the longest, {}, ended when {} started",
            plural(n, "s"),
            human_ns(f.worst.time_lost_ns),
            f.kernel.as_deref().map(|k| kernel_name(k, 48)).unwrap_or_default()
        ),
        Pattern::ShortKernels => format!(
            "{at}: {n} of {} {} kernels ran shorter than their launch call ({} on the GPU against {} launching): \
             the host launches them slower than the GPU runs them; fuse them or use a CUDA graph",
            extra.all,
            f.kernel.as_deref().map(|k| kernel_name(k, 48)).unwrap_or_default(),
            human_ns(extra.kernel_ns),
            human_ns(extra.launch_ns)
        ),
        Pattern::LoadImbalance => String::new(),
    }
}

/// The findings table.
fn findings_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "findings",
        "Findings, by time lost",
        &[
            "#",
            "Time Lost",
            "Pattern",
            "Where",
            "Instances",
            "From (s)",
            "To (s)",
            "Call Path / Kernel",
            "Communicator",
            "Waited For",
        ],
    );
    for (i, f) in a.findings.iter().enumerate() {
        t.rows.push(vec![
            Cell::Int(i as u128 + 1),
            Cell::Text(human_ns(f.time_lost_ns)),
            Cell::Text(f.title.to_owned()),
            Cell::Text(place(f)),
            Cell::Int(f.instances.into()),
            Cell::Text(secs(f.window.start_ns)),
            Cell::Text(secs(f.window.end_ns)),
            Cell::Text(what(f, 48)),
            Cell::Text(communicator(f.communicator.as_deref(), f.communicator_size, f.communicator_ranks.as_deref())),
            Cell::Text(f.worst.partner_rank.map_or_else(|| "-".into(), |r| format!("rank {r}"))),
        ]);
    }
    t
}

fn gpu_table(name: &str, title: &str, rows: &[GpuTime]) -> Table {
    let mut t = Table::new(
        name,
        title,
        &[
            "Where",
            "Kernels (ns)",
            "NCCL (ns)",
            "Copies (ns)",
            "Memsets (ns)",
            "Busy (%)",
            "Idle (ns)",
            "Idle: Host Launch (ns)",
            "Idle: Dependency (ns)",
            "Idle: Unknown (ns)",
        ],
    );
    for g in rows {
        let place = if g.process.is_empty() { g.location.clone() } else { format!("{}, {}", g.process, g.location) };
        let busy = if g.span_ns > 0 { 100.0 * g.busy_ns as f64 / g.span_ns as f64 } else { 0.0 };
        t.rows.push(vec![
            Cell::Text(place),
            Cell::Int(g.kernels_ns.into()),
            Cell::Int(g.communication_ns.into()),
            Cell::Int(g.copies_ns.into()),
            Cell::Int(g.memsets_ns.into()),
            Cell::Float(busy, 1),
            Cell::Int(g.idle_ns.into()),
            Cell::Int(g.idle_host_ns.into()),
            Cell::Int(g.idle_dependency_ns.into()),
            Cell::Int(g.idle_unattributed_ns.into()),
        ]);
    }
    t
}

fn ranks_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "ranks",
        "Computation and communication per rank",
        &[
            "Process",
            "Computation (ns)",
            "MPI (ns)",
            "GPU Compute (ns)",
            "Communication (ns)",
            "Overlap (ns)",
            "Overlap (%)",
        ],
    );
    for r in &a.ranks {
        let pct = if r.communication_ns > 0 { 100.0 * r.overlap_ns as f64 / r.communication_ns as f64 } else { 0.0 };
        t.rows.push(vec![
            Cell::Text(r.process.clone()),
            Cell::Int(r.computation_ns.into()),
            Cell::Int(r.mpi_ns.into()),
            Cell::Int(r.gpu_compute_ns.into()),
            Cell::Int(r.communication_ns.into()),
            Cell::Int(r.overlap_ns.into()),
            Cell::Float(pct, 1),
        ]);
    }
    if let Some(im) = &a.imbalance {
        t.notes.push(format!(
            "Load balance: computation max {} ({}), mean {}, min {}; max/mean {:.2}.",
            human_ns(im.max_ns),
            im.slowest,
            human_ns(im.mean_ns),
            human_ns(im.min_ns),
            im.ratio
        ));
    }
    t.notes.push(
        "Computation: the busiest host thread's time outside MPI, NCCL and CUDA synchronization calls. \
         Communication: NCCL kernels and MPI calls; overlap: while a compute kernel ran."
            .into(),
    );
    t
}

/// The calls in flight when the recording ended, the longest running
/// first (at most `top`).
fn in_flight_table(a: &Analysis, top: usize) -> Table {
    let mut t = Table::new(
        "in_flight",
        "In flight when the recording ended: the calls that had not returned",
        &["Process", "Thread", "Call", "Since (s)", "Running For", "Call Path"],
    );
    for f in a.in_flight.iter().take(top) {
        t.rows.push(vec![
            Cell::Text(f.process.clone()),
            Cell::Text(f.location.clone()),
            Cell::Text(names::cut(&f.call, 40)),
            Cell::Text(secs(f.since_ns)),
            Cell::Text(human_ns(f.for_ns)),
            Cell::Text(names::cut(&f.path, 60)),
        ]);
    }
    t.notes.push(
        "A call is in flight when its location's recording ended inside it: the job was stopped (a hang, a \
         signal, a killed rank) while the call ran."
            .into(),
    );
    t
}

/// `gputrace analyze`'s terminal output.
pub fn write_table(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "gputrace analyze: {} ({} events, {} traced)\n",
        a.archive,
        thousands(a.events),
        human_ns(a.trace_ns)
    )?;
    if a.findings.is_empty() {
        writeln!(out, "** Findings: none (no wait states, rule findings or load imbalance).\n")?;
    } else {
        writeln!(out, "{}", totals_table(a).render(None))?;
        for p in &a.totals {
            writeln!(out, " {}", total_sentence(p))?;
        }
        writeln!(out)?;
        writeln!(out, "{}", findings_table(a).render(None))?;
        for (i, f) in a.findings.iter().enumerate().take(10) {
            writeln!(out, " {}. {}: {}", i + 1, f.title, f.detail)?;
        }
        writeln!(out)?;
    }
    if !a.streams.is_empty() {
        writeln!(out, "{}", gpu_table("streams", "GPU time per stream", &a.streams).render(None))?;
        let mut t = gpu_table("gpus", "GPU time per GPU (all its streams)", &a.gpus);
        t.notes.push(
            "Idle: between the first work and the last. Host launch: until the next work's launch call \
             ended; dependency: after it (an event, another stream, a synchronization)."
                .into(),
        );
        writeln!(out, "{}", t.render(None))?;
    }
    if !a.ranks.is_empty() {
        writeln!(out, "{}", ranks_table(a).render(None))?;
    }
    if !a.hot_functions.is_empty() {
        writeln!(out, "{}", sampled::table(&a.hot_functions).render(None))?;
    }
    if let Some(p) = a.critical_path.as_ref().filter(|p| p.jumps > 0) {
        writeln!(out, "{}", path::critical_table(p, 10).render(None))?;
    }
    if !a.what_if.is_empty() {
        writeln!(out, "{}", path::what_if_table(&a.what_if, 10).render(None))?;
    }
    if !a.what_if_gpu.is_empty() {
        writeln!(out, "{}", path::gpu_what_if_table(&a.what_if_gpu, 10).render(None))?;
    }
    if !a.stragglers.is_empty() {
        writeln!(out, "{}", stragglers_table(a, 10).render(None))?;
        if let Some(line) = straggler_line(a) {
            writeln!(out, " {line}\n")?;
        }
    }
    if let Some(it) = &a.iterations {
        writeln!(out, "{}", iterations::table(it, 20).render(None))?;
        if let Some(line) = longest_line(it) {
            writeln!(out, " {line}\n")?;
        }
    }
    if !a.in_flight.is_empty() {
        writeln!(out, "{}", in_flight_table(a, 20).render(None))?;
        if !a.unfinished_kernels.is_empty() {
            writeln!(out, "{}", unfinished::table(a).render(None))?;
        }
        for line in stuck_lines(a).into_iter().chain(unfinished::lines(a)) {
            writeln!(out, " {line}")?;
        }
        writeln!(out)?;
    }
    for n in &a.notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

/// `gputrace analyze --format json`: the [`Analysis`] as serde writes it.
pub fn write_json(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, a)?;
    writeln!(out)
}

/// The top `n` findings, one line each, for the run summary.
pub fn summary_lines(a: &Analysis, n: usize) -> Vec<String> {
    a.findings
        .iter()
        .take(n)
        .map(|f| {
            let what = what(f, 40);
            let what = if what.is_empty() { String::new() } else { format!(" in {what}") };
            let partner = f.worst.partner_rank.map(|r| format!(", waiting for rank {r}")).unwrap_or_default();
            format!(
                "{}: {} lost, {}{}{} ({} instance{})",
                f.title,
                human_ns(f.time_lost_ns),
                place(f),
                what,
                partner,
                thousands(f.instances),
                plural(f.instances, "s")
            )
        })
        .collect()
}

/// The analysis lines of the run summary: the `top` findings with the
/// most time lost, and how many more `gputrace analyze` shows.
pub fn summary_block(a: &Analysis, top: usize, dir: &str) -> String {
    let mut s = String::new();
    for line in stuck_lines(a).into_iter().chain(unfinished::lines(a)) {
        s.push_str("analysis: ");
        s.push_str(&line);
        s.push('\n');
    }
    if a.findings.is_empty() {
        s.push_str("analysis: no MPI wait states, GPU rule findings or load imbalance\n");
        return s;
    }
    let longest = a.iterations.as_ref().and_then(longest_line);
    for line in straggler_line(a).into_iter().chain(longest) {
        s.push_str("analysis: ");
        s.push_str(&line);
        s.push('\n');
    }
    for line in summary_lines(a, top) {
        s.push_str("analysis: ");
        s.push_str(&line);
        s.push('\n');
    }
    let more = a.findings.len().saturating_sub(top);
    if more > 0 {
        s.push_str(&format!("analysis: {more} more finding{}: gputrace analyze {dir}\n", plural(more as u64, "s")));
    }
    s
}
