//! The plugin inside a traced process: starting once, guarding every
//! callback, and finishing at exit.
//!
//! Every entry point NCCL calls lands in a function here, through
//! [`crate::exports`]. Each runs its work under the plugin's
//! [`recorder::guard::Guard`]: a panic switches the plugin off with one
//! `[gputrace] warning:` line, sets NCCL's activation mask to 0 (so that
//! NCCL stops calling), and the callback still returns `ncclSuccess` —
//! NCCL never fails because of the plugin. Only `init` can refuse, and it
//! does not: when recording is off or impossible it returns success with
//! an empty mask.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use raw::Producer;
use recorder::guard::{Guard, shield};
use recorder::{diag, identity};

use crate::abi::{NCCL_SUCCESS, NcclResult};
use crate::capture::{CaptureWriter, Record};
use crate::handle::HandlePtr;
use crate::levels::Levels;
use crate::model::{Descr, InitArgs, NvtxPayload, NvtxRange, Start, StateChange};
use crate::profiler::{CommContext, Profiler, Stamp, ThreadState};

/// The running plugin.
struct Live {
    profiler: Profiler,
    capture: Option<CaptureWriter>,
    pid: i32,
}

static LIVE: OnceLock<Option<Live>> = OnceLock::new();
/// Off after an internal error in a callback (named in the warning).
static GUARD: Guard =
    Guard::new(|what| format!("the NCCL plugin failed ({what}) and stopped recording; the program goes on"))
        .when_off(stop_nccl_calling);
/// NCCL's activation mask, as `init` handed it (one per NCCL library).
static MASKS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The contexts this plugin made, so that a context NCCL passes can be
/// checked before use (a proxy operation of another process carries that
/// process's context, an address meaningless here).
const MAX_CONTEXTS: usize = 4096;
static CONTEXTS: [AtomicUsize; MAX_CONTEXTS] = [const { AtomicUsize::new(0) }; MAX_CONTEXTS];
static N_CONTEXTS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD: ThreadSlot = const { ThreadSlot(RefCell::new(None)) };
}

/// A thread's state; when the thread exits with a group still open, the
/// calls in it are lost, and counted.
struct ThreadSlot(RefCell<Option<ThreadState>>);

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        if let Some(th) = self.0.get_mut() {
            recorder::lost::note(raw::SourceLoss::NcclThreadExit, th.open_calls() as u64);
        }
    }
}

fn start_once() -> Option<Live> {
    let (config, levels) = recorder::prelude(|c| Some(Levels::from_set(&c.nccl_enable)).filter(Levels::any))?;
    let rec = recorder::start_with(Producer::Nccl, &config)?;
    crate::profiler::PATHS.set(config.unwinding);
    let capture = config.nccl_capture.as_ref().and_then(|template| {
        let template = template.to_string_lossy();
        let header = identity::stream_header(Producer::Nccl);
        CaptureWriter::create(&template, levels, &header)
            .map_err(|e| diag::warn_once(&format!("cannot write the NCCL capture {template}: {e}")))
            .ok()
    });
    // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
    unsafe { libc::atexit(at_exit) };
    tracing::debug!(path = %rec.path().display(), levels = %levels.names(), "NCCL plugin recording");
    Some(Live { profiler: Profiler::new(rec, levels), capture, pid: std::process::id() as i32 })
}

/// What the plugin does besides the other producers when it switches
/// off: NCCL would go on building descriptors and calling for every
/// event, to callbacks that return at once; with its activation masks at
/// 0 it stops calling.
fn stop_nccl_calling() {
    for &mask in MASKS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        // SAFETY: `mask` is the int NCCL passed to `init` (its process-wide
        // activation mask, which NCCL reads atomically); we are inside a
        // callback from that NCCL, so the library is loaded.
        unsafe { AtomicI32::from_ptr(mask as *mut i32) }.store(0, Ordering::Relaxed);
    }
}

/// Runs `f` with the plugin unless it is off; a panic switches it off.
fn guarded(what: &str, f: impl FnOnce(&Live)) {
    let Some(Some(live)) = LIVE.get() else { return };
    GUARD.run(what, || f(live));
}

/// Runs `f` with this thread's state.
fn with_thread<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    THREAD
        .try_with(|t| {
            let mut t = t.0.try_borrow_mut().ok()?;
            let th = t.get_or_insert_with(|| ThreadState::live(identity::thread_id()));
            Some(f(th))
        })
        .ok()
        .flatten()
        // A thread being torn down: the event is lost, and counted.
        .or_else(|| {
            recorder::lost::note(raw::SourceLoss::NcclThreadGone, 1);
            None
        })
}

fn register_context(ctx: &'static CommContext) {
    let i = N_CONTEXTS.fetch_add(1, Ordering::SeqCst);
    if let Some(slot) = CONTEXTS.get(i) {
        slot.store(ctx as *const CommContext as usize, Ordering::SeqCst);
    }
}

/// The context at `ptr` if this plugin made it.
fn our_context(ptr: *mut c_void) -> Option<&'static CommContext> {
    let addr = ptr as usize;
    if addr == 0 {
        return None;
    }
    let n = N_CONTEXTS.load(Ordering::Acquire).min(MAX_CONTEXTS);
    CONTEXTS[..n].iter().any(|c| c.load(Ordering::Relaxed) == addr).then(|| {
        // SAFETY: the address is one of the contexts `register_context`
        // recorded: leaked boxes that live as long as the process.
        unsafe { &*(addr as *const CommContext) }
    })
}

fn capture(live: &Live, record: impl FnOnce() -> Record) {
    if let Some(c) = &live.capture {
        c.write(&record(), identity::thread_name);
    }
}

/// `init`: starts the plugin (once per process), sets the mask, and
/// makes the communicator's context.
///
/// # Safety
///
/// `context` and `mask` are NCCL's valid out-pointers.
pub(crate) unsafe fn init(context: *mut *mut c_void, mask: *mut c_int, args: impl FnOnce() -> InitArgs) -> NcclResult {
    // SAFETY: NCCL passes valid out-pointers.
    unsafe {
        *context = std::ptr::null_mut();
        *mask = 0;
    }
    GUARD.run("init", || {
        let Some(live) = LIVE.get_or_init(start_once) else { return };
        let args = args();
        let ctx = live.profiler.init(&args);
        register_context(ctx);
        MASKS.lock().unwrap_or_else(|e| e.into_inner()).push(mask as usize);
        // SAFETY: as above.
        unsafe {
            *mask = live.profiler.mask(args.version);
            *context = ctx as *const CommContext as *mut c_void;
        }
        capture(live, || Record::Init {
            t: gputrace_clock::now(),
            tid: identity::thread_id(),
            ctx: ctx as *const CommContext as u64,
            args,
        });
    });
    NCCL_SUCCESS
}

/// `startEvent`.
///
/// # Safety
///
/// `handle` is NCCL's valid out-pointer; `descr` reads NCCL's descriptor.
pub(crate) unsafe fn start(
    context: *mut c_void,
    handle: *mut *mut c_void,
    descr: impl FnOnce() -> Start,
) -> NcclResult {
    if !handle.is_null() {
        // SAFETY: NCCL passes a valid out-pointer.
        unsafe { *handle = std::ptr::null_mut() };
    }
    // Outside the recording window (docs/window.md) an event is not
    // started: NCCL gets no handle, so its states and stop are not
    // recorded either; an event started inside keeps its stop.
    if !recorder::window::on() {
        return NCCL_SUCCESS;
    }
    guarded("startEvent", |live| {
        let now = Stamp::lazy();
        let start = descr();
        let mut ctx = our_context(context);
        if let Descr::ProxyOp(op) = start.descr
            && op.pid != live.pid
        {
            ctx = None;
        }
        let h = with_thread(|th| live.profiler.start(th, ctx, &start, &now)).flatten();
        let ptr = h.map_or(std::ptr::null_mut(), |h| h.as_ptr() as *mut c_void);
        if !handle.is_null() {
            // SAFETY: as above.
            unsafe { *handle = ptr };
        }
        capture(live, || Record::Start {
            t: now.get(),
            tid: identity::thread_id(),
            ctx: context as u64,
            handle: ptr as u64,
            start,
        });
    });
    NCCL_SUCCESS
}

/// `recordEventState`.
///
/// # Safety
///
/// `handle` is null or a handle `start` returned and NCCL has not stopped;
/// `state` reads NCCL's state arguments.
pub(crate) unsafe fn state(handle: *mut c_void, state: impl FnOnce() -> StateChange) -> NcclResult {
    let Some(h) = HandlePtr::new(handle.cast()) else { return NCCL_SUCCESS };
    guarded("recordEventState", |live| {
        let now = Stamp::lazy();
        let st = state();
        // SAFETY: per the contract, `h` is a live handle of ours.
        with_thread(|th| unsafe { live.profiler.state(th, h, &st, &now) });
        capture(live, || Record::State { t: now.get(), tid: identity::thread_id(), handle: handle as u64, state: st });
    });
    NCCL_SUCCESS
}

/// `stopEvent`.
///
/// # Safety
///
/// `handle` is null or a handle `start` returned, stopped once.
pub(crate) unsafe fn stop(handle: *mut c_void) -> NcclResult {
    let Some(h) = HandlePtr::new(handle.cast()) else { return NCCL_SUCCESS };
    guarded("stopEvent", |live| {
        let now = Stamp::lazy();
        // SAFETY: per the contract, `h` is ours, stopped once. Without a
        // thread state (a thread being torn down) the handle is left
        // alone: a group may still hold it.
        with_thread(|th| unsafe { live.profiler.stop(th, h, &now) });
        capture(live, || Record::Stop { t: now.get(), tid: identity::thread_id(), handle: handle as u64 });
    });
    NCCL_SUCCESS
}

/// Whether the plugin records (started now if it was not): gputrace's
/// NVTX library asks before handing NCCL's NVTX ranges over, which may be
/// before NCCL's first `init` (`ncclCommInitRank`'s range comes first).
pub(crate) fn nvtx_recording() -> bool {
    // A panic here answers no, and leaves the plugin on: its own `init`
    // tries again and switches it off if it fails there too.
    !GUARD.off() && shield(|| LIVE.get_or_init(start_once).is_some()).unwrap_or(false)
}

/// One of NCCL's NVTX ranges begins on the calling thread.
pub(crate) fn nvtx_push(range: impl FnOnce() -> NvtxRange) {
    guarded("NVTX range", |live| {
        let now = Stamp::lazy();
        let range = range();
        with_thread(|th| live.profiler.nvtx_push(th, &range, &now));
        capture(live, || Record::NvtxPush { t: now.get(), tid: identity::thread_id(), range });
    });
}

/// The innermost of NCCL's NVTX ranges on the calling thread ends.
pub(crate) fn nvtx_pop(payload: impl FnOnce() -> Option<NvtxPayload>) {
    guarded("NVTX range", |live| {
        let now = Stamp::lazy();
        let payload = payload();
        with_thread(|th| live.profiler.nvtx_pop(th, payload, &now));
        capture(live, || Record::NvtxPop { t: now.get(), tid: identity::thread_id(), payload });
    });
}

/// `finalize`.
pub(crate) fn finalize(context: *mut c_void) -> NcclResult {
    guarded("finalize", |live| {
        if let Some(ctx) = our_context(context) {
            live.profiler.finalize(ctx);
        }
        capture(live, || Record::Finalize {
            t: gputrace_clock::now(),
            tid: identity::thread_id(),
            ctx: context as u64,
        });
        if let Some(c) = &live.capture {
            c.flush();
        }
    });
    NCCL_SUCCESS
}

/// The exit handler: writes what is held back and ends the stream, even
/// after the plugin switched itself off (what was recorded is kept).
extern "C" fn at_exit() {
    let exit_started = gputrace_clock::now();
    shield(|| {
        if let Some(Some(live)) = LIVE.get() {
            // The exiting thread's group still open: counted here when its
            // state is still there, taken so that its drop does not count
            // it again; glibc runs the main thread's thread-local
            // destructors before the exit handlers, and then the drop has
            // counted it already (nothing is lost by the state being gone).
            let _ = THREAD.try_with(|t| {
                if let Ok(mut t) = t.0.try_borrow_mut()
                    && let Some(th) = t.take()
                {
                    recorder::lost::note(raw::SourceLoss::NcclThreadExit, th.open_calls() as u64);
                }
            });
            live.profiler.finish(exit_started);
            if let Some(c) = &live.capture {
                c.flush();
            }
        }
    });
}
