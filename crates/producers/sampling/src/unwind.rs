//! Unwinding a sampled stack: the shared unwinder (`gputrace-unwind`:
//! the process's modules and their DWARF CFI, through framehop) walking
//! the stack copy of a [`Sample`] from its registers.
//!
//! It runs on the sampler's thread, in the process: the modules are the
//! ones mapped now (a library loaded later is found at the first address
//! no module holds), and what is recorded is a few addresses per sample
//! rather than a stack copy of kilobytes.

use crate::Sample;

pub use gputrace_unwind::MAX_DEPTH;

/// The process's modules and their unwind tables.
#[derive(Default)]
pub struct Unwinder(gputrace_unwind::Unwinder);

impl Unwinder {
    /// Whether `address` is in a module added.
    pub fn knows(&self, address: u64) -> bool {
        self.0.knows(address)
    }

    /// Adds the objects loaded since the last scan; returns their
    /// definitions, to record.
    pub fn scan(&mut self) -> Vec<raw::Module> {
        self.0.scan()
    }

    /// The sample's call stack, innermost first, as lookup addresses (the
    /// instruction pointer, then each return address minus one: inside
    /// the call instruction).
    pub fn unwind(&mut self, s: &Sample<'_>, out: &mut Vec<u64>) {
        self.0.unwind_copy(s.ip, s.sp, s.bp, s.stack, out);
    }
}
