//! How many bytes a collective sends and receives at one process.
//!
//! The conventions are Score-P's, so that profiles compare: a process
//! counts what it contributes and what it gets, its own block included
//! (a gather's root "sends" its block to itself), except where
//! `MPI_IN_PLACE` says it moves nothing for itself; on an
//! intercommunicator the counts run over the remote group and a rooted
//! operation moves data only between the root and the other group.
//! `docs/mpi.md` tabulates every formula. Everything here is plain
//! arithmetic on byte counts, so the formulas are tested without MPI.

/// The process's place in the collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    /// Rank in the (local) group.
    pub me: u64,
    /// Size of the (local) group.
    pub n: u64,
    /// Size of the remote group of an intercommunicator.
    pub remote: Option<u64>,
}

impl Ctx {
    /// How many processes the all-to-all operations exchange with.
    pub fn peers(&self) -> u64 {
        self.remote.unwrap_or(self.n)
    }
}

/// The process's role in a rooted operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Root,
    /// Any other participant: a non-root of an intracommunicator, or a
    /// process of the group opposite the root on an intercommunicator.
    Member,
    /// A process of the root's own group, not the root, on an
    /// intercommunicator (`MPI_PROC_NULL`): moves nothing.
    Idle,
}

/// (bytes sent, bytes received).
pub type Bytes = (u64, u64);

fn swap((a, b): Bytes) -> Bytes {
    (b, a)
}

/// Gather and reduce: `send` is this process's block, `recv` one block at
/// the root (equal by the type-signature rule).
pub fn all_to_one(ctx: Ctx, side: Side, in_place: bool, send: u64, recv: u64) -> Bytes {
    match (side, ctx.remote) {
        (Side::Root, None) if in_place => (0, (ctx.n - 1) * recv),
        (Side::Root, None) => (recv, ctx.n * recv),
        (Side::Root, Some(r)) => (0, r * recv),
        (Side::Member, _) => (send, 0),
        (Side::Idle, _) => (0, 0),
    }
}

/// Broadcast and scatter: all-to-one with the directions exchanged.
pub fn one_to_all(ctx: Ctx, side: Side, in_place: bool, send: u64, recv: u64) -> Bytes {
    swap(all_to_one(ctx, side, in_place, recv, send))
}

/// Gatherv: `recv` holds the root's per-rank block sizes.
pub fn gatherv(ctx: Ctx, side: Side, in_place: bool, send: u64, recv: &[u64]) -> Bytes {
    let total: u64 = recv.iter().sum();
    let mine = recv.get(ctx.me as usize).copied().unwrap_or(0);
    match (side, ctx.remote) {
        (Side::Root, None) if in_place => (0, total - mine),
        (Side::Root, None) => (mine, total),
        (Side::Root, Some(_)) => (0, total),
        (Side::Member, _) => (send, 0),
        (Side::Idle, _) => (0, 0),
    }
}

/// Scatterv: gatherv with the directions exchanged; `send` holds the
/// root's per-rank block sizes.
pub fn scatterv(ctx: Ctx, side: Side, in_place: bool, send: &[u64], recv: u64) -> Bytes {
    swap(gatherv(ctx, side, in_place, recv, send))
}

/// Alltoall, allgather and allreduce: one block to and from every peer.
pub fn alltoall(ctx: Ctx, in_place: bool, send: u64, recv: u64) -> Bytes {
    let p = ctx.peers();
    if in_place && ctx.remote.is_none() {
        let b = (p - 1) * recv;
        (b, b)
    } else {
        (p * send, p * recv)
    }
}

/// Alltoallv and alltoallw: per-peer block sizes.
pub fn alltoallv(ctx: Ctx, in_place: bool, send: &[u64], recv: &[u64]) -> Bytes {
    let received: u64 = recv.iter().sum();
    if in_place && ctx.remote.is_none() {
        let b = received - recv.get(ctx.me as usize).copied().unwrap_or(0);
        (b, b)
    } else {
        (send.iter().sum(), received)
    }
}

/// Allgatherv: one block to every peer, per-peer blocks back.
pub fn allgatherv(ctx: Ctx, in_place: bool, send: u64, recv: &[u64]) -> Bytes {
    let received: u64 = recv.iter().sum();
    if in_place && ctx.remote.is_none() {
        let mine = recv.get(ctx.me as usize).copied().unwrap_or(0);
        ((ctx.n - 1) * mine, received - mine)
    } else {
        (ctx.peers() * send, received)
    }
}

/// Reduce_scatter_block: `block` is one process's share.
pub fn reduce_scatter_block(ctx: Ctx, in_place: bool, block: u64) -> Bytes {
    let b = if in_place { ctx.n - 1 } else { ctx.n } * block;
    (b, b)
}

/// Reduce_scatter: `blocks` are the shares of the local group's ranks.
pub fn reduce_scatter(ctx: Ctx, in_place: bool, blocks: &[u64]) -> Bytes {
    let total: u64 = blocks.iter().sum();
    let mine = blocks.get(ctx.me as usize).copied().unwrap_or(0);
    match ctx.remote {
        Some(r) => (total, r * mine),
        None if in_place => (total - mine, (ctx.n - 1) * mine),
        None => (total, ctx.n * mine),
    }
}

/// Scan: a prefix over the ranks; `MPI_Exscan` counts as an in-place
/// scan (it never combines a process's own contribution).
pub fn scan(ctx: Ctx, in_place: bool, block: u64) -> Bytes {
    if in_place {
        ((ctx.n - ctx.me - 1) * block, ctx.me * block)
    } else {
        ((ctx.n - ctx.me) * block, (ctx.me + 1) * block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTRA: Ctx = Ctx { me: 1, n: 4, remote: None };

    #[test]
    fn rooted_operations_count_the_roots_own_block() {
        let root = Ctx { me: 2, ..INTRA };
        // Bcast of 8 bytes on 4 ranks.
        assert_eq!(one_to_all(root, Side::Root, false, 8, 8), (32, 8));
        assert_eq!(one_to_all(INTRA, Side::Member, false, 8, 8), (0, 8));
        // Gather of 8 bytes per rank.
        assert_eq!(all_to_one(root, Side::Root, false, 8, 8), (8, 32));
        assert_eq!(all_to_one(root, Side::Root, true, 8, 8), (0, 24));
        assert_eq!(all_to_one(INTRA, Side::Member, false, 8, 8), (8, 0));
        // Scatter in place at the root.
        assert_eq!(one_to_all(root, Side::Root, true, 8, 8), (24, 0));
    }

    #[test]
    fn intercommunicators_move_data_between_the_groups() {
        let inter = Ctx { me: 0, n: 2, remote: Some(3) };
        assert_eq!(one_to_all(inter, Side::Root, false, 8, 8), (24, 0));
        assert_eq!(one_to_all(inter, Side::Member, false, 8, 8), (0, 8));
        assert_eq!(one_to_all(inter, Side::Idle, false, 8, 8), (0, 0));
        assert_eq!(alltoall(inter, false, 4, 4), (12, 12));
        assert_eq!(reduce_scatter(inter, false, &[4, 4]), (8, 12));
    }

    #[test]
    fn v_variants_sum_their_blocks() {
        let root = Ctx { me: 0, ..INTRA };
        assert_eq!(gatherv(root, Side::Root, false, 1, &[1, 2, 3, 4]), (1, 10));
        assert_eq!(gatherv(root, Side::Root, true, 1, &[1, 2, 3, 4]), (0, 9));
        assert_eq!(scatterv(root, Side::Root, false, &[1, 2, 3, 4], 1), (10, 1));
        assert_eq!(scatterv(INTRA, Side::Member, false, &[], 2), (0, 2));
        assert_eq!(allgatherv(INTRA, false, 2, &[1, 2, 3, 4]), (8, 10));
        assert_eq!(allgatherv(INTRA, true, 0, &[1, 2, 3, 4]), (6, 8));
        assert_eq!(alltoallv(INTRA, false, &[1, 1, 1, 1], &[2, 2, 2, 2]), (4, 8));
        assert_eq!(alltoallv(INTRA, true, &[], &[2, 2, 2, 2]), (6, 6));
    }

    #[test]
    fn reductions_and_scans() {
        assert_eq!(alltoall(INTRA, false, 8, 8), (32, 32));
        assert_eq!(alltoall(INTRA, true, 8, 8), (24, 24));
        assert_eq!(reduce_scatter_block(INTRA, false, 4), (16, 16));
        assert_eq!(reduce_scatter(INTRA, false, &[1, 2, 3, 4]), (10, 8));
        assert_eq!(reduce_scatter(INTRA, true, &[1, 2, 3, 4]), (8, 6));
        assert_eq!(scan(INTRA, false, 8), (24, 16));
        assert_eq!(scan(INTRA, true, 8), (16, 8));
    }
}
