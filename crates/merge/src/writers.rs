//! The processes that still write raw streams.
//!
//! A traced process holds a lock on each of its streams while it lives
//! (see `raw::writer_pid`). When the launcher has returned but a
//! rank has not yet ended — mpirun gave up waiting for it, or it is still
//! writing out its buffers after a signal — merging at once would leave
//! its last events out of the archive; the merge waits for it instead, a
//! bounded time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The raw streams under `raw_dir` whose writer is still alive, with its
/// pid. Only regular files are looked at (opening a FIFO would block).
pub fn live(raw_dir: &Path) -> Vec<(PathBuf, u32)> {
    raw::stream_files(raw_dir)
        .into_iter()
        .filter_map(|p| raw::writer_pid(&p).ok().flatten().map(|pid| (p, pid)))
        .collect()
}

/// Waits until no stream under `raw_dir` has a live writer, at most
/// `patience`; returns those still alive then.
pub fn wait(raw_dir: &Path, patience: Duration) -> Vec<(PathBuf, u32)> {
    let deadline = Instant::now() + patience;
    loop {
        let alive = live(raw_dir);
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One line about processes still writing: their pids, once each.
pub fn describe(alive: &[(PathBuf, u32)]) -> String {
    let mut pids: Vec<u32> = alive.iter().map(|a| a.1).collect();
    pids.sort_unstable();
    pids.dedup();
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    format!(
        "process{} {} still writing {} stream{}; the archive holds what was written so far",
        if pids.len() == 1 { "" } else { "es" },
        list.join(", "),
        if alive.len() == 1 { "its" } else { "their" },
        if alive.len() == 1 { "" } else { "s" }
    )
}
