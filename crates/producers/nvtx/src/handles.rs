//! Handles the library gives out (domains, registered strings): small
//! numbers, index + 1, that NVTX passes back as opaque pointers. The
//! table is append-only and read without a lock, so an annotation that
//! names a registered string costs one bounds check and two loads; a
//! number that is not one of ours (garbage, or a handle from another
//! tool) is simply not found, never dereferenced.

use std::sync::{Mutex, OnceLock};

/// Entries of the first segment; segment `k` holds `FIRST << k`.
const FIRST: usize = 64;
/// Segments: room for about 67 million entries.
const SEGMENTS: usize = 20;

/// An append-only table.
pub struct Handles<T> {
    segments: [OnceLock<Box<[OnceLock<T>]>>; SEGMENTS],
    next: Mutex<usize>,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles { segments: [const { OnceLock::new() }; SEGMENTS], next: Mutex::new(0) }
    }
}

/// The segment and offset of entry `i`, if the table has room for it.
fn locate(i: usize) -> Option<(usize, usize)> {
    let n = i / FIRST + 1;
    let segment = (usize::BITS - 1 - n.leading_zeros()) as usize;
    (segment < SEGMENTS).then(|| (segment, i - FIRST * ((1 << segment) - 1)))
}

impl<T> Handles<T> {
    /// Adds `value`; its handle (never 0), or `None` when the table is full.
    pub fn add(&self, value: T) -> Option<usize> {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let i = *next;
        let (segment, offset) = locate(i)?;
        let slots = self.segments[segment].get_or_init(|| (0..FIRST << segment).map(|_| OnceLock::new()).collect());
        slots[offset].set(value).ok()?;
        *next += 1;
        Some(i + 1)
    }

    /// The entry of `handle`, if it is one of this table's.
    pub fn get(&self, handle: usize) -> Option<&T> {
        let i = handle.checked_sub(1)?;
        let (segment, offset) = locate(i)?;
        self.segments[segment].get()?.get(offset)?.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_index_space() {
        assert_eq!(locate(0), Some((0, 0)));
        assert_eq!(locate(63), Some((0, 63)));
        assert_eq!(locate(64), Some((1, 0)));
        assert_eq!(locate(191), Some((1, 127)));
        assert_eq!(locate(192), Some((2, 0)));
        assert_eq!(locate(usize::MAX), None);
    }

    #[test]
    fn handles_find_their_values_and_nothing_else() {
        let t = Handles::default();
        let hs: Vec<usize> = (0..1000).map(|i| t.add(i).unwrap()).collect();
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(t.get(*h), Some(&i));
        }
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(1001), None);
        assert_eq!(t.get(usize::MAX), None);
        assert_eq!(t.get(0xdead_beef_0000), None);
    }
}
