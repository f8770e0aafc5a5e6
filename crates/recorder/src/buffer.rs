//! Per-thread event buffers: the hot path.
//!
//! Each recording thread owns one buffer and appends encoded events to it
//! without a lock. Normally the buffer is a [`Slot`]: pages of the stream
//! file mapped into the process, so every event is in the page cache (and
//! reaches the file) the moment its append commits, whatever then happens
//! to the process — a `SIGKILL` loses at most the append in progress. A
//! full slot is sealed and the next one opened by its owner. Where the
//! file system cannot map the file, events are kept in memory
//! ([`Pending`]) and written as whole chunks, as the only alternative:
//! then a flusher thread writes out buffers whose oldest event is more
//! than [`MAX_CHUNK_AGE_NS`] old so that a killed process loses about a
//! second of events.
//!
//! The other parties that may touch a buffer — that flusher, and the
//! flush of all buffers at MPI_Finalize, exit or a fatal signal — take a
//! single `busy` flag; the owner spins for it in the rare case someone
//! else holds it, which is never for longer than a seal or a memory swap.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use raw::Event;
use raw::EventsEncoder;
use raw::Slot;
use raw::event::MAX_EVENT_LEN;
use raw::writer::EventSpan;

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
    pub events: EventsEncoder,
}

impl Pending {
    pub fn new(capacity: usize) -> Self {
        Pending { data: Vec::with_capacity(capacity), capacity, events: EventsEncoder::default() }
    }

    pub fn span(&self, location: u32) -> EventSpan {
        self.events.span(location)
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.events = EventsEncoder::default();
    }

    /// Whether `push` must write the buffer out first.
    #[inline]
    pub fn needs_flush(&self, time: u64) -> bool {
        self.events.count > 0
            && (self.data.len() + MAX_EVENT_LEN > self.capacity
                || self.events.count == u32::MAX
                || time.saturating_sub(self.events.min) > MAX_CHUNK_AGE_NS)
    }

    #[inline]
    pub fn push(&mut self, time: u64, event: &Event) {
        self.events.put(&mut self.data, time, event);
    }
}

/// Where a thread's events go.
#[derive(Debug)]
pub(crate) enum Store {
    /// No slot open (none yet, or the last was sealed): the next append
    /// opens one.
    Empty,
    /// A slot of the stream file, mapped: the normal case.
    Slot(Slot),
    /// Events kept in memory and written as whole chunks, where the file
    /// system cannot map the stream file.
    Heap(Pending),
}

/// A thread's store, with what its next slot will be.
#[derive(Debug)]
pub(crate) struct Inner {
    pub store: Store,
    /// Length of the next slot: slots start small and double up to
    /// `capacity`, so that threads that record little waste little.
    pub next_len: usize,
    pub capacity: usize,
}

/// The first slot of a thread.
pub const FIRST_SLOT: usize = 64 << 10;

/// One thread's buffer.
#[derive(Debug)]
pub(crate) struct ThreadBuffer {
    pub location: u32,
    busy: AtomicBool,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is only accessed while holding the `busy` flag (see
// `with_inner`), which gives exclusive access across threads.
unsafe impl Sync for ThreadBuffer {}
// SAFETY: as above; the buffer holds no thread-bound state.
unsafe impl Send for ThreadBuffer {}

/// What a push did.
pub(crate) enum Pushed {
    Done,
    /// The flag was held elsewhere (a flush in progress), or no store
    /// could be opened: the events were not recorded.
    Lost,
}

impl ThreadBuffer {
    pub fn new(location: u32, capacity: usize) -> Self {
        let inner = Inner { store: Store::Empty, next_len: FIRST_SLOT.min(capacity), capacity };
        ThreadBuffer { location, busy: AtomicBool::new(false), inner: UnsafeCell::new(inner) }
    }

    /// A buffer that keeps its events in memory from the start.
    #[cfg(test)]
    pub fn new_heap(location: u32, capacity: usize) -> Self {
        let b = Self::new(location, capacity);
        b.with_inner(|i| i.store = Store::Heap(Pending::new(capacity)));
        b
    }

    pub fn capacity(&self) -> usize {
        self.with_inner(|i| i.capacity).unwrap_or(0)
    }

    /// Appends several events with one acquisition of the buffer, and for
    /// a slot one commit. `roll` is called when the store cannot take them:
    /// it writes out or seals what is there and opens the next store,
    /// saying whether there is one. `write` writes a full in-memory buffer.
    #[inline]
    pub fn push_many(
        &self,
        events: &[(u64, Event)],
        mut roll: impl FnMut(&mut Inner) -> bool,
        mut write: impl FnMut(&mut Pending),
    ) -> Pushed {
        let mut spins = 0u32;
        while self.busy.swap(true, Ordering::Acquire) {
            // Held by a flush, which lets go after a seal or a memory
            // swap; a holder that never lets go (a flush interrupted by a
            // signal handler that records, say) costs these events, not a
            // hang.
            spins += 1;
            if spins > 1 << 20 {
                return Pushed::Lost;
            }
            std::hint::spin_loop();
        }
        // SAFETY: the busy flag is ours until the store below.
        let inner = unsafe { &mut *self.inner.get() };
        // The common case, kept inline: an open slot with room.
        let pushed = match &mut inner.store {
            Store::Slot(s) if s.fits(events.len()) => {
                s.append(events);
                Pushed::Done
            }
            _ => Self::push_locked(inner, events, &mut roll, &mut write),
        };
        self.busy.store(false, Ordering::Release);
        pushed
    }

    #[inline(never)]
    fn push_locked(
        inner: &mut Inner,
        events: &[(u64, Event)],
        roll: &mut impl FnMut(&mut Inner) -> bool,
        write: &mut impl FnMut(&mut Pending),
    ) -> Pushed {
        if let Store::Slot(s) = &mut inner.store
            && s.fits(events.len())
        {
            s.append(events);
            return Pushed::Done;
        }
        if let Store::Heap(p) = &mut inner.store {
            for (time, event) in events {
                if p.needs_flush(*time) {
                    write(p);
                }
                p.push(*time, event);
            }
            return Pushed::Done;
        }
        if !roll(inner) {
            return Pushed::Lost;
        }
        match &mut inner.store {
            Store::Slot(s) if s.fits(events.len()) => s.append(events),
            Store::Slot(_) if events.len() > 1 => {
                // More than the largest slot takes at once (never in
                // practice): one by one.
                for e in events {
                    if let Pushed::Lost = Self::push_locked(inner, std::slice::from_ref(e), roll, write) {
                        return Pushed::Lost;
                    }
                }
            }
            Store::Heap(_) => return Self::push_locked(inner, events, roll, write),
            Store::Slot(_) | Store::Empty => return Pushed::Lost,
        }
        Pushed::Done
    }

    /// Swaps out the in-memory events if there are any and `wanted` says
    /// so, leaving an empty buffer of the same capacity; the caller writes
    /// them after the owner can append again. Gives up at once if the
    /// owner is busy, unless `patience` allows waiting. A slot has nothing
    /// to take: its events are in the file already.
    pub fn take(&self, patience: Duration, wanted: impl Fn(&Pending) -> bool) -> Option<Pending> {
        self.with_inner_waiting(patience, |i| match &mut i.store {
            Store::Heap(p) if p.events.count > 0 && wanted(p) => Some(std::mem::replace(p, Pending::new(p.capacity))),
            _ => None,
        })
        .flatten()
    }

    /// Runs `f` with exclusive access to the store, or returns `None` at
    /// once if another party holds it.
    #[inline]
    pub fn with_inner<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        // SAFETY: the busy flag was false and is now ours: no other thread
        // accesses `inner` until we release it below.
        let r = f(unsafe { &mut *self.inner.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }

    /// Like [`with_inner`](Self::with_inner), waiting up to `patience` for
    /// the owner to finish its append.
    pub fn with_inner_waiting<R>(&self, patience: Duration, mut f: impl FnMut(&mut Inner) -> R) -> Option<R> {
        let start = std::time::Instant::now();
        loop {
            if let Some(r) = self.with_inner(&mut f) {
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

    fn heap_push(b: &ThreadBuffer, t: u64, e: Event, write: impl FnMut(&mut Pending)) {
        assert!(matches!(b.push_many(&[(t, e)], |_| unreachable!(), write), Pushed::Done));
    }

    fn pending_count(b: &ThreadBuffer) -> u32 {
        b.with_inner(|i| match &i.store {
            Store::Heap(p) => p.events.count,
            _ => 0,
        })
        .unwrap()
    }

    #[test]
    fn full_buffer_is_written_before_the_next_event() {
        let b = ThreadBuffer::new_heap(0, 64);
        let mut written = Vec::new();
        for i in 0..40u64 {
            heap_push(&b, 1000 + i, Event::Enter { region: 1 }, |p| {
                written.push(p.events.count);
                p.clear();
            });
        }
        assert!(!written.is_empty());
        let total: u32 = written.iter().sum::<u32>() + pending_count(&b);
        assert_eq!(total, 40);
    }

    #[test]
    fn old_events_force_a_write() {
        let b = ThreadBuffer::new_heap(0, 1 << 20);
        let mut writes = 0;
        heap_push(&b, 10, Event::Enter { region: 1 }, |_| writes += 1);
        heap_push(&b, 20, Event::Leave { region: 1 }, |_| writes += 1);
        assert_eq!(writes, 0);
        heap_push(&b, 10 + MAX_CHUNK_AGE_NS + 1, Event::Enter { region: 1 }, |p| {
            writes += 1;
            p.clear();
        });
        assert_eq!(writes, 1);
    }

    #[test]
    fn events_decode_with_their_times() {
        let b = ThreadBuffer::new_heap(3, 1 << 16);
        let times = [100u64, 150, 150, 149, 1000];
        for t in times {
            heap_push(&b, t, Event::Enter { region: 2 }, |_| unreachable!());
        }
        let p = b.take(Duration::ZERO, |_| true).unwrap();
        assert_eq!((p.events.min, p.events.max, p.events.count), (100, 1000, 5));
        let decoded: Vec<(u64, Event)> = raw::Events::of_payload(&p.data, p.events.count).collect();
        let expected: Vec<(u64, Event)> = times.iter().map(|&t| (t, Event::Enter { region: 2 })).collect();
        assert_eq!(decoded, expected);
    }

    #[test]
    fn a_held_flag_refuses_access() {
        let b = ThreadBuffer::new(0, 1024);
        let inner = b.with_inner(|_| b.with_inner(|_| ()).is_none()).unwrap();
        assert!(inner);
        let lost = b.with_inner(|_| ());
        assert!(lost.is_some());
    }

    #[test]
    fn an_empty_store_is_rolled_and_a_failed_roll_loses_the_events() {
        let b = ThreadBuffer::new(0, 1 << 16);
        let mut rolls = 0;
        let pushed = b.push_many(
            &[(1, Event::Enter { region: 1 })],
            |_| {
                rolls += 1;
                false
            },
            |_| (),
        );
        assert!(matches!(pushed, Pushed::Lost));
        assert_eq!(rolls, 1);
    }
}
