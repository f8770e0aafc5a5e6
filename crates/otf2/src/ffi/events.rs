//! `OTF2_EvtWriter`: the per-location event writer, one call per record.
//!
//! This is the hot path (millions of records per second), so each method
//! is one inlined FFI call plus a compare; the attribute list pointer is
//! null unless the caller attached attributes to this very record.

use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use otf2_sys as sys;

use super::archive::Archive;
use super::attributes::{AttributeList, metric_to_raw};
use super::{check, clear_reports, error, null_error};
use crate::error::{Error, Result};
use crate::refs::{
    AttributeRef, CallingContextRef, CommRef, InterruptGeneratorRef, LocationRef, MetricRef, RegionRef, RmaWinRef,
    StringRef,
};
use crate::types::Paradigm;
use crate::values::{AttributeValue, Collective, MetricValue};

type Raw = *mut sys::OTF2_EvtWriter;
type RawList = *mut sys::OTF2_AttributeList;

/// The event writer of one location, borrowed from its archive.
pub(crate) struct EvtWriter<'a> {
    archive: *mut sys::OTF2_Archive,
    raw: NonNull<sys::OTF2_EvtWriter>,
    /// Created on first use: most locations never carry attributes.
    attributes: Option<AttributeList>,
    attributes_pending: bool,
    metric_types: Vec<sys::OTF2_Type>,
    metric_values: Vec<sys::OTF2_MetricValue>,
    closed: bool,
    _archive: PhantomData<&'a Archive>,
}

impl Archive {
    /// The event writer of `location`. OTF2 creates its event file.
    ///
    /// Takes `&self`: the archive's locking callbacks (registered at
    /// [`Archive::create`]) serialize OTF2's bookkeeping of its writers, so
    /// writers of different locations may be made, used and closed on
    /// different threads (see [`SharedArchive`](super::archive::SharedArchive)).
    pub(crate) fn evt_writer(&self, location: LocationRef) -> Result<EvtWriter<'_>> {
        clear_reports();
        // SAFETY: live archive with event files open; OTF2 takes the
        // archive's lock (our pthread callbacks) around its writer list.
        let raw = unsafe { sys::OTF2_Archive_GetEvtWriter(self.ptr(), location.0) };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_Archive_GetEvtWriter"))?;
        Ok(EvtWriter {
            archive: self.ptr(),
            raw,
            attributes: None,
            attributes_pending: false,
            metric_types: Vec::new(),
            metric_values: Vec::new(),
            closed: false,
            _archive: PhantomData,
        })
    }
}

impl EvtWriter<'_> {
    /// Attaches an attribute to the next record.
    pub(crate) fn add_attribute(&mut self, attribute: AttributeRef, value: &AttributeValue) -> Result<()> {
        let list = match &mut self.attributes {
            Some(list) => list,
            None => self.attributes.insert(AttributeList::new()?),
        };
        list.add(attribute, value)?;
        self.attributes_pending = true;
        Ok(())
    }

    /// The list for the record being written, or null when it has none.
    #[inline(always)]
    fn take_attributes(&mut self) -> RawList {
        if self.attributes_pending {
            self.attributes_pending = false;
            self.attributes.as_mut().map_or(ptr::null_mut(), AttributeList::as_ptr)
        } else {
            ptr::null_mut()
        }
    }

    /// Runs one record call; `call` gets the writer and the record's
    /// attribute list (or null).
    #[inline(always)]
    fn record(
        &mut self,
        operation: &'static str,
        call: impl FnOnce(Raw, RawList) -> sys::OTF2_ErrorCode,
    ) -> Result<()> {
        let list = self.take_attributes();
        let code = call(self.raw.as_ptr(), list);
        if code == sys::OTF2_SUCCESS { Ok(()) } else { Err(self.failed(operation, code, list)) }
    }

    /// A failed record may leave its attributes in the list; drop them so
    /// they do not ride along with the next record.
    #[cold]
    fn failed(&mut self, operation: &'static str, code: sys::OTF2_ErrorCode, list: RawList) -> Error {
        let err = error(operation, code);
        if !list.is_null()
            && let Some(list) = &mut self.attributes
        {
            let _ = list.clear();
        }
        err
    }

    /// Number of records OTF2 has written for this location.
    pub(crate) fn number_of_events(&mut self) -> Result<u64> {
        let mut count = 0;
        check(
            "OTF2_EvtWriter_GetNumberOfEvents",
            // SAFETY: live writer; `count` is a live local.
            unsafe { sys::OTF2_EvtWriter_GetNumberOfEvents(self.raw.as_ptr(), &mut count) },
        )?;
        Ok(count)
    }

    /// Flushes and closes the writer. Idempotent.
    pub(crate) fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        check(
            "OTF2_Archive_CloseEvtWriter",
            // SAFETY: the writer belongs to `archive`, live for 'a, and is
            // closed once (flag above).
            unsafe { sys::OTF2_Archive_CloseEvtWriter(self.archive, self.raw.as_ptr()) },
        )
    }

    // Each method below is one OTF2_EvtWriter_* call. SAFETY for all of
    // them: `w` is this live writer, `l` is null or our live attribute
    // list, and every other argument is passed by value.

    #[inline]
    pub(crate) fn enter(&mut self, time: u64, region: RegionRef) -> Result<()> {
        self.record("OTF2_EvtWriter_Enter", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_Enter(w, l, time, region.0) }
        })
    }

    #[inline]
    pub(crate) fn leave(&mut self, time: u64, region: RegionRef) -> Result<()> {
        self.record("OTF2_EvtWriter_Leave", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_Leave(w, l, time, region.0) }
        })
    }

    #[inline]
    pub(crate) fn mpi_send(&mut self, time: u64, receiver: u32, comm: CommRef, tag: u32, length: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiSend", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiSend(w, l, time, receiver, comm.0, tag, length) }
        })
    }

    #[inline]
    pub(crate) fn mpi_isend(
        &mut self,
        time: u64,
        receiver: u32,
        comm: CommRef,
        tag: u32,
        length: u64,
        request: u64,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiIsend", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiIsend(w, l, time, receiver, comm.0, tag, length, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_isend_complete(&mut self, time: u64, request: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiIsendComplete", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiIsendComplete(w, l, time, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_irecv_request(&mut self, time: u64, request: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiIrecvRequest", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiIrecvRequest(w, l, time, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_recv(&mut self, time: u64, sender: u32, comm: CommRef, tag: u32, length: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiRecv", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiRecv(w, l, time, sender, comm.0, tag, length) }
        })
    }

    #[inline]
    pub(crate) fn mpi_irecv(
        &mut self,
        time: u64,
        sender: u32,
        comm: CommRef,
        tag: u32,
        length: u64,
        request: u64,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiIrecv", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiIrecv(w, l, time, sender, comm.0, tag, length, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_request_test(&mut self, time: u64, request: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiRequestTest", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiRequestTest(w, l, time, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_request_cancelled(&mut self, time: u64, request: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiRequestCancelled", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiRequestCancelled(w, l, time, request) }
        })
    }

    #[inline]
    pub(crate) fn mpi_collective_begin(&mut self, time: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_MpiCollectiveBegin", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MpiCollectiveBegin(w, l, time) }
        })
    }

    #[inline]
    pub(crate) fn mpi_collective_end(&mut self, time: u64, c: &Collective) -> Result<()> {
        let root = c.root.unwrap_or(sys::OTF2_UNDEFINED_UINT32);
        self.record("OTF2_EvtWriter_MpiCollectiveEnd", |w, l| {
            // SAFETY: see above.
            unsafe {
                sys::OTF2_EvtWriter_MpiCollectiveEnd(
                    w,
                    l,
                    time,
                    c.op.to_raw(),
                    c.comm.0,
                    root,
                    c.bytes_sent,
                    c.bytes_received,
                )
            }
        })
    }

    #[inline]
    pub(crate) fn non_blocking_collective_request(&mut self, time: u64, request: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_NonBlockingCollectiveRequest", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_NonBlockingCollectiveRequest(w, l, time, request) }
        })
    }

    #[inline]
    pub(crate) fn non_blocking_collective_complete(&mut self, time: u64, c: &Collective, request: u64) -> Result<()> {
        let root = c.root.unwrap_or(sys::OTF2_UNDEFINED_UINT32);
        self.record("OTF2_EvtWriter_NonBlockingCollectiveComplete", |w, l| {
            // SAFETY: see above.
            unsafe {
                sys::OTF2_EvtWriter_NonBlockingCollectiveComplete(
                    w,
                    l,
                    time,
                    c.op.to_raw(),
                    c.comm.0,
                    root,
                    c.bytes_sent,
                    c.bytes_received,
                    request,
                )
            }
        })
    }

    #[inline]
    pub(crate) fn rma_win_create(&mut self, time: u64, win: RmaWinRef) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaWinCreate", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaWinCreate(w, l, time, win.0) }
        })
    }

    #[inline]
    pub(crate) fn rma_win_destroy(&mut self, time: u64, win: RmaWinRef) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaWinDestroy", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaWinDestroy(w, l, time, win.0) }
        })
    }

    #[inline]
    pub(crate) fn rma_put(
        &mut self,
        time: u64,
        win: RmaWinRef,
        remote: u32,
        bytes: u64,
        matching_id: u64,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaPut", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaPut(w, l, time, win.0, remote, bytes, matching_id) }
        })
    }

    #[inline]
    pub(crate) fn rma_get(
        &mut self,
        time: u64,
        win: RmaWinRef,
        remote: u32,
        bytes: u64,
        matching_id: u64,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaGet", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaGet(w, l, time, win.0, remote, bytes, matching_id) }
        })
    }

    #[inline]
    pub(crate) fn rma_op_complete_blocking(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaOpCompleteBlocking", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaOpCompleteBlocking(w, l, time, win.0, matching_id) }
        })
    }

    #[inline]
    pub(crate) fn rma_op_complete_non_blocking(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaOpCompleteNonBlocking", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaOpCompleteNonBlocking(w, l, time, win.0, matching_id) }
        })
    }

    #[inline]
    pub(crate) fn rma_op_test(&mut self, time: u64, win: RmaWinRef, matching_id: u64) -> Result<()> {
        self.record("OTF2_EvtWriter_RmaOpTest", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_RmaOpTest(w, l, time, win.0, matching_id) }
        })
    }

    #[inline]
    pub(crate) fn calling_context_enter(
        &mut self,
        time: u64,
        context: CallingContextRef,
        unwind_distance: u32,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_CallingContextEnter", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_CallingContextEnter(w, l, time, context.0, unwind_distance) }
        })
    }

    #[inline]
    pub(crate) fn calling_context_leave(&mut self, time: u64, context: CallingContextRef) -> Result<()> {
        self.record("OTF2_EvtWriter_CallingContextLeave", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_CallingContextLeave(w, l, time, context.0) }
        })
    }

    #[inline]
    pub(crate) fn calling_context_sample(
        &mut self,
        time: u64,
        context: CallingContextRef,
        unwind_distance: u32,
        generator: InterruptGeneratorRef,
    ) -> Result<()> {
        self.record("OTF2_EvtWriter_CallingContextSample", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_CallingContextSample(w, l, time, context.0, unwind_distance, generator.0) }
        })
    }

    /// A metric record; the caller checked `values.len() <= 255`.
    #[inline]
    pub(crate) fn metric(&mut self, time: u64, metric: MetricRef, values: &[MetricValue]) -> Result<()> {
        // Reused buffers: no allocation once the widest record was seen.
        self.metric_types.clear();
        self.metric_values.clear();
        for value in values {
            let (ty, raw) = metric_to_raw(value);
            self.metric_types.push(ty);
            self.metric_values.push(raw);
        }
        let count = u8::try_from(values.len()).unwrap_or(u8::MAX);
        let types = self.metric_types.as_ptr();
        let raws = self.metric_values.as_ptr();
        self.record("OTF2_EvtWriter_Metric", |w, l| {
            // SAFETY: see above; `types` and `raws` hold `count` entries
            // and are not touched until the call returns.
            unsafe { sys::OTF2_EvtWriter_Metric(w, l, time, metric.0, count, types, raws) }
        })
    }

    #[inline]
    pub(crate) fn thread_fork(&mut self, time: u64, model: Paradigm, threads: u32) -> Result<()> {
        self.record("OTF2_EvtWriter_ThreadFork", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_ThreadFork(w, l, time, model.to_raw(), threads) }
        })
    }

    #[inline]
    pub(crate) fn thread_join(&mut self, time: u64, model: Paradigm) -> Result<()> {
        self.record("OTF2_EvtWriter_ThreadJoin", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_ThreadJoin(w, l, time, model.to_raw()) }
        })
    }

    #[inline]
    pub(crate) fn comm_create(&mut self, time: u64, comm: CommRef) -> Result<()> {
        self.record("OTF2_EvtWriter_CommCreate", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_CommCreate(w, l, time, comm.0) }
        })
    }

    #[inline]
    pub(crate) fn comm_destroy(&mut self, time: u64, comm: CommRef) -> Result<()> {
        self.record("OTF2_EvtWriter_CommDestroy", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_CommDestroy(w, l, time, comm.0) }
        })
    }

    pub(crate) fn program_begin(&mut self, time: u64, name: StringRef, args: &[StringRef]) -> Result<()> {
        let ids: Vec<u32> = args.iter().map(|a| a.0).collect();
        let n = u32::try_from(ids.len())
            .map_err(|_| error("OTF2_EvtWriter_ProgramBegin", sys::OTF2_ERROR_INVALID_ARGUMENT))?;
        self.record("OTF2_EvtWriter_ProgramBegin", |w, l| {
            // SAFETY: as above; `ids` holds `n` string ids OTF2 only reads.
            unsafe { sys::OTF2_EvtWriter_ProgramBegin(w, l, time, name.0, n, ids.as_ptr()) }
        })
    }

    pub(crate) fn program_end(&mut self, time: u64, status: Option<i64>) -> Result<()> {
        // OTF2_UNDEFINED_INT64: the exit status is not known.
        let status = status.unwrap_or(sys::OTF2_UNDEFINED_INT64);
        self.record("OTF2_EvtWriter_ProgramEnd", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_ProgramEnd(w, l, time, status) }
        })
    }

    #[inline]
    pub(crate) fn measurement_on_off(&mut self, time: u64, on: bool) -> Result<()> {
        let mode = if on { sys::OTF2_MEASUREMENT_ON } else { sys::OTF2_MEASUREMENT_OFF } as sys::OTF2_MeasurementMode;
        self.record("OTF2_EvtWriter_MeasurementOnOff", |w, l| {
            // SAFETY: see above.
            unsafe { sys::OTF2_EvtWriter_MeasurementOnOff(w, l, time, mode) }
        })
    }
}

impl Drop for EvtWriter<'_> {
    fn drop(&mut self) {
        // The safe EventWriter closes explicitly and reports errors; this
        // only guarantees the OTF2 writer is never leaked.
        let _ = self.close();
    }
}
