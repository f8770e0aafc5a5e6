//! Outstanding requests: what each non-blocking operation was, so that its
//! completion can be recorded.
//!
//! The table is keyed by the `MPI_Request` value and allows duplicate
//! keys: an implementation may complete a small `MPI_Isend` at once and
//! hand out the same dummy request for every such send, so several live
//! entries can share a key; completions take the oldest active one.
//! Persistent requests stay in the table while inactive; `MPI_Start`
//! activates them with a fresh request id and completion deactivates them.
//! The table is sharded by key so that threads completing different
//! requests rarely meet on one lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use raw::{Collective, Message};
use recorder::Recorder;

/// Work to finish when a request completes that needs the ABI's types:
/// registering the communicator of an `MPI_Comm_idup`.
pub struct Deferred(pub Box<dyn FnOnce(&Recorder) + Send>);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deferred")
    }
}

/// What a request will complete.
#[derive(Debug)]
pub enum Pending {
    /// A send, with its envelope.
    Send(Message),
    /// A receive on a communicator (stream-local id); source, tag and size
    /// come from the status at completion, the source offset by
    /// `remote_base` on an intercommunicator (see `CommInfo::peer`).
    Recv { comm: u32, remote_base: u32 },
    /// A non-blocking collective.
    Collective(Collective),
    /// Something to finish at completion.
    Deferred(Deferred),
}

/// One tracked request.
#[derive(Debug)]
pub struct Entry {
    /// The request id of the events (`MpiIsend`, ..., per process).
    pub id: u64,
    pub pending: Pending,
    pub persistent: bool,
    pub active: bool,
}

const SHARDS: usize = 16;

type Shard = Mutex<HashMap<usize, Vec<Entry>>>;

static TABLE: LazyLock<[Shard; SHARDS]> = LazyLock::new(|| std::array::from_fn(|_| Mutex::new(HashMap::new())));
static LIVE: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh request id.
#[inline]
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Whether any request is tracked: completion calls skip all work when
/// none is.
#[inline]
pub fn any() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
}

fn shard(key: usize) -> MutexGuard<'static, HashMap<usize, Vec<Entry>>> {
    // Handles are pointers (low bits aligned) or small ints: mix before
    // picking a shard.
    let i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) % SHARDS;
    TABLE[i].lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a request.
pub fn insert(key: usize, entry: Entry) {
    shard(key).entry(key).or_default().push(entry);
    LIVE.fetch_add(1, Ordering::Relaxed);
}

/// Takes the completion of the oldest active request with `key`: removes
/// it, or deactivates it if persistent (then `pending` holds a copy of
/// what the caller needs). `None` if no active request has that key.
pub fn complete(key: usize) -> Option<Completed> {
    let mut map = shard(key);
    let list = map.get_mut(&key)?;
    let i = list.iter().position(|e| e.active)?;
    if list[i].persistent {
        let e = &mut list[i];
        e.active = false;
        let pending = match &e.pending {
            Pending::Send(m) => Pending::Send(*m),
            Pending::Recv { comm, remote_base } => Pending::Recv { comm: *comm, remote_base: *remote_base },
            Pending::Collective(c) => Pending::Collective(*c),
            Pending::Deferred(_) => return None,
        };
        return Some(Completed { id: e.id, pending });
    }
    let e = list.remove(i);
    if list.is_empty() {
        map.remove(&key);
    }
    LIVE.fetch_sub(1, Ordering::Relaxed);
    Some(Completed { id: e.id, pending: e.pending })
}

/// A completed request.
#[derive(Debug)]
pub struct Completed {
    pub id: u64,
    pub pending: Pending,
}

/// Activates the oldest inactive persistent request with `key` under a
/// fresh id (`MPI_Start`); returns the id and a copy of what it does.
pub fn start(key: usize) -> Option<(u64, Pending)> {
    let mut map = shard(key);
    let e = map.get_mut(&key)?.iter_mut().find(|e| e.persistent && !e.active)?;
    e.active = true;
    e.id = next_id();
    let copy = match &e.pending {
        Pending::Send(m) => Pending::Send(*m),
        Pending::Recv { comm, remote_base } => Pending::Recv { comm: *comm, remote_base: *remote_base },
        Pending::Collective(c) => Pending::Collective(*c),
        Pending::Deferred(_) => return None,
    };
    Some((e.id, copy))
}

/// The id of the oldest active request with `key`, left in place (a test
/// that found it unfinished).
pub fn peek_active(key: usize) -> Option<u64> {
    shard(key).get(&key)?.iter().find(|e| e.active).map(|e| e.id)
}

/// Forgets a request freed by `MPI_Request_free`: the oldest inactive
/// persistent one with `key` if any, else the oldest. A freed active
/// request completes unseen, so its send has no completion event.
pub fn free(key: usize) {
    let mut map = shard(key);
    let Some(list) = map.get_mut(&key) else {
        return;
    };
    let i = list.iter().position(|e| e.persistent && !e.active).unwrap_or(0);
    if i < list.len() {
        list.remove(i);
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
    if list.is_empty() {
        map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(id: u64) -> Entry {
        Entry {
            id,
            pending: Pending::Send(Message { peer: 1, comm: 0, tag: 5, bytes: 8 }),
            persistent: false,
            active: true,
        }
    }

    #[test]
    fn duplicate_keys_complete_oldest_first() {
        let key = 0x5151;
        insert(key, send(1));
        insert(key, send(2));
        assert_eq!(complete(key).unwrap().id, 1);
        assert_eq!(complete(key).unwrap().id, 2);
        assert!(complete(key).is_none());
    }

    #[test]
    fn persistent_requests_cycle() {
        let key = 0x7272;
        insert(key, Entry { active: false, persistent: true, ..send(0) });
        assert!(complete(key).is_none(), "inactive until started");
        let (id, _) = start(key).unwrap();
        assert!(start(key).is_none(), "already active");
        assert_eq!(complete(key).unwrap().id, id);
        let (id2, _) = start(key).unwrap();
        assert_ne!(id, id2);
        assert_eq!(complete(key).unwrap().id, id2);
        free(key);
        assert!(start(key).is_none());
    }
}
