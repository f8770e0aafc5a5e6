//! Where the merged events go: a [`Sink`] takes each location's events,
//! already on the reference clock and in the archive's ids.
//!
//! The OTF2 event writer is one sink (it writes the archive), the run's
//! [`Counters`](gputrace_summary::Counters) another (they count for the
//! summary), and a pair of sinks is a sink: `(&mut writer, &mut counters)`
//! does both in one pass, `&mut counters` alone only counts
//! (`GPUTRACE_ENABLE_TRACING=false`). The pass itself never asks whether
//! an archive is being written.

use otf2::{
    AttributeRef, AttributeValue, Collective, CommRef, DefsMut, EventWriter, MetricRef, MetricValue, RegionRef,
    RmaWinRef,
};
use raw::CopyKind;

use crate::layout::Program;

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

/// One event of the merged trace, other than entering and leaving a
/// region (which have [`Sink::enter`] and [`Sink::leave`]: they are most
/// of the events, and a method each is measurably cheaper than an enum).
#[derive(Debug, Clone, Copy)]
pub enum Record {
    CollectiveBegin,
    /// The end of a collective (blocking, or the completion of a
    /// non-blocking one when `request` is set); `collective` is `None` when
    /// its communicator is unknown (counted, not written).
    CollectiveEnd {
        collective: Option<Collective>,
        /// Bytes this location sent and received in it.
        sent: u64,
        received: u64,
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
    /// A sampled call path: its calling context, the context's depth
    /// (written as the unwind distance) and what took the sample.
    Sample {
        context: otf2::CallingContextRef,
        depth: u32,
        generator: otf2::InterruptGeneratorRef,
    },
}

mod context;
mod forward;
pub use context::{InContext, Left};
type Step = Result<(), SinkError>;

/// What a sink reports when it cannot take an event: boxed, so that the
/// `Result` every event passes through stays one word (an 80-byte error
/// type made the whole pass about 20% slower).
pub type SinkError = Box<otf2::Error>;

/// A point-to-point message (MPI or NCCL), sent or received.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    pub peer: u32,
    /// `None` when the communicator is unknown to the archive: counted, not
    /// written.
    pub comm: Option<CommRef>,
    pub tag: u32,
    pub bytes: u64,
    /// The request of a non-blocking send or receive.
    pub request: Option<u64>,
    pub nccl: bool,
}

/// A destination of merged events, one location at a time.
pub trait Sink {
    /// The archive's definitions, for those met while events are written
    /// (attribute names, string values); `None` when nothing is written.
    fn defs(&mut self) -> Option<DefsMut<'_>> {
        None
    }

    /// Enters `region` at `time`; `index` is its place in the layout's
    /// region names, `work` what it is.
    fn enter(
        &mut self,
        time: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
    ) -> Result<(), SinkError>;

    /// Leaves `region` at `time`, `duration` after entering it.
    fn leave(
        &mut self,
        time: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        duration: u64,
    ) -> Result<(), SinkError>;

    /// Enters `region` as the leaf of the calling context `cx` (an MPI
    /// call whose call path was recorded, `GPUTRACE_UNWINDING`); a sink
    /// that knows no call paths takes it as [`enter`](Self::enter).
    fn enter_in(
        &mut self,
        time: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
        _cx: InContext,
    ) -> Result<(), SinkError> {
        self.enter(time, attributes, region, index, work)
    }

    /// Leaves a region entered by [`enter_in`](Self::enter_in).
    fn leave_in(&mut self, time: u64, attributes: &[(AttributeRef, AttributeValue)], r: Left, _cx: InContext) -> Step {
        self.leave(time, attributes, r.region, r.index, r.duration)
    }

    /// The calling context of the API call (a CUDA launch or copy call
    /// whose call path was recorded, `GPUTRACE_UNWINDING`) that started
    /// the GPU work entered next on this location (its kernel, copy or
    /// memset): told just before that work's [`enter`](Self::enter). A
    /// sink that knows no call paths ignores it.
    fn launched_from(&mut self, _cx: InContext) {}

    /// A message sent at `time`.
    fn send(&mut self, time: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError>;

    /// A message received at `time`.
    fn recv(&mut self, time: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError>;

    /// Takes any other event at `time`, with the attributes that go with
    /// it (empty for most).
    fn record(
        &mut self,
        time: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        record: &Record,
    ) -> Result<(), SinkError>;

    /// The program's begin (`Some`: what it ran) or end (`None`) on a
    /// process's master thread; ignored by sinks that neither write nor
    /// count events.
    fn program(
        &mut self,
        _time: u64,
        _attributes: &[(AttributeRef, AttributeValue)],
        _begin: Option<&Program>,
    ) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Sinks besides the archive's writer and the summary's counters, fed by
/// the same pass (a profile, an analysis): a sink that is also told what
/// the archive defines before the first event, and where each location's
/// events begin and end. `()` is the one that takes nothing.
///
/// The merge runs the locations on several threads when the extra sink can
/// be split: [`split`](Self::split) makes an empty sink for one worker
/// (after [`defined`](Self::defined), knowing what it knows), and
/// [`join`](Self::join) adds a worker's results back, in worker order, so
/// that the joined sink holds what one sink fed every location would. An
/// extra sink that cannot be split (`split` gives `None`, the default)
/// keeps the merge on one thread.
pub trait Extra: Sink + Send {
    /// The definitions are complete; events follow.
    fn defined(&mut self, _defined: &crate::Defined<'_>) {}
    /// An empty sink for another thread's locations.
    fn split(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// Adds the results of a sink made by [`split`](Self::split).
    fn join(&mut self, _part: Self)
    where
        Self: Sized,
    {
    }
    /// The results as bytes, for a merge rank to send to rank 0 (a merge
    /// run as an MPI job); `None`: it cannot.
    fn encode(&self) -> Option<Vec<u8>> {
        None
    }
    /// Adds results [`encode`](Self::encode)d by another merge rank's
    /// sink (one told of the same definitions); false when the bytes make
    /// no sense.
    fn join_encoded(&mut self, _bytes: &[u8]) -> bool {
        false
    }
    /// The events that follow are `location`'s, a location of the
    /// `process`-th process.
    fn begin_location(&mut self, _process: usize, _location: &crate::layout::LocationPlan) {}
    /// The location's events are over (its open regions closed).
    fn end_location(&mut self) {}
}

impl Extra for () {
    fn split(&self) -> Option<()> {
        Some(())
    }
    fn encode(&self) -> Option<Vec<u8>> {
        Some(Vec::new())
    }
    fn join_encoded(&mut self, bytes: &[u8]) -> bool {
        bytes.is_empty()
    }
}

/// Takes nothing: the sink of [`Extra`] `()`.
impl Sink for () {
    #[inline(always)]
    fn enter(
        &mut self,
        _: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        _: usize,
        _: Work,
    ) -> Result<(), SinkError> {
        Ok(())
    }

    #[inline(always)]
    fn leave(
        &mut self,
        _: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        _: usize,
        _: u64,
    ) -> Result<(), SinkError> {
        Ok(())
    }

    #[inline(always)]
    fn send(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], _: &Message) -> Result<(), SinkError> {
        Ok(())
    }

    #[inline(always)]
    fn recv(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], _: &Message) -> Result<(), SinkError> {
        Ok(())
    }

    #[inline(always)]
    fn record(&mut self, _: u64, _: &[(AttributeRef, AttributeValue)], _: &Record) -> Result<(), SinkError> {
        Ok(())
    }
}

impl Sink for EventWriter<'_> {
    fn defs(&mut self) -> Option<DefsMut<'_>> {
        Some(EventWriter::defs(self))
    }

    #[inline(always)]
    fn enter(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        _: usize,
        _: Work,
    ) -> Result<(), SinkError> {
        attach(self, attributes)?;
        EventWriter::enter(self, t, region).map_err(Box::new)
    }

    #[inline(always)]
    fn leave(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        _: usize,
        _: u64,
    ) -> Result<(), SinkError> {
        attach(self, attributes)?;
        EventWriter::leave(self, t, region).map_err(Box::new)
    }

    #[inline(always)]
    fn enter_in(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        _: usize,
        _: Work,
        cx: InContext,
    ) -> Step {
        attach(self, attributes)?;
        EventWriter::calling_context_enter(self, t, cx.context, cx.depth).map_err(Box::new)
    }

    #[inline(always)]
    fn leave_in(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], _: Left, cx: InContext) -> Step {
        attach(self, attributes)?;
        EventWriter::calling_context_leave(self, t, cx.context).map_err(Box::new)
    }

    #[inline(always)]
    fn send(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        write_message(self, t, attributes, m, true)
    }

    #[inline(always)]
    fn recv(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        write_message(self, t, attributes, m, false)
    }

    #[inline(always)]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        if written(r) {
            attach(self, attributes)?;
        }
        write_record(self, t, r).map_err(Box::new)
    }

    fn program(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        begin: Option<&Program>,
    ) -> Result<(), SinkError> {
        attach(self, attributes)?;
        match begin {
            Some(p) => self.program_begin(t, p.name, &p.args),
            // The exit status is the launcher's, not each process's.
            None => self.program_end(t, None),
        }
        .map_err(Box::new)
    }
}

/// Attaches `attributes` to the writer's next record.
#[inline(always)]
fn attach(w: &mut EventWriter<'_>, attributes: &[(AttributeRef, AttributeValue)]) -> Result<(), SinkError> {
    if !attributes.is_empty() {
        w.attributes(attributes).map_err(Box::new)?;
    }
    Ok(())
}

/// Writes a message sent (`send`) or received, with its attributes; one
/// whose communicator the archive does not know is not written.
#[inline(always)]
fn write_message(
    w: &mut EventWriter<'_>,
    t: u64,
    attributes: &[(AttributeRef, AttributeValue)],
    m: &Message,
    send: bool,
) -> Result<(), SinkError> {
    let Some(comm) = m.comm else { return Ok(()) };
    attach(w, attributes)?;
    match (send, m.request) {
        (true, Some(q)) => w.mpi_isend(t, m.peer, comm, m.tag, m.bytes, q),
        (true, None) => w.mpi_send(t, m.peer, comm, m.tag, m.bytes),
        (false, Some(q)) => w.mpi_irecv(t, m.peer, comm, m.tag, m.bytes, q),
        (false, None) => w.mpi_recv(t, m.peer, comm, m.tag, m.bytes),
    }
    .map_err(Box::new)
}

/// Writes `r` to the archive (its attributes already attached).
#[inline]
fn write_record(w: &mut EventWriter<'_>, t: u64, r: &Record) -> otf2::Result<()> {
    match *r {
        Record::CollectiveBegin => w.mpi_collective_begin(t),
        Record::CollectiveEnd { collective: Some(ref k), request: Some(q), .. } => {
            w.non_blocking_collective_complete(t, k, q)
        }
        Record::CollectiveEnd { collective: Some(ref k), request: None, .. } => w.mpi_collective_end(t, k),
        Record::CollectiveEnd { collective: None, .. } => Ok(()),
        Record::IsendComplete { request } => w.mpi_isend_complete(t, request),
        Record::IrecvRequest { request } => w.mpi_irecv_request(t, request),
        Record::RequestTest { request } => w.mpi_request_test(t, request),
        Record::RequestCancelled { request } => w.mpi_request_cancelled(t, request),
        Record::CollectiveRequest { request } => w.non_blocking_collective_request(t, request),
        Record::RmaGet { window, remote, bytes, id } => w.rma_get(t, window, remote, bytes, id),
        Record::RmaPut { window, remote, bytes, id } => w.rma_put(t, window, remote, bytes, id),
        Record::RmaComplete { window, id } => w.rma_op_complete_blocking(t, window, id),
        Record::Metric { metric, value } => w.metric(t, metric, &[MetricValue::U64(value)]),
        Record::Sample { context, depth, generator } => w.calling_context_sample(t, context, depth, generator),
    }
}

/// Whether the archive gets a record for `r` (events whose communicator
/// is unknown are only counted).
pub fn written(r: &Record) -> bool {
    !matches!(r, Record::CollectiveEnd { collective: None, .. })
}
