//! Communicators: from MPI handles to stream-local ids, and the
//! definitions that let the merge translate ranks and unify communicators
//! across processes.
//!
//! Every communicator a process learns of gets a stream-local id and one
//! `Definition::Comm`: its members as world ranks, in communicator rank
//! order, and a key that every member process writes identically — the
//! world rank of its rank 0 and that process's creation counter, which
//! rank 0 broadcasts over the new communicator right after creating it
//! (creation is collective, so every member is there to receive it).
//! `MPI_COMM_WORLD` is keyed (0, 0) and `MPI_COMM_SELF` (world rank,
//! `u64::MAX`).
//!
//! Each message event looks its communicator up, so the lookup is a
//! thread-local cache of a few entries in front of a global map, the cache
//! being dropped whenever the map changes (a generation counter).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock};

use raw::defs::rank_runs;
use raw::{CommDef, Definition};
use recorder::Recorder;

use crate::abi::{Handle, MpiAbi};
use crate::call::{self, Call, PerThread};
use crate::pmpi;

/// What events need to know about a communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommInfo {
    /// Stream-local id.
    pub id: u32,
    /// This process's rank and the size of its (local) group.
    pub rank: c_int,
    pub size: c_int,
    /// The remote group's size for an intercommunicator.
    pub remote_size: Option<c_int>,
    /// What to add to a rank of the remote group (an intercommunicator's
    /// peers) to get its rank in the communicator's definition, which
    /// lists both groups; 0 for an intracommunicator.
    pub remote_base: u32,
    /// The same for a rank of the local group.
    pub local_base: u32,
}

impl CommInfo {
    /// The number of processes a collective exchanges data with: the
    /// remote group for an intercommunicator.
    pub fn peers(&self) -> c_int {
        self.remote_size.unwrap_or(self.size)
    }

    /// A peer rank as events record it: for an intercommunicator, the
    /// remote rank's place in the definition's member list.
    #[inline]
    pub fn peer(&self, remote_rank: c_int) -> u32 {
        (remote_rank as u32).wrapping_add(self.remote_base)
    }

    /// This process's rank as events record it.
    pub fn own(&self) -> u32 {
        (self.rank as u32).wrapping_add(self.local_base)
    }

    fn intra(id: u32, rank: c_int, size: c_int) -> Self {
        CommInfo { id, rank, size, remote_size: None, remote_base: 0, local_base: 0 }
    }
}

static MAP: RwLock<Option<HashMap<usize, CommInfo>>> = RwLock::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(1);
/// This process's creation counter; 0 is the world's.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);
static WORLD_GROUP: AtomicUsize = AtomicUsize::new(0);
static WORLD_RANK: AtomicUsize = AtomicUsize::new(0);
/// `MPI_COMM_WORLD`'s handle and entry: most messages name it, and it is
/// never freed, so its lookup skips the cache.
static WORLD: OnceLock<(usize, CommInfo)> = OnceLock::new();

const CACHE_SLOTS: usize = 4;

/// A thread's last used communicators, kept in its
/// [`PerThread`](crate::call::PerThread).
#[derive(Debug)]
pub struct Cache {
    generation: u64,
    next: usize,
    slots: [Option<(usize, CommInfo)>; CACHE_SLOTS],
}

impl Cache {
    pub const EMPTY: Cache = Cache { generation: 0, next: 0, slots: [None; CACHE_SLOTS] };
}

fn insert(key: usize, info: CommInfo) {
    let mut map = MAP.write().unwrap_or_else(|e| e.into_inner());
    map.get_or_insert_with(HashMap::new).insert(key, info);
    GENERATION.fetch_add(1, Ordering::Release);
}

/// Forgets a communicator being freed.
pub fn forget(key: usize) {
    let mut map = MAP.write().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = map.as_mut() {
        m.remove(&key);
    }
    GENERATION.fetch_add(1, Ordering::Release);
}

fn cached(cache: &RefCell<Cache>, key: usize) -> Option<CommInfo> {
    let generation = GENERATION.load(Ordering::Acquire);
    let mut c = cache.try_borrow_mut().ok()?;
    if c.generation != generation {
        *c = Cache { generation, ..Cache::EMPTY };
        return None;
    }
    c.slots.iter().flatten().find(|(k, _)| *k == key).map(|(_, info)| *info)
}

fn remember(cache: &RefCell<Cache>, key: usize, info: CommInfo, generation: u64) {
    if let Ok(mut c) = cache.try_borrow_mut()
        && c.generation == generation
    {
        let i = c.next;
        c.slots[i] = Some((key, info));
        c.next = (i + 1) % CACHE_SLOTS;
    }
}

/// The communicator behind `comm`, registering it on the spot (without
/// a globally agreed key) if it was created behind our back.
#[inline]
pub fn lookup<A: MpiAbi>(call: &Call, comm: A::Comm) -> Option<CommInfo> {
    lookup_with::<A>(call.per_thread(), call.rec, comm)
}

/// [`lookup`] outside a call's hooks.
fn lookup_here<A: MpiAbi>(rec: &Recorder, comm: A::Comm) -> Option<CommInfo> {
    call::per_thread(|t| lookup_with::<A>(t, rec, comm)).flatten()
}

fn lookup_with<A: MpiAbi>(thread: &PerThread, rec: &Recorder, comm: A::Comm) -> Option<CommInfo> {
    let key = comm.key();
    if let Some((world, info)) = WORLD.get()
        && *world == key
    {
        return Some(*info);
    }
    if let Some(info) = cached(&thread.comms, key) {
        return Some(info);
    }
    let generation = GENERATION.load(Ordering::Acquire);
    let found = MAP.read().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(&key).copied());
    let info = match found {
        Some(info) => info,
        None => register_untracked::<A>(rec, comm)?,
    };
    remember(&thread.comms, key, info, generation);
    Some(info)
}

/// The world ranks of `comm`'s local group (or its remote group), in rank
/// order; ranks outside the world (spawned processes) are `u32::MAX`.
pub fn world_ranks<A: MpiAbi>(comm: A::Comm, remote: bool) -> Option<Vec<u32>> {
    let world = A::Group::from_key(WORLD_GROUP.load(Ordering::Relaxed));
    let mut group = A::Group::from_key(0);
    // SAFETY: `group` is writable; the communicator is live (it was just
    // created or is being used by the program's own call).
    let rc = unsafe {
        if remote { pmpi::comm_remote_group::<A>(comm, &mut group) } else { pmpi::comm_group::<A>(comm, &mut group) }
    };
    if rc != A::SUCCESS {
        return None;
    }
    let mut n = 0;
    // SAFETY: `group` is a valid group we own until freed below.
    unsafe { pmpi::group_size::<A>(group, &mut n) };
    let ranks: Vec<c_int> = (0..n.max(0)).collect();
    let mut out = vec![A::UNDEFINED; ranks.len()];
    // SAFETY: both arrays hold `n` ints; both groups are valid.
    let rc = unsafe { pmpi::group_translate_ranks::<A>(group, n, ranks.as_ptr(), world, out.as_mut_ptr()) };
    // SAFETY: we own `group`.
    unsafe { pmpi::group_free::<A>(&mut group) };
    (rc == A::SUCCESS).then(|| out.into_iter().map(|r| u32::try_from(r).unwrap_or(u32::MAX)).collect())
}

fn define(rec: &Recorder, key: (u32, u64), name: String, members: &[u32], parent: Option<u32>) -> u32 {
    let id = rec.next_comm_id();
    rec.define(&Definition::Comm(CommDef { id, key, name, members: rank_runs(members.iter().copied()), parent }));
    id
}

/// Registers `MPI_COMM_WORLD` and `MPI_COMM_SELF`, right after
/// `MPI_Init`; returns this process's world rank and size.
pub fn register_predefined<A: MpiAbi>(rec: &Recorder) -> Option<(u32, u32)> {
    let world = A::comm_world();
    let rank = pmpi::rank_in::<A>(world)?;
    let size = pmpi::size_of::<A>(world)?;
    let mut group = A::Group::from_key(0);
    // SAFETY: `group` is writable; kept for the whole run to translate ranks.
    unsafe { pmpi::comm_group::<A>(world, &mut group) };
    WORLD_GROUP.store(group.key(), Ordering::Relaxed);
    let (urank, usize_) = (u32::try_from(rank).ok()?, u32::try_from(size).ok()?);
    WORLD_RANK.store(urank as usize, Ordering::Relaxed);
    let all: Vec<u32> = (0..usize_).collect();
    let id = define(rec, (0, 0), "MPI_COMM_WORLD".into(), &all, None);
    insert(world.key(), CommInfo::intra(id, rank, size));
    let _ = WORLD.set((world.key(), CommInfo::intra(id, rank, size)));
    let id = define(rec, (urank, u64::MAX), "MPI_COMM_SELF".into(), &[urank], None);
    insert(A::comm_self().key(), CommInfo::intra(id, 0, 1));
    Some((urank, usize_))
}

/// This process's world rank.
pub fn world_rank() -> u32 {
    WORLD_RANK.load(Ordering::Relaxed) as u32
}

/// A fresh value of this process's creation counter.
pub fn next_seq() -> u64 {
    NEXT_SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Broadcasts one u64 over `comm` from its rank 0 (or, on an
/// intercommunicator, from `root` as `MPI_Bcast` takes it).
fn bcast_u64s<A: MpiAbi>(values: &mut [u64], root: c_int, comm: A::Comm) -> bool {
    let n = (values.len() * 8) as c_int;
    // SAFETY: `values` is writable for `n` bytes; every member of `comm`
    // makes the same call at the same point (creation is collective).
    let rc = unsafe { pmpi::bcast::<A>(values.as_mut_ptr().cast::<c_void>(), n, A::byte(), root, comm) };
    rc == A::SUCCESS
}

/// Agrees, over a new intercommunicator, on the sequence number of the
/// side whose rank 0 has the lower world rank (`first`): its rank 0 can
/// only broadcast to the other side, so that side's rank 0 sends it back.
fn agree_inter<A: MpiAbi>(comm: A::Comm, rank: c_int, first: bool) -> Option<u64> {
    let sender = |me_sends: bool| {
        if !me_sends {
            0
        } else if rank == 0 {
            A::ROOT
        } else {
            A::PROC_NULL
        }
    };
    // Round 1: the first side's rank 0 → the second side.
    let mut r1 = [if first && rank == 0 { next_seq() } else { 0 }];
    bcast_u64s::<A>(&mut r1, sender(first), comm).then_some(())?;
    // Round 2: the second side's rank 0 → the first side.
    let mut r2 = [r1[0]];
    bcast_u64s::<A>(&mut r2, sender(!first), comm).then_some(())?;
    Some(if first && rank != 0 { r2[0] } else { r1[0] })
}

/// Registers a communicator just created by a collective call of all its
/// members (`seq`: the agreed sequence number, when already known, as for
/// `MPI_Comm_idup`).
///
/// An intercommunicator is defined as one communicator listing both
/// groups, the group whose rank 0 has the lower world rank first — the
/// order `MPI_Intercomm_merge` with that group low would give — keyed by
/// that rank 0 and its sequence number, so that both groups write the
/// same definition and a peer (a rank of the remote group) translates.
pub fn register_new<A: MpiAbi>(
    rec: &Recorder,
    comm: A::Comm,
    parent: Option<A::Comm>,
    seq: Option<u64>,
) -> Option<CommInfo> {
    if pmpi::is_null_comm::<A>(comm) {
        return None;
    }
    let rank = pmpi::rank_in::<A>(comm)?;
    let local = world_ranks::<A>(comm, false)?;
    let size = local.len() as c_int;
    let (members, mut info, seq) = match pmpi::remote_size_of::<A>(comm) {
        None => {
            let seq = match seq {
                Some(s) => s,
                None => {
                    let mut v = [if rank == 0 { next_seq() } else { 0 }];
                    bcast_u64s::<A>(&mut v, 0, comm).then_some(())?;
                    v[0]
                }
            };
            (local, CommInfo::intra(0, rank, size), seq)
        }
        Some(remote_size) => {
            let remote = world_ranks::<A>(comm, true)?;
            let first = local.first()? < remote.first()?;
            let seq = match seq {
                Some(s) => s,
                None => agree_inter::<A>(comm, rank, first)?,
            };
            let (a, b) = if first { (&local, &remote) } else { (&remote, &local) };
            let a_len = a.len() as u32;
            let info = CommInfo {
                id: 0,
                rank,
                size,
                remote_size: Some(remote_size),
                remote_base: if first { a_len } else { 0 },
                local_base: if first { 0 } else { a_len },
            };
            (a.iter().chain(b).copied().collect(), info, seq)
        }
    };
    let root = *members.first()?;
    let parent = parent.and_then(|p| lookup_here::<A>(rec, p)).map(|p| p.id);
    info.id = define(rec, (root, seq), format!("MPI_Comm {root}.{seq}"), &members, parent);
    insert(comm.key(), info);
    Some(info)
}

/// Registers a communicator that was created where we could not see it
/// (a creator not wrapped, or a call made while the thread was inside
/// another wrapper). Its key cannot be agreed on any more, so it is made
/// from the members alone: processes that saw the same untracked group
/// of processes write the same key, and the merge joins them.
fn register_untracked<A: MpiAbi>(rec: &Recorder, comm: A::Comm) -> Option<CommInfo> {
    if pmpi::is_null_comm::<A>(comm) {
        return None;
    }
    let rank = pmpi::rank_in::<A>(comm)?;
    let members = world_ranks::<A>(comm, false)?;
    let remote_size = pmpi::remote_size_of::<A>(comm);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for m in &members {
        h = (h ^ u64::from(*m)).wrapping_mul(0x0100_0000_01b3);
    }
    let root = *members.first()?;
    let id = define(rec, (root, (1 << 63) | (h >> 1)), "MPI_Comm (untracked)".into(), &members, None);
    let info = CommInfo { remote_size, ..CommInfo::intra(id, rank, members.len() as c_int) };
    insert(comm.key(), info);
    Some(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_follows_the_map() {
        let info = CommInfo::intra(7, 1, 4);
        insert(0xabc, info);
        assert_eq!(MAP.read().unwrap().as_ref().unwrap()[&0xabc], info);
        let cache = RefCell::new(Cache::EMPTY);
        let g = GENERATION.load(Ordering::Acquire);
        assert_eq!(cached(&cache, 0xabc), None);
        remember(&cache, 0xabc, info, g);
        assert_eq!(cached(&cache, 0xabc), Some(info));
        forget(0xabc);
        assert_eq!(cached(&cache, 0xabc), None, "a freed handle must not hit the cache");
    }
}
