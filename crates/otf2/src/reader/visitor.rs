//! [`EventVisitor`]: what a reader calls for each event record.
//!
//! Every method has an empty default, so a visitor implements only the
//! records it cares about; new record kinds can be added later without
//! breaking existing visitors (the tracing crate's sink pattern).

use crate::ffi::attributes::Attributes;
use crate::refs::{
    CallingContextRef, CommRef, InterruptGeneratorRef, LocationRef, MetricRef, RegionRef, RmaWinRef, StringRef,
};
use crate::types::Paradigm;
use crate::values::{Collective, MetricValue};

/// What every record has: where and when it happened, and its attributes.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct EventContext<'a> {
    /// The location the record belongs to.
    pub location: LocationRef,
    /// Its timestamp, with the location's clock offsets applied.
    pub time: u64,
    /// The attributes attached to the record (often none).
    pub attributes: Attributes<'a>,
}

impl<'a> EventContext<'a> {
    /// A record's context made by a visitor rather than read: a filter
    /// that passes records on (a time window that cuts a region at its
    /// edge writes an Enter or Leave there, without attributes).
    pub fn new(location: LocationRef, time: u64, attributes: Attributes<'a>) -> Self {
        Self { location, time, attributes }
    }
}

/// Receives the events of a location, one call per record, in stream
/// order. Ranks (`receiver`, `sender`, `remote`, `root`) are ranks of the
/// record's communicator; [`GlobalDefs::comm_rank_location`] maps them to
/// locations.
///
/// A panic in a method is carried across OTF2 and resumed in the caller of
/// the read. To stop reading early, return `true` from
/// [`should_stop`](Self::should_stop).
///
/// [`GlobalDefs::comm_rank_location`]: crate::reader::GlobalDefs::comm_rank_location
#[allow(unused_variables)]
pub trait EventVisitor {
    /// `Enter`.
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {}
    /// `Leave`.
    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {}
    /// `MpiSend`.
    fn mpi_send(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, length: u64) {}
    /// `MpiIsend`.
    fn mpi_isend(
        &mut self,
        ev: &EventContext<'_>,
        receiver: u32,
        comm: CommRef,
        tag: u32,
        length: u64,
        request_id: u64,
    ) {
    }
    /// `MpiIsendComplete`.
    fn mpi_isend_complete(&mut self, ev: &EventContext<'_>, request_id: u64) {}
    /// `MpiIrecvRequest`.
    fn mpi_irecv_request(&mut self, ev: &EventContext<'_>, request_id: u64) {}
    /// `MpiRecv`.
    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64) {}
    /// `MpiIrecv`.
    fn mpi_irecv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64, request_id: u64) {
    }
    /// `MpiRequestTest`.
    fn mpi_request_test(&mut self, ev: &EventContext<'_>, request_id: u64) {}
    /// `MpiRequestCancelled`.
    fn mpi_request_cancelled(&mut self, ev: &EventContext<'_>, request_id: u64) {}
    /// `MpiCollectiveBegin`.
    fn mpi_collective_begin(&mut self, ev: &EventContext<'_>) {}
    /// `MpiCollectiveEnd`.
    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, collective: &Collective) {}
    /// `NonBlockingCollectiveRequest`.
    fn non_blocking_collective_request(&mut self, ev: &EventContext<'_>, request_id: u64) {}
    /// `NonBlockingCollectiveComplete`.
    fn non_blocking_collective_complete(&mut self, ev: &EventContext<'_>, collective: &Collective, request_id: u64) {}
    /// `RmaWinCreate`.
    fn rma_win_create(&mut self, ev: &EventContext<'_>, win: RmaWinRef) {}
    /// `RmaWinDestroy`.
    fn rma_win_destroy(&mut self, ev: &EventContext<'_>, win: RmaWinRef) {}
    /// `RmaPut`.
    fn rma_put(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64) {}
    /// `RmaGet`.
    fn rma_get(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64) {}
    /// `RmaOpCompleteBlocking`.
    fn rma_op_complete_blocking(&mut self, ev: &EventContext<'_>, win: RmaWinRef, matching_id: u64) {}
    /// `RmaOpCompleteNonBlocking`.
    fn rma_op_complete_non_blocking(&mut self, ev: &EventContext<'_>, win: RmaWinRef, matching_id: u64) {}
    /// `RmaOpTest`.
    fn rma_op_test(&mut self, ev: &EventContext<'_>, win: RmaWinRef, matching_id: u64) {}
    /// `Metric`: one value per member of the metric's class.
    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {}
    /// `ThreadFork`.
    fn thread_fork(&mut self, ev: &EventContext<'_>, model: Paradigm, threads: u32) {}
    /// `ThreadJoin`.
    fn thread_join(&mut self, ev: &EventContext<'_>, model: Paradigm) {}
    /// `CommCreate`.
    fn comm_create(&mut self, ev: &EventContext<'_>, comm: CommRef) {}
    /// `CommDestroy`.
    fn comm_destroy(&mut self, ev: &EventContext<'_>, comm: CommRef) {}
    /// `ProgramBegin`: the program's name (its arguments are not passed on).
    fn program_begin(&mut self, ev: &EventContext<'_>, name: StringRef) {}
    /// `ProgramEnd`: the exit status, when known.
    fn program_end(&mut self, ev: &EventContext<'_>, status: Option<i64>) {}
    /// `MeasurementOnOff`: `on` is false when recording was switched off.
    fn measurement_on_off(&mut self, ev: &EventContext<'_>, on: bool) {}
    /// `BufferFlush`: the measurement system flushed its buffer from
    /// `ev.time` to `stop_time` (written by online tracers such as Score-P).
    fn buffer_flush(&mut self, ev: &EventContext<'_>, stop_time: u64) {}
    /// `CallingContextSample`: the location's call path `context` sampled
    /// by `generator`.
    fn calling_context_sample(
        &mut self,
        ev: &EventContext<'_>,
        context: CallingContextRef,
        unwind_distance: u32,
        generator: InterruptGeneratorRef,
    ) {
    }
    /// `CallingContextEnter`: enters `region`, the leaf of `context`
    /// (archives with unwinding on: Score-P's, gputrace's with
    /// `GPUTRACE_UNWINDING`). By default an [`enter`](Self::enter) of
    /// the region.
    fn calling_context_enter(
        &mut self,
        ev: &EventContext<'_>,
        context: CallingContextRef,
        unwind_distance: u32,
        region: RegionRef,
    ) {
        self.enter(ev, region)
    }
    /// `CallingContextLeave`: leaves `region`, the leaf of `context`. By
    /// default a [`leave`](Self::leave) of the region.
    fn calling_context_leave(&mut self, ev: &EventContext<'_>, context: CallingContextRef, region: RegionRef) {
        self.leave(ev, region)
    }
    /// A record of a kind this OTF2 version does not know.
    fn unknown(&mut self, ev: &EventContext<'_>) {}

    /// Asked after every record; `true` stops the read after it.
    fn should_stop(&self) -> bool {
        false
    }
}
