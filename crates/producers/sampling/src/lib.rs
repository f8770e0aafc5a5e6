//! gputrace's call-stack sampler, `libgputrace_sampling.so`.
//!
//! `gputrace --sampling PERIOD` (`GPUTRACE_SAMPLING`) preloads this library
//! into the ranks, after the MPI hooks. At load it starts sampling the
//! main thread, and every thread the program starts afterwards (its
//! `pthread_create` is wrapped): each is interrupted every PERIOD of the
//! CPU time it uses, its registers and the top of its stack are copied
//! ([`perf`] events where the kernel allows them, else a [`timer`] signal),
//! and the sampler's own thread unwinds the copies ([`unwind`]) and records
//! each sample as a node of the process's tree of call stacks
//! ([`sampler`]). The merge symbolizes the addresses.
//!
//! `docs/sampling.md` says what is recorded, how and what it costs.
//!
//! A producer: depends on `recorder`, `raw` and `config`; never on OTF2,
//! the merge or the reports.

pub mod perf;
pub mod python;
pub mod sampler;
pub mod timer;
pub mod unwind;

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use recorder::guard::shield;
use sampler::Sampler;

/// One sample as the kernel or the signal handler took it.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub tid: u32,
    /// CLOCK_MONOTONIC, ns.
    pub time: u64,
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    /// The stack's bytes from `sp` up.
    pub stack: &'a [u8],
}

static LIVE: OnceLock<Option<Sampler>> = OnceLock::new();
static FORKED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set on threads gputrace starts for itself (the sampler's, the
    /// recorder's flusher): the threads they start are not sampled.
    static OWN: Cell<bool> = const { Cell::new(false) };
    /// Unregisters a sampled thread when it exits (pthread_exit included).
    static EXIT: ExitGuard = const { ExitGuard };
}

struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        shield(|| {
            if let Some(s) = live() {
                s.unregister_current();
            }
        });
    }
}

fn live() -> Option<&'static Sampler> {
    if FORKED.load(Ordering::Relaxed) {
        return None;
    }
    LIVE.get().and_then(Option::as_ref)
}

extern "C" fn mark_forked() {
    FORKED.store(true, Ordering::Relaxed);
}

fn start() -> Option<Sampler> {
    if !launched_to_be_sampled(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()), launcher_var()) {
        return None;
    }
    let (config, ()) = recorder::prelude(|c| (!c.sampling.is_zero()).then_some(()))?;
    Some(Sampler::new(config))
}

fn launcher_var() -> Option<String> {
    std::env::var(config::SAMPLED_LAUNCHER_VARIABLE).ok()
}

/// Whether this process is one gputrace means to sample. Under torchrun
/// (`_GPUTRACE_SAMPLED_LAUNCHER=torchrun`) the library reaches torchrun
/// itself too, since torchrun passes its environment to its workers: only
/// a worker is sampled, a process with the variables torchrun's agent sets
/// for each worker and not for itself (`LOCAL_RANK`, `TORCHELASTIC_RUN_ID`;
/// torch/distributed/elastic/agent/server/local_elastic_agent.py). The
/// others stay dormant: no thread, no perf event, no stream.
fn launched_to_be_sampled(is_set: impl Fn(&str) -> bool, launcher: Option<String>) -> bool {
    match launcher.as_deref() {
        Some("torchrun") => is_set("LOCAL_RANK") && is_set("TORCHELASTIC_RUN_ID"),
        _ => true,
    }
}

/// Runs when the library is loaded.
extern "C" fn init() {
    shield(|| {
        let Some(sampler) = LIVE.get_or_init(start).as_ref() else { return };
        // SAFETY: both are `extern "C" fn()` that never unwind.
        unsafe {
            libc::pthread_atfork(None, None, Some(mark_forked));
            libc::atexit(at_exit);
        }
        register_current(sampler);
        OWN.with(|o| o.set(true));
        let spawned = std::thread::Builder::new().name("gputrace-sampler".into()).spawn(|| {
            OWN.with(|o| o.set(true));
            if let Some(s) = live() {
                s.run();
            }
        });
        OWN.with(|o| o.set(false));
        if let Err(e) = spawned {
            recorder::diag::warn_once(&format!("call stacks are not sampled: no sampler thread: {e}"));
        }
    });
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

fn register_current(sampler: &Sampler) {
    sampler.register_current();
    EXIT.with(|_| {});
}

extern "C" fn at_exit() {
    shield(|| {
        if let Some(s) = live() {
            s.finish();
        }
    });
}

type StartRoutine = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type CreateFn =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartRoutine, *mut c_void) -> libc::c_int;

/// The C library's `pthread_create`.
fn real_create() -> Option<CreateFn> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let p = *REAL.get_or_init(|| {
        // SAFETY: a NUL-terminated name; RTLD_NEXT finds the next definition.
        unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) as usize }
    });
    // SAFETY: the C library's pthread_create has this type.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, CreateFn>(p) })
}

/// A new thread of the program: sampled from its first instruction.
unsafe extern "C" fn trampoline(boxed: *mut c_void) -> *mut c_void {
    // SAFETY: `pthread_create` below made it from a Box, handed over once.
    let (routine, arg) = *unsafe { Box::from_raw(boxed.cast::<(StartRoutine, usize)>()) };
    shield(|| {
        if let Some(s) = live() {
            register_current(s);
        }
    });
    // SAFETY: the program's own routine and argument, as it asked.
    unsafe { routine(arg as *mut c_void) }
}

/// Wraps the C library's `pthread_create` so that the program's new
/// threads are sampled.
///
/// # Safety
///
/// As `pthread_create(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    arg: *mut c_void,
) -> libc::c_int {
    let Some(real) = real_create() else { return libc::EAGAIN };
    if live().is_none() || OWN.with(Cell::get) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real(thread, attr, routine, arg) };
    }
    let boxed = Box::into_raw(Box::new((routine, arg as usize))).cast::<c_void>();
    // SAFETY: the caller's thread and attributes; our trampoline takes the box.
    let rc = unsafe { real(thread, attr, trampoline, boxed) };
    if rc != 0 {
        // SAFETY: not handed over: the thread was not made.
        drop(unsafe { Box::from_raw(boxed.cast::<(StartRoutine, usize)>()) });
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::launched_to_be_sampled;

    #[test]
    fn under_torchrun_only_its_workers_are_sampled() {
        let worker = |name: &str| matches!(name, "LOCAL_RANK" | "TORCHELASTIC_RUN_ID");
        // torchrun's agent sets TORCHELASTIC_SIGNALS_TO_HANDLE on itself.
        let agent = |name: &str| name == "TORCHELASTIC_SIGNALS_TO_HANDLE";
        let torchrun = || Some("torchrun".to_string());
        assert!(launched_to_be_sampled(worker, torchrun()));
        assert!(!launched_to_be_sampled(agent, torchrun()));
        assert!(!launched_to_be_sampled(|n| n == "LOCAL_RANK", torchrun()));
        // Any other launch: every process the library reaches.
        assert!(launched_to_be_sampled(agent, None));
        assert!(launched_to_be_sampled(|_| false, None));
    }
}
