//! How many bytes a collective sends and receives at one rank, and which
//! OTF2 collective operation it is.
//!
//! `c` is the count NCCL's API takes (per rank where the API says so:
//! all-gather's `sendcount`, reduce-scatter's `recvcount`), `s` the size
//! of the data type, `n` the ranks of the communicator:
//!
//! | NCCL | operation | root | sent | received |
//! |---|---|---|---|---|
//! | AllReduce | Allreduce | – | c·s | c·s |
//! | AllGather | Allgather | – | c·s | c·s·n |
//! | ReduceScatter | ReduceScatter | – | c·s·n | c·s |
//! | Broadcast | Bcast | root | c·s (root), 0 | 0 (root), c·s |
//! | Reduce | Reduce | root | 0 (root), c·s | c·s (root), 0 |
//! | AlltoAll | Alltoall | – | c·s·n | c·s·n |
//! | Gather | Gather | root | c·s | c·s·n (root), 0 |
//! | Scatter | Scatter | root | c·s·n (root), 0 | c·s |
//!
//! Send and receive are messages, not collectives; other functions
//! (SendRecv, names NCCL may add) record a region only.

use raw::{CollectiveOp, RegionRole};

use crate::model::Func;

/// A collective's OTF2 shape at one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub op: CollectiveOp,
    pub root: Option<u32>,
    pub sent: u64,
    pub received: u64,
}

/// The collective operation of `func`, if it is one.
pub fn collective_op(func: Func) -> Option<CollectiveOp> {
    Some(match func {
        Func::AllReduce => CollectiveOp::Allreduce,
        Func::AllGather => CollectiveOp::Allgather,
        Func::ReduceScatter => CollectiveOp::ReduceScatter,
        Func::Broadcast => CollectiveOp::Bcast,
        Func::Reduce => CollectiveOp::Reduce,
        Func::AlltoAll => CollectiveOp::Alltoall,
        Func::Gather => CollectiveOp::Gather,
        Func::Scatter => CollectiveOp::Scatter,
        Func::Send | Func::Recv | Func::SendRecv | Func::Other(_) => return None,
    })
}

/// The region role of `func`'s API function, as the MPI functions have.
pub fn role(func: Func) -> RegionRole {
    match func {
        Func::AllReduce | Func::AllGather | Func::ReduceScatter | Func::AlltoAll => RegionRole::CollAll2All,
        Func::Broadcast | Func::Scatter => RegionRole::CollOne2All,
        Func::Reduce | Func::Gather => RegionRole::CollAll2One,
        Func::Send | Func::Recv | Func::SendRecv => RegionRole::Point2Point,
        Func::Other(_) => RegionRole::Function,
    }
}

/// The shape of `func` on `count` elements of `size` bytes at `rank` of
/// `nranks` (0 when unknown: counted as 1), rooted at `root` where the
/// operation has a root.
pub fn shape(func: Func, count: u64, size: u64, nranks: u32, rank: u32, root: i32) -> Option<Shape> {
    let op = collective_op(func)?;
    let block = count.saturating_mul(size);
    let all = block.saturating_mul(u64::from(nranks.max(1)));
    let rooted = matches!(func, Func::Broadcast | Func::Reduce | Func::Gather | Func::Scatter);
    let root = if rooted { u32::try_from(root).ok() } else { None };
    let is_root = root == Some(rank);
    let (sent, received) = match func {
        Func::AllReduce => (block, block),
        Func::AllGather => (block, all),
        Func::ReduceScatter => (all, block),
        Func::AlltoAll => (all, all),
        Func::Broadcast if is_root => (block, 0),
        Func::Broadcast => (0, block),
        Func::Reduce if is_root => (0, block),
        Func::Reduce => (block, 0),
        Func::Gather if is_root => (block, all),
        Func::Gather => (block, 0),
        Func::Scatter if is_root => (all, block),
        Func::Scatter => (0, block),
        _ => return None,
    };
    Some(Shape { op, root, sent, received })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        let s = |f, rank, root| shape(f, 1000, 4, 2, rank, root).map(|s| (s.sent, s.received, s.root));
        assert_eq!(s(Func::AllReduce, 0, 0), Some((4000, 4000, None)));
        assert_eq!(s(Func::AllGather, 1, 0), Some((4000, 8000, None)));
        assert_eq!(s(Func::ReduceScatter, 1, 0), Some((8000, 4000, None)));
        assert_eq!(s(Func::Broadcast, 0, 0), Some((4000, 0, Some(0))));
        assert_eq!(s(Func::Broadcast, 1, 0), Some((0, 4000, Some(0))));
        assert_eq!(s(Func::Reduce, 1, 1), Some((0, 4000, Some(1))));
        assert_eq!(s(Func::Reduce, 0, 1), Some((4000, 0, Some(1))));
        assert_eq!(s(Func::AlltoAll, 0, 0), Some((8000, 8000, None)));
        assert_eq!(s(Func::Gather, 0, 0), Some((4000, 8000, Some(0))));
        assert_eq!(s(Func::Scatter, 1, 0), Some((0, 4000, Some(0))));
        assert_eq!(s(Func::Send, 0, 0), None);
        assert_eq!(shape(Func::AllGather, 10, 2, 0, 0, 0).unwrap().received, 20);
        assert_eq!(collective_op(Func::Broadcast), Some(CollectiveOp::Bcast));
        assert_eq!(role(Func::Reduce), RegionRole::CollAll2One);
    }
}
