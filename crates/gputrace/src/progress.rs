//! What the command shows of a merge as it goes: its warnings, as
//! `[gputrace] warning:` lines, and a progress bar for merges that take
//! more than a second (hidden at first, drawn once a second has passed, so
//! quick merges print nothing).

use std::fs::File;
use std::os::fd::FromRawFd;
use std::sync::OnceLock;
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
            self.bar.set_draw_target(draw_target());
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Where the bar is drawn: where gputrace's lines go (stderr, or in the
/// merge worker the copy of gputrace's stderr it was handed), and only
/// when that is a terminal.
fn draw_target() -> ProgressDrawTarget {
    let fd = crate::say::fd();
    if fd == libc::STDERR_FILENO {
        return ProgressDrawTarget::stderr();
    }
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on any descriptor is an error return
    // or a new descriptor that the File below then owns alone.
    let own = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if own < 0 {
        return ProgressDrawTarget::hidden();
    }
    // SAFETY: `own` is a fresh descriptor nothing else closes.
    let file = unsafe { File::from_raw_fd(own) };
    ProgressDrawTarget::term(console::Term::read_write_pair(std::io::stdin(), file), 20)
}

/// The command's [`merge::Observer`].
#[derive(Default)]
pub struct Shown {
    bar: OnceLock<Progress>,
    warned: AtomicBool,
}

impl Shown {
    /// Whether the merge warned about anything.
    pub fn warned(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }
}

impl merge::Observer for Shown {
    fn warning(&self, text: &str) {
        self.warned.store(true, Ordering::Relaxed);
        say!("[gputrace] warning: {text}");
    }

    fn started(&self, total_events: u64) {
        let _ = self.bar.set(Progress::new(total_events));
    }

    fn progress(&self, events: u64) {
        if let Some(bar) = self.bar.get() {
            bar.add(events);
        }
    }

    fn finished(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish();
        }
    }
}
