//! The library inside a traced process: starting once, guarding every
//! entry point, and finishing at exit.
//!
//! NVTX calls `InitializeInjectionNvtx2` once per NVTX instance (each
//! library or program compiled with the NVTX headers has its own), the
//! first time that instance is used; the first call starts the recording
//! for the whole process. Every annotation runs under the library's
//! [`recorder::guard::Guard`]: a panic switches the library off with one
//! `[gputrace] warning:` line and the program goes on, its annotations no
//! longer recorded.

use std::sync::OnceLock;

use raw::Producer;
use recorder::guard::{Guard, shield};

use crate::annotations::Annotations;

static LIVE: OnceLock<Option<Annotations>> = OnceLock::new();
/// Off after a panic in an annotation's work (see [`guarded`]).
static GUARD: Guard = Guard::new(|_| "the NVTX recording failed and stopped; the program goes on".into());

fn start_once() -> Option<Annotations> {
    let (config, ()) = recorder::prelude(|c| c.nvtx_enable.then_some(()))?;
    let rec = recorder::start_with(Producer::Nvtx, &config)?;
    // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
    unsafe { libc::atexit(at_exit) };
    tracing::debug!(path = %rec.path().display(), "NVTX recording");
    let annotations = Annotations::new(rec);
    Some(match &config.capture_range {
        config::CaptureRange::Nvtx { name, first, last } => annotations.with_capture(name, *first, *last),
        _ => annotations,
    })
}

/// Starts the recording (once); false when it is off or impossible.
pub fn start() -> bool {
    shield(|| LIVE.get_or_init(start_once).is_some()).unwrap_or(false)
}

/// Whether annotations are being recorded.
pub fn on() -> bool {
    !GUARD.off() && matches!(LIVE.get(), Some(Some(_)))
}

/// Runs `f` with the recording unless it is off; a panic switches it off
/// and `default` is returned. (Its warning names no entry point: any
/// failure stops the whole recording.)
#[inline]
pub fn guarded<R>(default: R, f: impl FnOnce(&Annotations) -> R) -> R {
    let Some(Some(a)) = LIVE.get() else { return default };
    GUARD.run("annotation", || f(a)).unwrap_or(default)
}

/// The exit handler: writes the lanes and ends the stream, even after
/// the recording switched itself off (what was recorded is kept).
extern "C" fn at_exit() {
    let exit_started = gputrace_clock::now();
    shield(|| {
        if let Some(Some(a)) = LIVE.get() {
            a.finish(exit_started);
        }
    });
}
