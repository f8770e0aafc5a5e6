//! What the analyses that report places and names by the pass's indices
//! (stragglers, the critical path) ask of the pass: one trait, which the
//! pass implements once.

use otf2::{CommRef, RegionRef};

/// Names and times for the pass's indices (processes, locations, call-path
/// nodes) and ticks.
pub(crate) trait Describe {
    /// (paradigm, name, size, members) of a communicator.
    fn communicator(&self, comm: CommRef) -> Option<(&'static str, String, u64, String)>;
    fn rank(&self, process: usize) -> Option<u32>;
    fn process(&self, process: usize) -> String;
    /// The process a location belongs to.
    fn process_of(&self, loc: usize) -> usize;
    fn location(&self, loc: usize) -> String;
    fn region(&self, region: RegionRef) -> String;
    /// The innermost region of a call-path node
    /// ([`critical::NONE`](super::critical::NONE): none open).
    fn activity(&self, node: u32) -> String;
    /// A duration in ticks, as ns.
    fn ns(&self, ticks: u64) -> u64;
    /// A time in ticks, as ns since the trace's start.
    fn since_start(&self, ticks: u64) -> u64;
}

/// The tests' names: process and location `i` are rank `i`'s, one
/// communicator of 3 ranks, regions `region <id>`, call-path nodes 0, 1,
/// 2 `main`, `MPI_Recv`, `MPI_Send`; ticks are ns from 0.
#[cfg(test)]
pub(crate) struct Plain;

#[cfg(test)]
impl Describe for Plain {
    fn communicator(&self, _: CommRef) -> Option<(&'static str, String, u64, String)> {
        Some(("MPI", "world".into(), 3, "0-2".into()))
    }
    fn rank(&self, p: usize) -> Option<u32> {
        Some(p as u32)
    }
    fn process(&self, p: usize) -> String {
        format!("rank {p}")
    }
    fn process_of(&self, loc: usize) -> usize {
        loc
    }
    fn location(&self, _: usize) -> String {
        "Master thread".into()
    }
    fn region(&self, r: RegionRef) -> String {
        format!("region {}", r.id())
    }
    fn activity(&self, node: u32) -> String {
        match node {
            0 => "main".into(),
            1 => "MPI_Recv".into(),
            2 => "MPI_Send".into(),
            _ => "-".into(),
        }
    }
    fn ns(&self, t: u64) -> u64 {
        t
    }
    fn since_start(&self, t: u64) -> u64 {
        t
    }
}
