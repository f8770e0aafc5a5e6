//! The merge's side of the run summary ([`RunSummary`], declared in
//! `gputrace-summary` and rendered by the `report` crate): [`Counters`]
//! as the [`Sink`] that counts the events as they are merged, and the
//! views of the counters the summary shows (time per region by name,
//! copies by kind), made from the archive's region names.

use std::collections::HashMap;

use gputrace_summary::{Counters, RegionTotals, Row, RunSummary};
use otf2::{AttributeRef, AttributeValue};
use raw::{CopyKind, Paradigm};

use crate::sink::{Message, Record, Sink, SinkError, Work};

/// Fills `summary`'s tables from its counters: MPI functions, NCCL calls
/// and kernels by time, copies by kind. `region_names`: the archive's
/// regions by the merge's region index.
pub fn tables(summary: &mut RunSummary, region_names: &[(String, Paradigm)]) {
    let rows = |paradigm| -> Vec<Row> {
        regions_of(&summary.counts, region_names, paradigm)
            .into_iter()
            .map(|(name, t)| Row { name, calls: t.calls, time: t.time })
            .collect()
    };
    let (mpi, nccl, mut kernels) = (rows(Paradigm::Mpi), rows(Paradigm::Nccl), rows(Paradigm::Cuda));
    // Kernels: the CUDA regions that are not API calls (`cu*`) or
    // bracketed activities (`[CUDA memcpy HtoD]`).
    kernels.retain(|r| !r.name.starts_with("cu") && !r.name.starts_with('['));
    summary.mpi = mpi;
    summary.nccl = nccl;
    summary.kernels_by_name = kernels;
    summary.copies = copies_by_kind(&summary.counts);
}

/// Copies and bytes by kind (its short name, `HtoD`), the kinds with
/// copies only, in a fixed order.
fn copies_by_kind(counts: &Counters) -> Vec<(String, u64, u64)> {
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
        let (n, b) = counts.copies[k as usize];
        (n > 0).then(|| (k.short_name().to_string(), n, b))
    })
    .collect()
}

/// Totals of the regions of `paradigm` that were visited, by name,
/// busiest first.
pub fn regions_of(
    counts: &Counters,
    region_names: &[(String, Paradigm)],
    paradigm: Paradigm,
) -> Vec<(String, RegionTotals)> {
    let mut by_name: HashMap<&str, RegionTotals> = HashMap::new();
    for (i, t) in counts.region_totals.iter().enumerate() {
        let Some((name, p)) = region_names.get(i) else {
            continue;
        };
        if *p != paradigm || t.calls == 0 {
            continue;
        }
        by_name.entry(name.as_str()).or_insert(RegionTotals::EMPTY).add(t);
    }
    let mut v: Vec<(&str, RegionTotals)> = by_name.into_iter().collect();
    v.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(a.0.cmp(b.0)));
    v.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
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
            Work::Copy { kind, bytes } => self.copy(kind as usize, bytes),
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
        let names: Vec<(String, Paradigm)> = vec![
            ("MPI_Send".into(), Paradigm::Mpi),
            ("MPI_Recv".into(), Paradigm::Mpi),
            ("MPI_Recv".into(), Paradigm::Mpi),
            ("cudaMalloc".into(), Paradigm::Cuda),
            ("saxpy".into(), Paradigm::Cuda),
            ("[CUDA memcpy HtoD]".into(), Paradigm::Cuda),
        ];
        let mut s = RunSummary::default();
        for (region, time) in [(0, 100), (1, 300), (2, 100), (3, 1000), (4, 50), (4, 70), (5, 9)] {
            s.counts.region_done(region, time);
        }
        let mpi = regions_of(&s.counts, &names, Paradigm::Mpi);
        assert_eq!(mpi.len(), 2);
        assert_eq!(
            (mpi[0].0.as_str(), mpi[0].1.calls, mpi[0].1.time, mpi[0].1.min, mpi[0].1.max),
            ("MPI_Recv", 2, 400, 100, 300)
        );
        assert_eq!(mpi[1].0, "MPI_Send");
        s.counts.copy(CopyKind::DeviceToHost as usize, 10);
        s.counts.copy(CopyKind::HostToDevice as usize, 4);
        tables(&mut s, &names);
        let row = |name: &str, calls, time| Row { name: name.into(), calls, time };
        assert_eq!(s.mpi, [row("MPI_Recv", 2, 400), row("MPI_Send", 1, 100)]);
        assert_eq!(s.kernels_by_name, [row("saxpy", 2, 120)], "API calls and activities are no kernels");
        assert!(s.nccl.is_empty());
        assert_eq!(s.copies, [("HtoD".to_string(), 1, 4), ("DtoH".to_string(), 1, 10)]);
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
