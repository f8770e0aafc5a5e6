//! Calling contexts in the call tree: a sample's call path, a call
//! entered in its calling context (`GPUTRACE_UNWINDING`: the MPI, CUDA or
//! NCCL call under the user functions that called it), and GPU work under
//! the call path of the call that launched it.
//!
//! A context's functions become call paths of their own (regions from
//! `sampled_base` on), made once per (node the path hangs under, context)
//! and remembered.

use merge::Work;
use merge::sink::InContext;

use crate::Profile;
use crate::call_tree::ROOT;

impl Profile {
    /// The call-tree node of calling context `context` under node `base`:
    /// its function called from its caller's node (`base` for the
    /// outermost), made the first time.
    pub(crate) fn context_node(&mut self, base: u32, context: u32) -> Option<u32> {
        if let Some(&n) = self.context_nodes.get(&(base, context)) {
            return Some(n);
        }
        // The context's chain, innermost first, up to one already made.
        let (mut chain, mut at, mut parent) = (Vec::new(), Some(context), base);
        while let Some(c) = at {
            if let Some(&n) = self.context_nodes.get(&(base, c)) {
                parent = n;
                break;
            }
            let &(caller, function) = self.sampled.contexts.get(&c)?;
            chain.push((c, function));
            if chain.len() > 1 << 16 {
                return None;
            }
            at = caller;
        }
        for (c, function) in chain.into_iter().rev() {
            let region =
                self.functions.get(function as usize).map_or(self.sampled_base + function as usize, |&r| r as usize);
            parent = self.child(parent, region, Work::Call);
            self.context_nodes.insert((base, c), parent);
        }
        Some(parent)
    }

    /// The node a call entered in calling context `cx` goes under: its
    /// caller's path under the current node, when no other call so placed
    /// is open on the location (a call within one — NCCL's own CUDA
    /// calls — nests under it as entered, so that no time is counted
    /// twice); `None`: under the current node, as any call.
    pub(crate) fn caller_node(&mut self, cx: InContext) -> Option<u32> {
        if !self.saved.is_empty() {
            return None;
        }
        let &(caller, _) = self.sampled.leaves.get(&cx.context.id())?;
        match caller {
            Some(c) => self.context_node(self.current, c),
            None => Some(self.current),
        }
    }

    /// The node GPU work launched by a call in context `cx` goes under:
    /// that call's path (the launching call itself its last node).
    pub(crate) fn launch_node(&mut self, cx: InContext) -> Option<u32> {
        let &(caller, region) = self.sampled.leaves.get(&cx.context.id())?;
        let base = match caller {
            Some(c) => self.context_node(self.current, c)?,
            None => self.current,
        };
        Some(self.child(base, region, Work::Call))
    }

    /// Enters node `n`, found under `parent` rather than under the current
    /// node when the two differ.
    #[inline(always)]
    pub(crate) fn descend(&mut self, parent: u32, n: u32) {
        if parent != self.current {
            self.saved.push((n, self.current));
        }
        self.current = n;
    }

    /// Where a Leave of the current node `n` (whose parent is `parent`)
    /// goes back to.
    #[inline(always)]
    pub(crate) fn ascend(&mut self, n: u32, parent: u32) {
        self.current = match self.saved.last() {
            Some(&(s, before)) if s == n => {
                self.saved.pop();
                before
            }
            _ => parent,
        };
    }

    /// Forgets the location's open placements.
    pub(crate) fn reset_placements(&mut self) {
        self.saved.clear();
        self.launched = None;
        self.current = ROOT;
    }
}
