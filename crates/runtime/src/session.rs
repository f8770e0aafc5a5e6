//! Starting a producer's recorder from the environment, the way every
//! producer does it: lenient configuration, one warning per problem, and
//! no recording (rather than a broken program) when anything is missing.

use std::path::PathBuf;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Recorder, RecorderOptions, diag};
use config::Config;
use config::filter::Filter;
use raw::{Definition, Producer};

/// The experiment directory used when `GPUTRACE_EXPERIMENT_DIRECTORY` is
/// unset (a library preloaded by hand rather than by `gputrace`).
pub const FALLBACK_DIRECTORY: &str = "gputrace-traces";

static FORKED: AtomicBool = AtomicBool::new(false);
static ATFORK: Once = Once::new();

extern "C" fn mark_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Whether this process is a fork of the traced one.
#[inline]
pub(crate) fn in_forked_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// Opens the raw stream of `producer` for this process as the environment
/// configures it. Returns `None`, after saying why on stderr, when
/// recording is off or impossible; the program then runs untraced.
pub fn start(producer: Producer) -> Option<(Recorder, Config)> {
    diag::quiet_panics();
    let (config, problems) = Config::from_env_lenient();
    diag::init_tracing(config.verbose);
    for p in problems {
        diag::warn_once(&format!("{p}; using the default"));
    }
    start_with(producer, &config).map(|rec| (rec, config))
}

/// Like [`start`], with a configuration the producer parsed already.
pub fn start_with(producer: Producer, config: &Config) -> Option<Recorder> {
    diag::quiet_panics();
    if !config.enable_tracing && !config.enable_profiling {
        return None;
    }
    let dir = config.experiment_directory.clone().unwrap_or_else(|| PathBuf::from(FALLBACK_DIRECTORY));
    let filter = config.filtering_file.as_deref().and_then(|path| match Filter::load(path) {
        Ok(f) => Some(f),
        Err(e) => {
            diag::warn_once(&format!("{e}; recording without a filter"));
            None
        }
    });
    let options = RecorderOptions { total_memory: config.total_memory, filter };
    match Recorder::create(&dir, producer, options) {
        Ok(rec) => {
            super::window::start(config);
            ATFORK.call_once(|| {
                // SAFETY: the handler only stores to an atomic, which is
                // async-signal-safe as fork child handlers must be.
                unsafe { libc::pthread_atfork(None, None, Some(mark_forked_child)) };
            });
            rec.take_process_losses();
            super::rescue::protect(&rec);
            tracing::debug!(path = %rec.path().display(), "recording");
            Some(rec)
        }
        Err(e) => {
            diag::warn_once(&format!(
                "cannot create a {} stream in {}: {e}; this process runs untraced",
                producer.name(),
                dir.join("raw").display()
            ));
            None
        }
    }
}

/// Leaves the fact that `producer` records nothing in this process, and
/// why, where the merge finds it: a stream holding only an
/// [`Definition::Untraced`] record, closed at once. Nothing is recorded,
/// no signal handler installed; a stream that cannot be made is only
/// logged (the producer has warned already).
pub fn record_untraced(producer: Producer, config: &Config, reason: &str) {
    if !config.enable_tracing && !config.enable_profiling {
        return;
    }
    let dir = config.experiment_directory.clone().unwrap_or_else(|| PathBuf::from(FALLBACK_DIRECTORY));
    match Recorder::create(&dir, producer, RecorderOptions { total_memory: config.total_memory, filter: None }) {
        Ok(rec) => {
            rec.define(&Definition::Untraced { reason: reason.to_string() });
            rec.finish();
        }
        Err(e) => tracing::debug!(error = %e, "the untraced stream was not written"),
    }
}
