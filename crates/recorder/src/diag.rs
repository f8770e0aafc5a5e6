//! gputrace's own messages to the user, always on stderr and prefixed
//! `[gputrace]`, and the `tracing` diagnostics behind `GPUTRACE_VERBOSE`.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Mutex;

static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Prints one warning line, with a single `write` so that the lines of
/// several processes sharing stderr (the ranks of a job) never interleave.
pub fn warn(message: &str) {
    let line = format!("[gputrace] warning: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Prints a warning line once per process, however often it is raised.
pub fn warn_once(message: &str) {
    let mut seen = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(message.to_string()) {
        drop(seen);
        warn(message);
    }
}

/// Installs a stderr subscriber for `tracing` when `verbose` is set; does
/// nothing if one is installed already.
pub fn init_tracing(verbose: bool) {
    if !verbose {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::DEBUG)
        .with_target(false)
        .without_time()
        .with_ansi(false)
        .try_init();
}

/// Keeps a panic inside gputrace's code (caught by the producers'
/// `catch_unwind` shields) from printing Rust's default report into the
/// application's stderr: one `[gputrace]` line instead, once per process,
/// and the rest only with `GPUTRACE_VERBOSE`. The hook is this library's
/// own (a cdylib carries its own std), so an application written in Rust
/// keeps its hook.
pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                warn(&format!(
                    "internal error in the tracer{at}; the program runs on, this part of the trace may be missing"
                ));
            }
            tracing::debug!(%info, "panic");
        }));
    });
}
