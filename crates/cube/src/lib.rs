//! A writer of CUBE4 profiles: the `.cubex` files that Cube, CubeLib's
//! command-line tools (`cube_stat`, `cube_dump`) and pycubexr read.
//!
//! A profile has three dimensions, each a tree: the **metrics** (time,
//! visits, bytes...), the **call tree** (call-tree nodes, each calling a
//! region from its parent's), and the **system tree** (system-tree nodes
//! such as a machine and its hosts, location groups such as processes,
//! and locations such as threads or GPU streams). A *severity* is a
//! metric's value at one (call-tree node, location).
//!
//! Build a [`Cube`] (definitions first, then severities in any order) and
//! [`write_to`](Cube::write_to) a path: the file appears complete or not
//! at all (written beside it, then renamed).
//!
//! ```
//! use cube::{Cube, DataType, GroupType, LocationType, Metric, MetricKind, Region};
//! let mut c = Cube::new();
//! let time = c.metric(Metric::new("time", "Time", DataType::Double, MetricKind::Inclusive, "sec"), None).unwrap();
//! let main = c.region(Region::new("main", "user", "function"));
//! let root = c.cnode(main, None).unwrap();
//! let machine = c.system_tree_node("machine", "machine", None).unwrap();
//! let rank0 = c.location_group("MPI Rank 0", 0, GroupType::Process, machine).unwrap();
//! let thread = c.location("Master thread", 0, LocationType::Thread, rank0).unwrap();
//! c.set(time, root, thread, 1.5).unwrap();
//! let mut bytes = Vec::new();
//! c.write(&mut bytes).unwrap();
//! ```
//!
//! # The format, as written here
//!
//! A `.cubex` file is a POSIX (ustar) tar archive holding `anchor.xml`
//! (every definition) and, per metric with id `n`, `n.index` and
//! `n.data`. The index is `CUBEX.INDEX`, the 32-bit integer 1 (its byte
//! order is the file's), a 16-bit version 0, the 8-bit index format 1
//! (sparse), the number `N` of rows and `N` 32-bit row positions in
//! increasing order. The data is `CUBEX.DATA` and then `N` rows of one
//! value per location (in location id order), in the metric's data type.
//! A row's position is its call-tree node's place in an enumeration of
//! the call tree that depends on the metric's kind: depth first (each node
//! before its children) for exclusive metrics, "wide" (a node's children
//! numbered together when the node is reached, depth first otherwise) for
//! inclusive ones. Rows left out are zero. Every definition gets the id of
//! its place in its tree, depth first, so that ids and positions agree
//! wherever a reader assumes they do. A metric without any nonzero value
//! still gets one (zero) row: pycubexr refuses an empty index.

mod cube;
mod definitions;
mod error;
mod plan;
mod tar;
mod write;
mod xml;

pub use cube::Cube;
pub use definitions::{
    CnodeId, DataType, GroupId, GroupType, LocationId, LocationType, Metric, MetricId, MetricKind, NodeId, Region,
    RegionId, Value,
};
pub use error::{Error, Result};

#[cfg(test)]
mod tests;
