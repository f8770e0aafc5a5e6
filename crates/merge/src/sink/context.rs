//! What a sink is told of a region entered in a calling context (an MPI
//! call whose call path was recorded, `GPUTRACE_UNWINDING`).

use otf2::{CallingContextRef, RegionRef};

/// The calling context a region is entered in: the context whose leaf
/// is the region, and its depth (written as the unwind distance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InContext {
    pub context: CallingContextRef,
    pub depth: u32,
}

/// A region left: which, its place among the layout's regions, and how
/// long after its Enter.
#[derive(Debug, Clone, Copy)]
pub struct Left {
    pub region: RegionRef,
    pub index: usize,
    pub duration: u64,
}
