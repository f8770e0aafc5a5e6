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
