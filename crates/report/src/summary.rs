//! The run summary printed after every merge (and kept as
//! `summary.txt`): processes and events, the busiest MPI functions,
//! messages, NCCL, GPU work, and what was lost or repaired.
//!
//! Its facts come from the merge; this crate does not depend on the merge
//! (reports read archives), so the command hands them over as a
//! [`RunSummary`].

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::numbers::{human_bytes, human_ns, plural, thousands};

/// Time spent in one region (by name), over all locations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub calls: u64,
    pub time: u64,
}

/// How a process that did not end normally, or lost events, ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub rank: u32,
    pub pid: u32,
    pub host: String,
    pub how: Ended,
    /// Events being written when it stopped, cut.
    pub cut: u64,
    /// Events it could not write (recording had stopped).
    pub dropped: u64,
}

/// What one process's sources (CUPTI, NCCL) lost before it became
/// events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub rank: u32,
    pub pid: u32,
    pub host: String,
    /// (kind's key, `CUPTI_DROPPED`; count), none zero.
    pub counts: Vec<(String, u64)>,
}

/// A part of the program that was not traced, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotTraced {
    /// `CUDA`, `MPI`.
    pub what: String,
    pub why: String,
    /// The processes that said so; 0 when gputrace knew it itself.
    pub processes: usize,
}

/// The way a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// By this signal (named: `SIGTERM`), its buffers written first.
    Signal(String),
    /// Without closing its trace.
    Unclosed,
    NoFinalize,
    Damaged,
    Finished,
}

/// What a merge found, as the summary shows it.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub processes: usize,
    pub mpi_ranks: usize,
    pub hosts: usize,
    pub locations: usize,
    pub events: u64,
    /// From the first event to the last, in ns.
    pub trace_length: u64,
    /// MPI functions, busiest first.
    pub mpi: Vec<Row>,
    /// NCCL calls (enqueue on the host), busiest first.
    pub nccl: Vec<Row>,
    /// Kernels by name, busiest first.
    pub kernels_by_name: Vec<Row>,
    pub p2p_messages: u64,
    pub p2p_bytes: u64,
    pub collectives: u64,
    pub collective_bytes: u64,
    pub nccl_collectives: u64,
    pub nccl_collective_bytes: u64,
    pub nccl_messages: u64,
    pub nccl_message_bytes: u64,
    pub kernels: u64,
    pub memsets: u64,
    pub memset_bytes: u64,
    /// Copies by kind (its short name: `HtoD`), with their bytes, in the
    /// order shown; kinds without copies left out.
    pub copies: Vec<(String, u64, u64)>,
    pub dropped: u64,
    pub endings: Vec<Ending>,
    /// Processes whose sources lost records, in rank order.
    pub lost: Vec<Lost>,
    pub not_traced: Vec<NotTraced>,
    pub closed_open_regions: u64,
    pub clamped: u64,
    pub unmatched_leaves: u64,
    /// The archive's anchor and its size in bytes, when one was written.
    pub archive: Option<(PathBuf, u64)>,
    /// The Cube profile, its size in bytes and number of call paths, when
    /// one was written.
    pub profile: Option<(PathBuf, u64, usize)>,
    pub merge_time: Duration,
    /// From the program's last process finishing to the archive written.
    pub exit_to_archive: Option<u64>,
    /// What the message-based clock correction did, for a job on several
    /// hosts.
    pub clocks: Option<Clocks>,
}

/// The message-based clock correction of a job on several hosts.
#[derive(Debug, Clone, Default)]
pub struct Clocks {
    pub hosts: usize,
    /// Point-to-point messages paired between hosts.
    pub messages: u64,
    /// Received before their send on the measured clocks, and after the
    /// correction.
    pub before: u64,
    pub after: u64,
    /// Receives moved (true), or hosts' clocks shifted by a constant.
    pub moved_receives: bool,
    /// Too many messages between hosts to correct by (the limit).
    pub skipped: Option<u64>,
    /// Hosts shifted or receives moved, and by how much at most (ns).
    pub moved: u64,
    pub max_shift: u64,
}

impl RunSummary {
    /// The text of the summary. `tables`: include the per-function tables
    /// (MPI, NCCL, kernels), left out when `gputrace stats`'s short form
    /// follows; at most `top` MPI functions are listed.
    pub fn render(&self, top: usize, tables: bool) -> String {
        let mut s = String::new();
        self.totals(&mut s);
        if tables {
            self.mpi_table(&mut s, top);
        }
        self.messages(&mut s, tables);
        self.clocks(&mut s);
        self.gpu_work(&mut s, tables);
        self.losses(&mut s);
        self.archive_line(&mut s);
        if let Some((path, bytes, paths)) = &self.profile {
            let _ = writeln!(
                s,
                "profile: {} ({}, {} call path{}): cube, cube_stat or pycubexr read it",
                path.display(),
                human_bytes(*bytes),
                thousands(*paths as u64),
                plural(*paths as u64, "s")
            );
        }
        s
    }

    fn totals(&self, s: &mut String) {
        let ranks = if self.mpi_ranks > 0 { format!(" ({} MPI ranks)", self.mpi_ranks) } else { String::new() };
        let _ = writeln!(
            s,
            "{} process{}{} on {} host{}, {} locations, {} events, {} traced",
            self.processes,
            plural(self.processes as u64, "es"),
            ranks,
            self.hosts,
            plural(self.hosts as u64, "s"),
            self.locations,
            thousands(self.events),
            human_ns(self.trace_length),
        );
    }

    fn mpi_table(&self, s: &mut String, top: usize) {
        if self.mpi.is_empty() {
            return;
        }
        let total: u64 = self.mpi.iter().map(|r| r.time).sum();
        let _ = writeln!(s, "MPI functions by time (all ranks):");
        let _ = writeln!(s, "  {:<24} {:>12} {:>12} {:>11} {:>7}", "function", "calls", "time", "avg", "% MPI");
        for r in self.mpi.iter().take(top) {
            let _ = writeln!(
                s,
                "  {:<24} {:>12} {:>12} {:>11} {:>6.1}%",
                r.name,
                thousands(r.calls),
                human_ns(r.time),
                human_ns(r.time / r.calls.max(1)),
                100.0 * r.time as f64 / total.max(1) as f64
            );
        }
        if self.mpi.len() > top {
            let _ = writeln!(s, "  ... and {} more", self.mpi.len() - top);
        }
    }

    fn messages(&self, s: &mut String, tables: bool) {
        if self.p2p_messages > 0 || self.collectives > 0 {
            let _ = writeln!(
                s,
                "messages: {} point-to-point ({}), {} collectives ({} sent)",
                thousands(self.p2p_messages),
                human_bytes(self.p2p_bytes),
                thousands(self.collectives),
                human_bytes(self.collective_bytes)
            );
        }
        if self.nccl_collectives > 0 || self.nccl_messages > 0 {
            let _ = writeln!(
                s,
                "NCCL: {} collectives ({} sent), {} send/recv ({})",
                thousands(self.nccl_collectives),
                human_bytes(self.nccl_collective_bytes),
                thousands(self.nccl_messages),
                human_bytes(self.nccl_message_bytes)
            );
        }
        if tables && !self.nccl.is_empty() {
            let _ = writeln!(s, "NCCL by time (enqueue on the host):");
            for r in self.nccl.iter().take(5) {
                let _ = writeln!(s, "  {:<24} {:>12} {:>12}", r.name, thousands(r.calls), human_ns(r.time));
            }
        }
    }

    fn clocks(&self, s: &mut String) {
        if let Some(c) = self.clocks.as_ref()
            && let Some(limit) = c.skipped
        {
            let _ = writeln!(
                s,
                "clocks: {} hosts; more than {} sends and receives between them: not corrected by the messages, \
                 the offsets measured at MPI_Init and MPI_Finalize stand",
                c.hosts,
                thousands(limit)
            );
            return;
        }
        // (Nothing to say without messages between hosts.)
        let Some(c) = self.clocks.as_ref().filter(|c| c.messages > 0) else { return };
        if c.before == 0 {
            let _ = writeln!(
                s,
                "clocks: {} hosts; each of {} messages between them received after its send on the measured clocks",
                c.hosts,
                thousands(c.messages)
            );
            return;
        }
        let how = if c.moved_receives {
            format!(
                "no constant per host orders them: {} receive{} moved later, by up to {}",
                thousands(c.moved),
                plural(c.moved, "s"),
                human_ns(c.max_shift)
            )
        } else {
            format!("{} host clock{} shifted by up to {}", c.moved, plural(c.moved, "s"), human_ns(c.max_shift))
        };
        let _ = writeln!(
            s,
            "clocks: {} hosts; {} of {} messages between them received before their send on the measured clocks; \
             {how}; {} now",
            c.hosts,
            thousands(c.before),
            thousands(c.messages),
            thousands(c.after)
        );
    }

    fn gpu_work(&self, s: &mut String, tables: bool) {
        if self.kernels > 0 && !tables {
            let _ = writeln!(s, "GPU kernels: {} launches", thousands(self.kernels));
        } else if self.kernels > 0 {
            let _ = writeln!(s, "GPU kernels by time (all streams): {} launches", thousands(self.kernels));
            for r in self.kernels_by_name.iter().take(5) {
                let short = crate::names::for_terminal(&r.name, 48);
                let _ = writeln!(s, "  {:<48} {:>10} {:>12}", short, thousands(r.calls), human_ns(r.time));
            }
        }
        let copies: Vec<String> =
            self.copies.iter().map(|(kind, n, b)| format!("{} {kind} ({})", thousands(*n), human_bytes(*b))).collect();
        if !copies.is_empty() || self.memsets > 0 {
            let _ = writeln!(
                s,
                "GPU copies: {}; memsets: {} ({})",
                if copies.is_empty() { "none".to_string() } else { copies.join(", ") },
                thousands(self.memsets),
                human_bytes(self.memset_bytes)
            );
        }
    }

    fn losses(&self, s: &mut String) {
        for n in &self.not_traced {
            let whom = match n.processes {
                0 => String::new(),
                k => format!(" in {k} process{}", plural(k as u64, "es")),
            };
            let _ = writeln!(s, "not traced: {}{whom} ({})", n.what, n.why);
        }
        if self.dropped > 0 {
            let _ =
                writeln!(s, "lost: {} events could not be written by the traced processes", thousands(self.dropped));
        }
        for l in &self.lost {
            let _ = writeln!(s, "lost: {}", l.describe());
        }
        for ending in &self.endings {
            let _ = writeln!(s, "ending: {}", ending.describe());
        }
        if self.closed_open_regions > 0 || self.clamped > 0 || self.unmatched_leaves > 0 {
            let _ = writeln!(
                s,
                "repaired: {} regions left open closed at their location's last event, {} out-of-order timestamps \
                 clamped, {} unmatched leaves dropped",
                self.closed_open_regions, self.clamped, self.unmatched_leaves
            );
        }
    }

    fn archive_line(&self, s: &mut String) {
        match &self.archive {
            Some((path, bytes)) => {
                let exit = match self.exit_to_archive {
                    Some(ns) => format!(" ({:.3} s after the program's exit)", ns as f64 / 1e9),
                    None => String::new(),
                };
                let _ = writeln!(
                    s,
                    "archive: {} ({}), merged in {:.2} s{exit}",
                    path.display(),
                    human_bytes(*bytes),
                    self.merge_time.as_secs_f64()
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "no archive written (GPUTRACE_ENABLE_TRACING=false); merged in {:.2} s",
                    self.merge_time.as_secs_f64()
                );
            }
        }
    }
}

impl Lost {
    /// `rank 1 (pid 4242 on vm): 1,234 CUDA activity records dropped by
    /// CUPTI (buffers full: raise GPUTRACE_CUDA_BUFFER)`, kinds joined by
    /// `; `.
    pub fn describe(&self) -> String {
        let what: Vec<String> = self.counts.iter().map(|(key, n)| crate::lost::describe(key, *n)).collect();
        format!("rank {} (pid {} on {}): {}", self.rank, self.pid, self.host, what.join("; "))
    }
}

impl Ending {
    /// `rank 1 (pid 4242 on vm) ended by SIGSEGV, its buffers written
    /// first; 1 event being written cut`.
    pub fn describe(&self) -> String {
        let mut how = match &self.how {
            Ended::Signal(name) => format!("ended by {name}, its buffers written first"),
            Ended::Unclosed => "stopped without closing its trace (SIGKILL, or _exit)".to_string(),
            Ended::NoFinalize => "exited without MPI_Finalize".to_string(),
            Ended::Damaged => "finished, its stream damaged".to_string(),
            Ended::Finished => "finished".to_string(),
        };
        if self.cut > 0 {
            how += &format!("; {} event{} being written cut", self.cut, plural(self.cut, "s"));
        }
        if self.dropped > 0 {
            how += &format!("; {} events not written (recording had stopped)", thousands(self.dropped));
        }
        format!("rank {} (pid {} on {}) {how}", self.rank, self.pid, self.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_functions_are_listed_by_time() {
        let s = RunSummary {
            processes: 2,
            mpi_ranks: 2,
            hosts: 1,
            locations: 2,
            events: 10,
            mpi: vec![
                Row { name: "MPI_Recv".into(), calls: 2, time: 400 },
                Row { name: "MPI_Send".into(), calls: 1, time: 100 },
            ],
            ..Default::default()
        };
        let text = s.render(10, true);
        assert!(text.find("MPI_Recv").unwrap() < text.find("MPI_Send").unwrap(), "{text}");
        assert!(text.contains("2 processes (2 MPI ranks) on 1 host, 2 locations, 10 events"), "{text}");
        assert!(text.contains("80.0%"), "{text}");
        assert!(!s.render(10, false).contains("MPI_Recv"));
    }

    #[test]
    fn kernel_lines_show_base_names() {
        let gemm = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>(\
                    cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4::Params)";
        let fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
                    at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
        let s = RunSummary {
            kernels: 3,
            kernels_by_name: vec![
                Row { name: gemm.into(), calls: 2, time: 4000 },
                Row { name: fill.into(), calls: 1, time: 100 },
            ],
            ..Default::default()
        };
        let text = s.render(10, true);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
        assert!(lines[0].trim_start().starts_with("cutlass::Kernel2 "), "{text}");
        assert!(lines[1].trim_start().starts_with("at::native::vectorized_elementwise_kernel "), "{text}");
        assert!(!text.contains('<') && !text.contains("Params"), "{text}");
    }

    #[test]
    fn the_clock_correction_is_said() {
        let c = Clocks {
            hosts: 4,
            messages: 784,
            before: 25,
            after: 0,
            moved_receives: false,
            skipped: None,
            moved: 2,
            max_shift: 5800,
        };
        let text = RunSummary { clocks: Some(c.clone()), ..Default::default() }.render(10, true);
        assert!(
            text.contains(
                "clocks: 4 hosts; 25 of 784 messages between them received before their send on the measured \
                 clocks; 2 host clocks shifted by up to 5.8 us; 0 now\n"
            ),
            "{text}"
        );
        let moved = Clocks { moved_receives: true, moved: 1, ..c.clone() };
        let text = RunSummary { clocks: Some(moved), ..Default::default() }.render(10, true);
        assert!(
            text.contains("no constant per host orders them: 1 receive moved later, by up to 5.8 us; 0 now"),
            "{text}"
        );
        let none = Clocks { before: 0, moved: 0, max_shift: 0, ..c };
        let text = RunSummary { clocks: Some(none.clone()), ..Default::default() }.render(10, true);
        assert!(text.contains("clocks: 4 hosts; each of 784 messages between them received after its send"), "{text}");
        // No messages between the hosts: nothing to say.
        let text =
            RunSummary { clocks: Some(Clocks { messages: 0, ..none.clone() }), ..Default::default() }.render(10, true);
        assert!(!text.contains("clocks:"), "{text}");
        let skipped = Clocks { messages: 0, skipped: Some(2 << 20), ..none };
        let text = RunSummary { clocks: Some(skipped), ..Default::default() }.render(10, true);
        assert!(
            text.contains("clocks: 4 hosts; more than 2,097,152 sends and receives between them: not corrected"),
            "{text}"
        );
    }

    #[test]
    fn what_was_not_traced_is_said() {
        let s = RunSummary {
            processes: 2,
            not_traced: vec![
                NotTraced { what: "CUDA".into(), why: "CUPTI could not be loaded: x".into(), processes: 2 },
                NotTraced { what: "CUDA".into(), why: "the program ran under nsys".into(), processes: 0 },
            ],
            ..Default::default()
        };
        let text = s.render(10, true);
        assert!(text.contains("\nnot traced: CUDA in 2 processes (CUPTI could not be loaded: x)\n"), "{text}");
        assert!(text.contains("\nnot traced: CUDA (the program ran under nsys)\n"), "{text}");
    }

    #[test]
    fn what_the_sources_lost_is_one_line_per_process() {
        let lost = |rank, counts: &[(&str, u64)]| Lost {
            rank,
            pid: 4240 + rank,
            host: "vm".into(),
            counts: counts.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        };
        let s = RunSummary {
            processes: 2,
            lost: vec![
                lost(0, &[("CUDA_SYNC_WITHOUT_CALL", 3)]),
                lost(1, &[("CUPTI_DROPPED", 1234), ("NCCL_THREAD_EXIT", 2)]),
            ],
            ..Default::default()
        };
        let text = s.render(10, true);
        assert!(
            text.contains(
                "\nlost: rank 0 (pid 4240 on vm): 3 CUDA synchronizations dropped: their API call was never reported\n\
                 lost: rank 1 (pid 4241 on vm): 1,234 CUDA activity records dropped by CUPTI (buffers full: raise \
                 GPUTRACE_CUDA_BUFFER); 2 NCCL calls lost in a group left open when its thread exited\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn endings_say_how_and_what_was_lost() {
        let e =
            Ending { rank: 1, pid: 4242, host: "vm".into(), how: Ended::Signal("SIGSEGV".into()), cut: 1, dropped: 0 };
        assert_eq!(
            e.describe(),
            "rank 1 (pid 4242 on vm) ended by SIGSEGV, its buffers written first; 1 event being written cut"
        );
        let e = Ending { how: Ended::Finished, cut: 0, dropped: 16_817, ..e };
        assert_eq!(e.describe(), "rank 1 (pid 4242 on vm) finished; 16,817 events not written (recording had stopped)");
    }
}
