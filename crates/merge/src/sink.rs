//! Where the merged events go: a [`Sink`] takes each location's events,
//! already on the reference clock and in the archive's ids.
//!
//! The OTF2 event writer is one sink (it writes the archive), the run's
//! [`Counters`](crate::Counters) another (they count for the summary), and
//! a pair of sinks is a sink: `(&mut writer, &mut counters)` does both in
//! one pass, `&mut counters` alone only counts (`GPUTRACE_ENABLE_TRACING=
//! false`). The pass itself never asks whether an archive is being
//! written.

use otf2::{
    AttributeRef, AttributeValue, Collective, CommRef, Definitions, EventWriter, MetricRef, MetricValue, RegionRef,
    RmaWinRef,
};
use raw::CopyKind;

/// What a region is, for those who count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// A host region (an MPI function, a CUDA API call, ...).
    Call,
    Kernel,
    Memset {
        bytes: u64,
    },
    Copy {
        kind: CopyKind,
        bytes: u64,
    },
}

/// One event of the merged trace.
#[derive(Debug, Clone, Copy)]
pub enum Record {
    /// `index`: the region's place in [`Layout::region_names`](crate::layout::Layout).
    Enter {
        region: RegionRef,
        index: usize,
        work: Work,
    },
    /// `duration`: since the matching Enter.
    Leave {
        region: RegionRef,
        index: usize,
        duration: u64,
    },
    /// A point-to-point send (MPI or NCCL); `comm` is `None` when the
    /// communicator is unknown to the archive (counted, not written).
    Send {
        peer: u32,
        comm: Option<CommRef>,
        tag: u32,
        bytes: u64,
        request: Option<u64>,
        nccl: bool,
    },
    Recv {
        peer: u32,
        comm: CommRef,
        tag: u32,
        bytes: u64,
        request: Option<u64>,
    },
    CollectiveBegin,
    /// The end of a collective (blocking, or the completion of a
    /// non-blocking one when `request` is set); `collective` is `None` when
    /// its communicator is unknown (counted, not written).
    CollectiveEnd {
        collective: Option<Collective>,
        sent: u64,
        request: Option<u64>,
        nccl: bool,
    },
    IsendComplete {
        request: u64,
    },
    IrecvRequest {
        request: u64,
    },
    RequestTest {
        request: u64,
    },
    RequestCancelled {
        request: u64,
    },
    CollectiveRequest {
        request: u64,
    },
    /// A copy as one-sided communication of its context's window.
    RmaGet {
        window: RmaWinRef,
        remote: u32,
        bytes: u64,
        id: u64,
    },
    RmaPut {
        window: RmaWinRef,
        remote: u32,
        bytes: u64,
        id: u64,
    },
    RmaComplete {
        window: RmaWinRef,
        id: u64,
    },
    Metric {
        metric: MetricRef,
        value: u64,
    },
}

/// A destination of merged events, one location at a time.
pub trait Sink {
    /// The archive's definitions, for those met while events are written
    /// (attribute names, string values); `None` when nothing is written.
    fn defs(&mut self) -> Option<&mut Definitions> {
        None
    }

    /// Takes one event at `time`, with the attributes that go with it
    /// (empty for most).
    fn record(&mut self, time: u64, attributes: &[(AttributeRef, AttributeValue)], record: &Record)
    -> otf2::Result<()>;
}

impl Sink for EventWriter<'_> {
    fn defs(&mut self) -> Option<&mut Definitions> {
        Some(EventWriter::defs(self))
    }

    #[inline]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> otf2::Result<()> {
        if !attributes.is_empty() && written(r) {
            self.attributes(attributes)?;
        }
        match *r {
            Record::Enter { region, .. } => self.enter(t, region),
            Record::Leave { region, .. } => self.leave(t, region),
            Record::Send { peer, comm: Some(c), tag, bytes, request: Some(q), .. } => {
                self.mpi_isend(t, peer, c, tag, bytes, q)
            }
            Record::Send { peer, comm: Some(c), tag, bytes, request: None, .. } => {
                self.mpi_send(t, peer, c, tag, bytes)
            }
            Record::Send { comm: None, .. } => Ok(()),
            Record::Recv { peer, comm, tag, bytes, request: Some(q) } => self.mpi_irecv(t, peer, comm, tag, bytes, q),
            Record::Recv { peer, comm, tag, bytes, request: None } => self.mpi_recv(t, peer, comm, tag, bytes),
            Record::CollectiveBegin => self.mpi_collective_begin(t),
            Record::CollectiveEnd { collective: Some(ref k), request: Some(q), .. } => {
                self.non_blocking_collective_complete(t, k, q)
            }
            Record::CollectiveEnd { collective: Some(ref k), request: None, .. } => self.mpi_collective_end(t, k),
            Record::CollectiveEnd { collective: None, .. } => Ok(()),
            Record::IsendComplete { request } => self.mpi_isend_complete(t, request),
            Record::IrecvRequest { request } => self.mpi_irecv_request(t, request),
            Record::RequestTest { request } => self.mpi_request_test(t, request),
            Record::RequestCancelled { request } => self.mpi_request_cancelled(t, request),
            Record::CollectiveRequest { request } => self.non_blocking_collective_request(t, request),
            Record::RmaGet { window, remote, bytes, id } => self.rma_get(t, window, remote, bytes, id),
            Record::RmaPut { window, remote, bytes, id } => self.rma_put(t, window, remote, bytes, id),
            Record::RmaComplete { window, id } => self.rma_op_complete_blocking(t, window, id),
            Record::Metric { metric, value } => self.metric(t, metric, &[MetricValue::U64(value)]),
        }
    }
}

/// Whether the archive gets a record for `r` (events whose communicator
/// is unknown are only counted).
pub fn written(r: &Record) -> bool {
    !matches!(r, Record::Send { comm: None, .. } | Record::CollectiveEnd { collective: None, .. })
}

impl<A: Sink, B: Sink> Sink for (A, B) {
    fn defs(&mut self) -> Option<&mut Definitions> {
        if self.0.defs().is_some() { self.0.defs() } else { self.1.defs() }
    }

    #[inline]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> otf2::Result<()> {
        self.0.record(t, attributes, r)?;
        self.1.record(t, attributes, r)
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn defs(&mut self) -> Option<&mut Definitions> {
        (**self).defs()
    }

    #[inline]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> otf2::Result<()> {
        (**self).record(t, attributes, r)
    }
}
