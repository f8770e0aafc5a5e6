//! The call path of each recorded MPI call (`GPUTRACE_UNWINDING`): at the
//! call's Enter the wrapper unwinds its caller's stack (the shared
//! unwinder, `gputrace-unwind`: DWARF CFI through framehop, no frame
//! pointers needed, the wrapper library's own frames left out), puts the
//! path in the process's stack tree with the function's region as its
//! leaf, defines the tree's new nodes (and the modules the first time)
//! in the MPI stream, and records the leaf's node with a CallPath event
//! just before the Enter. A path seen before costs the walk and a lookup
//! per frame; nothing new is defined.
//!
//! One unwinder and tree per process, behind a lock: calls of several
//! threads at once take turns here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use gputrace_unwind::{MAX_DEPTH, Tree, Unwinder};
use raw::Definition;
use recorder::Recorder;

static ON: AtomicBool = AtomicBool::new(false);

struct Paths {
    unwinder: Unwinder,
    tree: Tree,
    /// The stack being walked, innermost first.
    addresses: Vec<u64>,
    scanned: bool,
}

static PATHS: Mutex<Option<Paths>> = Mutex::new(None);

/// Whether call paths are recorded.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

pub(crate) fn set(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The node of the calling thread's call path with the function `region`
/// (a region id of `rec`'s stream) as its leaf, its new nodes defined;
/// `None` when the stack could not be unwound past the wrapper.
#[inline(never)]
pub fn here(rec: &Recorder, region: u32) -> Option<u32> {
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    let p = paths.get_or_insert_with(|| Paths {
        unwinder: Unwinder::default(),
        tree: Tree::default(),
        addresses: Vec::with_capacity(MAX_DEPTH),
        scanned: false,
    });
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
    let define = |id, parent, address| rec.define(&Definition::Frame { id, parent, address });
    let caller = p.tree.insert(&p.addresses, define);
    Some(p.tree.child(caller, raw::event::REGION_NODE | u64::from(region), define))
}
