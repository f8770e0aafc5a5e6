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

/// What every producer does first: reads the configuration from the
/// environment (leniently: a bad variable is one warning and its default),
/// sets up `GPUTRACE_VERBOSE`'s diagnostics, and decides whether the
/// producer records. `select` is the producer's own part of that decision:
/// what it records (its enabled set, say), or `None` when nothing. Returns
/// the configuration and what `select` made, or `None` when nothing is
/// recorded in this process (the run records neither a trace nor a
/// profile, or `select` said so); nothing more is printed in that case.
pub fn prelude<T>(select: impl FnOnce(&Config) -> Option<T>) -> Option<(Config, T)> {
    let (config, problems) = Config::from_env_lenient();
    diag::init_tracing(config.verbose);
    for p in problems {
        diag::warn_once(&format!("{p}; using the default"));
    }
    decide(config, select)
}

/// The decision of [`prelude`], on a configuration already read.
fn decide<T>(config: Config, select: impl FnOnce(&Config) -> Option<T>) -> Option<(Config, T)> {
    if !config.enable_tracing && !config.enable_profiling {
        return None;
    }
    let selected = select(&config)?;
    Some((config, selected))
}

/// Opens the raw stream of `producer` for this process as the environment
/// configures it. Returns `None`, after saying why on stderr, when
/// recording is off or impossible; the program then runs untraced.
pub fn start(producer: Producer) -> Option<(Recorder, Config)> {
    diag::quiet_panics();
    let (config, ()) = prelude(|_| Some(()))?;
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
    let options = RecorderOptions {
        total_memory: config.total_memory,
        filter,
        flight_recorder_ns: u64::try_from(config.flight_recorder.as_nanos()).unwrap_or(u64::MAX),
    };
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
    match Recorder::create(
        &dir,
        producer,
        RecorderOptions { total_memory: config.total_memory, ..RecorderOptions::default() },
    ) {
        Ok(rec) => {
            rec.define(&Definition::Untraced { reason: reason.to_string() });
            rec.finish();
        }
        Err(e) => tracing::debug!(error = %e, "the untraced stream was not written"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_pairs(&pairs).unwrap()
    }

    #[test]
    fn the_prelude_hands_over_the_configuration_and_the_producers_choice() {
        let (config, chosen) = decide(config(&[("GPUTRACE_KEEP_RAW", "false")]), |c| Some(c.keep_raw)).unwrap();
        assert!(!chosen);
        assert!(config.enable_tracing);
    }

    #[test]
    fn a_producer_that_selects_nothing_records_nothing() {
        assert!(decide(config(&[]), |_| None::<()>).is_none());
    }

    #[test]
    fn without_trace_and_profile_no_producer_records() {
        let off = [("GPUTRACE_ENABLE_TRACING", "false"), ("GPUTRACE_ENABLE_PROFILING", "false")];
        let mut asked = false;
        assert!(
            decide(config(&off), |_| {
                asked = true;
                Some(())
            })
            .is_none()
        );
        assert!(!asked, "the producer is not asked");
        // One of the two is enough.
        assert!(decide(config(&off[..1]), |_| Some(())).is_some());
        assert!(decide(config(&off[1..]), |_| Some(())).is_some());
    }
}
