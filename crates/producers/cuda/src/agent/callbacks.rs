//! CUPTI's callbacks on the program's threads: contexts, streams and
//! graph nodes as they are made, the runtime calls recorded from
//! callbacks, the profiler-API window, copy calls' addresses, and the
//! start of GPU metrics at the first context.

use super::*;

/// Contexts and streams as they are created: their handles, so that the
/// names a program gives them through NVTX find them (a cost at creation
/// only; the first context also starts GPU metrics and unified memory,
/// see `on_callback`); with `kernel`, graph kernel nodes (see `graphs`).
pub(super) fn enable_resource_callbacks(agent: &Agent, handle: sys::Subscriber) {
    let made = [sys::CUPTI_CBID_RESOURCE_CONTEXT_CREATED, sys::CUPTI_CBID_RESOURCE_STREAM_CREATED];
    for cbid in made.into_iter().chain(crate::graphs::node_callbacks(agent.enabled.kernel)) {
        if let Err(e) = agent.cupti.enable_callback(handle, sys::CUPTI_CB_DOMAIN_RESOURCE, cbid) {
            tracing::debug!(cbid, %e, "resource callback not enabled");
        }
    }
}

/// CUPTI's callback API: subscribed to hold CUPTI (and to learn when
/// another profiler holds it already); the resource callbacks of context
/// and stream creation are enabled, and with `memory` the copy calls'.
pub(super) unsafe extern "C" fn on_callback(
    _: *mut c_void,
    domain: sys::CUpti_CallbackDomain,
    cbid: u32,
    data: *const c_void,
) {
    if data.is_null() {
        return;
    }
    let api = match domain {
        sys::CUPTI_CB_DOMAIN_RUNTIME_API => Some(ApiDomain::Runtime),
        sys::CUPTI_CB_DOMAIN_DRIVER_API => Some(ApiDomain::Driver),
        _ => None,
    };
    if let Some(api) = api {
        // SAFETY: for the API domains CUPTI passes a CUpti_CallbackData,
        // valid during the callback.
        let data = unsafe { &*(data as *const sys::CUpti_CallbackData) };
        if api == ApiDomain::Runtime && API_CALLBACKS.load(Ordering::Relaxed) {
            guarded(|agent| {
                if let Some(rec) = recorder(&agent.config) {
                    crate::api::call(&agent.cupti, rec, cbid, data);
                }
            });
        }
        if api == ApiDomain::Driver {
            profiler_call(cbid, data);
        }
        // SAFETY: as above.
        unsafe { copy_call(api, cbid, data) };
        return;
    }
    if domain != sys::CUPTI_CB_DOMAIN_RESOURCE {
        return;
    }
    // SAFETY: for the resource domain CUPTI passes a CUpti_ResourceData,
    // read here during the callback only.
    let resource = unsafe { *(data as *const sys::CUpti_ResourceData) };
    match cbid {
        sys::CUPTI_CBID_RESOURCE_CONTEXT_CREATED => guarded(|agent| {
            if UVM_PENDING.swap(false, Ordering::SeqCst) {
                start_uvm(&agent.cupti, false);
            }
            // The context's handle, and its default stream's (a null
            // handle) for nvtxNameCudaStream(0, ...).
            agent.note_handle(raw::CudaObject::Context, resource.context, std::ptr::null_mut());
            agent.note_handle(raw::CudaObject::Stream, resource.context, std::ptr::null_mut());
            // GPU metrics from the context's creation on (see `early`).
            if agent.nvml_intervals().any() {
                // SAFETY: CUPTI's context handle from its callback.
                if let Ok(ordinal) = unsafe { agent.cupti.device_id(resource.context) } {
                    early(ordinal);
                }
            }
        }),
        sys::CUPTI_CBID_RESOURCE_STREAM_CREATED => guarded(|agent| {
            // SAFETY: for STREAM_CREATED the handle is the stream.
            let stream = unsafe { resource.resourceHandle.stream };
            agent.note_handle(raw::CudaObject::Stream, resource.context, stream);
        }),
        sys::CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED | sys::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED => guarded(|agent| {
            // SAFETY: CUPTI's data for this graph callback.
            let made = unsafe { crate::graphs::node_made(&agent.cupti, cbid, &resource) };
            agent.handles.lock().map(|mut noted| noted.extend(made)).unwrap_or_default();
        }),
        _ => {}
    }
}

/// The driver's cuProfilerStart and cuProfilerStop (which
/// cudaProfilerStart/Stop call), with `--capture-range cudaProfilerApi`:
/// their callback ids, 0 until enabled.
pub(super) static PROFILER_START: AtomicU32 = AtomicU32::new(0);
pub(super) static PROFILER_STOP: AtomicU32 = AtomicU32::new(0);

/// Enables the callbacks of cuProfilerStart and cuProfilerStop, found by
/// their names among the driver's callback ids.
pub(super) fn enable_profiler_callbacks(cupti: &Cupti, handle: sys::Subscriber) {
    let mut unnamed_in_a_row = 0;
    for cbid in 1..4096u32 {
        let Some(name) = cupti.callback_name(sys::CUPTI_CB_DOMAIN_DRIVER_API, cbid) else {
            unnamed_in_a_row += 1;
            if unnamed_in_a_row > 64 {
                break;
            }
            continue;
        };
        unnamed_in_a_row = 0;
        let slot = match name.to_bytes() {
            b"cuProfilerStart" => &PROFILER_START,
            b"cuProfilerStop" => &PROFILER_STOP,
            _ => continue,
        };
        match cupti.enable_callback(handle, sys::CUPTI_CB_DOMAIN_DRIVER_API, cbid) {
            Ok(()) => slot.store(cbid, Ordering::Relaxed),
            Err(e) => diag::warn_once(&format!(
                "the callback of {} could not be enabled ({e}): --capture-range cudaProfilerApi records nothing",
                name.to_string_lossy(),
            )),
        }
    }
    if PROFILER_START.load(Ordering::Relaxed) == 0 || PROFILER_STOP.load(Ordering::Relaxed) == 0 {
        diag::warn_once(
            "this CUPTI names no cuProfilerStart/cuProfilerStop: --capture-range cudaProfilerApi records nothing",
        );
    }
}

/// cuProfilerStart opens the recording window as it returns,
/// cuProfilerStop closes it as it is entered: the window holds what the
/// program did between them.
pub(super) fn profiler_call(cbid: u32, data: &sys::CUpti_CallbackData) {
    if cbid == 0 {
        return;
    }
    if cbid == PROFILER_START.load(Ordering::Relaxed) && data.callbackSite == sys::CUPTI_API_EXIT {
        recorder::window::set(recorder::window::RANGE_CLOSED, false);
    } else if cbid == PROFILER_STOP.load(Ordering::Relaxed) && data.callbackSite == sys::CUPTI_API_ENTER {
        recorder::window::set(recorder::window::RANGE_CLOSED, true);
    }
}

/// A copy call entered: its destination and source, by its correlation
/// id. No lock but the map's, no allocation beyond its entry.
///
/// # Safety
///
/// `data` is the callback data CUPTI passed for call `cbid` of `domain`.
pub(super) unsafe fn copy_call(domain: ApiDomain, cbid: u32, data: &sys::CUpti_CallbackData) {
    if data.callbackSite != sys::CUPTI_API_ENTER || data.functionParams.is_null() || GUARD.off() {
        return;
    }
    // The work calls' callbacks (`runtime`) come here too: copy ends are
    // kept with `memory` only.
    let Some(agent) = AGENT.get().filter(|a| a.enabled.memory) else {
        return;
    };
    let Some(layout) = copies::layout(domain, cbid) else {
        return;
    };
    let params = data.functionParams as *const u8;
    // SAFETY: for these calls `functionParams` points to CUPTI's params
    // struct, whose destination and source are pointer-sized fields at
    // the layout's offsets (see `copies`); read unaligned to be safe.
    let (dst, src) = unsafe {
        (
            std::ptr::read_unaligned(params.add(layout.dst) as *const u64),
            std::ptr::read_unaligned(params.add(layout.src) as *const u64),
        )
    };
    agent.copies.note(data.correlationId, (src, dst));
}

/// Threads of the agent's own that call CUDA: their API records are not
/// the program's and stay out of the trace.
pub(super) static OWN_THREADS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Starts sampling GPU `ordinal` (a context was created on it) from now
/// on, not from the first buffer CUPTI completes (a second later, or only
/// at exit for a program that records little). On the thread
/// `gputrace-early`, started at the first context: not inside CUPTI's
/// callback and not on the program's thread. It opens NVML (tens of
/// milliseconds) and asks the driver for the GPU's UUID, which NVML
/// knows it by; the device records would bring it only with a buffer.
pub(super) fn early(ordinal: u32) {
    static EARLY: Mutex<Option<Sender<u32>>> = Mutex::new(None);
    let mut sender = EARLY.lock().unwrap_or_else(|e| e.into_inner());
    if sender.is_none() {
        let (tx, rx) = mpsc::channel::<u32>();
        let spawned = std::thread::Builder::new().name("gputrace-early".into()).spawn(move || {
            if let Ok(mut own) = OWN_THREADS.lock() {
                own.push(recorder::identity::thread_id());
            }
            Sampler::open_early();
            for ordinal in rx {
                if let Some(uuid) = cupti_sys::driver::device_uuid(ordinal) {
                    guarded(|agent| agent.sample_early(ordinal, uuid));
                }
            }
        });
        match spawned {
            Ok(_) => *sender = Some(tx),
            Err(e) => {
                tracing::debug!("GPU metrics start with the first buffer: {e}");
                return;
            }
        }
    }
    if let Some(tx) = sender.as_ref() {
        let _ = tx.send(ordinal);
    }
}
