//! Event handles: what `startEvent` returns to NCCL and NCCL passes back to
//! `stopEvent` and `recordEventState`.
//!
//! A handle is a heap cell holding what the plugin must remember between
//! an event's start and its stop. Cells are recycled through a per-thread
//! free list, so the steady state allocates nothing: an event costs a pop
//! and a push (measured by `examples/callback_cost.rs`; a `malloc`/`free`
//! pair costs about twice as much). NCCL never looks inside a handle; the
//! plugin never dereferences an address NCCL passes as `parentObj` — it
//! compares it with its own handles' addresses, so a stale or foreign
//! parent (another process's, with PXN) is harmless.

use std::cell::RefCell;
use std::ptr::NonNull;

use crate::model::{CollLaunch, P2pLaunch, ProxyOp};
use crate::profiler::CommContext;

/// What a started event remembers.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A kernel plan's launch (v1–v4), its Enter written.
    Group {
        region: Option<u32>,
    },
    /// The user's group (v5+); its state is the thread's open group.
    GroupApi,
    /// A collective or send/receive call (v5+), kept in the thread's open
    /// group until both it has stopped and the group has been written.
    /// A graph-captured call is never freed: its address stays a key that
    /// the graph's launches name as their parent.
    Api {
        stopped: bool,
        group_closed: bool,
        captured: bool,
    },
    /// A collective recorded on its own, written at its stop.
    Coll {
        ctx: &'static CommContext,
        coll: CollLaunch,
        start: u64,
    },
    /// A send or receive recorded on its own, written at its stop.
    P2p {
        ctx: &'static CommContext,
        p2p: P2pLaunch,
        start: u64,
    },
    ProxyOp {
        ctx: Option<&'static CommContext>,
        op: ProxyOp,
        start: u64,
    },
    ProxyStep {
        op_key: usize,
        bytes: u64,
    },
    /// Proxy control: the state that opened a region (sleep or append)
    /// and when, and the operations appended.
    ProxyCtrl {
        since: Option<(u32, u64)>,
        appended: Option<i32>,
    },
    KernelCh {
        ctx: Option<&'static CommContext>,
        channel: u8,
        host_start: u64,
        gpu_start: Option<u64>,
        gpu_stop: Option<u64>,
    },
}

/// One handle.
#[derive(Debug)]
pub(crate) struct Handle {
    pub kind: Kind,
}

/// A handle as NCCL holds it.
pub(crate) type HandlePtr = NonNull<Handle>;

/// How many freed cells a thread keeps for reuse.
const POOL_LIMIT: usize = 1024;

thread_local! {
    // The cells themselves are what is recycled, hence boxes in a Vec.
    #[allow(clippy::vec_box)]
    static POOL: RefCell<Vec<Box<Handle>>> = const { RefCell::new(Vec::new()) };
}

/// A new handle holding `kind`.
pub(crate) fn alloc(kind: Kind) -> HandlePtr {
    let recycled = POOL.try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop())).ok().flatten();
    let cell = match recycled {
        Some(mut b) => {
            b.kind = kind;
            b
        }
        None => Box::new(Handle { kind }),
    };
    NonNull::from(Box::leak(cell))
}

/// Frees `h`.
///
/// # Safety
///
/// `h` came from [`alloc`] and is not used after this call.
pub(crate) unsafe fn free(h: HandlePtr) {
    // SAFETY: per the contract, `h` is a leaked box of ours, freed once.
    let cell = unsafe { Box::from_raw(h.as_ptr()) };
    // A full pool, or a thread being torn down: the cell is dropped.
    let _ = POOL.try_with(move |p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && p.len() < POOL_LIMIT
        {
            p.push(cell);
        }
    });
}

/// The address NCCL sees, which children name as their parent.
pub(crate) fn key(h: HandlePtr) -> usize {
    h.as_ptr() as usize
}
