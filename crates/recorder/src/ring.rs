//! The flight recorder (`GPUTRACE_FLIGHT_RECORDER`): a stream that keeps
//! only its last window of events.
//!
//! Recording is unchanged: each thread fills its slots in place, GPU
//! batches are written as chunks. What changes is what happens once a
//! slot is closed or a chunk written: the stream holds it in its ring,
//! and gives back every slot and chunk whose newest event is older than
//! the window behind the newest event the stream has closed
//! ([`raw::StreamFile::release`] punches it out of the file: zeros a
//! reader skips, disk blocks and cached pages freed). The open slot of
//! each thread is never given back, so a thread that went quiet (a rank
//! stuck in a call) keeps its last events however old they are; and the
//! window moves only with what is recorded, so a job that hangs keeps
//! the window before the hang. The disk and memory a stream holds are
//! bounded by the window's events plus a slot per thread; the file's
//! apparent size still grows (it is sparse).
//!
//! Per location, what was given back is a definition
//! ([`raw::Definition::Expired`]), written when a location is first cut
//! and then at most once a second of recorded time, and at the end: the
//! merge opens the calls that were in progress at the cut at the
//! location's first event, and the summary counts what was given back.

use std::collections::{BTreeMap, VecDeque};

use raw::{Definition, Extent};

use crate::Recorder;

/// How often (recorded time) the counts of what was given back are
/// written again: a stream's definitions grow by a few bytes a second.
const REWRITE_NS: u64 = 1_000_000_000;

/// A stream's ring: its closed slots and written chunks, oldest first by
/// the order they were closed.
#[derive(Debug)]
pub(crate) struct Ring {
    window: u64,
    /// The newest event time of anything closed so far.
    newest: u64,
    held: VecDeque<Held>,
    /// Per location: events given back and the newest of them.
    expired: BTreeMap<u32, (u64, u64)>,
    /// Locations whose counts changed since they were last written.
    changed: bool,
    written_at: u64,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    extent: Extent,
    location: u32,
    events: u64,
    max_time: u64,
}

impl Ring {
    pub(crate) fn new(window_ns: u64) -> Ring {
        Ring {
            window: window_ns,
            newest: 0,
            held: VecDeque::new(),
            expired: BTreeMap::new(),
            changed: false,
            written_at: 0,
        }
    }

    /// Holds a closed slot or chunk of `location`; returns what is now
    /// older than the window, to give back, and whether the counts should
    /// be written (a location cut for the first time, or a second since).
    fn hold(&mut self, location: u32, extent: Extent, events: u64, max_time: u64) -> (Vec<Extent>, bool) {
        if events == 0 {
            // An empty slot (a spare closed at the end) holds nothing.
            return (vec![extent], false);
        }
        self.newest = self.newest.max(max_time);
        self.held.push_back(Held { extent, location, events, max_time });
        let cutoff = self.newest.saturating_sub(self.window);
        let mut gone = Vec::new();
        let mut first_cut = false;
        // Threads close slots in about the order of their times, not
        // exactly: look at all of them (a window holds few slots).
        self.held.retain(|h| {
            if h.max_time >= cutoff {
                return true;
            }
            gone.push(h.extent);
            let e = self.expired.entry(h.location).or_insert_with(|| {
                first_cut = true;
                (0, 0)
            });
            e.0 += h.events;
            e.1 = e.1.max(h.max_time);
            false
        });
        if !gone.is_empty() {
            self.changed = true;
        }
        let write = self.changed && (first_cut || self.newest.saturating_sub(self.written_at) >= REWRITE_NS);
        (gone, write)
    }

    /// The counts as definitions, and marks them written.
    fn definitions(&mut self) -> Vec<Definition> {
        self.changed = false;
        self.written_at = self.newest;
        self.expired
            .iter()
            .map(|(&location, &(events, until))| Definition::Expired { location, events, until })
            .collect()
    }
}

impl Recorder {
    /// Hands a closed slot or written chunk to the flight recorder, if
    /// there is one: it gives back what fell out of the window.
    pub(crate) fn ring_hold(&self, location: u32, extent: Extent, events: u64, max_time: u64) {
        let Some(ring) = &self.0.ring else { return };
        let (gone, defs) = {
            let mut ring = ring.lock().unwrap_or_else(|e| e.into_inner());
            let (gone, write) = ring.hold(location, extent, events, max_time);
            (gone, if write { ring.definitions() } else { Vec::new() })
        };
        for extent in gone {
            self.0.stream.release(extent);
        }
        for d in &defs {
            self.define(d);
        }
    }

    /// At the end: the counts of what was given back, if they changed.
    pub(crate) fn ring_final(&self) -> Vec<Definition> {
        let Some(ring) = &self.0.ring else { return Vec::new() };
        // A thread killed while holding the lock must not stop the end.
        match ring.try_lock() {
            Ok(mut ring) if ring.changed => ring.definitions(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(at: u64) -> Extent {
        Extent { at, len: 4096 }
    }

    #[test]
    fn what_falls_out_of_the_window_is_given_back_and_counted() {
        let mut ring = Ring::new(100);
        assert_eq!(ring.hold(1, extent(0), 10, 50), (vec![], false));
        assert_eq!(ring.hold(2, extent(4096), 5, 120), (vec![], false));
        // Newest 200: cut-off 100, the first slot (up to 50) goes.
        let (gone, write) = ring.hold(1, extent(8192), 7, 200);
        assert_eq!(gone, vec![extent(0)]);
        assert!(write, "a location cut for the first time is written at once");
        assert_eq!(ring.definitions(), vec![Definition::Expired { location: 1, events: 10, until: 50 }]);
        // Newest 300: location 2's slot (120) goes, and location 1's (200) stays.
        let (gone, write) = ring.hold(1, extent(12288), 1, 300);
        assert_eq!(gone, vec![extent(4096)]);
        assert!(write);
        assert_eq!(
            ring.definitions(),
            vec![
                Definition::Expired { location: 1, events: 10, until: 50 },
                Definition::Expired { location: 2, events: 5, until: 120 }
            ]
        );
        assert_eq!(ring.held.len(), 2);
    }

    #[test]
    fn later_cuts_of_a_location_are_written_once_a_second() {
        let mut ring = Ring::new(10);
        ring.hold(1, extent(0), 1, 5);
        assert!(ring.hold(1, extent(1), 1, 100).1);
        ring.definitions();
        // Cut again 200 ns later: counted, not yet written.
        assert!(!ring.hold(1, extent(2), 1, 300).1);
        assert!(ring.changed);
        assert!(ring.hold(1, extent(3), 1, 300 + REWRITE_NS).1);
        assert_eq!(ring.definitions(), vec![Definition::Expired { location: 1, events: 3, until: 300 }]);
    }

    #[test]
    fn an_empty_slot_is_given_back_at_once() {
        let mut ring = Ring::new(10);
        assert_eq!(ring.hold(1, extent(0), 0, 0), (vec![extent(0)], false));
        assert!(ring.held.is_empty());
    }
}
