//! The call tree as the merge's pass grows it: call paths as indices
//! (a node's parent before it), each with its values on the current
//! location, and the hashing and the cache in front of the map from
//! (parent, region) to a child.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One call path's values on the current location: visits, bytes and
/// nanoseconds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Acc {
    pub(crate) visits: u64,
    /// Inclusive, as measured.
    pub(crate) time: u64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// Exclusive while the location's events go by, inclusive once it
    /// ends (summed up the tree).
    pub(crate) kernel: u64,
    pub(crate) copy: u64,
    pub(crate) memset: u64,
    pub(crate) copy_bytes: u64,
    pub(crate) memset_bytes: u64,
    /// Samples taken here (the innermost frame's call path).
    pub(crate) hits: u64,
    /// Their CPU time (samples x period, ns): exclusive while the
    /// location's events go by, inclusive once it ends.
    pub(crate) sampled: u64,
}

/// What a call path's region is, for what its duration counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Call,
    Kernel,
    Copy,
    Memset,
}

/// A multiplicative hash for the call tree's (parent, region) keys: the
/// standard SipHash costs more than the rest of an Enter.
#[derive(Default)]
pub(crate) struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub(crate) type Children = HashMap<u64, u32, BuildHasherDefault<KeyHash>>;

/// Slots of the direct-mapped cache in front of [`Children`]: a call
/// tree's hot edges stay there, one multiply and one compare away (the
/// hash map's probing cost more than the rest of an Enter).
pub(crate) const CACHE_BITS: u32 = 12;

/// An empty cache slot (no key is all ones: region indices are below
/// 2^32 - 1).
pub(crate) const NO_KEY: u64 = u64::MAX;

/// Node 0 of the call tree: the program.
pub(crate) const ROOT: u32 = 0;

/// A call path: its parent, its region (summary index), what the region
/// is, and its values on the current location (zero where the location
/// never went).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub(crate) parent: u32,
    pub(crate) region: u32,
    pub(crate) kind: Kind,
    pub(crate) acc: Acc,
}

/// Root node's region: the program (not an archive region).
pub(crate) const PROGRAM: u32 = u32::MAX;
