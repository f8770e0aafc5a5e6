//! Reading the events of one location: `OTF2_EvtReader` callbacks that
//! forward each record, typed, to an [`EventVisitor`].
//!
//! OTF2 reads the location's event file chunk by chunk and calls back per
//! record, so memory stays bounded by OTF2's chunk buffer. A visitor panic
//! is caught at the C boundary (unwinding through OTF2 would abort the
//! process), OTF2 is told to stop, and the panic resumes in the caller.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use otf2_sys as sys;

use super::attributes::{Attributes, metric_from_raw};
use super::reader::Reader;
use super::{check, clear_reports, null_error};
use crate::error::Result;
use crate::reader::{EventContext, EventVisitor};
use crate::refs::{
    CallingContextRef, CommRef, InterruptGeneratorRef, LocationRef, MetricRef, RegionRef, RmaWinRef, StringRef,
};
use crate::types::{CollectiveOp, Paradigm};
use crate::values::{Collective, MetricValue};

/// The state a read hands to every callback through OTF2's user data.
struct Dispatch<'v> {
    visitor: &'v mut dyn EventVisitor,
    metric_values: Vec<MetricValue>,
    /// Each calling context's region ([`Reader::leaves`]).
    leaves: &'v [u32],
    panic: Option<Box<dyn Any + Send>>,
    stopped: bool,
    /// For a read of several locations by time: their ids, sorted, and the
    /// records each delivered so far (empty for a read of one location,
    /// whose count OTF2 returns).
    locations: Vec<u64>,
    counts: Vec<u64>,
}

/// How a read of one location ended.
pub(crate) struct ReadOutcome {
    pub(crate) events: u64,
    pub(crate) stopped: bool,
}

impl Reader {
    /// Reads every event of `location` into `visitor`.
    pub(crate) fn read_location_events(
        &mut self,
        callbacks: &EvtCallbacks,
        location: LocationRef,
        visitor: &mut dyn EventVisitor,
    ) -> Result<ReadOutcome> {
        clear_reports();
        // SAFETY: live reader with event files open (TraceReader opens
        // them before any read).
        let evt_reader = unsafe { sys::OTF2_Reader_GetEvtReader(self.ptr(), location.0) };
        if evt_reader.is_null() {
            return Err(null_error("OTF2_Reader_GetEvtReader"));
        }
        let mut dispatch = Dispatch {
            visitor,
            metric_values: Vec::new(),
            leaves: &self.leaves,
            panic: None,
            stopped: false,
            locations: Vec::new(),
            counts: Vec::new(),
        };
        let mut events = 0;
        let result = check(
            "OTF2_Reader_RegisterEvtCallbacks",
            // SAFETY: live readers; `dispatch` outlives the read below,
            // the only time OTF2 uses the pointer.
            unsafe {
                sys::OTF2_Reader_RegisterEvtCallbacks(
                    self.ptr(),
                    evt_reader,
                    callbacks.raw.as_ptr(),
                    (&raw mut dispatch).cast(),
                )
            },
        )
        .and_then(|()| {
            check(
                "OTF2_Reader_ReadAllLocalEvents",
                // SAFETY: as above; `events` is a live local.
                unsafe { sys::OTF2_Reader_ReadAllLocalEvents(self.ptr(), evt_reader, &mut events) },
            )
        });
        // SAFETY: the event reader came from this reader; closed once.
        let closed =
            check("OTF2_Reader_CloseEvtReader", unsafe { sys::OTF2_Reader_CloseEvtReader(self.ptr(), evt_reader) });
        if let Some(payload) = dispatch.panic.take() {
            panic::resume_unwind(payload);
        }
        if dispatch.stopped {
            // OTF2 reports the interruption as an error; it was a request.
            return Ok(ReadOutcome { events, stopped: true });
        }
        result.and(closed).map(|()| ReadOutcome { events, stopped: false })
    }
}

/// How a read of several locations by time ended: the records each
/// location delivered, in the order of the locations asked for.
pub(crate) struct GlobalOutcome {
    pub(crate) events: Vec<u64>,
    pub(crate) stopped: bool,
}

impl Reader {
    /// Reads the events of `locations` merged into one sequence by time
    /// (OTF2's global event reader: one open chunk per location, the next
    /// record always the earliest of their heads), into `visitor`.
    pub(crate) fn read_events_by_time(
        &mut self,
        callbacks: &GlobalEvtCallbacks,
        locations: &[LocationRef],
        visitor: &mut dyn EventVisitor,
    ) -> Result<GlobalOutcome> {
        clear_reports();
        let mut sorted: Vec<u64> = locations.iter().map(|l| l.0).collect();
        sorted.sort_unstable();
        sorted.dedup();
        for &location in &sorted {
            // SAFETY: live reader with event files open; OTF2 keeps the
            // local reader for the global one made below.
            let evt_reader = unsafe { sys::OTF2_Reader_GetEvtReader(self.ptr(), location) };
            if evt_reader.is_null() {
                return Err(null_error("OTF2_Reader_GetEvtReader"));
            }
        }
        // SAFETY: live reader; it merges the local readers opened above.
        let global = unsafe { sys::OTF2_Reader_GetGlobalEvtReader(self.ptr()) };
        if global.is_null() {
            return Err(null_error("OTF2_Reader_GetGlobalEvtReader"));
        }
        let counts = vec![0; sorted.len()];
        let mut dispatch = Dispatch {
            visitor,
            metric_values: Vec::new(),
            leaves: &self.leaves,
            panic: None,
            stopped: false,
            locations: sorted,
            counts,
        };
        let mut events = 0;
        let result = check(
            "OTF2_Reader_RegisterGlobalEvtCallbacks",
            // SAFETY: live readers; `dispatch` outlives the read below,
            // the only time OTF2 uses the pointer.
            unsafe {
                sys::OTF2_Reader_RegisterGlobalEvtCallbacks(
                    self.ptr(),
                    global,
                    callbacks.raw.as_ptr(),
                    (&raw mut dispatch).cast(),
                )
            },
        )
        .and_then(|()| {
            check(
                "OTF2_Reader_ReadAllGlobalEvents",
                // SAFETY: as above; `events` is a live local.
                unsafe { sys::OTF2_Reader_ReadAllGlobalEvents(self.ptr(), global, &mut events) },
            )
        });
        // SAFETY: the global reader came from this reader; closed once.
        // Closing it closes the local readers it merged.
        let closed = check("OTF2_Reader_CloseGlobalEvtReader", unsafe {
            sys::OTF2_Reader_CloseGlobalEvtReader(self.ptr(), global)
        });
        if let Some(payload) = dispatch.panic.take() {
            panic::resume_unwind(payload);
        }
        let by_location = locations
            .iter()
            .map(|l| dispatch.locations.binary_search(&l.0).map_or(0, |i| dispatch.counts[i]))
            .collect();
        if dispatch.stopped {
            return Ok(GlobalOutcome { events: by_location, stopped: true });
        }
        result.and(closed).map(|()| GlobalOutcome { events: by_location, stopped: false })
    }
}

/// Forwards one record to the visitor.
///
/// # Safety
///
/// `user_data` must be the `Dispatch` registered for this read, otherwise
/// unused while the callback runs; `attributes` null or OTF2's list for
/// this record.
#[inline(always)]
unsafe fn dispatch(
    user_data: *mut c_void,
    location: u64,
    time: u64,
    attributes: *mut sys::OTF2_AttributeList,
    call: impl FnOnce(&mut dyn EventVisitor, &EventContext<'_>, &mut Scratch<'_>),
) -> sys::OTF2_CallbackCode {
    // SAFETY: the caller's contract.
    let dispatch = unsafe { &mut *user_data.cast::<Dispatch<'_>>() };
    if !dispatch.locations.is_empty()
        && let Ok(i) = dispatch.locations.binary_search(&location)
    {
        dispatch.counts[i] += 1;
    }
    let ev = EventContext {
        location: LocationRef(location),
        time,
        // SAFETY: the caller's contract; the view does not outlive this call.
        attributes: unsafe { Attributes::from_raw(attributes) },
    };
    let visitor = &mut *dispatch.visitor;
    let mut scratch = Scratch { values: &mut dispatch.metric_values, leaves: dispatch.leaves };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        call(visitor, &ev, &mut scratch);
        visitor.should_stop()
    }));
    match outcome {
        Ok(false) => sys::OTF2_CALLBACK_SUCCESS,
        Ok(true) => {
            dispatch.stopped = true;
            sys::OTF2_CALLBACK_INTERRUPT
        }
        Err(payload) => {
            dispatch.panic = Some(payload);
            sys::OTF2_CALLBACK_INTERRUPT
        }
    }
}

/// What a callback may use besides the visitor: the metric values'
/// buffer, the calling contexts' regions.
struct Scratch<'a> {
    values: &'a mut Vec<MetricValue>,
    leaves: &'a [u32],
}

impl Scratch<'_> {
    /// The region of calling context `context` (`u32::MAX`: unknown).
    fn leaf(&self, context: u32) -> RegionRef {
        RegionRef(self.leaves.get(context as usize).copied().unwrap_or(u32::MAX))
    }
}

fn root(raw: u32) -> Option<u32> {
    (raw != sys::OTF2_UNDEFINED_UINT32).then_some(raw)
}

fn collective(op: u8, comm: u32, root_rank: u32, sent: u64, received: u64) -> Collective {
    Collective {
        op: CollectiveOp::from_raw(op),
        comm: CommRef(comm),
        root: root(root_rank),
        bytes_sent: sent,
        bytes_received: received,
    }
}

/// Defines an event callback twice, in a module of its name: `local` for
/// a location's reader (OTF2's common arguments: location, time, position,
/// user data, attribute list) and `global` for the global reader (the same
/// without the position), each followed by the listed record fields and
/// forwarding to the visitor through `dispatch`.
macro_rules! event_callback {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) => |$v:ident, $ev:ident, $buf:tt| $call:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe extern "C" fn local(
                location: u64,
                time: u64,
                _position: u64,
                user_data: *mut c_void,
                attributes: *mut sys::OTF2_AttributeList,
                $($arg: $ty),*
            ) -> sys::OTF2_CallbackCode {
                let call = |$v: &mut dyn EventVisitor, $ev: &EventContext<'_>, $buf: &mut Scratch<'_>| $call;
                // SAFETY: OTF2 calls this only during `read_location_events`,
                // with the user data registered there and this record's list.
                unsafe { dispatch(user_data, location, time, attributes, call) }
            }

            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe extern "C" fn global(
                location: u64,
                time: u64,
                user_data: *mut c_void,
                attributes: *mut sys::OTF2_AttributeList,
                $($arg: $ty),*
            ) -> sys::OTF2_CallbackCode {
                let call = |$v: &mut dyn EventVisitor, $ev: &EventContext<'_>, $buf: &mut Scratch<'_>| $call;
                // SAFETY: OTF2 calls this only during `read_events_by_time`,
                // with the user data registered there and this record's list.
                unsafe { dispatch(user_data, location, time, attributes, call) }
            }
        }
    };
}

event_callback! { on_enter(region: u32) => |v, ev, _| v.enter(ev, RegionRef(region)) }
event_callback! { on_leave(region: u32) => |v, ev, _| v.leave(ev, RegionRef(region)) }
event_callback! { on_mpi_send(receiver: u32, comm: u32, tag: u32, len: u64) =>
|v, ev, _| v.mpi_send(ev, receiver, CommRef(comm), tag, len) }
event_callback! { on_mpi_isend(receiver: u32, comm: u32, tag: u32, len: u64, request: u64) =>
|v, ev, _| v.mpi_isend(ev, receiver, CommRef(comm), tag, len, request) }
event_callback! { on_mpi_isend_complete(request: u64) => |v, ev, _| v.mpi_isend_complete(ev, request) }
event_callback! { on_mpi_irecv_request(request: u64) => |v, ev, _| v.mpi_irecv_request(ev, request) }
event_callback! { on_mpi_recv(sender: u32, comm: u32, tag: u32, len: u64) =>
|v, ev, _| v.mpi_recv(ev, sender, CommRef(comm), tag, len) }
event_callback! { on_mpi_irecv(sender: u32, comm: u32, tag: u32, len: u64, request: u64) =>
|v, ev, _| v.mpi_irecv(ev, sender, CommRef(comm), tag, len, request) }
event_callback! { on_mpi_request_test(request: u64) => |v, ev, _| v.mpi_request_test(ev, request) }
event_callback! { on_mpi_request_cancelled(request: u64) =>
|v, ev, _| v.mpi_request_cancelled(ev, request) }
event_callback! { on_mpi_collective_begin() => |v, ev, _| v.mpi_collective_begin(ev) }
event_callback! { on_mpi_collective_end(op: u8, comm: u32, root: u32, sent: u64, received: u64) =>
|v, ev, _| v.mpi_collective_end(ev, &collective(op, comm, root, sent, received)) }
event_callback! { on_nbc_request(request: u64) =>
|v, ev, _| v.non_blocking_collective_request(ev, request) }
event_callback! { on_nbc_complete(op: u8, comm: u32, root: u32, sent: u64, received: u64, request: u64) =>
|v, ev, _| v.non_blocking_collective_complete(ev, &collective(op, comm, root, sent, received), request) }
event_callback! { on_rma_win_create(win: u32) => |v, ev, _| v.rma_win_create(ev, RmaWinRef(win)) }
event_callback! { on_rma_win_destroy(win: u32) => |v, ev, _| v.rma_win_destroy(ev, RmaWinRef(win)) }
event_callback! { on_rma_put(win: u32, remote: u32, bytes: u64, id: u64) =>
|v, ev, _| v.rma_put(ev, RmaWinRef(win), remote, bytes, id) }
event_callback! { on_rma_get(win: u32, remote: u32, bytes: u64, id: u64) =>
|v, ev, _| v.rma_get(ev, RmaWinRef(win), remote, bytes, id) }
event_callback! { on_rma_op_complete_blocking(win: u32, id: u64) =>
|v, ev, _| v.rma_op_complete_blocking(ev, RmaWinRef(win), id) }
event_callback! { on_rma_op_complete_non_blocking(win: u32, id: u64) =>
|v, ev, _| v.rma_op_complete_non_blocking(ev, RmaWinRef(win), id) }
event_callback! { on_calling_context_sample(context: u32, distance: u32, generator: u32) =>
|v, ev, _| v.calling_context_sample(ev, CallingContextRef(context), distance, InterruptGeneratorRef(generator)) }
event_callback! { on_calling_context_enter(context: u32, distance: u32) =>
|v, ev, s| v.calling_context_enter(ev, CallingContextRef(context), distance, s.leaf(context)) }
event_callback! { on_calling_context_leave(context: u32) =>
|v, ev, s| v.calling_context_leave(ev, CallingContextRef(context), s.leaf(context)) }
event_callback! { on_rma_op_test(win: u32, id: u64) => |v, ev, _| v.rma_op_test(ev, RmaWinRef(win), id) }
event_callback! { on_metric(metric: u32, count: u8, types: *const u8, values: *const sys::OTF2_MetricValue) =>
    |v, ev, scratch| {
        let buffer = &mut *scratch.values;
        buffer.clear();
        if count > 0 && !types.is_null() && !values.is_null() {
            // SAFETY: OTF2 passes `count` type ids and `count` values.
            let (types, values) = unsafe {
                (
                    std::slice::from_raw_parts(types, count.into()),
                    std::slice::from_raw_parts(values, count.into()),
                )
            };
            buffer.extend(types.iter().zip(values).map(|(&ty, &value)| metric_from_raw(ty, value)));
        }
        v.metric(ev, MetricRef(metric), buffer)
    }
}
event_callback! { on_thread_fork(model: u8, threads: u32) =>
|v, ev, _| v.thread_fork(ev, Paradigm::from_raw(model), threads) }
event_callback! { on_thread_join(model: u8) => |v, ev, _| v.thread_join(ev, Paradigm::from_raw(model)) }
event_callback! { on_program_begin(name: u32, _n: u32, _args: *const u32) =>
|v, ev, _| v.program_begin(ev, StringRef(name)) }
event_callback! { on_program_end(status: i64) =>
|v, ev, _| v.program_end(ev, (status != sys::OTF2_UNDEFINED_INT64).then_some(status)) }
event_callback! { on_comm_create(comm: u32) => |v, ev, _| v.comm_create(ev, CommRef(comm)) }
event_callback! { on_comm_destroy(comm: u32) => |v, ev, _| v.comm_destroy(ev, CommRef(comm)) }
event_callback! { on_measurement_on_off(mode: u8) =>
|v, ev, _| v.measurement_on_off(ev, u32::from(mode) == sys::OTF2_MEASUREMENT_ON) }
event_callback! { on_buffer_flush(stop: u64) => |v, ev, _| v.buffer_flush(ev, stop) }
event_callback! { on_unknown() => |v, ev, _| v.unknown(ev) }

/// Owned `OTF2_EvtReaderCallbacks` with every trampoline set; made once
/// per trace reader and registered for each location.
pub(crate) struct EvtCallbacks {
    raw: NonNull<sys::OTF2_EvtReaderCallbacks>,
}

impl EvtCallbacks {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned object or null.
        let raw = unsafe { sys::OTF2_EvtReaderCallbacks_New() };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_EvtReaderCallbacks_New"))?;
        let this = Self { raw };
        let cb = this.raw.as_ptr();
        macro_rules! set {
            ($($setter:ident => $callback:path),* $(,)?) => {$(
                check(
                    stringify!($setter),
                    // SAFETY: `cb` is live; the compiler checks that the
                    // callback has the type the setter takes.
                    unsafe { sys::$setter(cb, Some($callback)) },
                )?;
            )*};
        }
        set! {
            OTF2_EvtReaderCallbacks_SetEnterCallback => on_enter::local,
            OTF2_EvtReaderCallbacks_SetLeaveCallback => on_leave::local,
            OTF2_EvtReaderCallbacks_SetMpiSendCallback => on_mpi_send::local,
            OTF2_EvtReaderCallbacks_SetMpiIsendCallback => on_mpi_isend::local,
            OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback => on_mpi_isend_complete::local,
            OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback => on_mpi_irecv_request::local,
            OTF2_EvtReaderCallbacks_SetMpiRecvCallback => on_mpi_recv::local,
            OTF2_EvtReaderCallbacks_SetMpiIrecvCallback => on_mpi_irecv::local,
            OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback => on_mpi_request_test::local,
            OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback => on_mpi_request_cancelled::local,
            OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback => on_mpi_collective_begin::local,
            OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback => on_mpi_collective_end::local,
            OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback => on_nbc_request::local,
            OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback => on_nbc_complete::local,
            OTF2_EvtReaderCallbacks_SetRmaWinCreateCallback => on_rma_win_create::local,
            OTF2_EvtReaderCallbacks_SetRmaWinDestroyCallback => on_rma_win_destroy::local,
            OTF2_EvtReaderCallbacks_SetRmaPutCallback => on_rma_put::local,
            OTF2_EvtReaderCallbacks_SetRmaGetCallback => on_rma_get::local,
            OTF2_EvtReaderCallbacks_SetRmaOpCompleteBlockingCallback => on_rma_op_complete_blocking::local,
            OTF2_EvtReaderCallbacks_SetRmaOpCompleteNonBlockingCallback => on_rma_op_complete_non_blocking::local,
            OTF2_EvtReaderCallbacks_SetRmaOpTestCallback => on_rma_op_test::local,
            OTF2_EvtReaderCallbacks_SetMetricCallback => on_metric::local,
            OTF2_EvtReaderCallbacks_SetThreadForkCallback => on_thread_fork::local,
            OTF2_EvtReaderCallbacks_SetThreadJoinCallback => on_thread_join::local,
            OTF2_EvtReaderCallbacks_SetProgramBeginCallback => on_program_begin::local,
            OTF2_EvtReaderCallbacks_SetProgramEndCallback => on_program_end::local,
            OTF2_EvtReaderCallbacks_SetCommCreateCallback => on_comm_create::local,
            OTF2_EvtReaderCallbacks_SetCommDestroyCallback => on_comm_destroy::local,
            OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback => on_measurement_on_off::local,
            OTF2_EvtReaderCallbacks_SetBufferFlushCallback => on_buffer_flush::local,
            OTF2_EvtReaderCallbacks_SetCallingContextSampleCallback => on_calling_context_sample::local,
            OTF2_EvtReaderCallbacks_SetCallingContextEnterCallback => on_calling_context_enter::local,
            OTF2_EvtReaderCallbacks_SetCallingContextLeaveCallback => on_calling_context_leave::local,
            OTF2_EvtReaderCallbacks_SetUnknownCallback => on_unknown::local,
        }
        Ok(this)
    }
}

// SAFETY: a table of function pointers, only read by OTF2 when it is
// registered.
unsafe impl Send for EvtCallbacks {}

impl Drop for EvtCallbacks {
    fn drop(&mut self) {
        // SAFETY: we own the object; OTF2 copied it when it was registered.
        unsafe { sys::OTF2_EvtReaderCallbacks_Delete(self.raw.as_ptr()) }
    }
}

/// Owned `OTF2_GlobalEvtReaderCallbacks` with every trampoline set.
pub(crate) struct GlobalEvtCallbacks {
    raw: NonNull<sys::OTF2_GlobalEvtReaderCallbacks>,
}

impl GlobalEvtCallbacks {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned object or null.
        let raw = unsafe { sys::OTF2_GlobalEvtReaderCallbacks_New() };
        let raw = NonNull::new(raw).ok_or_else(|| null_error("OTF2_GlobalEvtReaderCallbacks_New"))?;
        let this = Self { raw };
        let cb = this.raw.as_ptr();
        macro_rules! set {
            ($($setter:ident => $callback:path),* $(,)?) => {$(
                check(
                    stringify!($setter),
                    // SAFETY: `cb` is live; the compiler checks that the
                    // callback has the type the setter takes.
                    unsafe { sys::$setter(cb, Some($callback)) },
                )?;
            )*};
        }
        set! {
            OTF2_GlobalEvtReaderCallbacks_SetEnterCallback => on_enter::global,
            OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback => on_leave::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback => on_mpi_send::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback => on_mpi_isend::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback => on_mpi_isend_complete::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback => on_mpi_irecv_request::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback => on_mpi_recv::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback => on_mpi_irecv::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiRequestTestCallback => on_mpi_request_test::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback => on_mpi_request_cancelled::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback => on_mpi_collective_begin::global,
            OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback => on_mpi_collective_end::global,
            OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback => on_nbc_request::global,
            OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback => on_nbc_complete::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaWinCreateCallback => on_rma_win_create::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaWinDestroyCallback => on_rma_win_destroy::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback => on_rma_put::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback => on_rma_get::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteBlockingCallback => on_rma_op_complete_blocking::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteNonBlockingCallback => on_rma_op_complete_non_blocking::global,
            OTF2_GlobalEvtReaderCallbacks_SetRmaOpTestCallback => on_rma_op_test::global,
            OTF2_GlobalEvtReaderCallbacks_SetMetricCallback => on_metric::global,
            OTF2_GlobalEvtReaderCallbacks_SetThreadForkCallback => on_thread_fork::global,
            OTF2_GlobalEvtReaderCallbacks_SetThreadJoinCallback => on_thread_join::global,
            OTF2_GlobalEvtReaderCallbacks_SetProgramBeginCallback => on_program_begin::global,
            OTF2_GlobalEvtReaderCallbacks_SetProgramEndCallback => on_program_end::global,
            OTF2_GlobalEvtReaderCallbacks_SetCommCreateCallback => on_comm_create::global,
            OTF2_GlobalEvtReaderCallbacks_SetCommDestroyCallback => on_comm_destroy::global,
            OTF2_GlobalEvtReaderCallbacks_SetMeasurementOnOffCallback => on_measurement_on_off::global,
            OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback => on_buffer_flush::global,
            OTF2_GlobalEvtReaderCallbacks_SetCallingContextSampleCallback => on_calling_context_sample::global,
            OTF2_GlobalEvtReaderCallbacks_SetCallingContextEnterCallback => on_calling_context_enter::global,
            OTF2_GlobalEvtReaderCallbacks_SetCallingContextLeaveCallback => on_calling_context_leave::global,
            OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback => on_unknown::global,
        }
        Ok(this)
    }
}

// SAFETY: as for EvtCallbacks.
unsafe impl Send for GlobalEvtCallbacks {}

impl Drop for GlobalEvtCallbacks {
    fn drop(&mut self) {
        // SAFETY: we own the object; OTF2 copied it when it was registered.
        unsafe { sys::OTF2_GlobalEvtReaderCallbacks_Delete(self.raw.as_ptr()) }
    }
}
