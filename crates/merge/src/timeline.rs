//! One location's events in time order, streamed from its chunks.
//!
//! A location's events may come from several streams (a host thread that
//! called both MPI and CUDA) and several chunks; each chunk is sorted, but
//! chunks may overlap in time. The timeline keeps the chunks sorted by
//! their first timestamp, reads a chunk only when the merge front reaches
//! it, and picks the earliest next event among the chunks open at that
//! moment. Memory is the open chunks' payloads: one or two at a time for
//! host threads. An event earlier than the one before it is clamped to it
//! and counted, so that every location's timestamps are non-decreasing.

use std::collections::VecDeque;

use raw::reader::EventChunk;
use raw::{Event, OwnedEvents, Problem, RawFile};

/// A chunk to read, and which of the process's streams it is in.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub file: &'a RawFile,
    pub stream: usize,
    pub chunk: EventChunk,
}

struct Open {
    stream: usize,
    events: OwnedEvents,
    next: Option<(u64, Event)>,
}

/// The merged events of one location.
pub struct Timeline<'a> {
    pending: VecDeque<Source<'a>>,
    open: Vec<Open>,
    spare: Vec<Vec<u8>>,
    last: u64,
    pub clamped: u64,
    pub problems: Vec<Problem>,
}

impl<'a> Timeline<'a> {
    pub fn new(mut sources: Vec<Source<'a>>) -> Self {
        sources.sort_by_key(|s| (s.chunk.header.min_time, s.stream, s.chunk.offset));
        Timeline {
            pending: sources.into(),
            open: Vec::new(),
            spare: Vec::new(),
            last: 0,
            clamped: 0,
            problems: Vec::new(),
        }
    }

    fn open_chunk(&mut self, src: Source<'a>) {
        let mut payload = self.spare.pop().unwrap_or_default();
        if let Err(p) = src.file.read_payload(&src.chunk, &mut payload) {
            self.problems.push(p);
            self.spare.push(payload);
            return;
        }
        let mut events = OwnedEvents::new(&src.chunk, payload);
        let next = events.next();
        let o = Open { stream: src.stream, events, next };
        if o.next.is_some() {
            self.open.push(o);
        } else {
            self.spare.push(o.events.into_payload());
        }
    }
}

impl Iterator for Timeline<'_> {
    /// (timestamp, index of the stream in its process, event)
    type Item = (u64, usize, Event);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let front = self.open.iter().filter_map(|o| o.next.map(|(t, _)| t)).min();
            match (self.pending.front(), front) {
                (Some(p), Some(f)) if p.chunk.header.min_time <= f => {
                    let p = self.pending.pop_front().expect("front exists");
                    self.open_chunk(p);
                }
                (Some(_), None) => {
                    let p = self.pending.pop_front().expect("front exists");
                    self.open_chunk(p);
                }
                (_, Some(_)) => break,
                (None, None) => return None,
            }
        }
        let i = (0..self.open.len()).min_by_key(|&i| self.open[i].next.map(|(t, _)| t)).expect("one is open");
        let o = &mut self.open[i];
        let (mut t, ev) = o.next.expect("open chunks have a next event");
        let stream = o.stream;
        o.next = o.events.next();
        if o.next.is_none() {
            let done = self.open.remove(i);
            self.spare.push(done.events.into_payload());
        }
        if t < self.last {
            self.clamped += 1;
            t = self.last;
        }
        self.last = t;
        Some((t, stream, ev))
    }
}
