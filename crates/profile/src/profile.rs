//! The profile: its cube, the call tree and the locations' results kept
//! during the merge's pass, and the cube filled from them once the merge
//! is over.

use std::collections::HashMap;
use std::path::Path;

use cube::{CnodeId, Cube, LocationId, MetricId, Region};
use merge::Work;

use crate::Error;
use crate::call_tree::{Acc, CACHE_BITS, Children, Kind, NO_KEY, Node, ROOT};
use crate::define::cube_region;
use crate::metrics::m;

/// The profile being built, fed by the merge ([`merge::merge_with`]).
///
/// During the merge's pass nothing goes into the cube: the call tree grows
/// as nodes, a location's values are kept as results when its events end,
/// and the cube's call tree and severities are made once the merge is
/// over ([`finish`](Self::finish)). So the pass allocates only when a new
/// call path appears (and rarely for the results), never in between the
/// merge's own buffers per location: those allocations would keep freed
/// memory of the merge from going back (about 14 MiB more peak on the
/// benchmark when the cube was filled during the pass).
pub struct Profile {
    pub(crate) cube: Cube,
    pub(crate) metrics: Vec<MetricId>,
    /// The program's root call path in the cube.
    pub(crate) root: Option<CnodeId>,
    /// The regions of the archive by summary index, and the cube region
    /// each became (once finished, those entered).
    pub(crate) regions: Vec<merge::inputs::RegionDef>,
    pub(crate) cube_regions: Vec<Option<cube::RegionId>>,
    /// Call-tree nodes (the root's parent is itself).
    pub(crate) nodes: Vec<Node>,
    pub(crate) children: Children,
    /// Each location's values: (location, node, values), nonzero only.
    pub(crate) results: Vec<(LocationId, u32, Acc)>,
    /// The cube's node of each call-tree node, once finished.
    pub(crate) cnodes: Vec<CnodeId>,
    /// (key, node) by a hash of the key.
    pub(crate) cache: Vec<(u64, u32)>,
    /// Archive location id → the cube's location.
    pub(crate) locations: HashMap<u64, LocationId>,
    /// The current location (None: one the cube does not know).
    pub(crate) at: Option<LocationId>,
    /// The innermost open call path of the current location: a Leave goes
    /// to its parent (the merge's pass hands Enters and Leaves over
    /// balanced), so no stack is kept.
    pub(crate) current: u32,
    /// The location's first and last event (`u64::MAX`, 0: none yet).
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// The first error met (a bug: every handle is the cube's own).
    pub(crate) failed: Option<cube::Error>,
    /// The sampled calling contexts, their functions (regions from
    /// `sampled_base` on) and the samplers' periods.
    pub(crate) sampled: std::sync::Arc<merge::layout::Sampled>,
    pub(crate) sampled_base: usize,
    /// The call-tree region of each sampled function (by its index).
    pub(crate) functions: Vec<u32>,
    /// The call-tree node of each calling context met, by (the node its
    /// path hangs under, its id).
    pub(crate) context_nodes: HashMap<(u32, u32), u32>,
    /// Regions entered elsewhere than under the current node (a call in
    /// its calling context, GPU work under its launch's): (its node, the
    /// node current before it), innermost last; a Leave of that node goes
    /// back there instead of to its parent.
    pub(crate) saved: Vec<(u32, u32)>,
    /// The launching call's context of the GPU work entered next
    /// ([`merge::Sink::launched_from`]).
    pub(crate) launched: Option<merge::sink::InContext>,
}

impl Default for Profile {
    fn default() -> Self {
        Self::new()
    }
}

impl Profile {
    pub fn new() -> Profile {
        Profile {
            cube: Cube::new(),
            metrics: Vec::new(),
            root: None,
            regions: Vec::new(),
            cube_regions: Vec::new(),
            nodes: Vec::new(),
            children: Children::default(),
            results: Vec::new(),
            cnodes: Vec::new(),
            cache: vec![(NO_KEY, 0); 1 << CACHE_BITS],
            locations: HashMap::new(),
            at: None,
            current: ROOT,
            first: u64::MAX,
            last: 0,
            failed: None,
            sampled: Default::default(),
            sampled_base: usize::MAX,
            functions: Vec::new(),
            context_nodes: HashMap::new(),
            saved: Vec::new(),
            launched: None,
        }
    }

    /// The cube, finished (call tree and values in it), for those who add
    /// metrics of their own before writing it.
    pub fn cube(&mut self) -> &mut Cube {
        self.finish();
        &mut self.cube
    }

    /// Puts the call tree and the locations' values into the cube (after
    /// the merge; again, only what came since).
    pub fn finish(&mut self) {
        let Some(root) = self.root else { return };
        for n in self.cnodes.len()..self.nodes.len() {
            let Node { parent, region, .. } = self.nodes[n];
            if n == ROOT as usize {
                self.cnodes.push(root);
                continue;
            }
            let index = region as usize;
            let r = match self.cube_regions.get(index).copied().flatten() {
                Some(r) => r,
                None => {
                    let r = match self.regions.get(index) {
                        Some(d) if index >= self.sampled_base => {
                            let mut r = Region::new(&d.name, "user", "function");
                            r.module = &d.canonical;
                            self.cube.region(r)
                        }
                        Some(d) => self.cube.region(cube_region(d)),
                        None => self.cube.region(Region::new(&format!("region {index}"), "unknown", "unknown")),
                    };
                    if let Some(slot) = self.cube_regions.get_mut(index) {
                        *slot = Some(r);
                    }
                    r
                }
            };
            // A parent comes before its children.
            let made = self.cube.cnode(r, Some(self.cnodes[parent as usize]));
            let c = self.note(made).unwrap_or(root);
            self.cnodes.push(c);
        }
        let seconds = |ns: u64| ns as f64 / 1e9;
        for (at, n, a) in std::mem::take(&mut self.results) {
            let c = self.cnodes[n as usize];
            let values: [(usize, cube::Value); 11] = [
                (m::VISITS, a.visits.into()),
                (m::TIME, seconds(a.time).into()),
                (m::SENT, a.sent.into()),
                (m::RECEIVED, a.received.into()),
                (m::KERNEL_TIME, seconds(a.kernel).into()),
                (m::COPY_TIME, seconds(a.copy).into()),
                (m::COPY_BYTES, a.copy_bytes.into()),
                (m::MEMSET_TIME, seconds(a.memset).into()),
                (m::MEMSET_BYTES, a.memset_bytes.into()),
                (m::HITS, a.hits.into()),
                (m::SAMPLED_TIME, seconds(a.sampled).into()),
            ];
            for (metric, v) in values {
                if v != cube::Value::U64(0) && v != cube::Value::F64(0.0) {
                    let set = self.cube.set(self.metrics[metric], c, at, v);
                    self.note(set);
                }
            }
        }
    }

    /// Number of call paths (call-tree nodes).
    pub fn call_paths(&self) -> usize {
        self.nodes.len()
    }

    /// Writes `profile.cubex` (or any path), atomically; returns its size.
    pub fn write_to(&mut self, path: &Path) -> Result<u64, Error> {
        self.finish();
        if let Some(e) = self.failed.take() {
            return Err(e.into());
        }
        Ok(self.cube.write_to(path)?)
    }

    pub(crate) fn note<T>(&mut self, r: cube::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.failed.get_or_insert(e);
                None
            }
        }
    }

    /// The call-tree node for region `index` called from `parent`.
    #[inline(always)]
    pub(crate) fn child(&mut self, parent: u32, index: usize, work: Work) -> u32 {
        let key = (u64::from(parent) << 32) | index as u64;
        let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE_BITS)) as usize;
        let (cached, node) = self.cache[slot];
        if cached == key {
            return node;
        }
        let n = match self.children.get(&key) {
            Some(&n) => n,
            None => self.new_child(key, parent, index, work),
        };
        self.cache[slot] = (key, n);
        n
    }

    #[cold]
    pub(crate) fn new_child(&mut self, key: u64, parent: u32, index: usize, work: Work) -> u32 {
        let n = self.nodes.len() as u32;
        let kind = match work {
            Work::Call => Kind::Call,
            Work::Kernel => Kind::Kernel,
            Work::Copy { .. } => Kind::Copy,
            Work::Memset { .. } => Kind::Memset,
        };
        self.nodes.push(Node { parent, region: index as u32, kind, acc: Acc::default() });
        self.children.insert(key, n);
        n
    }

    /// The values of node `n` on this location.
    #[inline(always)]
    pub(crate) fn acc(&mut self, n: u32) -> &mut Acc {
        &mut self.nodes[n as usize].acc
    }

    /// An event at `t` (events come in time order).
    #[inline(always)]
    pub(crate) fn event(&mut self, t: u64) {
        self.first = self.first.min(t);
        self.last = t;
    }

    /// Keeps the location's values, and zeroes them.
    pub(crate) fn flush(&mut self, at: LocationId) {
        // The root: one visit spanning the location, if anything happened.
        if self.first != u64::MAX {
            let span = self.last - self.first;
            let root = self.acc(ROOT);
            root.visits = 1;
            root.time = span;
        }
        // GPU and sampled times up the tree, and the time of a call path
        // not entered here (a function of a call's path, a launching call
        // above its GPU work) from its children: a child's node index is
        // above its parent's.
        for n in (1..self.nodes.len()).rev() {
            let Node { parent, acc: a, .. } = self.nodes[n];
            if a == Acc::default() {
                continue;
            }
            let p = self.acc(parent);
            p.kernel += a.kernel;
            p.copy += a.copy;
            p.memset += a.memset;
            p.sampled += a.sampled;
            if parent != ROOT && p.visits == 0 {
                p.time += a.time;
            }
        }
        for n in 0..self.nodes.len() {
            let a = std::mem::take(&mut self.nodes[n].acc);
            if a != Acc::default() {
                self.results.push((at, n as u32, a));
            }
        }
    }
}
