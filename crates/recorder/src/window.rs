//! The recording window: one process-wide switch that says whether the
//! producers record now (`GPUTRACE_DELAY`, `GPUTRACE_DURATION`,
//! `GPUTRACE_CAPTURE_RANGE`; docs/window.md).
//!
//! Each producer is a library of its own with its own copy of this
//! crate, and a capture range is seen by one of them (an NVTX range by the
//! NVTX library, cudaProfilerStart by the CUDA agent, MPI_Pcontrol by the
//! MPI hooks) while all of them must follow it. So the switch is not a
//! static but a word of a small file every library of the process maps,
//! `raw/<host>.<pid>.window` in the experiment directory (the merge reads
//! only `*.gtr`): a word of reasons to pause (outside the time window, the
//! capture range closed), recording while it is zero, and the log of the
//! times the switch opened and closed, which the CUDA agent reads to keep
//! the GPU work that started inside a window and each stream writes as
//! `gputrace capture` regions.
//!
//! Without a window nothing is mapped and [`on`] costs one atomic load
//! of a null pointer (a plain load on x86-64).

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use config::{CaptureRange, Config};
use raw::{Event, LocationKind, Paradigm, RegionRole};

use crate::{Recorder, diag, session};

/// Paused: outside the time window of `GPUTRACE_DELAY`/`GPUTRACE_DURATION`.
pub const OUTSIDE_TIME: u32 = 1;
/// Paused: the capture range is closed.
pub const RANGE_CLOSED: u32 = 2;

/// Times the switch changed, at most: 4094 windows per process.
const LOG: usize = (SIZE - 32) / 8;
const SIZE: usize = 64 << 10;
const READY: u32 = 0x5749_4e44; // "WIND"
/// The id of the lane a stream writes its windows on: far above the
/// lanes the producers number from 0.
const LANE: u32 = 0xFFFF_0000;
/// The region of a window in the archive.
pub const REGION: &str = "gputrace capture";

/// The shared page, as laid out in the file.
#[repr(C)]
struct Page {
    ready: AtomicU32,
    /// The reasons to pause (bits); recording while 0.
    paused: AtomicU32,
    lock: AtomicU32,
    /// Entries of `log`: even ones the times a window opened, odd ones
    /// the times it closed.
    count: AtomicU32,
    /// Entries written as windows by a stream.
    claimed: AtomicU32,
    _pad: u32,
    _reserved: u64,
    log: [AtomicU64; LOG],
}

const _: () = assert!(std::mem::size_of::<Page>() <= SIZE);

static PAGE: AtomicPtr<Page> = AtomicPtr::new(std::ptr::null_mut());
static STARTED: OnceLock<()> = OnceLock::new();

fn page() -> Option<&'static Page> {
    // SAFETY: set once to a mapping that is never unmapped.
    unsafe { PAGE.load(Ordering::Acquire).as_ref() }
}

/// Whether the producers record now: true without a window.
#[inline]
pub fn on() -> bool {
    let p = PAGE.load(Ordering::Acquire);
    // SAFETY: as in `page`.
    p.is_null() || unsafe { (*p).paused.load(Ordering::Relaxed) } == 0
}

/// Whether a window is configured in this process at all.
#[inline]
pub fn windowed() -> bool {
    !PAGE.load(Ordering::Relaxed).is_null()
}

/// Whether `time` (the raw clock) fell inside a window: for work whose
/// records come later (the GPU's kernels and copies). True without a
/// window.
pub fn contains(time: u64) -> bool {
    let Some(p) = page() else { return true };
    let n = (p.count.load(Ordering::Acquire) as usize).min(LOG);
    // The log is in time order: inside when an odd number of entries
    // (opens and closes) lie at or before `time`.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if p.log[mid].load(Ordering::Relaxed) <= time {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo % 2 == 1
}

/// Pauses (`paused`) or resumes recording for `reason` in every producer
/// of the process. Nothing in a forked child (the page is its parent's)
/// or without a window.
pub fn set(reason: u32, paused: bool) {
    let Some(p) = page() else { return };
    if session::in_forked_child() {
        return;
    }
    while p.lock.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::thread::yield_now();
    }
    let old = p.paused.load(Ordering::Relaxed);
    let new = if paused { old | reason } else { old & !reason };
    if new != old {
        let n = p.count.load(Ordering::Relaxed) as usize;
        let flips = (old == 0) != (new == 0);
        if !flips {
            p.paused.store(new, Ordering::Relaxed);
        } else if n < LOG && !(new == 0 && n + 1 == LOG) {
            // The time is read under the lock: the log stays in order.
            p.log[n].store(gputrace_clock::now(), Ordering::Relaxed);
            p.count.store(n as u32 + 1, Ordering::Release);
            p.paused.store(new, Ordering::Relaxed);
        } else {
            // A window that could not be closed in the log is not opened.
            diag::warn_once(&format!(
                "more than {} recording windows in one process: recording stays off from here",
                LOG / 2 - 1
            ));
        }
    }
    p.lock.store(0, Ordering::Release);
}

/// Sets up the window of `config` in this process, once: maps the page
/// (made by the first library of the process to start) and, in the
/// library that made it, starts the thread that opens and closes the
/// time window. Nothing without a window, or when nothing is recorded.
/// Every producer's recorder does it as it starts; a producer that starts
/// its recorder late (the CUDA agent, at the first GPU work) calls it
/// earlier itself.
pub fn start(config: &Config) {
    if !config.windowed() || (!config.enable_tracing && !config.enable_profiling) {
        return;
    }
    let dir = config.experiment_directory.clone().unwrap_or_else(|| session::FALLBACK_DIRECTORY.into());
    let dir = dir.as_path();
    STARTED.get_or_init(|| match map(dir) {
        Ok((page, made)) => {
            if made {
                initialize(page, config);
            } else {
                wait_ready(page);
            }
            PAGE.store((page as *const Page).cast_mut(), Ordering::Release);
        }
        Err(e) => diag::warn_once(&format!(
            "cannot set up the recording window in {}: {e}; this process records all of its run",
            dir.join("raw").display()
        )),
    });
}

/// Maps the process's page; true when this call made it.
fn map(dir: &Path) -> std::io::Result<(&'static Page, bool)> {
    use std::os::unix::io::AsRawFd;
    let raw_dir = dir.join("raw");
    std::fs::create_dir_all(&raw_dir)?;
    let path = raw_dir.join(format!("{}.{}.window", crate::identity::hostname(), std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
    if file.metadata()?.len() < SIZE as u64 {
        file.set_len(SIZE as u64)?;
    }
    // SAFETY: a shared mapping of a file of SIZE bytes, kept for the
    // process's life; the page is atomics only.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the mapping is SIZE bytes, zeroed or written by another
    // library of this process through the same layout.
    let page = unsafe { &*(ptr as *const Page) };
    let made = page.ready.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok();
    Ok((page, made))
}

fn wait_ready(page: &Page) {
    for _ in 0..2000 {
        if page.ready.load(Ordering::Acquire) == READY {
            return;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    tracing::debug!("the recording window's page was not made ready in 1 s; used as it is");
}

/// The time window on the raw clock: (open, close), close `u64::MAX` when
/// it never closes.
fn time_window(config: &Config) -> (u64, u64) {
    let now = gputrace_clock::now();
    // The job's start, from gputrace; this process's set-up without it.
    let origin = std::env::var(config::WINDOW_ORIGIN_VARIABLE)
        .ok()
        .and_then(|v| v.parse::<u128>().ok())
        .and_then(|origin| {
            let real = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
            let ago = u64::try_from(real.saturating_sub(origin)).ok()?;
            Some(now.saturating_sub(ago))
        })
        .unwrap_or(now);
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let open = origin.saturating_add(nanos(config.delay));
    let close = if config.duration.is_zero() { u64::MAX } else { open.saturating_add(nanos(config.duration)) };
    (open, close)
}

fn initialize(page: &'static Page, config: &Config) {
    let (open, close) = time_window(config);
    let now = gputrace_clock::now();
    let mut paused = 0;
    if now < open || now >= close {
        paused |= OUTSIDE_TIME;
    }
    if matches!(config.capture_range, CaptureRange::Nvtx { .. } | CaptureRange::CudaProfilerApi) {
        paused |= RANGE_CLOSED;
    }
    page.paused.store(paused, Ordering::Relaxed);
    // The time window's edges passed already, as they were: a library
    // that starts late (the CUDA agent, at the first GPU work) keeps the
    // work that started inside the window before it.
    if paused & RANGE_CLOSED == 0 {
        let passed: Vec<u64> = [open, close].into_iter().filter(|&t| t <= now).collect();
        for (i, t) in passed.iter().enumerate() {
            page.log[i].store(*t, Ordering::Relaxed);
        }
        page.count.store(passed.len() as u32, Ordering::Relaxed);
    }
    page.ready.store(READY, Ordering::Release);
    if now < close && (open > now || close != u64::MAX) {
        let spawned = std::thread::Builder::new().name("gputrace-window".into()).spawn(move || {
            crate::rescue::block_in_this_thread();
            let until = |t: u64| loop {
                let now = gputrace_clock::now();
                if now >= t {
                    break;
                }
                std::thread::sleep(Duration::from_nanos((t - now).min(100_000_000)));
            };
            if open > gputrace_clock::now() {
                until(open);
                set(OUTSIDE_TIME, false);
            }
            if close != u64::MAX {
                until(close);
                set(OUTSIDE_TIME, true);
            }
        });
        if let Err(e) = spawned {
            diag::warn_once(&format!("no thread for the recording window ({e}): it stays as it started"));
        }
    }
}

/// Writes the windows of the log not yet written by another stream as
/// `gputrace capture` regions on a lane of `rec`, the one open now
/// closing now: at the end of a producer's stream.
pub(crate) fn write(rec: &Recorder) {
    let Some(p) = page() else { return };
    if session::in_forked_child() {
        return;
    }
    while p.lock.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::thread::yield_now();
    }
    let n = p.count.load(Ordering::Relaxed) as usize;
    let from = p.claimed.swap(n as u32, Ordering::Relaxed) as usize;
    let log: Vec<u64> = (from..n).map(|i| p.log[i].load(Ordering::Relaxed)).collect();
    let now = gputrace_clock::now();
    p.lock.store(0, Ordering::Release);
    // An odd start is the close of a window written already, closed then.
    let skip = from % 2;
    let mut events = Vec::new();
    let region = if log.len() > skip {
        rec.region(REGION, None, Paradigm::Measurement, RegionRole::Artificial, "")
    } else {
        None
    };
    let Some(region) = region else { return };
    for pair in log[skip..].chunks(2) {
        events.push((pair[0], Event::Enter { region }));
        events.push((pair.get(1).copied().unwrap_or(now).max(pair[0]), Event::Leave { region }));
    }
    let location = rec.define_location(LocationKind::Lane { id: LANE, gpu: false }, REGION);
    rec.write_batch(location, &events);
}
