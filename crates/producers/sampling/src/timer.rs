//! Sampling by a timer signal, where perf events are refused
//! (`perf_event_paranoid` 3, a seccomp filter, the locked-memory limit):
//! each thread gets a POSIX timer on its own CPU-time clock
//! (`CLOCK_THREAD_CPUTIME_ID`) that sends it `SIGPROF` (`SIGEV_THREAD_ID`)
//! every period. The handler copies the interrupted registers and the top
//! of the stack into the thread's ring of preallocated slots, which the
//! sampler's thread drains.
//!
//! The ring is hand-written rather than a crate's queue because the
//! handler runs in a signal: it may not allocate, lock or call anything
//! but async-signal-safe functions, and it is the only writer of its
//! thread's ring (the signal is blocked while it runs), so a slot's state
//! word (empty → full by the handler, full → empty by the drain) is all
//! the synchronization there is.

use std::cell::Cell;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::Sample;

/// Slots per thread: at 1 ms and a drain every 5 ms, twice what fills.
const SLOTS: usize = 16;
const EMPTY: u32 = 0;
const FULL: u32 = 1;
/// The signal the timers send.
pub const SIGNAL: libc::c_int = libc::SIGPROF;

/// One slot's fixed part; the stack's bytes follow it.
#[repr(C)]
struct SlotHead {
    state: AtomicU32,
    len: u32,
    time: u64,
    ip: u64,
    sp: u64,
    bp: u64,
}

const HEAD: usize = std::mem::size_of::<SlotHead>();

/// One thread's ring of slots and its timer.
#[derive(Debug)]
pub struct TimerRing {
    base: NonNull<u8>,
    slot_len: usize,
    stack: usize,
    /// The handler's next slot (only the handler touches it).
    next: AtomicUsize,
    /// The drain's next slot (only the drain touches it).
    read: AtomicUsize,
    /// The highest address of the thread's stack: no copy reads past it.
    stack_top: u64,
    /// The timer, null until armed and once deleted.
    timer: AtomicPtr<libc::c_void>,
}

// SAFETY: the handler (on the owning thread) and the drain (on the
// sampler's) share a slot only through its state word; every other field
// is fixed or atomic.
unsafe impl Send for TimerRing {}
// SAFETY: as above.
unsafe impl Sync for TimerRing {}

/// Samples a handler could not keep (its ring full, or the stack pointer
/// off the thread's stack), all threads.
pub static LOST: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread's ring, for the handler; const-initialized and
    /// without a destructor, so reading it in a signal handler allocates
    /// nothing.
    static CURRENT: Cell<*const TimerRing> = const { Cell::new(std::ptr::null()) };
}

impl TimerRing {
    /// A ring for the calling thread, with `stack` bytes per sample; the
    /// timer is started by [`TimerRing::arm`].
    pub fn new(stack: usize) -> io::Result<Box<TimerRing>> {
        let slot_len = (HEAD + stack).next_multiple_of(64);
        let len = slot_len * SLOTS;
        // SAFETY: an anonymous private mapping, zeroed: every state EMPTY.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).expect("mmap returned a mapping");
        let stack_top = stack_top().unwrap_or(0);
        let (next, read, timer) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicPtr::new(std::ptr::null_mut()));
        Ok(Box::new(TimerRing { base, slot_len, stack, next, read, stack_top, timer }))
    }

    /// Makes this the calling thread's ring and starts its timer.
    pub fn arm(&self, period_ns: u64) -> io::Result<()> {
        CURRENT.with(|c| c.set(self as *const TimerRing));
        // SAFETY: a zeroed sigevent is valid; the fields set are the ones
        // SIGEV_THREAD_ID reads.
        let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = SIGNAL;
        // SAFETY: gettid has no preconditions.
        ev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to an initialized sigevent and a timer id.
        if unsafe { libc::timer_create(libc::CLOCK_THREAD_CPUTIME_ID, &mut ev, &mut timer) } != 0 {
            CURRENT.with(|c| c.set(std::ptr::null()));
            return Err(io::Error::last_os_error());
        }
        self.timer.store(timer, Ordering::Release);
        let period =
            libc::timespec { tv_sec: (period_ns / 1_000_000_000) as _, tv_nsec: (period_ns % 1_000_000_000) as _ };
        let spec = libc::itimerspec { it_interval: period, it_value: period };
        // SAFETY: our timer, a valid itimerspec.
        if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops the timer (on the thread itself, at its exit, or at the
    /// process's exit); the ring can still be drained.
    pub fn disarm(&self) {
        let t = self.timer.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !t.is_null() {
            // SAFETY: our timer, deleted once (the swap).
            unsafe { libc::timer_delete(t) };
        }
        CURRENT.with(|c| {
            if std::ptr::eq(c.get(), self) {
                c.set(std::ptr::null())
            }
        });
    }

    fn slot(&self, i: usize) -> *mut u8 {
        // SAFETY: `i < SLOTS`, inside the mapping.
        unsafe { self.base.as_ptr().add(i * self.slot_len) }
    }

    /// Hands every full slot to `each` and empties it.
    pub fn drain(&self, tid: u32, each: &mut dyn FnMut(&Sample<'_>)) {
        for _ in 0..SLOTS {
            let i = self.read.load(Ordering::Relaxed);
            let p = self.slot(i);
            // SAFETY: a slot of our mapping; its state is only read and
            // written atomically, the rest only while it is FULL (ours).
            let head = unsafe { &*p.cast::<SlotHead>() };
            if head.state.load(Ordering::Acquire) != FULL {
                break;
            }
            // SAFETY: as above; `len <= stack` bytes follow the head.
            let stack = unsafe { std::slice::from_raw_parts(p.add(HEAD), head.len as usize) };
            each(&Sample { tid, time: head.time, ip: head.ip, sp: head.sp, bp: head.bp, stack });
            head.state.store(EMPTY, Ordering::Release);
            self.read.store((i + 1) % SLOTS, Ordering::Relaxed);
        }
    }

    /// The handler's work: one sample into the next slot.
    fn take(&self, ip: u64, sp: u64, bp: u64) {
        let i = self.next.load(Ordering::Relaxed);
        let p = self.slot(i);
        // SAFETY: a slot of our mapping; the fields other than the state
        // are written only by this thread's handler while EMPTY.
        let head = p.cast::<SlotHead>();
        // SAFETY: as above.
        let state = unsafe { &(*head).state };
        if state.load(Ordering::Acquire) != EMPTY || sp == 0 || sp >= self.stack_top {
            LOST.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let len = (self.stack as u64).min(self.stack_top - sp) as usize;
        // SAFETY: `sp..sp + len` lies on this thread's stack (below its
        // top), which is mapped; the slot has room for `stack >= len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(sp as *const u8, p.add(HEAD), len) };
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime is async-signal-safe.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let time = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
        // SAFETY: the slot is EMPTY: the drain does not read it.
        unsafe {
            (*head).time = time;
            ((*head).ip, (*head).sp, (*head).bp, (*head).len) = (ip, sp, bp, len as u32);
        }
        state.store(FULL, Ordering::Release);
        self.next.store((i + 1) % SLOTS, Ordering::Relaxed);
    }
}

impl Drop for TimerRing {
    fn drop(&mut self) {
        self.disarm();
        // SAFETY: our mapping, no longer anyone's current ring.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.slot_len * SLOTS) };
    }
}

/// The top of the calling thread's stack.
fn stack_top() -> Option<u64> {
    // SAFETY: pthread_getattr_np fills `attr`, which is destroyed after.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok.then(|| addr as u64 + size as u64)
    }
}

extern "C" fn on_signal(_: libc::c_int, _: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let ring = CURRENT.with(Cell::get);
    if ring.is_null() || context.is_null() {
        return;
    }
    // SAFETY: the kernel passes the interrupted ucontext; x86-64's gregs.
    let (ip, sp, bp) = unsafe {
        let g = &(*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs;
        (g[libc::REG_RIP as usize] as u64, g[libc::REG_RSP as usize] as u64, g[libc::REG_RBP as usize] as u64)
    };
    // SAFETY: CURRENT points at this thread's live ring (cleared before
    // the ring is dropped).
    unsafe { &*ring }.take(ip, sp, bp);
}

/// Installs the handler, unless the program has one for the signal.
pub fn install_handler() -> io::Result<()> {
    // SAFETY: reading the current action into a zeroed struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut old) };
    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
        return Err(io::Error::other("the program handles SIGPROF itself"));
    }
    // SAFETY: a zeroed sigaction with our handler, SA_SIGINFO for the
    // context, SA_RESTART so that system calls are not cut short.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: a valid action for a catchable signal.
    if unsafe { libc::sigaction(SIGNAL, &action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
