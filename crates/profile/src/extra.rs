//! The profile as the merge's [`Extra`] sink: told the definitions and
//! where each location's events begin and end; split among the merge's
//! threads and joined again, and encoded for rank 0 in a merge run as an
//! MPI job.

use std::collections::HashMap;

use cube::LocationId;
use merge::{Defined, Extra};

use crate::Profile;
use crate::call_tree::{Acc, Kind, Node, PROGRAM, ROOT};

impl Extra for Profile {
    fn defined(&mut self, d: &Defined<'_>) {
        let r = self.define(d);
        self.note(r);
    }

    /// A worker's profile: the locations and the root it needs to build
    /// call paths and results, no cube (its results go into this one's at
    /// [`join`](Extra::join)).
    fn split(&self) -> Option<Profile> {
        let mut part = Profile::new();
        part.root = self.root;
        part.locations = self.locations.clone();
        part.sampled = self.sampled.clone();
        part.sampled_base = self.sampled_base;
        part.functions = self.functions.clone();
        part.nodes.push(Node { parent: ROOT, region: PROGRAM, kind: Kind::Call, acc: Acc::default() });
        Some(part)
    }

    /// Adds a worker's call paths (found or made under the same parent
    /// here, a parent before its children) and its locations' results.
    fn join(&mut self, part: Profile) {
        if self.nodes.is_empty() {
            self.nodes.push(Node { parent: ROOT, region: PROGRAM, kind: Kind::Call, acc: Acc::default() });
        }
        let mut map = vec![ROOT; part.nodes.len()];
        for (n, node) in part.nodes.iter().enumerate().skip(1) {
            let parent = map[node.parent as usize];
            let key = (u64::from(parent) << 32) | u64::from(node.region);
            map[n] = match self.children.get(&key) {
                Some(&m) => m,
                None => {
                    let m = self.nodes.len() as u32;
                    self.nodes.push(Node { parent, region: node.region, kind: node.kind, acc: Acc::default() });
                    self.children.insert(key, m);
                    m
                }
            };
        }
        self.results.extend(part.results.into_iter().map(|(at, n, a)| (at, map[n as usize], a)));
        if let Some(e) = part.failed {
            self.failed.get_or_insert(e);
        }
    }

    /// The call paths and results as little-endian words: the nodes
    /// (parent, region, kind) after the root, then the results with each
    /// location as its archive id.
    fn encode(&self) -> Option<Vec<u8>> {
        if self.failed.is_some() {
            return None;
        }
        let archive_id: HashMap<LocationId, u64> = self.locations.iter().map(|(&a, &l)| (l, a)).collect();
        let mut w: Vec<u64> = vec![self.nodes.len().saturating_sub(1) as u64];
        for n in self.nodes.iter().skip(1) {
            let kind = match n.kind {
                Kind::Call => 0,
                Kind::Kernel => 1,
                Kind::Copy => 2,
                Kind::Memset => 3,
            };
            w.extend([u64::from(n.parent), u64::from(n.region), kind]);
        }
        w.push(self.results.len() as u64);
        for (at, n, a) in &self.results {
            w.extend([*archive_id.get(at)?, u64::from(*n)]);
            w.extend([a.visits, a.time, a.sent, a.received, a.kernel, a.copy, a.memset, a.copy_bytes, a.memset_bytes]);
            w.extend([a.hits, a.sampled]);
        }
        Some(w.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn join_encoded(&mut self, bytes: &[u8]) -> bool {
        let decoded = || -> Option<Profile> {
            if !bytes.len().is_multiple_of(8) {
                return None;
            }
            let w: Vec<u64> =
                bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
            let mut part = self.split()?;
            let mut at = 0usize;
            let mut next = |n: usize| -> Option<&[u64]> {
                let s = w.get(at..at + n)?;
                at += n;
                Some(s)
            };
            let nodes = next(1)?[0] as usize;
            for _ in 0..nodes {
                let f = next(3)?;
                let kind = [Kind::Call, Kind::Kernel, Kind::Copy, Kind::Memset].get(f[2] as usize).copied()?;
                let parent = u32::try_from(f[0]).ok()?;
                if parent as usize >= part.nodes.len() {
                    return None;
                }
                let region = u32::try_from(f[1]).ok()?;
                part.nodes.push(Node { parent, region, kind, acc: Acc::default() });
            }
            let results = next(1)?[0] as usize;
            for _ in 0..results {
                let f = next(13)?;
                let location = *self.locations.get(&f[0])?;
                let node = u32::try_from(f[1]).ok().filter(|&n| (n as usize) < part.nodes.len())?;
                let a = Acc {
                    visits: f[2],
                    time: f[3],
                    sent: f[4],
                    received: f[5],
                    kernel: f[6],
                    copy: f[7],
                    memset: f[8],
                    copy_bytes: f[9],
                    memset_bytes: f[10],
                    hits: f[11],
                    sampled: f[12],
                };
                part.results.push((location, node, a));
            }
            (at == w.len()).then_some(part)
        };
        match decoded() {
            Some(part) => {
                self.join(part);
                true
            }
            None => false,
        }
    }

    fn begin_location(&mut self, _process: usize, location: &merge::layout::LocationPlan) {
        self.at = self.locations.get(&location.location.id()).copied();
        self.reset_placements();
        self.first = u64::MAX;
        self.last = 0;
    }

    fn end_location(&mut self) {
        match self.at.take() {
            Some(at) => self.flush(at),
            None => self.nodes.iter_mut().for_each(|n| n.acc = Acc::default()),
        }
        self.reset_placements();
        self.first = u64::MAX;
        self.last = 0;
    }
}
