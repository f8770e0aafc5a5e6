//! [`EventWriter`]: writes the event records of one location.
//!
//! Records go straight into OTF2's chunk buffer, which is flushed to the
//! location's event file as it fills, so memory stays bounded however long
//! the stream. Timestamps are in the archive's timer ticks (nanoseconds by
//! default) and must not decrease within a location: that is the caller's
//! guarantee and is not checked, since checking would cost every record a
//! compare and a branch for an error the caller can prevent once upstream.
//!
//! The MPI-style records identify peers by rank in the record's
//! communicator (or RMA window's communicator), not by location id; see
//! [`Definitions::group`].

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::defs::Definitions;
use crate::defs::EventSummary;
use crate::error::{Error, Result};
use crate::ffi::events::EvtWriter;
use crate::refs::{
    AttributeRef, CallingContextRef, CommRef, InterruptGeneratorRef, LocationRef, MetricRef, RegionRef, RmaWinRef,
    StringRef,
};
use crate::types::Paradigm;
use crate::values::{AttributeValue, Collective, MetricValue};

/// The event writer of one location, from
/// [`ArchiveWriter::event_writer`](crate::ArchiveWriter::event_writer).
///
/// Every record method takes the timestamp first. Attributes for a record
/// are attached just before it:
///
/// ```no_run
/// # use otf2::*;
/// # fn f(w: &mut EventWriter<'_>, grid: AttributeRef, kernel: RegionRef) -> Result<()> {
/// w.attributes(&[(grid, AttributeValue::U32(128))])?.enter(1_000, kernel)?;
/// w.leave(2_000, kernel)?;
/// # Ok(()) }
/// ```
///
/// Close it with [`close`](Self::close) to see errors; dropping it closes
/// it too and leaves any error for
/// [`ArchiveWriter::close`](crate::ArchiveWriter::close) to report.
pub struct EventWriter<'a> {
    raw: EvtWriter<'a>,
    home: Home<'a>,
    slot: usize,
    location: LocationRef,
    count: u64,
    first_time: u64,
    last_time: u64,
    finished: bool,
}

impl<'a> EventWriter<'a> {
    pub(crate) fn new(raw: EvtWriter<'a>, home: Home<'a>, slot: usize, location: LocationRef) -> Self {
        Self { raw, home, slot, location, count: 0, first_time: 0, last_time: 0, finished: false }
    }

    /// The location being written.
    pub fn location(&self) -> LocationRef {
        self.location
    }

    /// Records written so far.
    pub fn events_written(&self) -> u64 {
        self.count
    }

    /// The definition builder, for definitions first met while writing
    /// events (a new kernel name, a new communicator). A writer of
    /// [`ConcurrentWriters`](crate::ConcurrentWriters) holds the lock on
    /// the shared definitions while the returned value lives.
    pub fn defs(&mut self) -> DefsMut<'_> {
        match &mut self.home {
            Home::Own { defs, .. } => DefsMut::Own(defs),
            Home::Shared { defs, .. } => DefsMut::Locked(lock(defs)),
        }
    }

    /// Attaches attributes to the next record (and only to it).
    ///
    /// # Errors
    ///
    /// OTF2 refuses the same attribute twice on one record.
    pub fn attributes(&mut self, attributes: &[(AttributeRef, AttributeValue)]) -> Result<&mut Self> {
        for (attribute, value) in attributes {
            self.raw.add_attribute(*attribute, value)?;
        }
        Ok(self)
    }

    /// Attaches one attribute to the next record.
    pub fn attribute(&mut self, attribute: AttributeRef, value: AttributeValue) -> Result<&mut Self> {
        self.raw.add_attribute(attribute, &value)?;
        Ok(self)
    }

    #[inline(always)]
    fn note(&mut self, time: u64) {
        if self.count == 0 {
            self.first_time = time;
        }
        self.last_time = time;
        self.count += 1;
    }

    /// Enters `region` (`Enter`).
    #[inline]
    pub fn enter(&mut self, time: u64, region: RegionRef) -> Result<()> {
        self.note(time);
        self.raw.enter(time, region)
    }

    /// Leaves `region` (`Leave`).
    #[inline]
    pub fn leave(&mut self, time: u64, region: RegionRef) -> Result<()> {
        self.note(time);
        self.raw.leave(time, region)
    }

    /// A blocking send of `length` bytes to rank `receiver` of `comm` (`MpiSend`).
    #[inline]
    pub fn mpi_send(&mut self, time: u64, receiver: u32, comm: CommRef, tag: u32, length: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_send(time, receiver, comm, tag, length)
    }

    /// A non-blocking send (`MpiIsend`); completed by
    /// [`mpi_isend_complete`](Self::mpi_isend_complete) with the same request id.
    #[inline]
    pub fn mpi_isend(
        &mut self,
        time: u64,
        receiver: u32,
        comm: CommRef,
        tag: u32,
        length: u64,
        request_id: u64,
    ) -> Result<()> {
        self.note(time);
        self.raw.mpi_isend(time, receiver, comm, tag, length, request_id)
    }

    /// Completion of a non-blocking send (`MpiIsendComplete`).
    #[inline]
    pub fn mpi_isend_complete(&mut self, time: u64, request_id: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_isend_complete(time, request_id)
    }

    /// Start of a non-blocking receive (`MpiIrecvRequest`); completed by
    /// [`mpi_irecv`](Self::mpi_irecv) with the same request id.
    #[inline]
    pub fn mpi_irecv_request(&mut self, time: u64, request_id: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_irecv_request(time, request_id)
    }

    /// A blocking receive of `length` bytes from rank `sender` of `comm` (`MpiRecv`).
    #[inline]
    pub fn mpi_recv(&mut self, time: u64, sender: u32, comm: CommRef, tag: u32, length: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_recv(time, sender, comm, tag, length)
    }

    /// Completion of a non-blocking receive (`MpiIrecv`).
    #[inline]
    pub fn mpi_irecv(
        &mut self,
        time: u64,
        sender: u32,
        comm: CommRef,
        tag: u32,
        length: u64,
        request_id: u64,
    ) -> Result<()> {
        self.note(time);
        self.raw.mpi_irecv(time, sender, comm, tag, length, request_id)
    }

    /// An unsuccessful test of a request (`MpiRequestTest`).
    #[inline]
    pub fn mpi_request_test(&mut self, time: u64, request_id: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_request_test(time, request_id)
    }

    /// A cancelled request (`MpiRequestCancelled`).
    #[inline]
    pub fn mpi_request_cancelled(&mut self, time: u64, request_id: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_request_cancelled(time, request_id)
    }

    /// Start of a collective operation (`MpiCollectiveBegin`).
    #[inline]
    pub fn mpi_collective_begin(&mut self, time: u64) -> Result<()> {
        self.note(time);
        self.raw.mpi_collective_begin(time)
    }

    /// End of a collective operation (`MpiCollectiveEnd`).
    #[inline]
    pub fn mpi_collective_end(&mut self, time: u64, collective: &Collective) -> Result<()> {
        self.note(time);
        self.raw.mpi_collective_end(time, collective)
    }

    /// Start of a non-blocking collective (`NonBlockingCollectiveRequest`).
    #[inline]
    pub fn non_blocking_collective_request(&mut self, time: u64, request_id: u64) -> Result<()> {
        self.note(time);
        self.raw.non_blocking_collective_request(time, request_id)
    }

    /// Completion of a non-blocking collective (`NonBlockingCollectiveComplete`).
    #[inline]
    pub fn non_blocking_collective_complete(
        &mut self,
        time: u64,
        collective: &Collective,
        request_id: u64,
    ) -> Result<()> {
        self.note(time);
        self.raw.non_blocking_collective_complete(time, collective, request_id)
    }

    /// Creation of an RMA window (`RmaWinCreate`).
    #[inline]
    pub fn rma_win_create(&mut self, time: u64, win: RmaWinRef) -> Result<()> {
        self.note(time);
        self.raw.rma_win_create(time, win)
    }

    /// Destruction of an RMA window (`RmaWinDestroy`).
    #[inline]
    pub fn rma_win_destroy(&mut self, time: u64, win: RmaWinRef) -> Result<()> {
        self.note(time);
        self.raw.rma_win_destroy(time, win)
    }

    /// Start of a put of `bytes` to rank `remote` of `win`'s communicator
    /// (`RmaPut`); its completion names the same `matching_id`.
    #[inline]
    pub fn rma_put(&mut self, time: u64, win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64) -> Result<()> {
        self.note(time);
        self.raw.rma_put(time, win, remote, bytes, matching_id)
    }

    /// Start of a get of `bytes` from rank `remote` (`RmaGet`).
    #[inline]
    pub fn rma_get(&mut self, time: u64, win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64) -> Result<()> {
        self.note(time);
        self.raw.rma_get(time, win, remote, bytes, matching_id)
    }

    /// Completion of a blocking RMA operation (`RmaOpCompleteBlocking`).
    #[inline]
    pub fn rma_op_complete_blocking(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.note(time);
        self.raw.rma_op_complete_blocking(time, win, matching_id)
    }

    /// Completion of a non-blocking RMA operation (`RmaOpCompleteNonBlocking`).
    #[inline]
    pub fn rma_op_complete_non_blocking(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.note(time);
        self.raw.rma_op_complete_non_blocking(time, win, matching_id)
    }

    /// An unsuccessful test of an RMA operation (`RmaOpTest`).
    #[inline]
    pub fn rma_op_test(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.note(time);
        self.raw.rma_op_test(time, win, matching_id)
    }

    /// Values of a metric class or instance, one per member in member
    /// order (`Metric`). The value types are not checked against the
    /// members' types.
    ///
    /// # Errors
    ///
    /// [`Error::TooManyMetricValues`] for more than 255 values.
    #[inline]
    pub fn metric(&mut self, time: u64, metric: MetricRef, values: &[MetricValue]) -> Result<()> {
        if values.len() > usize::from(u8::MAX) {
            return Err(Error::TooManyMetricValues { count: values.len() });
        }
        self.note(time);
        self.raw.metric(time, metric, values)
    }

    /// A sample of the location's call path, `context`, taken by
    /// `generator` (`CallingContextSample`). `unwind_distance` counts the
    /// frames of the path that are new since the location's previous
    /// sample or event (OTF2 3.0, *CallingContext*): the whole path's depth
    /// when the writer does not know.
    #[inline]
    pub fn calling_context_sample(
        &mut self,
        time: u64,
        context: CallingContextRef,
        unwind_distance: u32,
        generator: InterruptGeneratorRef,
    ) -> Result<()> {
        self.note(time);
        self.raw.calling_context_sample(time, context, unwind_distance, generator)
    }

    /// Enters the region that is the leaf of `context`
    /// (`CallingContextEnter`, written in place of an `Enter` when the
    /// call path is known, as Score-P does with unwinding on);
    /// `unwind_distance` as for [`calling_context_sample`](Self::calling_context_sample).
    #[inline]
    pub fn calling_context_enter(&mut self, time: u64, context: CallingContextRef, unwind_distance: u32) -> Result<()> {
        self.note(time);
        self.raw.calling_context_enter(time, context, unwind_distance)
    }

    /// Leaves the region entered by a `CallingContextEnter` of `context`
    /// (`CallingContextLeave`).
    #[inline]
    pub fn calling_context_leave(&mut self, time: u64, context: CallingContextRef) -> Result<()> {
        self.note(time);
        self.raw.calling_context_leave(time, context)
    }

    /// A fork of `threads` threads of paradigm `model` (`ThreadFork`).
    #[inline]
    pub fn thread_fork(&mut self, time: u64, model: Paradigm, threads: u32) -> Result<()> {
        self.note(time);
        self.raw.thread_fork(time, model, threads)
    }

    /// The join matching a [`thread_fork`](Self::thread_fork) (`ThreadJoin`).
    #[inline]
    pub fn thread_join(&mut self, time: u64, model: Paradigm) -> Result<()> {
        self.note(time);
        self.raw.thread_join(time, model)
    }

    /// Creation of a communicator on this location (`CommCreate`), for
    /// communicators defined with `CommFlags::CREATE_DESTROY_EVENTS`.
    #[inline]
    pub fn comm_create(&mut self, time: u64, comm: CommRef) -> Result<()> {
        self.note(time);
        self.raw.comm_create(time, comm)
    }

    /// The program's start on this location (`ProgramBegin`): its name and
    /// arguments (the name left out), as Score-P writes it on a process's
    /// main thread.
    pub fn program_begin(&mut self, time: u64, name: StringRef, args: &[StringRef]) -> Result<()> {
        self.note(time);
        self.raw.program_begin(time, name, args)
    }

    /// The program's end (`ProgramEnd`), with its exit status when known.
    pub fn program_end(&mut self, time: u64, status: Option<i64>) -> Result<()> {
        self.note(time);
        self.raw.program_end(time, status)
    }

    /// Destruction of a communicator (`CommDestroy`).
    #[inline]
    pub fn comm_destroy(&mut self, time: u64, comm: CommRef) -> Result<()> {
        self.note(time);
        self.raw.comm_destroy(time, comm)
    }

    /// Recording switched on or off (`MeasurementOnOff`): tools show the
    /// gap between an off and the next on as unmeasured.
    #[inline]
    pub fn measurement_on_off(&mut self, time: u64, on: bool) -> Result<()> {
        self.note(time);
        self.raw.measurement_on_off(time, on)
    }

    /// Flushes the location's events to disk and closes the writer;
    /// returns the number of records written.
    pub fn close(mut self) -> Result<u64> {
        self.finish()
    }

    fn finish(&mut self) -> Result<u64> {
        if self.finished {
            return Ok(self.count);
        }
        self.finished = true;
        // OTF2's own count is authoritative; ours only differs if a record
        // call failed after counting it.
        let count = self.raw.number_of_events().unwrap_or(self.count);
        let closed = self.raw.close();
        let summary = EventSummary { count, first_time: self.first_time, last_time: self.last_time };
        let slot = self.slot;
        self.defs().location_record(slot).events = Some(summary);
        closed.map(|()| count)
    }
}

impl Drop for EventWriter<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.finish() {
            match &mut self.home {
                Home::Own { deferred, .. } => {
                    deferred.get_or_insert(err);
                }
                Home::Shared { deferred, .. } => {
                    lock(deferred).get_or_insert(err);
                }
            }
        }
    }
}

/// Where a writer's definitions and deferred error live: its archive's
/// own (one writer at a time), or shared by the writers of several threads.
pub(crate) enum Home<'a> {
    Own { defs: &'a mut Definitions, deferred: &'a mut Option<Error> },
    Shared { defs: &'a Mutex<Definitions>, deferred: &'a Mutex<Option<Error>> },
}

/// A lock that a panicking thread left poisoned still guards consistent
/// data: every change under these locks is a single push or assignment.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The definitions, from [`EventWriter::defs`]: borrowed, or locked while
/// writers of several threads share them.
pub enum DefsMut<'a> {
    Own(&'a mut Definitions),
    Locked(MutexGuard<'a, Definitions>),
}

impl<'a> From<&'a mut Definitions> for DefsMut<'a> {
    fn from(defs: &'a mut Definitions) -> Self {
        DefsMut::Own(defs)
    }
}

impl Deref for DefsMut<'_> {
    type Target = Definitions;
    fn deref(&self) -> &Definitions {
        match self {
            DefsMut::Own(d) => d,
            DefsMut::Locked(d) => d,
        }
    }
}

impl DerefMut for DefsMut<'_> {
    fn deref_mut(&mut self) -> &mut Definitions {
        match self {
            DefsMut::Own(d) => d,
            DefsMut::Locked(d) => d,
        }
    }
}

impl std::fmt::Debug for EventWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWriter")
            .field("location", &self.location)
            .field("events_written", &self.count)
            .finish_non_exhaustive()
    }
}
