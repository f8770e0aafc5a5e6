//! One intercepted call: whether to record it, its Enter and Leave, and
//! the guarantees every wrapper gives.
//!
//! A wrapper asks [`Call::begin`] whether to do anything at all. It says
//! no — and the wrapper calls PMPI and returns — when the thread is
//! already inside a wrapper (MPI libraries call `MPI_*` internally, and we
//! must not record our own PMPI calls), before `MPI_Init` and after
//! `MPI_Finalize`, and when the function's group is off (unless the
//! function must be followed anyway, as communicator creation must). Our
//! own work before and after the PMPI call runs under `catch_unwind`: a
//! bug in the tracer loses events, never the call or the program.

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use raw::{Event, Paradigm, RegionRole};
use runtime::{Recorder, ThisThread};

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

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread as inside a wrapper; `None` if it already is (or its
/// thread-locals are gone, at thread exit).
#[inline]
pub fn enter_guard() -> Option<Guard> {
    INSIDE.try_with(|inside| (!inside.replace(true)).then_some(Guard(()))).ok().flatten()
}

/// Whether the calling thread is inside a wrapper.
pub fn inside_wrapper() -> bool {
    INSIDE.try_with(Cell::get).unwrap_or(true)
}

/// The thread's mark of being inside a wrapper; cleared on drop.
#[derive(Debug)]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|inside| inside.set(false));
    }
}

/// Runs `f`, swallowing a panic (the panic message has been printed by
/// the panic hook; the program goes on untraced at this point).
#[inline]
pub fn shielded<R>(f: impl FnOnce() -> R) -> Option<R> {
    catch_unwind(AssertUnwindSafe(f)).ok()
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
    staged: RefCell<Staged>,
    /// The thread's buffer, looked up once for the call's accesses.
    thread: Option<ThisThread>,
    _guard: Guard,
}

/// Events of a call waiting to be recorded: those before the PMPI call go
/// to the buffer together just before it, those after together with the
/// Leave, so that a call costs two buffer accesses whatever it records.
#[derive(Debug)]
struct Staged {
    n: usize,
    events: [(u64, Event); STAGED],
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
        let recording = state::enabled(info.group);
        if !recording && info.follow == Follow::IfEnabled {
            return None;
        }
        let guard = enter_guard()?;
        let rec = state::recorder()?;
        // Before the clock: a thread's first call makes its buffer.
        let thread = if recording { rec.this_thread() } else { None };
        let enter = raw::clock::now();
        let region = if recording { shielded(|| info.region(rec)).flatten() } else { None };
        let mut staged = Staged { n: 0, events: [(0, Event::MpiCollectiveBegin); STAGED] };
        if let Some(region) = region {
            staged.events[0] = (enter, Event::Enter { region });
            staged.n = 1;
        }
        Some(Call {
            rec,
            enter,
            recording,
            region,
            leave: Cell::new(0),
            staged: RefCell::new(staged),
            thread,
            _guard: guard,
        })
    }

    /// The time of Leave, read once: events that happen at the end
    /// (MpiRecv, completions, MpiCollectiveEnd) share it.
    #[inline]
    pub fn now(&self) -> u64 {
        match self.leave.get() {
            0 => {
                let t = raw::clock::now().max(self.enter);
                self.leave.set(t);
                t
            }
            t => t,
        }
    }

    /// Records `event` at `time` (staged; see [`Staged`]).
    #[inline]
    pub fn record(&self, time: u64, event: &Event) {
        let full = {
            let mut s = self.staged.borrow_mut();
            let n = s.n;
            s.events[n] = (time, *event);
            s.n += 1;
            s.n == STAGED
        };
        if full {
            self.flush();
        }
    }

    /// Records the staged events.
    #[inline]
    fn flush(&self) {
        let mut s = self.staged.borrow_mut();
        if s.n > 0 {
            match &self.thread {
                Some(thread) => self.rec.record_many_on(thread, &s.events[..s.n]),
                None => self.rec.record_many(&s.events[..s.n]),
            }
            s.n = 0;
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
