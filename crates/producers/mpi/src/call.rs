//! One intercepted call: whether to record it, its Enter and Leave, and
//! the guarantees every wrapper gives.
//!
//! A wrapper asks [`Call::begin`] whether to do anything at all. It says
//! no — and the wrapper calls PMPI and returns — when the thread is
//! already inside a wrapper (MPI libraries call `MPI_*` internally, and we
//! must not record our own PMPI calls), before `MPI_Init` and after
//! `MPI_Finalize`, and when the function's group is off or recording is
//! paused outside its window (unless the function must be followed
//! anyway, as communicator creation must). Our
//! own work before and after the PMPI call runs under the runtime's
//! `shield` ([`shielded`]): a bug in the tracer loses events, never the
//! call or the program.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_int;
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use raw::{Event, Paradigm, RegionRole};
use recorder::{Recorder, ThisThread};

use crate::abi::MAX_STATUS_BYTES;
use crate::comms;
use crate::state::{self, Group, Phase};

/// Whether a function must be followed even when its group is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Only when its group is on.
    IfEnabled,
    /// Always: it creates or frees communicators, or completes requests
    /// whose events belong to other groups.
    Always,
}

const UNDEFINED: u32 = 0;
const FILTERED: u32 = u32::MAX;

/// A wrapped function: its name, group, role, and its region id once
/// defined. One static per function, shared by its C and Fortran wrappers.
#[derive(Debug)]
pub struct FnInfo {
    pub name: &'static str,
    pub group: Group,
    pub role: RegionRole,
    pub follow: Follow,
    region: AtomicU32,
}

/// Serializes region definitions, so that two threads entering a function
/// for the first time at once define it once.
static DEFINING: Mutex<()> = Mutex::new(());

impl FnInfo {
    pub const fn new(name: &'static str, group: Group, role: RegionRole, follow: Follow) -> Self {
        FnInfo { name, group, role, follow, region: AtomicU32::new(UNDEFINED) }
    }

    /// The region id, defining the region on first use; `None` when the
    /// filter leaves the function out.
    #[inline]
    pub fn region(&self, rec: &Recorder) -> Option<u32> {
        match self.region.load(Ordering::Acquire) {
            UNDEFINED => self.define(rec),
            FILTERED => None,
            id => Some(id),
        }
    }

    #[cold]
    fn define(&self, rec: &Recorder) -> Option<u32> {
        let _one = DEFINING.lock().unwrap_or_else(|e| e.into_inner());
        match self.region.load(Ordering::Acquire) {
            UNDEFINED => {}
            FILTERED => return None,
            id => return Some(id),
        }
        let id = rec.region(self.name, None, Paradigm::Mpi, self.role, self.group.name());
        self.region.store(id.unwrap_or(FILTERED), Ordering::Release);
        id
    }
}

/// What the wrappers keep per thread, in one thread-local. Reaching a
/// thread-local of a library loaded into the program is a call into the
/// dynamic linker (`__tls_get_addr`), so a call looks this up once, in
/// [`enter_guard`], and reaches it through its [`Guard`] after that.
#[derive(Debug)]
pub struct PerThread {
    /// Inside a wrapper: MPI's own MPI calls are not recorded.
    inside: Cell<bool>,
    /// The communicators used last ([`comms::lookup`]).
    pub(crate) comms: RefCell<comms::Cache>,
    /// The status handed to MPI in place of `MPI_STATUS_IGNORE`
    /// ([`scratch::substitute_status`]).
    pub(crate) status: UnsafeCell<[u64; MAX_STATUS_BYTES / 8]>,
}

thread_local! {
    // Constant-initialized and without a destructor: it is never torn
    // down before the thread ends, so a pointer to it stays good for as
    // long as anything runs on the thread.
    static THREAD: PerThread = const {
        PerThread {
            inside: Cell::new(false),
            comms: RefCell::new(comms::Cache::EMPTY),
            status: UnsafeCell::new([0; MAX_STATUS_BYTES / 8]),
        }
    };
}

const _: () = assert!(!std::mem::needs_drop::<PerThread>());

/// Runs `f` on the calling thread's [`PerThread`] (`None` only if the
/// thread's thread-locals are unreachable).
#[inline]
pub fn per_thread<R>(f: impl FnOnce(&PerThread) -> R) -> Option<R> {
    THREAD.try_with(f).ok()
}

/// Marks the thread as inside a wrapper; `None` if it already is.
#[inline]
pub fn enter_guard() -> Option<Guard> {
    per_thread(|t| (!t.inside.replace(true)).then(|| Guard(NonNull::from(t)))).flatten()
}

/// Whether the calling thread is inside a wrapper.
pub fn inside_wrapper() -> bool {
    per_thread(|t| t.inside.get()).unwrap_or(true)
}

/// The thread's mark of being inside a wrapper; cleared on drop. Holds
/// the thread's [`PerThread`], and (through the pointer) is neither
/// `Send` nor `Sync`: it never leaves the thread.
#[derive(Debug)]
pub struct Guard(NonNull<PerThread>);

impl Guard {
    /// The thread's [`PerThread`].
    #[inline]
    pub fn per_thread(&self) -> &PerThread {
        // SAFETY: THREAD outlives everything that runs on its thread (see
        // its declaration), and the guard never leaves the thread.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        self.per_thread().inside.set(false);
    }
}

/// Runs `f`, swallowing a panic (the panic message has been printed by
/// the panic hook; the program goes on untraced at this point): the
/// runtime's [`shield`](recorder::guard::shield). Unlike the other
/// producers, the MPI wrappers have no [`Guard`](recorder::guard::Guard)
/// that a panic switches off: the wrapper calls the real MPI function
/// whatever happens, a panic loses what that call's hook would have
/// recorded, and recording goes on, since the switch that stops it (the
/// phase, [`state`]) would also leave the stream unfinished at
/// `MPI_Finalize`.
#[inline]
pub fn shielded<R>(f: impl FnOnce() -> R) -> Option<R> {
    recorder::guard::shield(f)
}

/// What a hook does after the PMPI call, given its return code.
pub trait Post {
    fn post(self, call: &Call, rc: c_int);
}

impl Post for () {
    #[inline]
    fn post(self, _: &Call, _: c_int) {}
}

/// A hook that decided before the call that there is nothing to do after.
impl<H: Post> Post for Option<H> {
    #[inline]
    fn post(self, call: &Call, rc: c_int) {
        if let Some(h) = self {
            h.post(call, rc);
        }
    }
}

/// A return value that says whether the call succeeded.
pub trait ReturnCode: Copy {
    fn code(self) -> c_int;
}

impl ReturnCode for c_int {
    #[inline]
    fn code(self) -> c_int {
        self
    }
}

impl ReturnCode for f64 {
    #[inline]
    fn code(self) -> c_int {
        0
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // A call abandoned on the way (no `finish`) still records what it
        // staged.
        self.flush();
    }
}

/// An intercepted call that is being followed.
#[derive(Debug)]
pub struct Call {
    pub rec: &'static Recorder,
    /// The time of Enter, also used for events that happen at the start
    /// (MpiSend, MpiIsend, MpiCollectiveBegin).
    pub enter: u64,
    /// Whether the function's group is on: events may be recorded.
    pub recording: bool,
    region: Option<u32>,
    leave: Cell<u64>,
    staged: Staged,
    /// The thread's buffer, looked up once for the call's accesses.
    thread: Option<ThisThread>,
    _guard: Guard,
}

/// Events of a call waiting to be recorded: those before the PMPI call go
/// to the buffer together just before it, those after together with the
/// Leave, so that a call costs two buffer accesses whatever it records.
///
/// A count in a `Cell` and the events in an `UnsafeCell` rather than a
/// `RefCell`: every call of every wrapper passes here, and the borrow
/// flag's checks were a tenth of a call's cost. Sound because a `Call` is
/// neither `Send` nor `Sync` and no reference into the events outlives
/// [`Call::record`] or [`Call::flush_staged`], which call nothing that
/// could come back to the same call.
#[derive(Debug)]
struct Staged {
    n: Cell<usize>,
    events: UnsafeCell<[(u64, Event); STAGED]>,
}

/// Two: the most a common call stages at once (Enter and a send before
/// the call; a receive or completion and Leave after it). More flush
/// early. Small, as the call is kept on the wrapper's stack.
const STAGED: usize = 2;

impl Call {
    /// Starts following a call of `info`, recording its Enter; `None` when
    /// the call must go straight to MPI.
    // Inlined into each wrapper: the call is built in the wrapper's frame,
    // not copied there.
    #[inline(always)]
    pub fn begin(info: &'static FnInfo) -> Option<Call> {
        if state::phase() != Phase::Active {
            return None;
        }
        // Outside the recording window (docs/window.md) a call is what a
        // call of a group that is off is: followed only if it must be.
        let recording = state::enabled(info.group) && recorder::window::on();
        if !recording && info.follow == Follow::IfEnabled {
            return None;
        }
        let guard = enter_guard()?;
        let rec = state::recorder()?;
        // Before the clock: a thread's first call makes its buffer.
        let thread = if recording { rec.this_thread() } else { None };
        if crate::callpath::PATHS.on() {
            return Some(Call::begin_unwound(info, rec, recording, thread, guard));
        }
        let enter = gputrace_clock::now();
        let region = if recording { shielded(|| info.region(rec)).flatten() } else { None };
        let mut events = [(0, Event::MpiCollectiveBegin); STAGED];
        let mut n = 0;
        if let Some(region) = region {
            events[0] = (enter, Event::Enter { region });
            n = 1;
        }
        let staged = Staged { n: Cell::new(n), events: UnsafeCell::new(events) };
        Some(Call { rec, enter, recording, region, leave: Cell::new(0), staged, thread, _guard: guard })
    }

    /// [`begin`](Self::begin) with the call path (GPUTRACE_UNWINDING),
    /// apart so that the path without it stays as short as it was: the
    /// walk before the clock (it is not the call's time), the path
    /// recorded just before the Enter.
    #[cold]
    #[inline(never)]
    fn begin_unwound(
        info: &'static FnInfo,
        rec: &'static Recorder,
        recording: bool,
        thread: Option<ThisThread>,
        guard: Guard,
    ) -> Call {
        let region = if recording { shielded(|| info.region(rec)).flatten() } else { None };
        let path = region.and_then(|region| shielded(|| crate::callpath::PATHS.here(rec, region)).flatten());
        let enter = gputrace_clock::now();
        let mut events = [(0, Event::MpiCollectiveBegin); STAGED];
        let mut n = 0;
        if let Some(region) = region {
            if let Some(frame) = path {
                events[0] = (enter, Event::CallPath { frame });
                n = 1;
            }
            events[n] = (enter, Event::Enter { region });
            n += 1;
        }
        let staged = Staged { n: Cell::new(n), events: UnsafeCell::new(events) };
        let call = Call { rec, enter, recording, region, leave: Cell::new(0), staged, thread, _guard: guard };
        if n == STAGED {
            call.flush_staged(n);
        }
        call
    }

    /// The time of Leave, read once: events that happen at the end
    /// (MpiRecv, completions, MpiCollectiveEnd) share it.
    #[inline]
    pub fn now(&self) -> u64 {
        match self.leave.get() {
            0 => {
                let t = gputrace_clock::now().max(self.enter);
                self.leave.set(t);
                t
            }
            t => t,
        }
    }

    /// The thread's [`PerThread`].
    #[inline]
    pub fn per_thread(&self) -> &PerThread {
        self._guard.per_thread()
    }

    /// Records `event` at `time` (staged; see [`Staged`]).
    #[inline]
    pub fn record(&self, time: u64, event: &Event) {
        let n = self.staged.n.get();
        // SAFETY: see `Staged`; `n < STAGED` as a full stage is flushed
        // at once.
        unsafe { (*self.staged.events.get())[n] = (time, *event) };
        self.staged.n.set(n + 1);
        if n + 1 == STAGED {
            self.flush_staged(n + 1);
        }
    }

    /// Records the staged events.
    #[inline(always)]
    fn flush(&self) {
        let n = self.staged.n.get();
        if n > 0 {
            self.flush_staged(n);
        }
    }

    /// Records the `n` staged events (n > 0).
    #[inline(never)]
    fn flush_staged(&self, n: usize) {
        self.staged.n.set(0);
        // SAFETY: see `Staged`.
        let events: &[(u64, Event)] = unsafe { &(&*self.staged.events.get())[..n] };
        match &self.thread {
            Some(thread) => self.rec.record_many_on(thread, events),
            None => self.rec.record_many(events),
        }
    }

    /// Runs the hook's part before the PMPI call, then records what was
    /// staged (the Enter, a send), before MPI is entered.
    #[inline]
    pub fn pre<H>(&self, f: impl FnOnce(&Call) -> H) -> Option<H> {
        let hook = shielded(|| f(self));
        self.flush();
        hook
    }

    /// Runs the hook's part after the PMPI call and records Leave. Takes
    /// the call by reference (its drop follows): moving it here would copy
    /// it.
    #[inline]
    pub fn finish<H: Post>(&self, hook: Option<H>, rc: c_int) {
        if let Some(h) = hook {
            shielded(|| h.post(self, rc));
        }
        if let Some(region) = self.region {
            self.record(self.now(), &Event::Leave { region });
        }
        self.flush();
    }
}
