//! The recorder's definition table (strings, regions and locations
//! defined so far, and the encoded definitions not yet written) and its
//! lock guard.

use std::collections::HashMap;
use std::sync::MutexGuard;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub(crate) struct DefTable {
    pub(crate) pending: Vec<u8>,
    pub(crate) strings: HashMap<String, u32>,
    pub(crate) next_region: u32,
    pub(crate) next_location: u32,
}

/// The definition table, locked. Dropping it raises the recorder's
/// pending flag if definitions wait to be written, so the next append
/// writes them first.
pub(crate) struct Defs<'a> {
    pub(crate) guard: MutexGuard<'a, DefTable>,
    pub(crate) flag: &'a AtomicBool,
}

impl std::ops::Deref for Defs<'_> {
    type Target = DefTable;
    fn deref(&self) -> &DefTable {
        &self.guard
    }
}

impl std::ops::DerefMut for Defs<'_> {
    fn deref_mut(&mut self) -> &mut DefTable {
        &mut self.guard
    }
}

impl Drop for Defs<'_> {
    fn drop(&mut self) {
        self.flag.store(!self.guard.pending.is_empty(), Ordering::Release);
    }
}
