//! The panic shell every producer puts around the work it does when the
//! program calls into it: a callback of CUPTI or NCCL, an NVTX
//! annotation, an MPI wrapper's part before and after the PMPI call.
//!
//! No panic of gputrace's may unwind into C. [`shield`] catches one and
//! drops it (the panic hook of [`diag::quiet_panics`] has said it in one
//! line). A [`Guard`] does that and also switches its producer off for
//! the rest of the process, with one warning of the producer's own: after
//! a bug, recording stops rather than recording something wrong. Each
//! producer library holds one `static` guard; checking it is one relaxed
//! load, as it is on the hot paths (every CUDA callback, NCCL event and
//! NVTX range).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::diag;

/// Runs `f`; `None` when it panicked. The panic is not reported again
/// here: [`diag::quiet_panics`]'s hook has reported it.
#[inline]
pub fn shield<R>(f: impl FnOnce() -> R) -> Option<R> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// A producer's switch: on until a panic in its work (or the producer
/// itself, [`Guard::disable`]) turns it off for good.
#[derive(Debug)]
pub struct Guard {
    off: AtomicBool,
    /// The warning printed once when the guard switches off, from what
    /// failed (a callback's name).
    warning: fn(what: &str) -> String,
    /// Runs once, after the warning, when the guard switches off.
    when_off: fn(),
}

impl Guard {
    /// A guard that is on, and warns with `warning(what)` when it goes off.
    pub const fn new(warning: fn(what: &str) -> String) -> Guard {
        Guard { off: AtomicBool::new(false), warning, when_off: nothing }
    }

    /// The same guard, running `hook` once when it switches off: for a
    /// producer that must also tell its caller to stop calling.
    pub const fn when_off(self, hook: fn()) -> Guard {
        Guard { when_off: hook, ..self }
    }

    /// Whether the producer has been switched off.
    #[inline]
    pub fn off(&self) -> bool {
        self.off.load(Ordering::Relaxed)
    }

    /// Runs `f` unless the guard is off; a panic in it switches the guard
    /// off ([`disable`](Self::disable) with `what`). `None` when `f` did
    /// not run or did not finish.
    #[inline]
    pub fn run<R>(&self, what: &str, f: impl FnOnce() -> R) -> Option<R> {
        if self.off() {
            return None;
        }
        let done = shield(f);
        if done.is_none() {
            self.disable(what);
        }
        done
    }

    /// Switches the guard off. The first call (of any thread) prints the
    /// warning, runs the hook and returns true; later ones do nothing.
    #[cold]
    pub fn disable(&self, what: &str) -> bool {
        if self.off.swap(true, Ordering::SeqCst) {
            return false;
        }
        diag::warn_once(&(self.warning)(what));
        (self.when_off)();
        true
    }
}

fn nothing() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn says(what: &str) -> String {
        format!("the test producer failed ({what}) and stopped recording")
    }

    #[test]
    fn a_guard_runs_its_work_until_a_panic_then_never_again() {
        static HOOK_RAN: AtomicUsize = AtomicUsize::new(0);
        fn count() {
            HOOK_RAN.fetch_add(1, Ordering::Relaxed);
        }
        static GUARD: Guard = Guard::new(says).when_off(count);
        assert!(!GUARD.off());
        assert_eq!(GUARD.run("first", || 7), Some(7));
        assert!(!GUARD.off(), "work that finishes leaves the guard on");
        assert_eq!(GUARD.run("second", || -> u32 { panic!("a bug in a hook") }), None);
        assert!(GUARD.off());
        assert_eq!(HOOK_RAN.load(Ordering::Relaxed), 1);
        let mut ran = false;
        assert_eq!(GUARD.run("third", || ran = true), None);
        assert!(!ran, "a guard that is off runs nothing");
        assert!(!GUARD.disable("again"), "only the first switch-off counts");
        assert_eq!(HOOK_RAN.load(Ordering::Relaxed), 1, "the hook runs once");
    }

    #[test]
    fn a_producer_may_switch_its_guard_off_itself() {
        static GUARD: Guard = Guard::new(says);
        assert!(GUARD.disable("init"));
        assert!(GUARD.off());
        assert_eq!(GUARD.run("later", || 1), None);
    }

    #[test]
    fn a_shield_catches_a_panic_and_switches_nothing_off() {
        assert_eq!(shield(|| 3), Some(3));
        assert_eq!(shield(|| -> u8 { panic!("a bug in a hook") }), None);
        assert_eq!(shield(|| 4), Some(4));
    }

    /// The child's part of the warning test: panics in two callbacks, then
    /// a third switch-off.
    #[test]
    fn guard_child_panics_twice() {
        if std::env::var_os(config::hooks::PANIC.name).is_none() {
            return;
        }
        static GUARD: Guard = Guard::new(says);
        diag::quiet_panics();
        GUARD.run("startEvent", || panic!("a bug in a hook"));
        GUARD.run("stopEvent", || panic!("a bug in a hook"));
        GUARD.disable("finalize");
    }

    /// However often it fails, a producer says once, naming what failed
    /// first, that it stopped recording.
    #[test]
    fn a_guard_warns_once() {
        let err = crate::tests::panicking_child("guard::tests::guard_child_panics_twice");
        let stopped: Vec<&str> = err.lines().filter(|l| l.contains("stopped recording")).collect();
        assert_eq!(
            stopped,
            ["[gputrace] warning: the test producer failed (startEvent) and stopped recording"],
            "{err}"
        );
    }
}
