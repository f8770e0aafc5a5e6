//! Each thread's state (its range stacks and message cache) and the few
//! events an annotation records together.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use raw::Event;

use super::{Annotations, Style};

/// Entries of a thread's message cache before it starts over (programs
/// that put a counter in every message would otherwise grow it for ever).
const THREAD_CACHE: usize = 1 << 16;

/// FNV-1a: messages are short and not hostile, and SipHash (std's
/// default) was a fifth of an annotation's cost.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Message → region, of one (domain, style).
type Names = HashMap<Box<[u8]>, Option<u32>, BuildHasherDefault<Fnv>>;

#[derive(Default)]
pub(super) struct ThreadState {
    /// The [`Annotations`] this state belongs to.
    pub(super) instance: usize,
    /// Per domain: the regions pushed and not yet popped (`None` for one
    /// the filter left out).
    stacks: Vec<(u32, Vec<Option<u32>>)>,
    /// Per (domain, style): the messages seen on this thread.
    names: Vec<((u32, Style), Names)>,
    cached: usize,
    /// The recorder made this thread's buffer ready.
    pub(super) prepared: bool,
    /// The pushes that opened the recording window: (domain, depth of
    /// its stack with them).
    pub(super) captures: Vec<(u32, usize)>,
}

impl ThreadState {
    /// A fresh state for the [`Annotations`] of `instance`.
    pub(super) fn of(instance: usize) -> ThreadState {
        ThreadState { instance, ..ThreadState::default() }
    }

    /// The region of a text message, from this thread's cache or defined.
    pub(super) fn text_region(&mut self, a: &Annotations, domain: u32, style: Style, text: &[u8]) -> Option<u32> {
        let i = match self.names.iter().position(|(k, _)| *k == (domain, style)) {
            Some(i) => i,
            None => {
                self.names.push(((domain, style), Names::default()));
                self.names.len() - 1
            }
        };
        if let Some(&region) = self.names[i].1.get(text) {
            return region;
        }
        let region = a.define_region(domain, style, &String::from_utf8_lossy(text));
        if self.cached >= THREAD_CACHE {
            for (_, names) in &mut self.names {
                names.clear();
            }
            self.cached = 0;
        }
        self.names[i].1.insert(text.into(), region);
        self.cached += 1;
        region
    }

    pub(super) fn stack(&mut self, domain: u32) -> &mut Vec<Option<u32>> {
        let i = match self.stacks.iter().position(|(d, _)| *d == domain) {
            Some(i) => i,
            None => {
                self.stacks.push((domain, Vec::new()));
                self.stacks.len() - 1
            }
        };
        &mut self.stacks[i].1
    }
}

thread_local! {
    pub(super) static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// A few events recorded together, without allocating; made before the
/// clock is read, stamped after.
pub(super) struct Batch {
    events: [(u64, Event); 6],
    len: usize,
}

impl Batch {
    pub(super) fn new() -> Self {
        Batch { events: [(0, Event::MpiCollectiveBegin); 6], len: 0 }
    }

    pub(super) fn push(&mut self, e: Event) {
        if let Some(slot) = self.events.get_mut(self.len) {
            *slot = (0, e);
            self.len += 1;
        }
    }

    /// The events, all at `t`.
    pub(super) fn at(&mut self, t: u64) -> &[(u64, Event)] {
        for e in &mut self.events[..self.len] {
            e.0 = t;
        }
        &self.events[..self.len]
    }
}
