//! Iterating the events of one chunk's payload, with absolute timestamps:
//! borrowed ([`Events`]) or owning the payload ([`OwnedEvents`]).

use super::EventChunk;
use crate::Event;
use crate::varint::Cursor;

/// The events of one chunk, with absolute timestamps. Stops at the first
/// undecodable byte (the checksum makes that a bug, not damage).
#[derive(Debug, Clone)]
pub struct Events<'a> {
    cursor: Cursor<'a>,
    time: u64,
    left: u32,
}

impl<'a> Events<'a> {
    /// The events of a chunk payload that holds `count` of them.
    pub fn of_payload(payload: &'a [u8], count: u32) -> Events<'a> {
        let mut cursor = Cursor::new(payload);
        match cursor.u64() {
            Ok(time) => Events { cursor, time, left: count },
            Err(_) => Events { cursor, time: 0, left: 0 },
        }
    }
}

/// [`Events`] that own their payload: for a reader that keeps many chunks
/// open at once (the merge's timeline) and reuses their buffers
/// ([`into_payload`](Self::into_payload)).
#[derive(Debug)]
pub struct OwnedEvents {
    payload: Vec<u8>,
    pos: usize,
    time: u64,
    left: u32,
}

impl OwnedEvents {
    /// The events of `chunk`, whose payload
    /// [`RawFile::read_payload`](super::RawFile::read_payload) put
    /// in `payload`.
    pub fn new(chunk: &EventChunk, payload: Vec<u8>) -> OwnedEvents {
        let mut cursor = Cursor::new(&payload);
        let (time, left) = match cursor.u64() {
            Ok(time) => (time, chunk.header.event_count),
            Err(_) => (0, 0),
        };
        let pos = cursor.position();
        OwnedEvents { payload, pos, time, left }
    }

    /// The payload buffer, for the next chunk.
    pub fn into_payload(self) -> Vec<u8> {
        self.payload
    }
}

impl Iterator for OwnedEvents {
    type Item = (u64, Event);

    #[inline]
    fn next(&mut self) -> Option<(u64, Event)> {
        let mut cursor = Cursor::new(&self.payload[self.pos..]);
        let next = step(&mut self.time, &mut self.left, &mut cursor);
        self.pos += cursor.position();
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

impl Iterator for Events<'_> {
    type Item = (u64, Event);

    #[inline]
    fn next(&mut self) -> Option<(u64, Event)> {
        step(&mut self.time, &mut self.left, &mut self.cursor)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

/// The next of `left` events at `cursor`, its timestamp the running
/// `time` plus its delta; none left, or an undecodable one (which ends
/// the chunk), is `None`. What [`Events`] and [`OwnedEvents`] both do.
#[inline]
fn step(time: &mut u64, left: &mut u32, cursor: &mut Cursor<'_>) -> Option<(u64, Event)> {
    if *left == 0 {
        return None;
    }
    *left -= 1;
    match Event::decode(cursor) {
        Ok((delta, ev)) => {
            *time = time.wrapping_add_signed(delta);
            Some((*time, ev))
        }
        Err(_) => {
            *left = 0;
            None
        }
    }
}
