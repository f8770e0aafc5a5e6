//! What a merge found, for the run summary (rendered by the `report`
//! crate): processes, locations and events, time per region, messages
//! and bytes, GPU work, and what was lost or repaired.
//!
//! [`Counters`] is the [`Sink`] that counts the events as they are
//! merged; [`Summary`] adds what the merge knows besides.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use otf2::{AttributeRef, AttributeValue};
use raw::{CopyKind, Paradigm};

use crate::inputs::{Ending, NotTraced};
use crate::sink::{Message, Record, Sink, SinkError, Work};

/// Time spent in one region, over all locations.
#[derive(Debug, Clone, Default)]
pub struct RegionTotals {
    pub calls: u64,
    pub time: u64,
    pub min: u64,
    pub max: u64,
}

/// What a merge found.
#[derive(Debug, Default)]
pub struct Summary {
    pub processes: usize,
    pub mpi_ranks: usize,
    pub hosts: BTreeSet<String>,
    pub locations: usize,
    /// The archive's events (what `otf2-print` lists): Enter and Leave,
    /// messages, collectives, RMA operations of copies, metrics; those an
    /// archive would hold when only the summary is made.
    pub events: u64,
    /// Raw events read (a GPU copy is two, in the archive four: Enter, an
    /// RMA get or put, its completion, Leave).
    pub raw_events: u64,
    /// Names of the archive's regions, by global region index.
    pub region_names: Vec<(String, Paradigm)>,
    pub counts: Counters,
    pub dropped: u64,
    pub clamped: u64,
    pub closed_open_regions: u64,
    pub unmatched_leaves: u64,
    /// The processes that did not end normally or lost events.
    pub endings: Vec<Ending>,
    /// The processes whose sources (CUPTI, NCCL) lost records before they
    /// became events, in rank order.
    pub lost: Vec<Lost>,
    /// What was not traced, and why.
    pub not_traced: Vec<NotTraced>,
    /// The archive's anchor file and its size in bytes, when one was
    /// written.
    pub archive: Option<(PathBuf, u64)>,
    pub merge_time: Duration,
    /// From the moment the program's last process began finishing its
    /// trace (its work done) to the archive written, when measurable.
    pub exit_to_archive: Option<u64>,
    pub trace_length: u64,
    /// What the message-based clock correction did, when the processes
    /// span several hosts.
    pub clock_correction: Option<crate::correct::Report>,
}

/// What one process's sources lost, by kind (none zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub rank: u32,
    pub pid: u32,
    pub host: String,
    pub counts: Vec<(raw::SourceLoss, u64)>,
}

/// The merged events, counted: a [`Sink`].
#[derive(Debug, Default, Clone)]
pub struct Counters {
    /// Events the archive gets (records without a communicator in it are
    /// counted as what they are, not as events).
    pub events: u64,
    /// Time in each region, by global region index.
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
}

impl Counters {
    /// Adds what `other` counted (another thread's or merge rank's
    /// locations): the same totals as one `Counters` fed both.
    pub fn add(&mut self, other: &Counters) {
        self.events += other.events;
        if self.region_totals.len() < other.region_totals.len() {
            self.region_totals.resize(other.region_totals.len(), RegionTotals { min: u64::MAX, ..Default::default() });
        }
        for (t, o) in self.region_totals.iter_mut().zip(&other.region_totals) {
            t.calls += o.calls;
            t.time += o.time;
            t.min = t.min.min(o.min);
            t.max = t.max.max(o.max);
        }
        self.p2p_messages += other.p2p_messages;
        self.p2p_bytes += other.p2p_bytes;
        self.collectives += other.collectives;
        self.collective_bytes += other.collective_bytes;
        self.nccl_collectives += other.nccl_collectives;
        self.nccl_collective_bytes += other.nccl_collective_bytes;
        self.nccl_messages += other.nccl_messages;
        self.nccl_message_bytes += other.nccl_message_bytes;
        self.kernels += other.kernels;
        self.memsets += other.memsets;
        self.memset_bytes += other.memset_bytes;
        for (c, o) in self.copies.iter_mut().zip(&other.copies) {
            c.0 += o.0;
            c.1 += o.1;
        }
    }

    /// The counters as little-endian words, for another merge rank.
    pub fn encode(&self) -> Vec<u64> {
        let mut w = vec![
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
        ];
        w.extend(self.copies.iter().flat_map(|c| [c.0, c.1]));
        w.push(self.region_totals.len() as u64);
        w.extend(self.region_totals.iter().flat_map(|t| [t.calls, t.time, t.min, t.max]));
        w
    }

    /// Counters from [`encode`](Self::encode)'s words; `None` for words
    /// that are not.
    pub fn decode(w: &[u64]) -> Option<Counters> {
        let (head, rest) = w.split_at_checked(12 + 16 + 1)?;
        let mut c = Counters {
            events: head[0],
            p2p_messages: head[1],
            p2p_bytes: head[2],
            collectives: head[3],
            collective_bytes: head[4],
            nccl_collectives: head[5],
            nccl_collective_bytes: head[6],
            nccl_messages: head[7],
            nccl_message_bytes: head[8],
            kernels: head[9],
            memsets: head[10],
            memset_bytes: head[11],
            ..Counters::default()
        };
        for (i, pair) in head[12..28].chunks_exact(2).enumerate() {
            c.copies[i] = (pair[0], pair[1]);
        }
        let regions = usize::try_from(head[28]).ok()?;
        if rest.len() != regions.checked_mul(4)? {
            return None;
        }
        c.region_totals =
            rest.chunks_exact(4).map(|t| RegionTotals { calls: t[0], time: t[1], min: t[2], max: t[3] }).collect();
        Some(c)
    }

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
}

impl Summary {
    /// MPI functions by time.
    pub fn mpi_functions(&self) -> Vec<(String, RegionTotals)> {
        self.regions_of(Paradigm::Mpi)
    }

    /// NCCL calls (their enqueue on the host) by time.
    pub fn nccl_calls(&self) -> Vec<(String, RegionTotals)> {
        self.regions_of(Paradigm::Nccl)
    }

    /// Kernels by name and time: the CUDA regions that are not API calls
    /// (`cu*`) or bracketed activities (`[CUDA memcpy HtoD]`).
    pub fn kernels_by_name(&self) -> Vec<(String, RegionTotals)> {
        let mut v = self.regions_of(Paradigm::Cuda);
        v.retain(|(n, _)| !n.starts_with("cu") && !n.starts_with('['));
        v
    }

    /// Copies and bytes by kind (its short name, `HtoD`), the kinds with
    /// copies only, in a fixed order.
    pub fn copies_by_kind(&self) -> Vec<(&'static str, u64, u64)> {
        [
            CopyKind::HostToDevice,
            CopyKind::DeviceToHost,
            CopyKind::DeviceToDevice,
            CopyKind::HostToHost,
            CopyKind::PeerToPeer,
            CopyKind::Other,
        ]
        .into_iter()
        .filter_map(|k| {
            let (n, b) = self.counts.copies[k as usize];
            (n > 0).then(|| (k.short_name(), n, b))
        })
        .collect()
    }

    /// Totals of the regions of `paradigm` that were visited, by name.
    pub fn regions_of(&self, paradigm: Paradigm) -> Vec<(String, RegionTotals)> {
        let mut by_name: HashMap<&str, RegionTotals> = HashMap::new();
        for (i, t) in self.counts.region_totals.iter().enumerate() {
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
}

impl Sink for Counters {
    #[inline(always)]
    fn enter(
        &mut self,
        _: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: otf2::RegionRef,
        _: usize,
        work: Work,
    ) -> Result<(), SinkError> {
        self.events += 1;
        match work {
            Work::Call => {}
            Work::Kernel => self.kernels += 1,
            Work::Memset { bytes } => {
                self.memsets += 1;
                self.memset_bytes += bytes;
            }
            Work::Copy { kind, bytes } => self.copy(kind, bytes),
        }
        Ok(())
    }

    #[inline(always)]
    fn leave(
        &mut self,
        _: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: otf2::RegionRef,
        index: usize,
        duration: u64,
    ) -> Result<(), SinkError> {
        self.events += 1;
        self.region_done(index, duration);
        Ok(())
    }

    #[inline(always)]
    fn send(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        self.events += u64::from(m.comm.is_some());
        if m.nccl {
            self.nccl_messages += 1;
            self.nccl_message_bytes += m.bytes;
        } else {
            self.p2p_messages += 1;
            self.p2p_bytes += m.bytes;
        }
        Ok(())
    }

    #[inline(always)]
    fn recv(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        self.events += u64::from(m.comm.is_some());
        Ok(())
    }

    fn program(
        &mut self,
        _: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: Option<&crate::layout::Program>,
    ) -> Result<(), SinkError> {
        // ProgramBegin and ProgramEnd are events of the archive too.
        self.events += 1;
        Ok(())
    }

    #[inline(always)]
    fn record(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        self.events += u64::from(crate::sink::written(r));
        match *r {
            Record::CollectiveEnd { sent, nccl: true, .. } => {
                self.nccl_collectives += 1;
                self.nccl_collective_bytes += sent;
            }
            Record::CollectiveEnd { sent, nccl: false, .. } => {
                self.collectives += 1;
                self.collective_bytes += sent;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_summed_by_name_busiest_first() {
        let mut s = Summary {
            region_names: vec![
                ("MPI_Send".into(), Paradigm::Mpi),
                ("MPI_Recv".into(), Paradigm::Mpi),
                ("MPI_Recv".into(), Paradigm::Mpi),
                ("cudaMalloc".into(), Paradigm::Cuda),
            ],
            ..Summary::default()
        };
        s.counts.region_done(0, 100);
        s.counts.region_done(1, 300);
        s.counts.region_done(2, 100);
        s.counts.region_done(3, 1000);
        let mpi = s.regions_of(Paradigm::Mpi);
        assert_eq!(mpi.len(), 2);
        assert_eq!(
            (mpi[0].0.as_str(), mpi[0].1.calls, mpi[0].1.time, mpi[0].1.min, mpi[0].1.max),
            ("MPI_Recv", 2, 400, 100, 300)
        );
        assert_eq!(mpi[1].0, "MPI_Send");
    }

    #[test]
    fn counters_add_and_travel_as_words() {
        let mut a = Counters::default();
        a.region_done(1, 5);
        a.copy(CopyKind::DeviceToHost, 10);
        a.events = 3;
        let mut b = Counters::default();
        b.region_done(1, 2);
        b.region_done(3, 7);
        b.p2p_messages = 4;
        let b = Counters::decode(&b.encode()).unwrap();
        a.add(&b);
        assert_eq!(a.events, 3);
        assert_eq!(a.p2p_messages, 4);
        assert_eq!(a.copies[CopyKind::DeviceToHost as usize], (1, 10));
        let r = &a.region_totals[1];
        assert_eq!((r.calls, r.time, r.min, r.max), (2, 7, 2, 5));
        assert_eq!(a.region_totals[3].calls, 1);
        assert_eq!(a.region_totals[2].calls, 0);
        assert!(Counters::decode(&[1, 2, 3]).is_none());
    }

    #[test]
    fn counters_count_what_they_are_given() {
        let region = otf2::RegionRef::from_id(0);
        let mut c = Counters::default();
        let copy = Work::Copy { kind: CopyKind::HostToDevice, bytes: 64 };
        c.enter(1, &[], region, 0, copy).unwrap();
        c.leave(2, &[], region, 0, 1).unwrap();
        let m = Message { peer: 1, comm: None, tag: 0, bytes: 8, request: None, nccl: false };
        c.send(3, &[], &m).unwrap();
        c.send(3, &[], &Message { bytes: 4, nccl: true, ..m }).unwrap();
        assert_eq!(c.copies[CopyKind::HostToDevice as usize], (1, 64));
        assert_eq!((c.p2p_messages, c.p2p_bytes, c.nccl_messages, c.nccl_message_bytes), (1, 8, 1, 4));
        assert_eq!(c.region_totals[0].calls, 1);
        // Enter and Leave; the sends name no communicator the archive has.
        assert_eq!(c.events, 2);
        let window = otf2::RmaWinRef::from_id(0);
        c.record(4, &[], &Record::RmaGet { window, remote: 0, bytes: 64, id: 1 }).unwrap();
        c.record(5, &[], &Record::RmaComplete { window, id: 1 }).unwrap();
        assert_eq!(c.events, 4);
        let comm = Some(otf2::CommRef::from_id(0));
        c.send(6, &[], &Message { comm, ..m }).unwrap();
        c.recv(7, &[], &Message { comm, ..m }).unwrap();
        assert_eq!(c.events, 6);
    }
}
