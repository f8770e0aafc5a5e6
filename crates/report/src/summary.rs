//! The run summary printed after every merge (and kept as
//! `summary.txt`): processes and events, the busiest MPI functions,
//! messages, NCCL, GPU work, and what was lost or repaired.
//!
//! Its facts come from the merge as a [`RunSummary`], declared in
//! `gputrace-summary`, a crate under both (this crate does not depend on
//! the merge: reports read archives); here it is rendered ([`Render`]),
//! with the same number formatters as every `gputrace stats` table.

use std::fmt::Write;

use gputrace_summary::{Ended, Ending, Lost, RunSummary};

use crate::numbers::{human_bytes, human_ns, plural, thousands};

/// The text of a run summary.
pub trait Render {
    /// The text of the summary. `tables`: include the per-function tables
    /// (MPI, NCCL, kernels), left out when `gputrace stats`'s short form
    /// follows; at most `top` MPI functions are listed.
    fn render(&self, top: usize, tables: bool) -> String;
}

impl Render for RunSummary {
    fn render(&self, top: usize, tables: bool) -> String {
        Text(self).render(top, tables)
    }
}

/// A line of the summary about one process.
pub trait Describe {
    fn describe(&self) -> String;
}

/// The summary being written (its parts as methods).
struct Text<'a>(&'a RunSummary);

impl std::ops::Deref for Text<'_> {
    type Target = RunSummary;

    fn deref(&self) -> &RunSummary {
        self.0
    }
}

impl Text<'_> {
    fn render(&self, top: usize, tables: bool) -> String {
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
            thousands(self.counts.events),
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
        if self.counts.p2p_messages > 0 || self.counts.collectives > 0 {
            let _ = writeln!(
                s,
                "messages: {} point-to-point ({}), {} collectives ({} sent)",
                thousands(self.counts.p2p_messages),
                human_bytes(self.counts.p2p_bytes),
                thousands(self.counts.collectives),
                human_bytes(self.counts.collective_bytes)
            );
        }
        if self.counts.nccl_collectives > 0 || self.counts.nccl_messages > 0 {
            let _ = writeln!(
                s,
                "NCCL: {} collectives ({} sent), {} send/recv ({})",
                thousands(self.counts.nccl_collectives),
                human_bytes(self.counts.nccl_collective_bytes),
                thousands(self.counts.nccl_messages),
                human_bytes(self.counts.nccl_message_bytes)
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
        if self.counts.kernels > 0 && !tables {
            let _ = writeln!(s, "GPU kernels: {} launches", thousands(self.counts.kernels));
        } else if self.counts.kernels > 0 {
            let _ = writeln!(s, "GPU kernels by time (all streams): {} launches", thousands(self.counts.kernels));
            for r in self.kernels_by_name.iter().take(5) {
                let short = crate::names::for_terminal(&r.name, 48);
                let _ = writeln!(s, "  {:<48} {:>10} {:>12}", short, thousands(r.calls), human_ns(r.time));
            }
        }
        let copies: Vec<String> =
            self.copies.iter().map(|(kind, n, b)| format!("{} {kind} ({})", thousands(*n), human_bytes(*b))).collect();
        if !copies.is_empty() || self.counts.memsets > 0 {
            let _ = writeln!(
                s,
                "GPU copies: {}; memsets: {} ({})",
                if copies.is_empty() { "none".to_string() } else { copies.join(", ") },
                thousands(self.counts.memsets),
                human_bytes(self.counts.memset_bytes)
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
        if self.expired > 0 {
            let _ = writeln!(
                s,
                "flight recorder: the archive holds each thread's last window; {} older events were given back \
                 (GPUTRACE_FLIGHT_RECORDER)",
                thousands(self.expired)
            );
        }
        for ending in &self.endings {
            let _ = writeln!(s, "ending: {}", ending.describe());
        }
        if self.closed_open_regions > 0 || self.clamped > 0 || self.unmatched_leaves > 0 {
            let _ = writeln!(
                s,
                "repaired: {} regions left open closed at their location's end, {} out-of-order timestamps \
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

impl Describe for Lost {
    /// `rank 1 (pid 4242 on vm): 1,234 CUDA activity records dropped by
    /// CUPTI (buffers full: raise GPUTRACE_CUDA_BUFFER)`, kinds joined by
    /// `; `.
    fn describe(&self) -> String {
        let what: Vec<String> = self.counts.iter().map(|(key, n)| crate::lost::describe(key, *n)).collect();
        format!("rank {} (pid {} on {}): {}", self.rank, self.pid, self.host, what.join("; "))
    }
}

impl Describe for Ending {
    /// `rank 1 (pid 4242 on vm) ended by SIGSEGV, its buffers written
    /// first; 1 event being written cut`.
    fn describe(&self) -> String {
        let mut how = match &self.how {
            Ended::Signal(signal) => {
                format!("ended by {}, its buffers written first", gputrace_summary::signal_name(*signal))
            }
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
    use gputrace_summary::{Clocks, Counters, NotTraced, Row};

    use super::*;

    #[test]
    fn mpi_functions_are_listed_by_time() {
        let s = RunSummary {
            processes: 2,
            mpi_ranks: 2,
            hosts: 1,
            locations: 2,
            counts: Counters { events: 10, ..Default::default() },
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
            counts: Counters { kernels: 3, ..Default::default() },
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
        let e = Ending {
            rank: 1,
            pid: 4242,
            host: "vm".into(),
            how: Ended::Signal(libc::SIGSEGV as u32),
            cut: 1,
            dropped: 0,
        };
        assert_eq!(
            e.describe(),
            "rank 1 (pid 4242 on vm) ended by SIGSEGV, its buffers written first; 1 event being written cut"
        );
        let e = Ending { how: Ended::Finished, cut: 0, dropped: 16_817, ..e };
        assert_eq!(e.describe(), "rank 1 (pid 4242 on vm) finished; 16,817 events not written (recording had stopped)");
    }
}
