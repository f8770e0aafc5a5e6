//! The one encoder of events payloads, for every writer of them (slots,
//! in-memory buffers, synthetic streams): the base time, then each event
//! with its time delta, counted and spanned as it goes.

use crate::Event;
use crate::varint::{self, Sink};

/// Where a chunk of events belongs and what it spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpan {
    pub location: u32,
    pub count: u32,
    pub min_time: u64,
    pub max_time: u64,
}

/// The running state of an events payload: the base time before the first
/// event, then each event with its delta from the one before; how many
/// events and what time span. One encoder for every writer of events
/// payloads (slots, in-memory buffers, synthetic streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsEncoder {
    pub count: u32,
    last: u64,
    pub min: u64,
    pub max: u64,
}

impl Default for EventsEncoder {
    fn default() -> Self {
        EventsEncoder { count: 0, last: 0, min: u64::MAX, max: 0 }
    }
}

impl EventsEncoder {
    /// Appends `event` at `time` to `out`, the payload this encoder began.
    #[inline(always)]
    pub fn put<S: Sink>(&mut self, out: &mut S, time: u64, event: &Event) {
        if self.count == 0 {
            varint::put_u64(out, time);
            self.last = time;
        }
        event.encode_hot(time.wrapping_sub(self.last) as i64, out);
        self.last = time;
        self.count += 1;
        self.min = self.min.min(time);
        self.max = self.max.max(time);
    }

    /// The span of the events so far, for a chunk of `location`.
    pub fn span(&self, location: u32) -> EventSpan {
        EventSpan { location, count: self.count, min_time: self.min, max_time: self.max }
    }
}
