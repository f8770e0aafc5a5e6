//! The runtime calls `GPUTRACE_CUDA_ENABLE=runtime` records, from CUPTI's
//! callbacks on the calling thread rather than from its activity records.
//!
//! CUPTI's RUNTIME activity kind costs every runtime call — the getters
//! and queries PyTorch and NCCL make around each kernel too — even when
//! `cuptiActivityEnableRuntimeApi` leaves most of them out of the records
//! (measured: a GPU-bound DDP step +48% with 136 of 522 calls selected,
//! +41% with all of them). Callbacks are enabled per callback id, so only
//! the calls that make or wait for GPU work ([`names::is_work_call`]) pay:
//! at a call's entry its Enter (with the correlation id CUPTI gives the
//! GPU work it starts), at its exit its Leave, each a clock read and an
//! append to the thread's buffer in the process's CUDA stream.
//! Synchronization records find their thread through the correlation ids
//! noted here for the synchronizing calls. A kernel launch's Enter carries
//! the kernel's name (the `CUDA kernel` attribute, [`crate::launch_names`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cupti_sys::{self as sys, Cupti};
use raw::{Event, Paradigm, RegionRole};
use recorder::Recorder;

use crate::launch_names::LaunchNames;
use crate::names;

/// The kernels the process's launches named, for its recorder.
static LAUNCH_NAMES: LaunchNames = LaunchNames::new();

/// Region ids by runtime callback id: 0 not yet defined, `FILTERED` left
/// out by the filter, else id + 1. Callback ids are below 1024 in every
/// CUDA release so far; a larger one is looked up under the lock.
static REGIONS: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
static MORE_REGIONS: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());
const FILTERED: u32 = u32::MAX;

/// Correlation id → thread of the synchronizing calls, for their
/// synchronization records (converted later, on the agent's thread).
static SYNC_THREADS: Mutex<Option<HashMap<u32, u32>>> = Mutex::new(None);
/// Whether synchronizing calls note their thread: only with `sync`, whose
/// SYNCHRONIZATION records need it.
pub(crate) static NOTE_SYNC: AtomicBool = AtomicBool::new(false);
/// At most this many wait for their record.
const SYNC_MEMORY: usize = 1 << 16;

/// The runtime callbacks CUPTI names, with their names
/// (`cudaLaunchKernel_v7000`). Callback ids are dense from 1 (about 500
/// in CUDA 13); a run of 64 unnamed ids is the end.
pub(crate) fn runtime_callbacks(cupti: &Cupti) -> Vec<(u32, String)> {
    let mut named = Vec::new();
    let mut unnamed_in_a_row = 0u32;
    for cbid in 1..4096u32 {
        match callback_name(cupti, cbid) {
            Some(name) => {
                unnamed_in_a_row = 0;
                named.push((cbid, name));
            }
            None if unnamed_in_a_row >= 64 => break,
            None => unnamed_in_a_row += 1,
        }
    }
    named
}

/// Enables the callbacks of the work calls; false when CUPTI refused one
/// (then the caller records the runtime API from activity records).
pub(crate) fn enable(cupti: &Cupti, subscriber: sys::Subscriber) -> bool {
    let mut enabled = 0u32;
    for (cbid, name) in runtime_callbacks(cupti) {
        if !names::is_work_call(names::api_name(&name)) {
            continue;
        }
        if let Err(e) = cupti.enable_callback(subscriber, sys::CUPTI_CB_DOMAIN_RUNTIME_API, cbid) {
            tracing::debug!(cbid, %e, "runtime callback not enabled: the runtime API is recorded from activity records");
            return false;
        }
        enabled += 1;
    }
    tracing::debug!(enabled, "runtime calls recorded from callbacks");
    enabled > 0
}

fn callback_name(cupti: &Cupti, cbid: u32) -> Option<String> {
    cupti.callback_name(sys::CUPTI_CB_DOMAIN_RUNTIME_API, cbid).map(|n| n.to_string_lossy().into_owned())
}

/// A runtime call's entry or exit, on the calling thread: its Enter or
/// Leave in that thread's buffer of `rec`.
pub(crate) fn call(cupti: &Cupti, rec: &Recorder, cbid: u32, data: &sys::CUpti_CallbackData) {
    let enter = data.callbackSite == sys::CUPTI_API_ENTER;
    // With a recording window (docs/window.md), a call entered while it is
    // closed is left out whole: its entry notes that in the word CUPTI
    // keeps for the call, which its exit reads.
    if recorder::window::windowed() && !data.correlationData.is_null() {
        // SAFETY: CUPTI's word for this call, shared by its entry and
        // exit callbacks on this thread.
        let skipped = unsafe { &mut *data.correlationData };
        if enter {
            *skipped = u64::from(!recorder::window::on());
        }
        if *skipped != 0 {
            return;
        }
    }
    let name_of = |c| callback_name(cupti, c);
    if enter && PATHS.on() {
        call_path(rec, cbid, &name_of);
    }
    let kernel = if enter && is_launch(cbid, &name_of) {
        // SAFETY: a launch's `symbolName` is null or the kernel's name,
        // kept by the runtime for the life of the process.
        unsafe { LAUNCH_NAMES.ids(rec, data.symbolName) }
    } else {
        None
    };
    record(rec, cbid, enter, data.correlationId, kernel, name_of);
}

/// The call paths of the runtime calls (`GPUTRACE_UNWINDING`).
pub(crate) static PATHS: recorder::callpath::CallPaths = recorder::callpath::CallPaths::new();

/// Records the calling thread's call path before the call's Enter (and
/// before its time is read: the walk is not the call's), the call's
/// region as its leaf. The walk starts in the callback: the frames of
/// CUPTI, the driver and the runtime above the user's function are left
/// out by the merge.
#[cold]
#[inline(never)]
fn call_path(rec: &Recorder, cbid: u32, name_of: &impl Fn(u32) -> Option<String>) {
    let Some(region) = region(rec, cbid, name_of) else { return };
    let Some(frame) = PATHS.here(rec, region) else { return };
    append(rec, &[(gputrace_clock::now(), Event::CallPath { frame })]);
}

/// [`call`] with the callback names from `name_of` (CUPTI's, or a
/// benchmark's): a clock read and an append; the names are asked once per
/// callback id. `kernel`: the string ids of the `CUDA kernel` attribute
/// and of the launched kernel's name, put before a launch's Enter.
pub fn record(
    rec: &Recorder,
    cbid: u32,
    enter: bool,
    correlation: u32,
    kernel: Option<(u32, u32)>,
    name_of: impl Fn(u32) -> Option<String>,
) {
    let time = gputrace_clock::now();
    let Some(region) = region(rec, cbid, &name_of) else { return };
    let event = if enter { Event::EnterCorrelated { region, correlation } } else { Event::Leave { region } };
    let alone = [(time, event)];
    let both;
    let events: &[(u64, Event)] = match kernel {
        Some((name, value)) => {
            both = [(time, Event::AttributeString { name, value }), (time, event)];
            &both
        }
        None => &alone,
    };
    append(rec, events);
    if enter && NOTE_SYNC.load(Ordering::Relaxed) && is_sync(cbid, &name_of) {
        note_sync(correlation);
    }
}

/// Appends `events` to the calling thread's buffer, through the
/// recorder's per-thread cache (one thread-local read), as the MPI hooks
/// do.
#[inline]
fn append(rec: &Recorder, events: &[(u64, Event)]) {
    match rec.this_thread() {
        Some(this) => rec.record_many_on(&this, events),
        None => rec.record_many(events),
    }
}

/// The thread that made synchronizing call `correlation`, once.
pub(crate) fn sync_thread(correlation: u32) -> Option<u32> {
    SYNC_THREADS.lock().ok()?.as_mut()?.remove(&correlation)
}

fn note_sync(correlation: u32) {
    if let Ok(mut map) = SYNC_THREADS.lock() {
        let map = map.get_or_insert_with(HashMap::new);
        if map.len() >= SYNC_MEMORY {
            // Records that never came: forget them rather than grow.
            map.clear();
        }
        map.insert(correlation, recorder::identity::thread_id());
    }
}

/// Kernel launches, whose callback data names the kernel:
/// `cudaLaunchKernel`, `cudaLaunchKernelExC`, `cudaLaunchCooperativeKernel`
/// (not the multi-device one, nor host functions and graphs).
pub fn is_launch(cbid: u32, name_of: &impl Fn(u32) -> Option<String>) -> bool {
    static LAUNCH: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
    let slot = LAUNCH.get(cbid as usize);
    if let Some(v) = slot.map(|s| s.load(Ordering::Relaxed))
        && v != 0
    {
        return v == 2;
    }
    let yes = name_of(cbid).is_some_and(|n| {
        let n = names::api_name(&n);
        n.starts_with("cudaLaunch") && n.contains("Kernel") && !n.contains("MultiDevice")
    });
    if let Some(s) = slot {
        s.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
    }
    yes
}

/// Synchronizing calls: those whose synchronization record CUPTI writes.
fn is_sync(cbid: u32, name_of: &impl Fn(u32) -> Option<String>) -> bool {
    static SYNC: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
    let slot = SYNC.get(cbid as usize);
    if let Some(v) = slot.map(|s| s.load(Ordering::Relaxed))
        && v != 0
    {
        return v == 2;
    }
    let yes = name_of(cbid).is_some_and(|n| {
        let n = names::api_name(&n);
        [
            "cudaStreamSynchronize",
            "cudaEventSynchronize",
            "cudaDeviceSynchronize",
            "cudaThreadSynchronize",
            "cudaStreamWaitEvent",
        ]
        .iter()
        .any(|s| n.starts_with(s))
    });
    if let Some(s) = slot {
        s.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
    }
    yes
}

fn region(rec: &Recorder, cbid: u32, name_of: &impl Fn(u32) -> Option<String>) -> Option<u32> {
    let slot = REGIONS.get(cbid as usize);
    let cached = match slot {
        Some(s) => s.load(Ordering::Relaxed),
        None => MORE_REGIONS.lock().ok()?.iter().find(|(c, _)| *c == cbid).map_or(0, |(_, r)| *r),
    };
    match cached {
        FILTERED => return None,
        0 => {}
        id => return Some(id - 1),
    }
    let full = name_of(cbid).unwrap_or_else(|| format!("CUDA API {cbid}"));
    let id = rec.region(names::api_name(&full), None, Paradigm::Cuda, RegionRole::Wrapper, "CUDA runtime");
    let value = id.map_or(FILTERED, |i| i + 1);
    match slot {
        Some(s) => {
            // Two threads may define it at once: the first one's id stays
            // (the other's definition is an unused duplicate).
            if let Err(first) = s.compare_exchange(0, value, Ordering::Relaxed, Ordering::Relaxed) {
                return (first != FILTERED).then(|| first - 1);
            }
        }
        None => {
            if let Ok(mut more) = MORE_REGIONS.lock() {
                more.push((cbid, value));
            }
        }
    }
    id
}

/// Has CUPTI record, of the runtime calls, those [`names::is_work_call`]
/// names (`cuptiActivityEnableRuntimeApi`, CUDA 12.5 and later): every
/// runtime callback id CUPTI names is switched on or off. Where CUPTI
/// lacks the call every runtime call is recorded and the converter
/// leaves the others out (the cost of `runtime-all`, the trace of
/// `runtime`).
pub fn select_runtime_calls(cupti: &Cupti) {
    if cupti.activity_enable_runtime_api.is_none() {
        tracing::debug!("this CUPTI records every runtime call (no cuptiActivityEnableRuntimeApi)");
        return;
    }
    let named = runtime_callbacks(cupti);
    let mut kept = 0u32;
    for (cbid, name) in &named {
        let keep = names::is_work_call(names::api_name(name));
        if matches!(cupti.select_runtime_call(*cbid, keep), Some(Ok(()))) && keep {
            kept += 1;
        }
    }
    let named = named.len();
    tracing::debug!(kept, named, "runtime calls recorded by CUPTI");
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw::{Producer, RawFile};
    use recorder::RecorderOptions;

    #[test]
    fn a_launch_names_its_kernel_before_its_enter_and_other_calls_do_not() {
        let name_of = |cbid: u32| {
            Some(match cbid {
                1 => "cudaLaunchKernel_v7000".to_string(),
                2 => "cudaLaunchHostFunc_v10000".to_string(),
                _ => "cudaStreamSynchronize_v3020".to_string(),
            })
        };
        assert!(is_launch(1, &name_of) && !is_launch(2, &name_of) && !is_launch(3, &name_of));
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::create(dir.path(), Producer::Cuda, RecorderOptions::default()).unwrap();
        record(&rec, 1, true, 7, Some((40, 41)), name_of);
        record(&rec, 1, false, 7, None, name_of);
        record(&rec, 3, true, 8, None, name_of);
        let path = rec.path().to_path_buf();
        rec.finish();
        let file = RawFile::open(&path).unwrap();
        let mut events = Vec::new();
        for chunk in &file.chunks {
            let mut payload = Vec::new();
            file.read_payload(chunk, &mut payload).unwrap();
            events.extend(RawFile::events(chunk, &payload).map(|(_, e)| e));
        }
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match e {
                Event::AttributeString { name, value } => format!("attribute {name}={value}"),
                Event::EnterCorrelated { correlation, .. } => format!("enter {correlation}"),
                Event::Leave { .. } => "leave".into(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["attribute 40=41", "enter 7", "leave", "enter 8"]);
    }
}
