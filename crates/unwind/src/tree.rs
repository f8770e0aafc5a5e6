//! The process's tree of call stacks: a node per (caller's node, address),
//! ids from 1 in the order the nodes were first seen (a parent before its
//! children), 0 the root. A stack seen before costs a lookup per frame and
//! records nothing new.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The tree; `insert` says which nodes are new, for the caller to record
/// as definitions.
#[derive(Default)]
pub struct Tree {
    nodes: HashMap<(u32, u64), u32, BuildHasherDefault<Mix>>,
}

impl Tree {
    /// The node of the stack `addresses` (innermost first), adding the
    /// nodes not seen yet and calling `new(id, parent, address)` for each,
    /// outermost first; 0 for an empty stack.
    pub fn insert(&mut self, addresses: &[u64], mut new: impl FnMut(u32, u32, u64)) -> u32 {
        let mut parent = 0;
        for &address in addresses.iter().rev() {
            parent = self.child(parent, address, &mut new);
        }
        parent
    }

    /// The node of `address` called from `parent`, added (and `new`
    /// called) if not seen yet.
    #[inline]
    pub fn child(&mut self, parent: u32, address: u64, mut new: impl FnMut(u32, u32, u64)) -> u32 {
        let next = self.nodes.len() as u32 + 1;
        *self.nodes.entry((parent, address)).or_insert_with(|| {
            new(next, parent, address);
            next
        })
    }

    /// How many nodes the tree has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// A multiply-rotate hash of a few words (the keys are a node id and an
/// address, not chosen by an adversary): a lookup per frame of every
/// MPI call must be cheap.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_seen_again_adds_no_node() {
        let mut t = Tree::default();
        let mut defined = Vec::new();
        let a = t.insert(&[0x30, 0x20, 0x10], |id, p, addr| defined.push((id, p, addr)));
        assert_eq!(defined, [(1, 0, 0x10), (2, 1, 0x20), (3, 2, 0x30)]);
        assert_eq!(a, 3);
        let b = t.insert(&[0x40, 0x20, 0x10], |id, p, addr| defined.push((id, p, addr)));
        assert_eq!((b, defined.last().copied()), (4, Some((4, 2, 0x40))));
        assert_eq!(t.insert(&[0x30, 0x20, 0x10], |_, _, _| panic!("new")), 3);
        assert_eq!(t.insert(&[], |_, _, _| panic!("new")), 0);
        assert_eq!(t.len(), 4);
    }
}
