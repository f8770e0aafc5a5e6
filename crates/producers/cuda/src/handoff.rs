//! Completed CUPTI buffers, handed from CUPTI's callback to the agent's
//! own thread.
//!
//! CUPTI calls `buffer_completed` on its worker thread (or, at a flush,
//! on the flushing thread) and may hold its own locks meanwhile; the
//! buffer's conversion takes milliseconds for a full 4 MiB buffer. So the
//! callback only queues the buffer and returns, and the thread
//! `gputrace-cupti` decodes, converts and frees it. A process where that
//! thread cannot be started (or a child forked from a process that had
//! one, which has no threads but the forking one) converts in the
//! callback as before.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// One buffer CUPTI handed back: its address, allocated size and the
/// bytes of records in it.
#[derive(Debug, Clone, Copy)]
pub struct Completed {
    pub buffer: usize,
    pub size: usize,
    pub valid: usize,
}

struct Shared {
    state: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Completed>,
    /// Buffers taken off the queue and not yet done.
    active: usize,
}

/// The queue and its thread; `None` where the thread could not start.
struct Handoff {
    shared: &'static Shared,
    pid: u32,
}

static HANDOFF: OnceLock<Option<Handoff>> = OnceLock::new();

fn shared_lock(s: &Shared) -> MutexGuard<'_, Queue> {
    s.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Queues `done` for the thread, starting it on first use with `work`
/// (which converts and frees one buffer). Gives the buffer back when it
/// must be converted by the caller: no thread, or a forked child.
pub fn queue(done: Completed, work: fn(Completed)) -> Result<(), Completed> {
    let handoff = HANDOFF.get_or_init(|| start(work));
    match handoff {
        Some(h) if h.pid == std::process::id() => {
            shared_lock(h.shared).waiting.push_back(done);
            h.shared.changed.notify_all();
            Ok(())
        }
        _ => Err(done),
    }
}

fn start(work: fn(Completed)) -> Option<Handoff> {
    let shared: &'static Shared = Box::leak(Box::new(Shared { state: Mutex::default(), changed: Condvar::new() }));
    let spawned = std::thread::Builder::new().name("gputrace-cupti".into()).spawn(move || {
        loop {
            let next = {
                let mut q = shared_lock(shared);
                loop {
                    if let Some(c) = q.waiting.pop_front() {
                        q.active += 1;
                        break c;
                    }
                    q = shared.changed.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            work(next);
            shared_lock(shared).active -= 1;
            shared.changed.notify_all();
        }
    });
    match spawned {
        Ok(_) => Some(Handoff { shared, pid: std::process::id() }),
        Err(e) => {
            tracing::debug!("buffers are converted in CUPTI's callback: {e}");
            None
        }
    }
}

/// At exit: converts what is still queued on the calling thread, then
/// waits (at most `patience`) for the buffer the thread is converting.
/// False when that wait ran out.
pub fn drain(work: fn(Completed), patience: Duration) -> bool {
    let Some(Some(h)) = HANDOFF.get() else { return true };
    if h.pid != std::process::id() {
        return true;
    }
    let deadline = Instant::now() + patience;
    loop {
        let next = {
            let mut q = shared_lock(h.shared);
            match q.waiting.pop_front() {
                Some(c) => {
                    q.active += 1;
                    Some(c)
                }
                None if q.active == 0 => return true,
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    let _ = h.shared.changed.wait_timeout(q, left);
                    None
                }
            }
        };
        if let Some(c) = next {
            work(c);
            shared_lock(h.shared).active -= 1;
            h.shared.changed.notify_all();
        }
    }
}
