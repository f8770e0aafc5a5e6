//! A progress bar for merges that take more than a second: hidden at
//! first, drawn once a second has passed, so quick merges print nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Shows the merge's progress in events.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
}

/// How long a merge runs before its progress bar appears.
const DELAY: Duration = Duration::from_secs(1);

impl Progress {
    pub fn new(total_events: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total_events), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "[gputrace] merging {bar:40} {percent:>3}% {human_pos}/{human_len} events, {eta} left",
            )
            .expect("valid template"),
        );
        Progress { bar, start: Instant::now(), shown: AtomicBool::new(false) }
    }

    pub fn add(&self, events: u64) {
        self.bar.inc(events);
        if !self.shown.load(Ordering::Relaxed) && self.start.elapsed() > DELAY {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
