//! The library inside a traced process: starting once, guarding every
//! entry point, and finishing at exit.
//!
//! NVTX calls `InitializeInjectionNvtx2` once per NVTX instance (each
//! library or program compiled with the NVTX headers has its own), the
//! first time that instance is used; the first call starts the recording
//! for the whole process. Every annotation runs under `catch_unwind`: a
//! panic switches the library off with one `[gputrace] warning:` line and
//! the program goes on, its annotations no longer recorded.

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use config::Config;
use raw::Producer;
use runtime::diag;

use crate::annotations::Annotations;

static LIVE: OnceLock<Option<Annotations>> = OnceLock::new();
static OFF: AtomicBool = AtomicBool::new(false);

fn start_once() -> Option<Annotations> {
    let (config, problems) = Config::from_env_lenient();
    diag::init_tracing(config.verbose);
    for p in problems {
        diag::warn_once(&format!("{p}; using the default"));
    }
    if !config.nvtx_enable {
        return None;
    }
    let rec = runtime::start_with(Producer::Nvtx, &config)?;
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
    std::panic::catch_unwind(|| LIVE.get_or_init(start_once).is_some()).unwrap_or(false)
}

/// Whether annotations are being recorded.
pub fn on() -> bool {
    !OFF.load(Ordering::Relaxed) && matches!(LIVE.get(), Some(Some(_)))
}

/// Runs `f` with the recording unless it is off; a panic switches it off
/// and `default` is returned.
#[inline]
pub fn guarded<R>(default: R, f: impl FnOnce(&Annotations) -> R) -> R {
    if OFF.load(Ordering::Relaxed) {
        return default;
    }
    let Some(Some(a)) = LIVE.get() else { return default };
    match std::panic::catch_unwind(AssertUnwindSafe(|| f(a))) {
        Ok(r) => r,
        Err(_) => {
            if !OFF.swap(true, Ordering::SeqCst) {
                diag::warn_once("the NVTX recording failed and stopped; the program goes on");
            }
            default
        }
    }
}

/// The exit handler: writes the lanes and ends the stream, even after
/// the recording switched itself off (what was recorded is kept).
extern "C" fn at_exit() {
    let exit_started = gputrace_clock::now();
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        if let Some(Some(a)) = LIVE.get() {
            a.finish(exit_started);
        }
    }));
}
