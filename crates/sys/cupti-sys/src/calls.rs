//! The CUPTI calls gputrace makes, as methods of [`Cupti`] that return a
//! `Result` ([`CuptiError`] names the call and CUPTI's result): the
//! pointer fields stay public for what this layer lacks, but the agent
//! calls these.
//!
//! Calls whose only arguments are values, gputrace's own out-parameters
//! or [`Subscriber`]s are safe. Those that take a driver handle (a
//! context, a stream, a graph node) are `unsafe`: the handle must be one
//! CUDA or CUPTI gave and still valid, which no type here can check.
//! Calls an older library lacks return `None`.

use crate::common::*;
use crate::{Cupti, CuptiError};

/// A subscriber to CUPTI's callback API, made by [`Cupti::subscribe`]:
/// only a made one can be passed to [`Cupti::enable_callback`].
#[derive(Debug, Clone, Copy)]
pub struct Subscriber(CUpti_SubscriberHandle);

// SAFETY: an opaque handle CUPTI takes from any thread (its functions
// synchronize internally); gputrace never dereferences it.
unsafe impl Send for Subscriber {}
// SAFETY: as above.
unsafe impl Sync for Subscriber {}

impl Cupti {
    /// `cuptiSubscribe`: `callback` is called for every enabled callback
    /// (no user data). CUPTI allows one subscriber per process: another
    /// profiler attached already is `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`.
    pub fn subscribe(&self, callback: CUpti_CallbackFunc) -> Result<Subscriber, CuptiError> {
        let mut handle: CUpti_SubscriberHandle = std::ptr::null_mut();
        // SAFETY: `handle` is writable; the callback has the type CUPTI
        // declares (an extern "C" fn: a panic in it aborts, never unwinds
        // into CUPTI); no user data.
        let rc = unsafe { (self.subscribe)(&mut handle, callback, std::ptr::null_mut()) };
        self.check("cuptiSubscribe", rc).map(|()| Subscriber(handle))
    }

    /// `cuptiEnableCallback(1, …)`: `cbid` of `domain` calls the
    /// subscriber's callback.
    pub fn enable_callback(
        &self,
        subscriber: Subscriber,
        domain: CUpti_CallbackDomain,
        cbid: u32,
    ) -> Result<(), CuptiError> {
        // SAFETY: a subscriber `subscribe` made; the ids are values CUPTI
        // checks.
        let rc = unsafe { (self.enable_callback)(1, subscriber.0, domain, cbid) };
        self.check("cuptiEnableCallback", rc)
    }

    /// `cuptiActivityRegisterCallbacks`: where CUPTI gets empty buffers
    /// and hands full ones back.
    pub fn register_buffers(
        &self,
        requested: CUpti_BuffersCallbackRequestFunc,
        completed: CUpti_BuffersCallbackCompleteFunc,
    ) -> Result<(), CuptiError> {
        // SAFETY: callbacks of the types CUPTI declares (extern "C": they
        // never unwind into CUPTI).
        let rc = unsafe { (self.activity_register_callbacks)(requested, completed) };
        self.check("cuptiActivityRegisterCallbacks", rc)
    }

    /// `cuptiActivityRegisterTimestampCallback` (CUDA 11.6 on): the clock
    /// CUPTI stamps records with.
    pub fn register_timestamp(&self, clock: CUpti_TimestampCallbackFunc) -> Option<Result<(), CuptiError>> {
        let f = self.activity_register_timestamp_callback?;
        // SAFETY: a callback of the type CUPTI declares.
        Some(self.check("cuptiActivityRegisterTimestampCallback", unsafe { f(clock) }))
    }

    /// `cuptiSetThreadIdType`: which thread id API records carry.
    pub fn set_thread_id_type(&self, kind: CUpti_ActivityThreadIdType) -> Option<Result<(), CuptiError>> {
        let f = self.set_thread_id_type?;
        // SAFETY: a value CUPTI checks.
        Some(self.check("cuptiSetThreadIdType", unsafe { f(kind) }))
    }

    /// `cuptiActivityEnable`.
    pub fn enable_kind(&self, kind: CUpti_ActivityKind) -> Result<(), CuptiError> {
        // SAFETY: a value CUPTI checks; no memory preconditions.
        self.check("cuptiActivityEnable", unsafe { (self.activity_enable)(kind) })
    }

    /// `cuptiActivityEnableRuntimeApi` (CUDA 12.5 on): whether the
    /// RUNTIME kind records runtime call `cbid`.
    pub fn select_runtime_call(&self, cbid: u32, on: bool) -> Option<Result<(), CuptiError>> {
        let f = self.activity_enable_runtime_api?;
        // SAFETY: values CUPTI checks.
        Some(self.check("cuptiActivityEnableRuntimeApi", unsafe { f(cbid, u8::from(on)) }))
    }

    /// `cuptiActivityFlushAll`: hands back every buffer with records;
    /// `forced` also the ones still filling.
    pub fn flush_all(&self, forced: bool) -> Result<(), CuptiError> {
        let flag = if forced { CUPTI_ACTIVITY_FLAG_FLUSH_FORCED } else { 0 };
        // SAFETY: no memory preconditions; the buffers go to the completed
        // callback.
        self.check("cuptiActivityFlushAll", unsafe { (self.activity_flush_all)(flag) })
    }

    /// `cuptiActivityFlushPeriod`: CUPTI's worker flushes every `ms`.
    pub fn set_flush_period(&self, ms: u32) -> Option<Result<(), CuptiError>> {
        let f = self.activity_flush_period?;
        // SAFETY: a value; no memory preconditions.
        Some(self.check("cuptiActivityFlushPeriod", unsafe { f(ms) }))
    }

    /// `cuptiActivityConfigureUnifiedMemoryCounter`, before the
    /// UNIFIED_MEMORY_COUNTER kind is enabled.
    pub fn configure_unified_memory(
        &self,
        config: &mut [CUpti_ActivityUnifiedMemoryCounterConfig],
    ) -> Option<Result<(), CuptiError>> {
        let f = self.activity_configure_unified_memory_counter?;
        let len = u32::try_from(config.len()).unwrap_or(u32::MAX);
        // SAFETY: `config` holds `len` initialized entries CUPTI reads.
        Some(self.check("cuptiActivityConfigureUnifiedMemoryCounter", unsafe { f(config.as_mut_ptr(), len) }))
    }

    /// `cuptiGetContextId`: CUPTI's id of a context.
    ///
    /// # Safety
    ///
    /// `context` is a context handle CUDA or CUPTI gave, still alive.
    pub unsafe fn context_id(&self, context: CUcontext) -> Result<u32, CuptiError> {
        let mut id = 0;
        // SAFETY: the caller's handle; the output is ours.
        self.check("cuptiGetContextId", unsafe { (self.get_context_id)(context, &mut id) }).map(|()| id)
    }

    /// `cuptiGetDeviceId`: the ordinal of a context's device.
    ///
    /// # Safety
    ///
    /// As [`context_id`](Self::context_id).
    pub unsafe fn device_id(&self, context: CUcontext) -> Result<u32, CuptiError> {
        let mut id = 0;
        // SAFETY: as above.
        self.check("cuptiGetDeviceId", unsafe { (self.get_device_id)(context, &mut id) }).map(|()| id)
    }

    /// `cuptiGetStreamIdEx`: CUPTI's id of a stream (`per_thread`: the
    /// per-thread default stream).
    ///
    /// # Safety
    ///
    /// `context` and `stream` are handles CUDA or CUPTI gave, still alive
    /// (a null stream is the context's default stream).
    pub unsafe fn stream_id(&self, context: CUcontext, stream: CUstream) -> Option<Result<u32, CuptiError>> {
        let f = self.get_stream_id_ex?;
        let mut id = 0;
        // SAFETY: the caller's handles; the output is ours.
        Some(self.check("cuptiGetStreamIdEx", unsafe { f(context, stream, 0, &mut id) }).map(|()| id))
    }

    /// `cuptiGetGraphNodeId`: the id a graph node's work records carry.
    ///
    /// # Safety
    ///
    /// `node` is a graph node handle CUDA or CUPTI gave, still alive.
    pub unsafe fn graph_node_id(&self, node: CUgraphNode) -> Option<Result<u64, CuptiError>> {
        let f = self.get_graph_node_id?;
        let mut id = 0;
        // SAFETY: the caller's handle; the output is ours.
        Some(self.check("cuptiGetGraphNodeId", unsafe { f(node, &mut id) }).map(|()| id))
    }

    /// `cuptiActivityGetNumDroppedRecords`: records CUPTI had no room for
    /// in the buffers of `context` and `stream` (a null context: the
    /// global ones).
    ///
    /// # Safety
    ///
    /// `context` is null or a context handle CUPTI passed with the buffer.
    pub unsafe fn dropped_records(&self, context: CUcontext, stream: u32) -> Result<usize, CuptiError> {
        let mut dropped = 0;
        // SAFETY: the caller's handle; the output is ours.
        let rc = unsafe { (self.activity_get_num_dropped_records)(context, stream, &mut dropped) };
        self.check("cuptiActivityGetNumDroppedRecords", rc).map(|()| dropped)
    }

    /// The addresses of the records in a buffer CUPTI filled, in order
    /// (`cuptiActivityGetNextRecord`); each record ends where the next
    /// begins, the last at `valid`.
    ///
    /// # Safety
    ///
    /// `buffer` holds `valid` bytes of records CUPTI wrote, and stays
    /// alive while the addresses are used.
    pub unsafe fn record_addresses(&self, buffer: *mut u8, valid: usize) -> Vec<*const CUpti_Activity> {
        let mut out = Vec::new();
        let mut rec: *mut CUpti_Activity = std::ptr::null_mut();
        // SAFETY: CUPTI walks its own buffer; `rec` is its cursor.
        while unsafe { (self.activity_get_next_record)(buffer, valid, &mut rec) } == CUPTI_SUCCESS {
            out.push(rec as *const CUpti_Activity);
        }
        out
    }
}
