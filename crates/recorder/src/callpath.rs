//! The call path of a recorded call at its Enter (`GPUTRACE_UNWINDING`),
//! for every producer that records calls on the calling thread (the MPI
//! wrappers, the CUDA runtime callbacks, the NCCL plugin): the calling
//! thread's stack is unwound in place with the shared unwinder
//! (`gputrace-unwind`: DWARF CFI through framehop, no frame pointers
//! needed, the frames of the library doing the walk left out), the path
//! goes into the stream's tree of stacks with the call's region as its
//! leaf, the tree's new nodes (and the process's modules the first time)
//! are defined in the stream, and the caller records the leaf's node with
//! a CallPath event just before the call's Enter. A path seen before
//! costs the walk and a lookup per frame; nothing new is defined.
//!
//! One unwinder and tree per producer and process, behind a lock: calls
//! of several threads at once take turns here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use gputrace_unwind::{MAX_DEPTH, Tree, Unwinder};
use raw::Definition;

use crate::Recorder;

struct Paths {
    unwinder: Unwinder,
    tree: Tree,
    /// The stack being walked, innermost first.
    addresses: Vec<u64>,
    scanned: bool,
}

impl Paths {
    fn new() -> Paths {
        Paths {
            unwinder: Unwinder::default(),
            tree: Tree::default(),
            addresses: Vec::with_capacity(MAX_DEPTH),
            scanned: false,
        }
    }
}

/// A producer's call paths: whether they are recorded, and its unwinder
/// and tree once the first is.
pub struct CallPaths {
    on: AtomicBool,
    paths: Mutex<Option<Paths>>,
}

impl Default for CallPaths {
    fn default() -> Self {
        Self::new()
    }
}

impl CallPaths {
    pub const fn new() -> CallPaths {
        CallPaths { on: AtomicBool::new(false), paths: Mutex::new(None) }
    }

    /// Whether call paths are recorded (one relaxed load: the hot path's
    /// only cost when they are not).
    #[inline]
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// The node of the calling thread's call path with the function
    /// `region` (a region id of `rec`'s stream) as its leaf, its new nodes
    /// defined in `rec`'s stream; `None` when the stack could not be
    /// unwound past the library doing the walk.
    #[inline(never)]
    pub fn here(&self, rec: &Recorder, region: u32) -> Option<u32> {
        let caller = self.caller(rec)?;
        Some(self.leaf(rec, caller, region))
    }

    /// The node of the calling thread's call path, its caller's function
    /// innermost (for a call whose region is known only later: the NCCL
    /// plugin writes a call at its group's end); [`leaf`](Self::leaf)
    /// then gives the call's own node.
    #[inline(never)]
    pub fn caller(&self, rec: &Recorder) -> Option<u32> {
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        let p = paths.get_or_insert_with(Paths::new);
        if !p.scanned {
            p.scanned = true;
            for m in p.unwinder.scan() {
                rec.define(&Definition::Module(m));
            }
        }
        p.unwinder.unwind_here(&mut p.addresses);
        if p.addresses.iter().any(|&a| !p.unwinder.knows(a)) && p.unwinder.stale() {
            // A library loaded since the last look: look again, walk again.
            for m in p.unwinder.scan() {
                rec.define(&Definition::Module(m));
            }
            p.unwinder.unwind_here(&mut p.addresses);
        }
        if p.addresses.is_empty() {
            return None;
        }
        Some(p.tree.insert(&p.addresses, |id, parent, address| rec.define(&Definition::Frame { id, parent, address })))
    }

    /// The node of the call of `region` (a region id of `rec`'s stream)
    /// made at `caller` (a node [`caller`](Self::caller) gave), defined
    /// the first time.
    pub fn leaf(&self, rec: &Recorder, caller: u32, region: u32) -> u32 {
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        let p = paths.get_or_insert_with(Paths::new);
        let define = |id, parent, address| rec.define(&Definition::Frame { id, parent, address });
        p.tree.child(caller, raw::event::REGION_NODE | u64::from(region), define)
    }
}
