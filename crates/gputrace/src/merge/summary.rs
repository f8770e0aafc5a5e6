//! The summary the merge prints: processes, locations and events, the MPI
//! functions by time, messages and bytes, and what was lost or repaired.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use raw::{CopyKind, Paradigm};

/// Time spent in one region, over all locations.
#[derive(Debug, Clone, Default)]
pub struct RegionTotals {
    pub calls: u64,
    pub time: u64,
    pub min: u64,
    pub max: u64,
}

/// Counters filled while the merge writes events.
#[derive(Debug, Default)]
pub struct Summary {
    pub processes: usize,
    pub mpi_ranks: usize,
    pub hosts: BTreeSet<String>,
    pub locations: usize,
    pub events: u64,
    /// Names of the archive's regions, by global region index.
    pub region_names: Vec<(String, Paradigm)>,
    /// Time in each region, by the same index.
    pub region_totals: Vec<RegionTotals>,
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
    /// Copies and bytes by kind (index: `CopyKind as usize`).
    pub copies: [(u64, u64); 8],
    pub dropped: u64,
    pub clamped: u64,
    pub closed_open_regions: u64,
    pub unmatched_leaves: u64,
    pub incomplete_processes: Vec<String>,
    pub archive: Option<(PathBuf, u64)>,
    pub merge_time: Duration,
    /// From the moment the program's last process began finishing its
    /// trace (its work done) to the archive written, when measurable.
    pub exit_to_archive: Option<u64>,
    pub trace_length: u64,
}

impl Summary {
    pub fn copy(&mut self, kind: CopyKind, bytes: u64) {
        let c = &mut self.copies[kind as usize];
        c.0 += 1;
        c.1 += bytes;
    }

    /// Adds a region visit; `region` indexes `region_names`.
    #[inline]
    pub fn region_done(&mut self, region: usize, duration: u64) {
        if self.region_totals.len() <= region {
            self.region_totals.resize(region + 1, RegionTotals { min: u64::MAX, ..Default::default() });
        }
        let t = &mut self.region_totals[region];
        t.calls += 1;
        t.time += duration;
        t.min = t.min.min(duration);
        t.max = t.max.max(duration);
    }

    /// Totals of the regions of `paradigm` that were visited, by name.
    pub fn regions_of(&self, paradigm: Paradigm) -> Vec<(String, RegionTotals)> {
        let mut by_name: HashMap<&str, RegionTotals> = HashMap::new();
        for (i, t) in self.region_totals.iter().enumerate() {
            let Some((name, p)) = self.region_names.get(i) else {
                continue;
            };
            if *p != paradigm || t.calls == 0 {
                continue;
            }
            let e = by_name.entry(name.as_str()).or_insert(RegionTotals { min: u64::MAX, ..Default::default() });
            e.calls += t.calls;
            e.time += t.time;
            e.min = e.min.min(t.min);
            e.max = e.max.max(t.max);
        }
        let mut v: Vec<(&str, RegionTotals)> = by_name.into_iter().collect();
        v.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(a.0.cmp(b.0)));
        v.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
    }

    /// The text of the summary (also written to summary.txt).
    /// `tables`: include the per-function tables (MPI, NCCL, kernels) —
    /// left out when `gputrace stats`'s short form follows.
    pub fn render(&self, top: usize, tables: bool) -> String {
        let mut s = String::new();
        let ranks = if self.mpi_ranks > 0 { format!(" ({} MPI ranks)", self.mpi_ranks) } else { String::new() };
        let _ = writeln!(
            s,
            "{} process{}{} on {} host{}, {} locations, {} events, {} traced",
            self.processes,
            plural(self.processes, "es"),
            ranks,
            self.hosts.len(),
            plural(self.hosts.len(), "s"),
            self.locations,
            thousands(self.events),
            human_time(self.trace_length),
        );
        let mpi = if tables { self.regions_of(Paradigm::Mpi) } else { Vec::new() };
        if !mpi.is_empty() {
            let total: u64 = mpi.iter().map(|(_, t)| t.time).sum();
            let _ = writeln!(s, "MPI functions by time (all ranks):");
            let _ = writeln!(s, "  {:<24} {:>12} {:>12} {:>11} {:>7}", "function", "calls", "time", "avg", "% MPI");
            for (name, t) in mpi.iter().take(top) {
                let _ = writeln!(
                    s,
                    "  {:<24} {:>12} {:>12} {:>11} {:>6.1}%",
                    name,
                    thousands(t.calls),
                    human_time(t.time),
                    human_time(t.time / t.calls.max(1)),
                    100.0 * t.time as f64 / total.max(1) as f64
                );
            }
            if mpi.len() > top {
                let _ = writeln!(s, "  ... and {} more", mpi.len() - top);
            }
        }
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
        let nccl = if tables { self.regions_of(Paradigm::Nccl) } else { Vec::new() };
        if !nccl.is_empty() {
            let _ = writeln!(s, "NCCL by time (enqueue on the host):");
            for (name, t) in nccl.iter().take(5) {
                let _ = writeln!(s, "  {:<24} {:>12} {:>12}", name, thousands(t.calls), human_time(t.time));
            }
        }
        let kernels = self.regions_of(Paradigm::Cuda);
        let kernel_regions: Vec<_> =
            kernels.iter().filter(|(n, _)| !n.starts_with("cu") && !n.starts_with('[')).collect();
        if self.kernels > 0 && !tables {
            let _ = writeln!(s, "GPU kernels: {} launches", thousands(self.kernels));
        } else if self.kernels > 0 {
            let _ = writeln!(s, "GPU kernels by time (all streams): {} launches", thousands(self.kernels));
            for (name, t) in kernel_regions.iter().take(5) {
                let short: String = name.chars().take(48).collect();
                let _ = writeln!(s, "  {:<48} {:>10} {:>12}", short, thousands(t.calls), human_time(t.time));
            }
        }
        let copies: Vec<String> = [
            CopyKind::HostToDevice,
            CopyKind::DeviceToHost,
            CopyKind::DeviceToDevice,
            CopyKind::HostToHost,
            CopyKind::PeerToPeer,
            CopyKind::Other,
        ]
        .iter()
        .filter(|k| self.copies[**k as usize].0 > 0)
        .map(|k| {
            let (n, b) = self.copies[*k as usize];
            format!("{} {} ({})", thousands(n), k.short_name(), human_bytes(b))
        })
        .collect();
        if !copies.is_empty() || self.memsets > 0 {
            let _ = writeln!(
                s,
                "GPU copies: {}; memsets: {} ({})",
                if copies.is_empty() { "none".to_string() } else { copies.join(", ") },
                thousands(self.memsets),
                human_bytes(self.memset_bytes)
            );
        }
        if self.dropped > 0 {
            let _ =
                writeln!(s, "lost: {} events could not be written by the traced processes", thousands(self.dropped));
        }
        for ending in &self.incomplete_processes {
            let _ = writeln!(s, "ending: {ending}");
        }
        if self.closed_open_regions > 0 || self.clamped > 0 || self.unmatched_leaves > 0 {
            let _ = writeln!(
                s,
                "repaired: {} regions left open closed at their location's last event, {} out-of-order timestamps \
                 clamped, {} unmatched leaves dropped",
                self.closed_open_regions, self.clamped, self.unmatched_leaves
            );
        }
        match &self.archive {
            Some((path, bytes)) => {
                let exit = match self.exit_to_archive {
                    Some(ns) => format!(" ({:.2} s after the program's exit)", ns as f64 / 1e9),
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
        s
    }
}

fn plural(n: usize, suffix: &str) -> &str {
    if n == 1 { "" } else { suffix }
}

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as "12.3 us", "4.56 ms", "1.23 s".
pub fn human_time(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Bytes as "512 B", "1.5 KiB", "3.2 MiB", "1.1 GiB".
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", units[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(human_time(1500), "1.5 us");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(10), "10 B");
    }

    #[test]
    fn render_lists_mpi_functions_by_time() {
        let mut s = Summary { processes: 2, mpi_ranks: 2, locations: 2, events: 10, ..Default::default() };
        s.hosts.insert("n1".into());
        s.region_names = vec![("MPI_Send".into(), Paradigm::Mpi), ("MPI_Recv".into(), Paradigm::Mpi)];
        s.region_done(0, 100);
        s.region_done(1, 300);
        s.region_done(1, 100);
        let text = s.render(10, true);
        let recv = text.find("MPI_Recv").unwrap();
        let send = text.find("MPI_Send").unwrap();
        assert!(recv < send, "{text}");
        assert!(text.contains("2 processes (2 MPI ranks) on 1 host"), "{text}");
    }
}
