//! The agent inside a CUDA process: starting CUPTI, receiving its
//! activity buffers, and finishing at exit.
//!
//! Everything CUPTI calls lands here, in `extern "C"` functions that never
//! unwind (each body runs under the agent's [`recorder::guard::Guard`]; a
//! panic switches the agent off with one warning). CUPTI's buffer callback
//! only queues a completed buffer ([`crate::handoff`]); the agent's own
//! thread `gputrace-cupti` converts it (and the exiting thread what is
//! left at exit), never the application's threads, whose only cost is
//! CUPTI's own record keeping.
//!
//! CUPTI's buffers are only ever flushed *forced* at exit: a forced flush
//! hands over buffers with records of work still in flight, which CUPTI
//! then never completes, and buffers other threads are still filling.

use std::alloc::{Layout, alloc, dealloc};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use config::Config;
use cupti_sys::{self as sys, Cupti, CuptiVersion};
use raw::Producer;
use recorder::Recorder;
use recorder::diag;
use recorder::guard::Guard;

use crate::capture::Capture;
use crate::convert::{Converter, Enabled, Names};
use crate::copies::{self, CopyAddresses};
use crate::handoff::{self, Completed};
use crate::nvlink::{Intervals, Sampler};
use crate::records::{self, ApiDomain, Record, Strings};
use crate::uvm::start_uvm;

mod buffers;
mod callbacks;

use buffers::{DROPPED_FOR_CAPTURE, LiveNames, buffer_completed, buffer_requested, c_string, convert, in_window};
use callbacks::{OWN_THREADS, enable_profiler_callbacks, enable_resource_callbacks, on_callback};

/// The running agent.
struct Agent {
    cupti: Cupti,
    version: CuptiVersion,
    config: Config,
    enabled: Enabled,
    buffer_size: usize,
    state: Mutex<State>,
    capture: Option<PathBuf>,
    captured: AtomicUsize,
    /// Context and stream handles and graph kernel nodes seen created,
    /// waiting for the stream.
    handles: Mutex<Vec<raw::Definition>>,
    /// Copy calls' ends, waiting for their records (`memory` only).
    copies: CopyAddresses,
}

struct State {
    converter: Converter,
    /// Definitions (devices, NVLink) seen before the first GPU work.
    early: Vec<Record>,
    api_names: HashMap<(ApiDomain, u32), Option<String>>,
    sampler: Option<Sampler>,
    sampled: Vec<u32>,
}

static AGENT: OnceLock<Agent> = OnceLock::new();
/// The process's CUDA stream: created by whichever comes first, the
/// first recorded runtime call (on its thread) or the first buffer with
/// GPU work; `None` when it could not be created.
static RECORDER: OnceLock<Option<Recorder>> = OnceLock::new();
/// The runtime API is recorded from callbacks ([`crate::api`]).
static API_CALLBACKS: AtomicBool = AtomicBool::new(false);
static STARTED: AtomicBool = AtomicBool::new(false);
/// Off after a panic in the agent's work (see [`guarded`]).
static GUARD: Guard = Guard::new(|_| "the CUDA agent failed and stopped recording; the program goes on".into());
/// Unified-memory counters wait for the first context (see `uvm::start_uvm`).
static UVM_PENDING: AtomicBool = AtomicBool::new(false);

const ALIGN: usize = 8;
/// At most this many records wait for the first GPU work.
const EARLY_LIMIT: usize = 1 << 20;

/// Starts the agent (once per process). Any problem is one warning line
/// and CUDA runs untraced.
pub fn start() {
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    let Some((config, enabled)) = recorder::prelude(|c| Some(Enabled::from_set(&c.cuda_enable)).filter(Enabled::any))
    else {
        return;
    };
    let kept = config.clone();
    if let Err(why) = setup(config, enabled) {
        diag::warn_once(&format!("CUDA is not traced: {why}"));
        // The merge says why rather than that the program did no GPU work.
        recorder::record_untraced(Producer::Cuda, &kept, &why);
    }
}

fn setup(config: Config, enabled: Enabled) -> Result<(), String> {
    let cupti =
        Cupti::find_and_load(config.cupti_lib.as_deref()).map_err(|e| format!("CUPTI could not be loaded: {e}"))?;
    let version = cupti.version();
    let handle = cupti.subscribe(Some(on_callback)).map_err(|e| match e.code {
        sys::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            "another CUDA profiler (Nsight Systems, say) is already attached to CUPTI".to_string()
        }
        sys::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES | sys::CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES => {
            "insufficient privileges for CUPTI (see NVreg_RestrictProfilingToAdminUsers)".to_string()
        }
        _ => e.to_string(),
    })?;
    if let Some(rc) = cupti.set_thread_id_type(sys::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
        rc.map_err(|e| e.to_string())?;
    }
    match cupti.register_timestamp(Some(monotonic_ns)) {
        Some(rc) => rc.map_err(|e| e.to_string())?,
        None => return Err("this CUPTI predates CUDA 11.6 (no timestamp callback)".into()),
    }
    cupti.register_buffers(Some(buffer_requested), Some(buffer_completed)).map_err(|e| e.to_string())?;
    // `runtime` (not `runtime-all`): the work calls from callbacks, so that
    // the other runtime calls cost nothing (see `api`).
    let callbacks = enabled.runtime && !enabled.runtime_all && crate::api::enable(&cupti, handle);
    // Synchronizing calls note their thread only for SYNCHRONIZATION records.
    crate::api::NOTE_SYNC.store(enabled.sync, Ordering::SeqCst);
    // The runtime calls' call paths (GPUTRACE_UNWINDING), from the callbacks.
    crate::api::PATHS.set(callbacks && config.unwinding);
    API_CALLBACKS.store(callbacks, Ordering::SeqCst);
    enable_activity(&cupti, enabled, callbacks);
    // CUPTI's worker hands back full buffers each second (its periodic
    // flush returns no other).
    let _ = cupti.set_flush_period(1000);
    if !config.hang_timeout.is_zero() || !config.flight_recorder.is_zero() {
        flush_every(Duration::from_secs(1));
    }
    let capture = config.cuda_capture.clone();
    if let Some(dir) = &capture {
        let _ = std::fs::create_dir_all(dir);
    }
    let buffer_size = config.cuda_buffer.clamp(64 << 10, 64 << 20) as usize;
    let converter = Converter::new(enabled, std::process::id(), thread_name);
    let agent = Agent {
        cupti,
        version,
        config,
        enabled,
        buffer_size,
        state: Mutex::new(State {
            converter,
            early: Vec::new(),
            api_names: HashMap::new(),
            sampler: None,
            sampled: Vec::new(),
        }),
        capture,
        captured: AtomicUsize::new(0),
        handles: Mutex::new(Vec::new()),
        copies: CopyAddresses::default(),
    };
    let _ = AGENT.set(agent);
    if let Some(agent) = AGENT.get() {
        enable_resource_callbacks(agent, handle);
        // The recording window is set up before the recorder (made at the
        // first GPU work), so that cudaProfilerStart finds it.
        recorder::window::start(&agent.config);
        if agent.config.capture_range == config::CaptureRange::CudaProfilerApi {
            enable_profiler_callbacks(&agent.cupti, handle);
        }
        // With `memory`, the copy calls: their parameters name the
        // addresses a copy read and wrote (see `copies`).
        if agent.enabled.memory {
            for (domain, cbid) in copies::calls() {
                let d = match domain {
                    ApiDomain::Driver => sys::CUPTI_CB_DOMAIN_DRIVER_API,
                    ApiDomain::Runtime => sys::CUPTI_CB_DOMAIN_RUNTIME_API,
                };
                if let Err(e) = agent.cupti.enable_callback(handle, d, cbid) {
                    tracing::debug!(cbid, %e, "copy callback not enabled");
                }
            }
        }
    }
    // SAFETY: `at_exit` is an extern "C" fn without arguments that never
    // unwinds.
    unsafe { libc::atexit(at_exit) };
    tracing::debug!(%version, "CUDA agent started");
    Ok(())
}

/// Enables the activity kinds of what `enabled` records (`callbacks`:
/// the runtime calls come from callbacks, not RUNTIME records), the
/// selection of runtime calls CUPTI records, and unified memory (now or
/// at the first context).
fn enable_activity(cupti: &Cupti, enabled: Enabled, callbacks: bool) {
    let mut kinds = vec![sys::CUPTI_ACTIVITY_KIND_DEVICE, sys::CUPTI_ACTIVITY_KIND_CONTEXT];
    // Graph-level trace first: enabling it selects, for the whole session,
    // one record per graph execution instead of the records of its nodes.
    if enabled.graph {
        enable_graph_trace(cupti);
    }
    let wanted = [
        (enabled.driver, sys::CUPTI_ACTIVITY_KIND_DRIVER),
        ((enabled.runtime && !callbacks) || enabled.runtime_all, sys::CUPTI_ACTIVITY_KIND_RUNTIME),
        (enabled.kernel, sys::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
        (enabled.memcpy, sys::CUPTI_ACTIVITY_KIND_MEMCPY),
        (enabled.peer, sys::CUPTI_ACTIVITY_KIND_MEMCPY2),
        (enabled.memset, sys::CUPTI_ACTIVITY_KIND_MEMSET),
        (enabled.sync, sys::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
        (enabled.nvlink, sys::CUPTI_ACTIVITY_KIND_NVLINK),
        (enabled.memory, sys::CUPTI_ACTIVITY_KIND_MEMORY2),
        (enabled.memory, sys::CUPTI_ACTIVITY_KIND_MEMORY_POOL),
    ];
    kinds.extend(wanted.iter().filter(|(on, _)| *on).map(|(_, k)| *k));
    // Synchronization records need the API call they belong to.
    if enabled.sync && !enabled.runtime && !enabled.runtime_all && !enabled.driver && !callbacks {
        kinds.push(sys::CUPTI_ACTIVITY_KIND_RUNTIME);
    }
    let runtime_records = kinds.contains(&sys::CUPTI_ACTIVITY_KIND_RUNTIME);
    // Unified memory: the counters are configured before the kind is
    // enabled, as CUPTI requires; where that fails (no UVM support, some
    // virtualized setups) one warning, and the rest is traced.
    for kind in kinds {
        if let Err(e) = cupti.enable_kind(kind) {
            tracing::debug!(kind, %e, "activity kind not enabled");
        }
    }
    // `runtime` without `runtime-all`: CUPTI records the calls that make or
    // wait for GPU work only, and the getters and queries cost nothing.
    if runtime_records && !enabled.runtime_all {
        crate::api::select_runtime_calls(cupti);
    }
    // Unified memory: inside cuInit, where the agent starts, CUPTI answers
    // NOT_READY (the driver is not initialized yet); then it is set up
    // at the first context's creation (`on_callback`).
    if enabled.uvm && !start_uvm(cupti, true) {
        UVM_PENDING.store(true, Ordering::SeqCst);
    }
}

fn thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).map(|s| s.trim_end().to_string()).unwrap_or_default()
}

/// Runs `f` with the agent unless it is off; a panic switches it off.
/// (Its warning names no callback: any failure stops the whole agent.)
fn guarded(f: impl FnOnce(&Agent)) {
    let Some(agent) = AGENT.get() else { return };
    GUARD.run("CUPTI callback", || f(agent));
}

/// Where a hang is watched for (`GPUTRACE_HANG_TIMEOUT`, a flight
/// recorder): asks CUPTI for the buffers whose records are all complete,
/// full or not, every `period`, so that the GPU work that ended reaches
/// the stream while the program runs — the watchdog takes it for
/// progress, and a job stopped at a hang keeps it (CUPTI would otherwise
/// hand back a buffer only when full, or at the exit a stopped job never
/// makes). A buffer holding a kernel that never ends stays with CUPTI.
fn flush_every(period: Duration) {
    let spawned = std::thread::Builder::new().name("gputrace-cupti-flush".into()).spawn(move || {
        loop {
            std::thread::sleep(period);
            guarded(|agent| {
                let _ = agent.cupti.flush_all(false);
            });
        }
    });
    if let Err(e) = spawned {
        tracing::debug!("no periodic CUPTI flush: {e}");
    }
}

extern "C" fn monotonic_ns() -> u64 {
    gputrace_clock::now()
}

extern "C" fn at_exit() {
    let exit_started = gputrace_clock::now();
    guarded(|agent| {
        // Runs buffer_completed for the remaining buffers.
        let _ = agent.cupti.flush_all(true);
        // They were queued: converted here, after what the agent's thread
        // is converting.
        if !handoff::drain(convert, Duration::from_secs(10)) {
            diag::warn_once("the CUDA agent's thread did not finish its last buffer in 10 s; its records are lost");
        }
        let mut state = agent.lock();
        state.sampler = None;
        if let Some(rec) = current() {
            agent.write_handles(&rec);
            state.converter.finish(&rec);
            rec.finish_from(exit_started);
        }
    });
}

impl Agent {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn api_name(&self, domain: ApiDomain, cbid: u32) -> Option<String> {
        let d = match domain {
            ApiDomain::Driver => sys::CUPTI_CB_DOMAIN_DRIVER_API,
            ApiDomain::Runtime => sys::CUPTI_CB_DOMAIN_RUNTIME_API,
        };
        self.cupti.callback_name(d, cbid).map(|n| n.to_string_lossy().into_owned())
    }

    /// Decodes the records of a completed buffer, keeping each record's
    /// bytes for a capture when one is asked for.
    ///
    /// # Safety
    ///
    /// `buffer` holds `valid` bytes of records written by CUPTI.
    unsafe fn records(&self, buffer: *mut u8, valid: usize) -> (Vec<Record>, Vec<Vec<u8>>) {
        // SAFETY: the caller's buffer of CUPTI's records, alive for this call.
        let ptrs: Vec<usize> =
            unsafe { self.cupti.record_addresses(buffer, valid) }.into_iter().map(|p| p as usize).collect();
        let base = buffer as usize;
        let mut records = Vec::with_capacity(ptrs.len());
        let mut raw = Vec::new();
        for (i, &p) in ptrs.iter().enumerate() {
            let end = ptrs.get(i + 1).copied().unwrap_or(base + valid);
            let len = end.saturating_sub(p);
            // SAFETY: [p, p + len) lies inside the `valid` bytes of the buffer.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
            if let Some(r) = records::decode(self.version, bytes) {
                // Work still running at a forced flush: it never ended, as
                // far as the trace knows (its launch stays without a record).
                if records::complete(&r) {
                    records.push(r);
                }
            } else {
                crate::lost::note(crate::lost::SourceLoss::CuptiUndecodable, 1);
            }
            if self.capture.is_some() {
                raw.push(bytes.to_vec());
            }
        }
        (records, raw)
    }

    fn process(&self, records: &[Record], raw: &[Vec<u8>]) {
        let mut state = self.lock();
        let state = &mut *state;
        if matches!(RECORDER.get(), Some(None)) {
            return;
        }
        if let Some(dir) = &self.capture {
            self.save_capture(dir, records, raw, state);
        }
        // With a recording window, the work and calls that started inside
        // it (docs/window.md).
        let windowed: Vec<Record>;
        let records = if recorder::window::windowed() {
            windowed = records.iter().filter(|r| in_window(r)).copied().collect();
            &windowed[..]
        } else {
            records
        };
        // A new context is reason enough to start when GPU metrics are
        // sampled (they begin with it); otherwise the first GPU work is.
        let context = self.nvml_intervals().any() && records.iter().any(|r| matches!(r, Record::Context { .. }));
        if current().is_none() && !state.converter.has_work(records) && !context {
            // API calls and device records before any GPU work wait here;
            // a process that never does GPU work leaves no trace.
            if state.early.len() + records.len() > EARLY_LIMIT {
                tracing::debug!(dropped = state.early.len(), "records before any GPU work dropped");
                crate::lost::note(crate::lost::SourceLoss::CudaEarlyOverflow, state.early.len() as u64);
                state.early.clear();
            }
            state.early.extend(records.iter().copied());
            return;
        }
        let Some(rec) = recorder(&self.config) else {
            return;
        };
        self.write_handles(rec);
        let early = std::mem::take(&mut state.early);
        let names = LiveNames { agent: self, cache: &mut state.api_names };
        if !early.is_empty() {
            state.converter.convert(&early, &names, rec);
        }
        state.converter.convert(records, &names, rec);
        // Remember API names looked up, so later buffers skip CUPTI.
        for r in records {
            if let Record::Api { domain, cbid, .. } = r {
                let key = (*domain, *cbid);
                if !names.cache.contains_key(&key) {
                    let n = names.api(*domain, *cbid);
                    names.cache.insert(key, n);
                }
            }
        }
        if self.nvml_intervals().any() {
            let ordinals: Vec<u32> = state.converter.device_uuids.keys().copied().collect();
            for d in ordinals {
                state.sample_nvml(self, d);
            }
        }
    }

    /// Samples GPU `ordinal` (whose UUID the driver gave) from now on:
    /// the process's stream starts here if it has not yet.
    fn sample_early(&self, ordinal: u32, uuid: [u8; 16]) {
        let mut state = self.lock();
        if recorder(&self.config).is_none() {
            return;
        }
        state.converter.device_uuids.entry(ordinal).or_insert(uuid);
        state.sample_nvml(self, ordinal);
    }

    /// Keeps a created context's or stream's handle with CUPTI's ids for
    /// it (written with the next buffer): what NVTX names resolve through.
    fn note_handle(&self, kind: raw::CudaObject, context: sys::CUcontext, stream: sys::CUstream) {
        // SAFETY: CUPTI's handles from its callback, alive during it.
        let Ok(ctx) = (unsafe { self.cupti.context_id(context) }) else { return };
        let (handle, sid) = match kind {
            // SAFETY: as above.
            raw::CudaObject::Stream => match unsafe { self.cupti.stream_id(context, stream) } {
                Some(Ok(sid)) => (stream as u64, sid),
                _ => return,
            },
            _ => (context as u64, 0),
        };
        let def = raw::Definition::CudaHandle { kind, handle, context: ctx, stream: sid };
        if let Ok(mut h) = self.handles.lock() {
            h.push(def);
        }
    }

    /// Writes the handles noted so far.
    fn write_handles(&self, rec: &Recorder) {
        let noted = self.handles.lock().map(|mut h| std::mem::take(&mut *h)).unwrap_or_default();
        for d in &noted {
            rec.define(d);
        }
    }

    /// What the NVML sampler samples: NVLink traffic when `nvlink` is
    /// recorded, GPU metrics unless turned off; a zero period is off.
    fn nvml_intervals(&self) -> Intervals {
        let on = |d: std::time::Duration| (!d.is_zero()).then_some(d);
        Intervals {
            nvlink: if self.enabled.nvlink { on(self.config.nvlink_interval) } else { None },
            gpu: on(self.config.gpu_metrics_interval),
        }
    }

    fn save_capture(&self, dir: &std::path::Path, records: &[Record], raw: &[Vec<u8>], state: &State) {
        let n = self.captured.fetch_add(1, Ordering::Relaxed);
        let mut c = Capture {
            api_version: self.version.api(),
            library_major: self.version.cuda().0,
            records: raw.to_vec(),
            dropped: DROPPED_FOR_CAPTURE.swap(0, Ordering::Relaxed),
            ..Capture::default()
        };
        for r in records {
            match r {
                Record::Kernel { name, .. } | Record::Device { name, .. } => {
                    if let Some(s) = c_string(*name) {
                        c.strings.insert(*name, s);
                    }
                }
                Record::Memcpy { correlation, .. } | Record::PeerCopy { correlation, .. } => {
                    if let Some(ends) = self.copies.peek(*correlation) {
                        c.copy_ends.insert(*correlation, ends);
                    }
                }
                Record::Api { domain, cbid, .. } => {
                    let cached = state.api_names.get(&(*domain, *cbid)).cloned().flatten();
                    if let Some(s) = cached.or_else(|| self.api_name(*domain, *cbid)) {
                        c.api_names.insert((*domain, *cbid), s);
                    }
                }
                _ => {}
            }
        }
        let path = dir.join(format!("{}-{n:04}.cupti", std::process::id()));
        if let Err(e) = std::fs::File::create(&path).and_then(|mut f| c.write(&mut f)) {
            diag::warn_once(&format!("cannot write CUPTI capture {}: {e}", path.display()));
        }
    }
}

/// The process's CUDA stream, created on first use (see [`RECORDER`]).
/// The process's CUDA stream, created at the first call (borrowed: the
/// callbacks on the program's threads take no reference count).
fn recorder(config: &Config) -> Option<&'static Recorder> {
    RECORDER.get_or_init(|| recorder::start_with(Producer::Cuda, config)).as_ref()
}

/// The process's CUDA stream if it was created.
fn current() -> Option<Recorder> {
    RECORDER.get().cloned().flatten()
}

impl State {
    fn sample_nvml(&mut self, agent: &Agent, device: u32) {
        if self.sampled.contains(&device) {
            return;
        }
        let Some(rec) = current() else {
            return;
        };
        let Some(uuid) = self.converter.device_uuids.get(&device).copied() else {
            return;
        };
        self.sampled.push(device);
        if self.sampler.is_none() {
            match Sampler::start(rec, agent.nvml_intervals()) {
                Ok(s) => self.sampler = Some(s),
                Err(e) => {
                    diag::warn_once(&format!("NVLink traffic and GPU metrics are not sampled: {e}"));
                    return;
                }
            }
        }
        if let Some(s) = &self.sampler {
            s.add(device, uuid);
        }
    }
}

/// Enables `GRAPH_TRACE` (`GPUTRACE_CUDA_ENABLE` has `graph`); says so
/// when this CUPTI refuses it, since graphs are then traced node by node.
fn enable_graph_trace(cupti: &Cupti) {
    if let Err(e) = cupti.enable_kind(sys::CUPTI_ACTIVITY_KIND_GRAPH_TRACE) {
        tracing::warn!(%e, "graph-level trace not enabled: graphs are traced node by node");
    }
}
