//! Where a thread's events go: the slots of the stream file (or memory
//! where the file cannot be mapped), opened, rolled, sealed and written
//! off the recording path; the thread buffers' share of the memory
//! budget; the spare slot the flusher prepares so that a thread rolling
//! to its next slot does not wait for the file to grow.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use raw::chunk::ChunkKind;
use raw::{Definition, LocationKind, Slot, SlotError};

use crate::buffer::{Inner, Pending, Store, ThreadBuffer};
use crate::{MIN_THREAD_BUFFER, Recorder, identity};

impl Recorder {
    /// Closes the thread's store (sealing a full slot or writing a full
    /// buffer) and opens the next: a slot of the stream file, or memory
    /// where the file cannot be mapped. False when recording has stopped
    /// (a full disk).
    pub(crate) fn roll(&self, location: u32, inner: &mut Inner) -> bool {
        self.close_store(location, inner);
        if matches!(inner.store, Store::Heap(_)) {
            return self.is_active();
        }
        if !self.is_active() {
            return false;
        }
        let len = inner.next_len;
        inner.next_len = (len * 2).min(inner.capacity);
        let spare = if len == self.0.per_thread { self.take_spare() } else { None };
        let opened = match spare {
            Some(slot) => Ok(slot),
            None => self.0.stream.prepare_slot(len).or_else(|e| match e {
                // A full disk, and the flusher may have taken the last of
                // it for a spare slot: that slot, rather than nothing.
                SlotError::NoSpace(_) => self.0.spare.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or(e),
                e => Err(e),
            }),
        };
        match opened {
            Ok(mut slot) => {
                self.0.stream.start_slot(&mut slot, location);
                inner.store = Store::Slot(slot);
                true
            }
            Err(SlotError::NoSpace(e)) => {
                self.fail(&e);
                false
            }
            Err(SlotError::NoMapping(e)) => {
                tracing::debug!(error = %e, "events kept in memory and written as chunks");
                inner.store = Store::Heap(Pending::new(inner.capacity));
                true
            }
        }
    }

    pub(crate) fn new_thread_buffer(&self) -> Arc<ThreadBuffer> {
        let want = self.0.per_thread as u64;
        let got = self
            .0
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| Some(left.saturating_sub(want)))
            .unwrap_or(0)
            .min(want);
        let capacity = (got as usize).max(MIN_THREAD_BUFFER);
        let tid = identity::thread_id();
        let location = {
            let mut defs = self.defs();
            let name = Self::intern_locked(&mut defs, &identity::thread_name());
            let id = defs.next_location;
            defs.next_location += 1;
            let kind = LocationKind::HostThread { tid, is_main: tid == std::process::id() };
            Definition::Location { id, kind, name }.encode(&mut defs.pending);
            id
        };
        let buf = Arc::new(ThreadBuffer::new(location, capacity));
        self.0.buffers.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&buf));
        buf
    }

    pub(crate) fn release_buffer(&self, buf: &Arc<ThreadBuffer>) {
        self.0.budget.fetch_add(buf.capacity() as u64, Ordering::Relaxed);
        self.0.buffers.lock().unwrap_or_else(|e| e.into_inner()).retain(|b| !Arc::ptr_eq(b, buf));
    }

    /// The prepared full-size slot, if there is one; asks the flusher for
    /// the next.
    pub(crate) fn take_spare(&self) -> Option<Slot> {
        self.0.wants_spare.store(true, Ordering::Relaxed);
        let spare = self.0.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(flusher) = self.0.flusher.get() {
            flusher.unpark();
        }
        spare
    }

    /// On the flusher thread: prepares a full-size slot if one is wanted.
    pub(crate) fn prepare_spare(&self) {
        if !self.0.wants_spare.load(Ordering::Relaxed) || self.0.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut spare = self.0.spare.lock().unwrap_or_else(|e| e.into_inner());
        if spare.is_none() && !self.0.closed.load(Ordering::Relaxed) {
            // A full disk here is left for the recording thread to meet.
            *spare = self.0.stream.prepare_slot(self.0.per_thread).ok();
        }
    }

    /// Gives back the prepared slot at the end: an empty slot in the file.
    pub(crate) fn retire_spare(&self) {
        self.0.closed.store(true, Ordering::Relaxed);
        let spare = self.0.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut slot) = spare {
            self.0.stream.start_slot(&mut slot, 0);
            let closed = self.0.stream.close_slot(slot);
            self.ring_hold(0, closed.extent, 0, 0);
        }
    }

    /// Closes what a thread's store holds: seals its slot (or, where
    /// recording stopped, unmaps it unsealed: its committed events stay),
    /// or writes the events it keeps in memory, keeping the buffer.
    pub(crate) fn close_store(&self, location: u32, inner: &mut Inner) {
        match std::mem::replace(&mut inner.store, Store::Empty) {
            Store::Slot(slot) if self.is_active() => {
                let closed = self.0.stream.close_slot(slot);
                self.ring_hold(location, closed.extent, u64::from(closed.events), closed.max_time);
            }
            Store::Slot(slot) => drop(slot),
            Store::Heap(mut p) => {
                self.write_events(location, &mut p);
                inner.store = Store::Heap(p);
            }
            Store::Empty => {}
        }
    }

    /// Seals the buffer's slot, or writes its events kept in memory.
    pub(crate) fn flush_buffer(&self, buf: &ThreadBuffer, patience: Duration) {
        let flushed = buf.with_inner_waiting(patience, |inner| self.close_store(buf.location, inner));
        if flushed.is_none() {
            // Its committed events are in the file all the same.
            tracing::debug!("a thread kept its event buffer busy at flush");
        }
    }

    /// Writes pending definitions, then `p` as one events chunk.
    pub(crate) fn write_events(&self, location: u32, p: &mut Pending) {
        if self.is_active() {
            self.flush_definitions();
        }
        let span = p.span(location);
        if self.is_active() {
            match self.0.stream.write_chunk(ChunkKind::Events, Some(span), &p.data) {
                Ok(extent) => self.ring_hold(location, extent, u64::from(span.count), span.max_time),
                Err(e) => self.fail(&e),
            }
        }
        if !self.is_active() {
            self.0.dropped.fetch_add(u64::from(p.events.count), Ordering::Relaxed);
        }
        p.clear();
    }
}
