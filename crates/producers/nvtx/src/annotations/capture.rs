//! `--capture-range nvtx:NAME@N-M`: the push/pop range whose Nth to Mth
//! occurrences open the recording window (docs/window.md).

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Annotations, Message};

/// The NVTX range whose Nth to Mth occurrences open the recording window.
pub(super) struct Capture {
    name: Vec<u8>,
    first: u64,
    last: u64,
    /// Occurrences pushed so far (all threads).
    seen: AtomicU64,
    /// Capturing occurrences open now (all threads).
    open: AtomicU64,
}

impl Annotations {
    /// Opens the recording window inside the `first`th to `last`th
    /// push/pop range named `name` of the process.
    pub fn with_capture(mut self, name: &str, first: u64, last: u64) -> Self {
        let (seen, open) = (AtomicU64::new(0), AtomicU64::new(0));
        self.capture = Some(Capture { name: name.as_bytes().to_vec(), first, last, seen, open });
        self
    }

    /// A push of `message`: whether it opens the recording window (and
    /// then it has).
    pub(super) fn capture_opens(&self, message: Message<'_>) -> bool {
        let Some(c) = &self.capture else { return false };
        let matches = match message {
            Message::Text(t) => t == c.name.as_slice(),
            Message::Registered(h) => self.strings.get(h).is_some_and(|r| r.text.as_bytes() == c.name.as_slice()),
            Message::None => false,
        };
        if !matches {
            return false;
        }
        let k = c.seen.fetch_add(1, Ordering::Relaxed) + 1;
        if !(c.first..=c.last).contains(&k) {
            return false;
        }
        if c.open.fetch_add(1, Ordering::AcqRel) == 0 {
            recorder::window::set(recorder::window::RANGE_CLOSED, false);
        }
        true
    }

    /// The pop of a range that opened the window: closes it when it was
    /// the last one open.
    pub(super) fn capture_closes(&self) {
        if let Some(c) = &self.capture
            && c.open.fetch_sub(1, Ordering::AcqRel) == 1
        {
            recorder::window::set(recorder::window::RANGE_CLOSED, true);
        }
    }
}
