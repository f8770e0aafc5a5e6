//! Per-thread event buffers: the hot path.
//!
//! Each recording thread owns one buffer and appends encoded events to it
//! without a lock. The other parties that may touch it — the recorder's
//! flusher thread, which writes out buffers whose oldest event is more than
//! [`MAX_CHUNK_AGE_NS`] old so that an idle or killed process loses at most
//! about a second of events, and a flush of all buffers at MPI_Finalize or
//! exit — only swap the pending events out ([`ThreadBuffer::take`]) and
//! write them after letting go. Ownership is a single `busy` flag; the
//! owner spins for it in the rare case someone else holds it, which is
//! never for longer than that swap. A full buffer is written as one events
//! chunk by its owner.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::raw::Event;
use crate::raw::event::MAX_EVENT_LEN;
use crate::raw::varint;
use crate::raw::writer::EventSpan;

/// A buffer holding events older than this is written out at the next
/// event, so that a process killed without warning loses about a second of
/// its trace, not a whole buffer.
pub const MAX_CHUNK_AGE_NS: u64 = 1_000_000_000;

/// A thread that recorded nothing for this long has its pending events
/// written by the flusher.
pub const QUIET_NS: u64 = 200_000_000;

/// Encoded events not yet written.
#[derive(Debug)]
pub(crate) struct Pending {
    pub data: Vec<u8>,
    pub capacity: usize,
    pub count: u32,
    pub last: u64,
    pub min: u64,
    pub max: u64,
}

impl Pending {
    pub fn new(capacity: usize) -> Self {
        Pending { data: Vec::with_capacity(capacity), capacity, count: 0, last: 0, min: u64::MAX, max: 0 }
    }

    pub fn span(&self, location: u32) -> EventSpan {
        EventSpan { location, count: self.count, min_time: self.min, max_time: self.max }
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Whether `push` must write the buffer out first.
    #[inline]
    pub fn needs_flush(&self, time: u64) -> bool {
        self.count > 0
            && (self.data.len() + MAX_EVENT_LEN > self.capacity
                || self.count == u32::MAX
                || time.saturating_sub(self.min) > MAX_CHUNK_AGE_NS)
    }

    #[inline]
    pub fn push(&mut self, time: u64, event: &Event) {
        if self.count == 0 {
            varint::put_u64(&mut self.data, time);
            self.last = time;
        }
        event.encode(time.wrapping_sub(self.last) as i64, &mut self.data);
        self.last = time;
        self.count += 1;
        self.min = self.min.min(time);
        self.max = self.max.max(time);
    }
}

/// One thread's buffer.
#[derive(Debug)]
pub(crate) struct ThreadBuffer {
    pub location: u32,
    busy: AtomicBool,
    pending: UnsafeCell<Pending>,
}

// SAFETY: `pending` is only accessed while holding the `busy` flag (see
// `with_pending`), which gives exclusive access across threads.
unsafe impl Sync for ThreadBuffer {}
// SAFETY: as above; the buffer holds no thread-bound state.
unsafe impl Send for ThreadBuffer {}

/// What a push did with a full buffer.
pub(crate) enum Pushed {
    Done,
    /// The flag was held elsewhere (a flush in progress): the event was not
    /// recorded.
    Busy,
}

impl ThreadBuffer {
    pub fn new(location: u32, capacity: usize) -> Self {
        ThreadBuffer { location, busy: AtomicBool::new(false), pending: UnsafeCell::new(Pending::new(capacity)) }
    }

    pub fn capacity(&self) -> usize {
        self.with_pending(|p| p.capacity).unwrap_or(0)
    }

    /// Appends an event; `write` is called with the pending events first
    /// when the buffer is full or old.
    #[cfg(test)]
    pub fn push(&self, time: u64, event: &Event, write: impl FnMut(&mut Pending)) -> Pushed {
        self.push_many(std::slice::from_ref(&(time, *event)), write)
    }

    /// Appends several events with one acquisition of the buffer.
    #[inline]
    pub fn push_many(&self, events: &[(u64, Event)], mut write: impl FnMut(&mut Pending)) -> Pushed {
        let mut spins = 0u32;
        while self.busy.swap(true, Ordering::Acquire) {
            // Held by a `take`, which lets go after a memory swap; a holder
            // that never lets go (a flush interrupted by a signal handler
            // that records, say) costs this one event, not a hang.
            spins += 1;
            if spins > 1 << 20 {
                return Pushed::Busy;
            }
            std::hint::spin_loop();
        }
        // SAFETY: the busy flag is ours until the store below.
        let p = unsafe { &mut *self.pending.get() };
        for (time, event) in events {
            if p.needs_flush(*time) {
                write(p);
            }
            p.push(*time, event);
        }
        self.busy.store(false, Ordering::Release);
        Pushed::Done
    }

    /// Swaps out the pending events if there are any and `wanted` says so,
    /// leaving an empty buffer of the same capacity; the caller writes them
    /// after the owner can append again. Gives up at once if the owner is
    /// busy, unless `patience` allows waiting.
    pub fn take(&self, patience: Duration, wanted: impl Fn(&Pending) -> bool) -> Option<Pending> {
        self.with_pending_waiting(patience, |p| {
            (p.count > 0 && wanted(p)).then(|| std::mem::replace(p, Pending::new(p.capacity)))
        })
        .flatten()
    }

    /// Runs `f` with exclusive access to the pending events, or returns
    /// `None` at once if another party holds them.
    #[inline]
    pub fn with_pending<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> Option<R> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        // SAFETY: the busy flag was false and is now ours: no other thread
        // accesses `pending` until we release it below.
        let r = f(unsafe { &mut *self.pending.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }

    /// Like [`with_pending`](Self::with_pending), waiting up to `patience`
    /// for the owner to finish its append.
    pub fn with_pending_waiting<R>(&self, patience: Duration, mut f: impl FnMut(&mut Pending) -> R) -> Option<R> {
        let start = std::time::Instant::now();
        loop {
            if let Some(r) = self.with_pending(&mut f) {
                return Some(r);
            }
            if start.elapsed() > patience {
                return None;
            }
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::varint::Cursor;

    #[test]
    fn full_buffer_is_written_before_the_next_event() {
        let b = ThreadBuffer::new(0, 64);
        let mut written = Vec::new();
        for i in 0..40u64 {
            b.push(1000 + i, &Event::Enter { region: 1 }, |p| {
                written.push(p.count);
                p.clear();
            });
        }
        assert!(!written.is_empty());
        let total: u32 = written.iter().sum::<u32>() + b.with_pending(|p| p.count).unwrap();
        assert_eq!(total, 40);
    }

    #[test]
    fn old_events_force_a_write() {
        let b = ThreadBuffer::new(0, 1 << 20);
        let mut writes = 0;
        b.push(10, &Event::Enter { region: 1 }, |_| writes += 1);
        b.push(20, &Event::Leave { region: 1 }, |_| writes += 1);
        assert_eq!(writes, 0);
        b.push(10 + MAX_CHUNK_AGE_NS + 1, &Event::Enter { region: 1 }, |p| {
            writes += 1;
            p.clear();
        });
        assert_eq!(writes, 1);
    }

    #[test]
    fn events_decode_with_their_times() {
        let b = ThreadBuffer::new(3, 1 << 16);
        let times = [100u64, 150, 150, 149, 1000];
        for t in times {
            b.push(t, &Event::Enter { region: 2 }, |_| unreachable!());
        }
        b.with_pending(|p| {
            assert_eq!((p.min, p.max, p.count), (100, 1000, 5));
            let mut c = Cursor::new(&p.data);
            let mut t = c.u64().unwrap();
            for expect in times {
                let (d, e) = Event::decode(&mut c).unwrap();
                t = t.wrapping_add_signed(d);
                assert_eq!((t, e), (expect, Event::Enter { region: 2 }));
            }
        })
        .unwrap();
    }

    #[test]
    fn a_held_flag_refuses_access() {
        let b = ThreadBuffer::new(0, 1024);
        let inner = b.with_pending(|_| b.with_pending(|_| ()).is_none()).unwrap();
        assert!(inner);
    }
}
