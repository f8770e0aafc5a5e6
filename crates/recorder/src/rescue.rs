//! The last flush of a process that a signal is about to kill.
//!
//! A rank stopped by its launcher (mpirun's SIGTERM after another rank
//! failed, Slurm's at the time limit, Ctrl-C) or crashing (SIGSEGV, abort)
//! runs no exit handlers, so the events still in thread buffers would die
//! with it. A handler asks a guardian thread to write every recorder's
//! buffers, and the signal then does what it would have done without us,
//! at most [`PATIENCE`] later: for a stop signal the handler returns at
//! once and the guardian sends the signal again when done (a second one
//! ends the process at once); a crashed thread waits in the handler.
//!
//! Which signals, and over what:
//! - Stop signals (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU) only where
//!   their action is the default: a program that handles them may well go
//!   on running, and its handler is left alone.
//! - Crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) also over a
//!   handler already there (Open MPI's and UCX's backtraces, say): after
//!   the flush that handler is put back and the signal delivered to it
//!   again (a fault simply recurs), so it runs exactly as it would have.
//!
//! Runtimes that install their crash handlers only where they find the
//! default (Open MPI does) must still find it: the MPI hooks call
//! [`step_aside`] before the library's init and [`step_in`] after it.
//!
//! The handler only does async-signal-safe things: atomics, a futex wake,
//! `nanosleep`, `sigaction`, `raise`. It wakes the guardian with a futex
//! rather than a pipe: the program may close every descriptor it did not
//! open (and open its own files under their numbers), and a pipe's write
//! end would then be one of the program's files. The writing happens on a
//! thread of the guardian's, whose threads block the stop signals; should
//! it block on a lock that a crashed thread holds, the wait simply ends and
//! the process dies with what was written before.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, Once, Weak};
use std::time::Duration;

use super::{Recorder, Shared};

/// How long a dying process waits for its buffers to be written.
pub const PATIENCE: Duration = Duration::from_secs(2);

/// Signals that stop a process, handled where their action is the default.
const STOP_SIGNALS: [libc::c_int; 5] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGXCPU];
/// Signals of a crash, handled in front of any handler already there.
const CRASH_SIGNALS: [libc::c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGABRT];

fn all_signals() -> impl Iterator<Item = libc::c_int> {
    STOP_SIGNALS.into_iter().chain(CRASH_SIGNALS)
}

const IDLE: u8 = 0;
const REQUESTED: u8 = 1;
const DONE: u8 = 2;

static INSTALL: Once = Once::new();
static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// The signal the guardian is asked to act on (0: none yet); a futex.
static REQUEST: AtomicU32 = AtomicU32::new(0);
/// The guardian runs.
static GUARDED: AtomicBool = AtomicBool::new(false);
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
static RECORDERS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());
/// Bit `n` set: our handler is installed for signal `n`, and `PREVIOUS`
/// holds the action it replaced.
static OURS: AtomicU64 = AtomicU64::new(0);
static PREVIOUS: Previous = Previous(UnsafeCell::new([MaybeUninit::uninit(); 32]));

/// The actions our handlers replaced, by signal number.
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 32]>);

// SAFETY: an entry is written only while our handler is not installed for
// its signal (bit clear in `OURS`), and read only by that handler or after
// the bit was seen set; installing is serialised by the callers (once at
// start, around MPI init).
unsafe impl Sync for Previous {}

impl Previous {
    /// # Safety
    /// The handler for `sig` must not be installed (no concurrent reader).
    unsafe fn set(&self, sig: libc::c_int, action: libc::sigaction) {
        // SAFETY: `sig` < 32 (all our signals are), and by the contract
        // nobody reads this entry now.
        unsafe { (*self.0.get())[sig as usize] = MaybeUninit::new(action) };
    }

    /// # Safety
    /// The entry for `sig` must have been set.
    unsafe fn get(&self, sig: libc::c_int) -> libc::sigaction {
        // SAFETY: set before the handler was installed, by the contract.
        unsafe { (*self.0.get())[sig as usize].assume_init() }
    }
}

/// Has `rec`'s buffers written when a signal is about to kill the process;
/// installs the handlers and starts the guardian on first use.
pub(crate) fn protect(rec: &Recorder) {
    RECORDERS.lock().unwrap_or_else(|e| e.into_inner()).push(std::sync::Arc::downgrade(&rec.0));
    INSTALL.call_once(install);
}

fn install() {
    let spawned = std::thread::Builder::new().name("gputrace-guard".into()).spawn(guard);
    if spawned.is_err() {
        tracing::debug!("no signal guardian; a killed process loses its buffered events");
        return;
    }
    GUARDED.store(true, Ordering::Relaxed);
    // SAFETY: getpid has no preconditions.
    OWNER_PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    for sig in all_signals() {
        install_handler(sig);
    }
}

/// Puts back the actions our handlers replaced, so that a runtime about
/// to initialise sees what it would without us.
pub fn step_aside() {
    for sig in all_signals() {
        if OURS.load(Ordering::Acquire) & (1 << sig) != 0 {
            // SAFETY: the entry was set when our handler was installed;
            // sigaction only reads it.
            unsafe {
                let previous = PREVIOUS.get(sig);
                libc::sigaction(sig, &previous, std::ptr::null_mut());
            }
            OURS.fetch_and(!(1 << sig), Ordering::AcqRel);
        }
    }
}

/// Installs our handlers again after [`step_aside`], in front of whatever
/// the runtime installed meanwhile. Does nothing in a process that never
/// recorded.
pub fn step_in() {
    if INSTALL.is_completed() && GUARDED.load(Ordering::Relaxed) {
        for sig in all_signals() {
            install_handler(sig);
        }
    }
}

/// Installs [`on_signal`] for `sig` as the module's rules say.
fn install_handler(sig: libc::c_int) {
    if OURS.load(Ordering::Acquire) & (1 << sig) != 0 {
        return;
    }
    // SAFETY: sigaction with a null new action only reads the current one
    // into `old`; the new action is fully initialised (zeroed, then the
    // handler, an empty mask and flags) before it is installed; the
    // previous action is saved while our handler is not installed.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN {
            return;
        }
        if old.sa_sigaction != libc::SIG_DFL && !CRASH_SIGNALS.contains(&sig) {
            return;
        }
        PREVIOUS.set(sig, old);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction =
            on_signal as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        if libc::sigaction(sig, &action, std::ptr::null_mut()) == 0 {
            OURS.fetch_or(1 << sig, Ordering::AcqRel);
        }
    }
}

/// Blocks the handled signals in the calling thread, so that a signal sent
/// to the process is handled by a thread of the program, never by one of
/// ours that the rescue relies on.
pub(crate) fn block_in_this_thread() {
    // SAFETY: the set is initialised by sigemptyset before use, and
    // pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOP_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: every call below is async-signal-safe (getpid, futex,
    // nanosleep, sigaction, raise); errno is saved and restored; `info` is
    // the kernel's siginfo for this delivery (checked for null).
    unsafe {
        let errno = *libc::__errno_location();
        // A forked child has the handlers but not the guardian.
        let owner = libc::getpid() == OWNER_PID.load(Ordering::Relaxed);
        let first = owner && STATE.compare_exchange(IDLE, REQUESTED, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if first {
            REQUEST.store(sig as u32, Ordering::Release);
            libc::syscall(libc::SYS_futex, REQUEST.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
        }
        if STOP_SIGNALS.contains(&sig) {
            if first {
                // The program runs on while the guardian writes (a thread
                // stopped here could hold what the writing needs), and the
                // guardian ends it with this signal when done.
                *libc::__errno_location() = errno;
                return;
            }
        } else if owner {
            // A crashed thread cannot run on: wait here.
            let step = libc::timespec { tv_sec: 0, tv_nsec: 5_000_000 };
            for _ in 0..PATIENCE.as_millis() / 5 {
                if STATE.load(Ordering::Acquire) == DONE {
                    break;
                }
                libc::nanosleep(&step, std::ptr::null_mut());
            }
        }
        // Hand the signal on: the action we replaced is put back, and the
        // signal delivered to it again when this handler returns — raised
        // if someone sent it, recurring by itself if it was a fault.
        let sent = info.is_null() || (*info).si_code <= 0;
        if hand_back(sig) == libc::SIG_DFL || sent {
            libc::raise(sig);
        }
        *libc::__errno_location() = errno;
    }
}

/// Puts back the action our handler for `sig` replaced; returns it.
fn hand_back(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: our handler for `sig` is installed (we are called from it or
    // for its signal), so its previous action was saved; sigaction is
    // async-signal-safe.
    unsafe {
        let previous = PREVIOUS.get(sig);
        libc::sigaction(sig, &previous, std::ptr::null_mut());
        OURS.fetch_and(!(1 << sig), Ordering::AcqRel);
        previous.sa_sigaction
    }
}

/// The guardian: waits for a request, has every live recorder written out
/// (on a thread of its own, so that a lock held by a stopped thread costs
/// at most [`PATIENCE`]), and then ends the process with a stop signal
/// that its handler let through.
fn guard() {
    block_in_this_thread();
    let sig = loop {
        let sig = REQUEST.load(Ordering::Acquire);
        if sig != 0 {
            break sig as libc::c_int;
        }
        // SAFETY: waits while the word still reads 0; returns on a wake,
        // a change, or an interruption, and the loop looks again.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                REQUEST.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0u32,
                std::ptr::null::<libc::timespec>(),
            )
        };
    };
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::Builder::new().name("gputrace-rescue".into()).spawn(move || {
        rescue_all(sig);
        let _ = done.send(());
    });
    match worker {
        Ok(_) => {
            let _ = finished.recv_timeout(PATIENCE);
        }
        Err(_) => rescue_all(sig),
    }
    STATE.store(DONE, Ordering::Release);
    if STOP_SIGNALS.contains(&sig) {
        hand_back(sig);
        // SAFETY: sends the signal to this process; this thread blocks it,
        // so a thread of the program takes it, with the default action.
        unsafe { libc::kill(libc::getpid(), sig) };
    }
}

fn rescue_all(sig: libc::c_int) {
    let recorders: Vec<Weak<Shared>> = RECORDERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for rec in recorders.iter().filter_map(Weak::upgrade).map(Recorder) {
        rec.rescue(sig as u32);
    }
}
