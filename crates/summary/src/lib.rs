//! The run summary of a merge, declared once: the merge fills a
//! [`RunSummary`] as it counts and repairs (its [`Counters`] are a sink of
//! the merge's pass), and the `report` crate renders it (printed after
//! every merge and kept as `summary.txt`).
//!
//! It sits under both because `report` reads archives and must not depend
//! on the merge, nor the merge on the reports; so it holds plain values
//! only (names as strings, no ids of the raw streams or of the archive).

use std::path::PathBuf;
use std::time::Duration;

/// Time spent in one region, over all locations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionTotals {
    pub calls: u64,
    pub time: u64,
    pub min: u64,
    pub max: u64,
}

impl RegionTotals {
    /// Totals of no visit yet, ready to take the smallest.
    pub const EMPTY: RegionTotals = RegionTotals { calls: 0, time: 0, min: u64::MAX, max: 0 };

    /// Adds `other`'s visits.
    pub fn add(&mut self, other: &RegionTotals) {
        self.calls += other.calls;
        self.time += other.time;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Copy kinds the counters keep apart (the raw stream's copy kinds, by
/// their number).
pub const COPY_KINDS: usize = 8;

/// The merged events, counted (the merge feeds them as a sink of its
/// pass).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counters {
    /// The archive's events (what `otf2-print` lists): Enter and Leave,
    /// messages, collectives, RMA operations of copies, metrics; those an
    /// archive would hold when only the summary is made. Records without
    /// a communicator in the archive are counted as what they are, not as
    /// events.
    pub events: u64,
    /// Time in each region, by the merge's region index.
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
    /// Copies and bytes by kind (index: the raw stream's copy kind).
    pub copies: [(u64, u64); COPY_KINDS],
}

impl Counters {
    /// Adds what `other` counted (another thread's or merge rank's
    /// locations): the same totals as one `Counters` fed both.
    pub fn add(&mut self, other: &Counters) {
        if self.region_totals.len() < other.region_totals.len() {
            self.region_totals.resize(other.region_totals.len(), RegionTotals::EMPTY);
        }
        for (t, o) in self.region_totals.iter_mut().zip(&other.region_totals) {
            t.add(o);
        }
        for (c, o) in self.scalars_mut().into_iter().zip(other.scalars()) {
            *c += o;
        }
        for (c, o) in self.copies.iter_mut().zip(&other.copies) {
            c.0 += o.0;
            c.1 += o.1;
        }
    }

    /// The counts beside the regions and copies, in [`encode`](Self::encode)'s
    /// order.
    fn scalars(&self) -> [u64; 12] {
        [
            self.events,
            self.p2p_messages,
            self.p2p_bytes,
            self.collectives,
            self.collective_bytes,
            self.nccl_collectives,
            self.nccl_collective_bytes,
            self.nccl_messages,
            self.nccl_message_bytes,
            self.kernels,
            self.memsets,
            self.memset_bytes,
        ]
    }

    fn scalars_mut(&mut self) -> [&mut u64; 12] {
        [
            &mut self.events,
            &mut self.p2p_messages,
            &mut self.p2p_bytes,
            &mut self.collectives,
            &mut self.collective_bytes,
            &mut self.nccl_collectives,
            &mut self.nccl_collective_bytes,
            &mut self.nccl_messages,
            &mut self.nccl_message_bytes,
            &mut self.kernels,
            &mut self.memsets,
            &mut self.memset_bytes,
        ]
    }

    /// The counters as words, for another merge rank.
    pub fn encode(&self) -> Vec<u64> {
        let mut w = self.scalars().to_vec();
        w.extend(self.copies.iter().flat_map(|c| [c.0, c.1]));
        w.push(self.region_totals.len() as u64);
        w.extend(self.region_totals.iter().flat_map(|t| [t.calls, t.time, t.min, t.max]));
        w
    }

    /// Counters from [`encode`](Self::encode)'s words; `None` for words
    /// that are not.
    pub fn decode(w: &[u64]) -> Option<Counters> {
        let (head, rest) = w.split_at_checked(12 + 2 * COPY_KINDS + 1)?;
        let mut c = Counters::default();
        for (field, word) in c.scalars_mut().into_iter().zip(head) {
            *field = *word;
        }
        for (i, pair) in head[12..12 + 2 * COPY_KINDS].chunks_exact(2).enumerate() {
            c.copies[i] = (pair[0], pair[1]);
        }
        let regions = usize::try_from(head[12 + 2 * COPY_KINDS]).ok()?;
        if rest.len() != regions.checked_mul(4)? {
            return None;
        }
        c.region_totals =
            rest.chunks_exact(4).map(|t| RegionTotals { calls: t[0], time: t[1], min: t[2], max: t[3] }).collect();
        Some(c)
    }

    /// Adds a copy of `bytes` of copy kind `kind` (its number).
    #[inline]
    pub fn copy(&mut self, kind: usize, bytes: u64) {
        let c = &mut self.copies[kind];
        c.0 += 1;
        c.1 += bytes;
    }

    /// Adds a region visit; `region` is the merge's region index.
    #[inline]
    pub fn region_done(&mut self, region: usize, duration: u64) {
        if self.region_totals.len() <= region {
            self.region_totals.resize(region + 1, RegionTotals::EMPTY);
        }
        let t = &mut self.region_totals[region];
        t.calls += 1;
        t.time += duration;
        t.min = t.min.min(duration);
        t.max = t.max.max(duration);
    }
}

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
    /// Events it could not write (recording had stopped: a full disk).
    pub dropped: u64,
}

/// The way a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// By this signal, its buffers written first.
    Signal(u32),
    /// Without closing its trace (SIGKILL, or `_exit`).
    Unclosed,
    /// An MPI process that exited without `MPI_Finalize`.
    NoFinalize,
    /// Finished, its stream damaged.
    Damaged,
    /// Finished (with events cut or lost).
    Finished,
}

/// The usual name of a signal that ends a process (`SIGTERM`), or its
/// number.
pub fn signal_name(signal: u32) -> String {
    let name = match signal as libc::c_int {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
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

/// The message-based clock correction of a job on several hosts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// What a merge found: processes, locations and events, time per region,
/// messages and bytes, GPU work, and what was lost or repaired.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub processes: usize,
    pub mpi_ranks: usize,
    pub hosts: usize,
    pub locations: usize,
    /// The merged events, counted (the archive's events: `counts.events`).
    pub counts: Counters,
    /// Raw events read (a GPU copy is two, in the archive four: Enter, an
    /// RMA get or put, its completion, Leave).
    pub raw_events: u64,
    /// From the first event to the last, in ns.
    pub trace_length: u64,
    /// MPI functions, busiest first.
    pub mpi: Vec<Row>,
    /// NCCL calls (enqueue on the host), busiest first.
    pub nccl: Vec<Row>,
    /// Kernels by name, busiest first.
    pub kernels_by_name: Vec<Row>,
    /// Copies by kind (its short name: `HtoD`), with their bytes, in the
    /// order shown; kinds without copies left out.
    pub copies: Vec<(String, u64, u64)>,
    /// Events the traced processes could not write.
    pub dropped: u64,
    /// Events the flight recorder gave back (older than its window).
    pub expired: u64,
    /// The processes that did not end normally or lost events.
    pub endings: Vec<Ending>,
    /// Processes whose sources lost records, in rank order.
    pub lost: Vec<Lost>,
    /// What was not traced, and why.
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
    /// From the moment the program's last process began finishing its
    /// trace (its work done) to the archive written, when measurable.
    pub exit_to_archive: Option<u64>,
    /// What the message-based clock correction did, for a job on several
    /// hosts.
    pub clocks: Option<Clocks>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_and_travel_as_words() {
        let mut a = Counters::default();
        a.region_done(1, 5);
        a.copy(1, 10);
        a.events = 3;
        let mut b = Counters::default();
        b.region_done(1, 2);
        b.region_done(3, 7);
        b.p2p_messages = 4;
        b.memset_bytes = 9;
        b.copy(7, 2);
        let b = Counters::decode(&b.encode()).unwrap();
        a.add(&b);
        assert_eq!(a.events, 3);
        a.add(&Counters { events: 4, kernels: 2, ..Counters::default() });
        assert_eq!((a.events, a.kernels), (7, 2), "each count added once");
        assert_eq!((a.p2p_messages, a.memset_bytes), (4, 9));
        assert_eq!((a.copies[1], a.copies[7]), ((1, 10), (1, 2)));
        let r = &a.region_totals[1];
        assert_eq!((r.calls, r.time, r.min, r.max), (2, 7, 2, 5));
        assert_eq!(a.region_totals[3].calls, 1);
        assert_eq!(a.region_totals[2].calls, 0);
        assert!(Counters::decode(&[1, 2, 3]).is_none());
        let mut words = a.encode();
        words.pop();
        assert!(Counters::decode(&words).is_none(), "a region cut short");
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGSEGV as u32), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }
}
