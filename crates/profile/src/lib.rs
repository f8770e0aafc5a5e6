//! gputrace's call-path profile: a [`merge::Extra`] sink that builds, in
//! the merge's own pass, each location's call tree from the nesting of its
//! regions and the metrics at every call path, and writes them as a CUBE4
//! profile (`profile.cubex`) with the [`cube`] crate.
//!
//! - **Call tree.** One root, the program (named after rank 0's
//!   executable, its command line as the mangled name, as Score-P names
//!   it), under which each location's regions nest as they were entered:
//!   MPI calls, CUDA API calls, NCCL calls, NVTX ranges on host threads;
//!   kernels, copies and memsets on a GPU stream directly under the root.
//! - **System tree.** The archive's: the machine, its hosts, the processes
//!   (MPI ranks), GPUs, CUDA contexts; threads, GPU streams, metric
//!   locations.
//! - **Metrics** ([`METRICS`]), as Score-P stores them where it has them:
//!   `visits` (exclusive), `time` (inclusive, seconds: a call path with
//!   everything called from it; the root's is the location's span from
//!   its first event to its last), `bytes_sent`/`bytes_received`
//!   (exclusive: MPI and NCCL point-to-point messages and collectives, at
//!   the call path that sent or completed them), and for GPU work
//!   `kernel_time`, `copy_time`, `memset_time` (inclusive, seconds) and
//!   `copy_bytes`, `memset_bytes` (exclusive). The kind of a copy is its
//!   region (`[CUDA memcpy HtoD]`...).
//!
//! The sink costs the pass a cache lookup per Enter and a few additions
//! per event (call-tree nodes are indices; a Leave goes to the parent, so
//! there is no stack) and allocates nothing per event; a location's values
//! are kept when its events end, and go into the cube once the merge is
//! over ([`Profile::finish`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use cube::{CnodeId, Cube, DataType, GroupType, LocationId, LocationType, Metric, MetricId, MetricKind, Region};
use merge::sink::{Message, SinkError};
use merge::{Defined, Extra, Record, Sink, Work};
use otf2::{AttributeRef, AttributeValue, LocationGroupType, RegionRef};
use raw::{Paradigm, RegionRole};

/// What went wrong making the profile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cube(#[from] cube::Error),
}

/// The profile's metrics: unique name, display name, type, kind, unit,
/// description.
pub const METRICS: &[(&str, &str, DataType, MetricKind, &str, &str)] = &[
    ("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ", "Number of visits"),
    ("time", "Time", DataType::Double, MetricKind::Inclusive, "sec", "Time in the call path (inclusive)"),
    (
        "bytes_sent",
        "bytes_sent",
        DataType::Uint64,
        MetricKind::Exclusive,
        "bytes",
        "Bytes sent: MPI and NCCL point-to-point messages and collectives",
    ),
    (
        "bytes_received",
        "bytes_received",
        DataType::Uint64,
        MetricKind::Exclusive,
        "bytes",
        "Bytes received: MPI and NCCL point-to-point messages and collectives",
    ),
    ("kernel_time", "GPU kernel time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU kernels"),
    ("copy_time", "GPU copy time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU memory copies"),
    ("copy_bytes", "Bytes copied", DataType::Uint64, MetricKind::Exclusive, "bytes", "Bytes of GPU memory copies"),
    ("memset_time", "GPU memset time", DataType::Double, MetricKind::Inclusive, "sec", "Time of GPU memsets"),
    ("memset_bytes", "Bytes set", DataType::Uint64, MetricKind::Exclusive, "bytes", "Bytes of GPU memsets"),
];

/// Indices into [`METRICS`].
mod m {
    pub const VISITS: usize = 0;
    pub const TIME: usize = 1;
    pub const SENT: usize = 2;
    pub const RECEIVED: usize = 3;
    pub const KERNEL_TIME: usize = 4;
    pub const COPY_TIME: usize = 5;
    pub const COPY_BYTES: usize = 6;
    pub const MEMSET_TIME: usize = 7;
    pub const MEMSET_BYTES: usize = 8;
}

/// One call path's values on the current location: visits, bytes and
/// nanoseconds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Acc {
    visits: u64,
    /// Inclusive, as measured.
    time: u64,
    sent: u64,
    received: u64,
    /// Exclusive while the location's events go by, inclusive once it
    /// ends (summed up the tree).
    kernel: u64,
    copy: u64,
    memset: u64,
    copy_bytes: u64,
    memset_bytes: u64,
}

/// What a call path's region is, for what its duration counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Call,
    Kernel,
    Copy,
    Memset,
}

/// A multiplicative hash for the call tree's (parent, region) keys: the
/// standard SipHash costs more than the rest of an Enter.
#[derive(Default)]
struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Children = HashMap<u64, u32, BuildHasherDefault<KeyHash>>;

/// Slots of the direct-mapped cache in front of [`Children`]: a call
/// tree's hot edges stay there, one multiply and one compare away (the
/// hash map's probing cost more than the rest of an Enter).
const CACHE_BITS: u32 = 12;

/// An empty cache slot (no key is all ones: region indices are below
/// 2^32 - 1).
const NO_KEY: u64 = u64::MAX;

/// Node 0 of the call tree: the program.
const ROOT: u32 = 0;

/// A call path: its parent, its region (summary index), what the region
/// is, and its values on the current location (zero where the location
/// never went).
#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    region: u32,
    kind: Kind,
    acc: Acc,
}

/// Root node's region: the program (not an archive region).
const PROGRAM: u32 = u32::MAX;

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
    cube: Cube,
    metrics: Vec<MetricId>,
    /// The program's root call path in the cube.
    root: Option<CnodeId>,
    /// The regions of the archive by summary index, and the cube region
    /// each became (once finished, those entered).
    regions: Vec<merge::inputs::RegionDef>,
    cube_regions: Vec<Option<cube::RegionId>>,
    /// Call-tree nodes (the root's parent is itself).
    nodes: Vec<Node>,
    children: Children,
    /// Each location's values: (location, node, values), nonzero only.
    results: Vec<(LocationId, u32, Acc)>,
    /// The cube's node of each call-tree node, once finished.
    cnodes: Vec<CnodeId>,
    /// (key, node) by a hash of the key.
    cache: Vec<(u64, u32)>,
    /// Archive location id → the cube's location.
    locations: HashMap<u64, LocationId>,
    /// The current location (None: one the cube does not know).
    at: Option<LocationId>,
    /// The innermost open call path of the current location: a Leave goes
    /// to its parent (the merge's pass hands Enters and Leaves over
    /// balanced), so no stack is kept.
    current: u32,
    /// The location's first and last event (`u64::MAX`, 0: none yet).
    first: u64,
    last: u64,
    /// The first error met (a bug: every handle is the cube's own).
    failed: Option<cube::Error>,
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
            let values: [(usize, cube::Value); 9] = [
                (m::VISITS, a.visits.into()),
                (m::TIME, seconds(a.time).into()),
                (m::SENT, a.sent.into()),
                (m::RECEIVED, a.received.into()),
                (m::KERNEL_TIME, seconds(a.kernel).into()),
                (m::COPY_TIME, seconds(a.copy).into()),
                (m::COPY_BYTES, a.copy_bytes.into()),
                (m::MEMSET_TIME, seconds(a.memset).into()),
                (m::MEMSET_BYTES, a.memset_bytes.into()),
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

    fn note<T>(&mut self, r: cube::Result<T>) -> Option<T> {
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
    fn child(&mut self, parent: u32, index: usize, work: Work) -> u32 {
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
    fn new_child(&mut self, key: u64, parent: u32, index: usize, work: Work) -> u32 {
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
    fn acc(&mut self, n: u32) -> &mut Acc {
        &mut self.nodes[n as usize].acc
    }

    /// An event at `t` (events come in time order).
    #[inline(always)]
    fn event(&mut self, t: u64) {
        self.first = self.first.min(t);
        self.last = t;
    }

    /// Keeps the location's values, and zeroes them.
    fn flush(&mut self, at: LocationId) {
        // The root: one visit spanning the location, if anything happened.
        if self.first != u64::MAX {
            let span = self.last - self.first;
            let root = self.acc(ROOT);
            root.visits = 1;
            root.time = span;
        }
        // GPU times up the tree: a child's node index is above its parent's.
        for n in (1..self.nodes.len()).rev() {
            let Node { parent, acc: a, .. } = self.nodes[n];
            if a.visits == 0 {
                continue;
            }
            let p = self.acc(parent);
            p.kernel += a.kernel;
            p.copy += a.copy;
            p.memset += a.memset;
        }
        for n in 0..self.nodes.len() {
            let a = std::mem::take(&mut self.nodes[n].acc);
            if a != Acc::default() {
                self.results.push((at, n as u32, a));
            }
        }
    }
}

/// A region of the archive as a cube region: Score-P's paradigm and role
/// names, the group (an MPI function's) as its description.
fn cube_region(d: &merge::inputs::RegionDef) -> Region<'_> {
    let paradigm = match d.paradigm {
        Paradigm::Mpi => "mpi",
        // As in the archive: NCCL is CUDA's library, NVTX ranges are
        // user regions.
        Paradigm::Cuda | Paradigm::Nccl => "cuda",
        Paradigm::User | Paradigm::Nvtx => "user",
        Paradigm::Measurement => "measurement",
    };
    let role = match d.role {
        RegionRole::Unknown => "unknown",
        RegionRole::Function => "function",
        RegionRole::Wrapper => "wrapper",
        RegionRole::Code => "code",
        RegionRole::Barrier => "barrier",
        RegionRole::ImplicitBarrier => "implicit barrier",
        RegionRole::CollOne2All => "one2all",
        RegionRole::CollAll2One => "all2one",
        RegionRole::CollAll2All => "all2all",
        RegionRole::CollOther => "other collective",
        RegionRole::FileIo => "file io",
        RegionRole::Point2Point => "point2point",
        RegionRole::Rma => "rma",
        RegionRole::DataTransfer => "data transfer",
        RegionRole::Artificial => "artificial",
        RegionRole::Allocate => "allocate",
        RegionRole::Deallocate => "deallocate",
    };
    let mut r = Region::new(&d.name, paradigm, role);
    r.mangled_name = &d.canonical;
    r.description = &d.group;
    r
}

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
                let f = next(11)?;
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
        self.current = ROOT;
        self.first = u64::MAX;
        self.last = 0;
    }

    fn end_location(&mut self) {
        match self.at.take() {
            Some(at) => self.flush(at),
            None => self.nodes.iter_mut().for_each(|n| n.acc = Acc::default()),
        }
        self.current = ROOT;
        self.first = u64::MAX;
        self.last = 0;
    }
}

impl Profile {
    /// The metrics, the program's root and the archive's system tree.
    fn define(&mut self, d: &Defined<'_>) -> cube::Result<()> {
        // The root: the program, as rank 0 (or the first process) ran it.
        let main = d.processes.iter().find(|p| p.mpi.is_some_and(|(r, _)| r == 0)).or(d.processes.first());
        let command = main.map(|p| p.command.as_slice()).unwrap_or_default();
        // A process group's rank is its process's.
        let ranks: HashMap<u32, i64> = d
            .processes
            .iter()
            .zip(&d.layout.processes)
            .filter_map(|(p, plan)| Some((plan.group?.id(), i64::from(p.rank))))
            .collect();
        self.setup(command, d.layout.regions.clone(), &d.defs.system_tree(), &ranks)
    }

    /// [`define`](Self::define) from its parts: the program's command
    /// line, the regions by summary index, the system tree and the rank of
    /// each process group (by group id).
    fn setup(
        &mut self,
        command: &[String],
        regions: Vec<merge::inputs::RegionDef>,
        tree: &otf2::SystemTree,
        ranks: &HashMap<u32, i64>,
    ) -> cube::Result<()> {
        let c = &mut self.cube;
        c.attribute("Creator", concat!("gputrace ", env!("CARGO_PKG_VERSION")));
        c.attribute("CUBE_CT_AGGR", "SUM");
        for &(unique, display, ty, kind, unit, description) in METRICS {
            let id = c.metric(Metric::new(unique, display, ty, kind, unit).description(description), None)?;
            self.metrics.push(id);
        }
        self.cube_regions = vec![None; regions.len()];
        self.regions = regions;

        let program = command
            .first()
            .map(|a| Path::new(a).file_name().map_or(a.clone(), |n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "program".to_string());
        let full = command.join(" ");
        let mut root = Region::new(&program, "measurement", "artificial");
        root.mangled_name = &full;
        let root = c.region(root);
        self.root = Some(c.cnode(root, None)?);
        self.nodes.push(Node { parent: ROOT, region: PROGRAM, kind: Kind::Call, acc: Acc::default() });

        let mut nodes = Vec::with_capacity(tree.nodes.len());
        for n in &tree.nodes {
            let parent = n.parent.map(|p| nodes[p.id() as usize]);
            nodes.push(c.system_tree_node(&n.name, &n.class, parent)?);
        }
        let mut groups = Vec::with_capacity(tree.groups.len());
        let mut members = vec![0i64; tree.groups.len()];
        for (i, g) in tree.groups.iter().enumerate() {
            // A context's rank is its creator's.
            let rank =
                ranks.get(&(i as u32)).or_else(|| g.creating.and_then(|k| ranks.get(&k.id()))).copied().unwrap_or(0);
            let ty = match g.ty {
                LocationGroupType::Accelerator => GroupType::Accelerator,
                _ => GroupType::Process,
            };
            groups.push(c.location_group(&g.name, rank, ty, nodes[g.parent.id() as usize])?);
        }
        for l in &tree.locations {
            let ty = match l.ty {
                otf2::LocationType::AcceleratorStream => LocationType::AcceleratorStream,
                otf2::LocationType::Metric => LocationType::Metric,
                _ => LocationType::Thread,
            };
            let g = l.group.id() as usize;
            let id = c.location(&l.name, members[g], ty, groups[g])?;
            members[g] += 1;
            self.locations.insert(l.location.id(), id);
        }
        // Room made before the merge's buffers are: see [`Profile`].
        self.nodes.reserve(256);
        self.children.reserve(256);
        self.results.reserve(32 * tree.locations.len());
        Ok(())
    }
}

impl Sink for Profile {
    #[inline(always)]
    fn enter(
        &mut self,
        t: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        index: usize,
        work: Work,
    ) -> Result<(), SinkError> {
        self.event(t);
        let n = self.child(self.current, index, work);
        let a = self.acc(n);
        a.visits += 1;
        match work {
            Work::Copy { bytes, .. } => a.copy_bytes += bytes,
            Work::Memset { bytes } => a.memset_bytes += bytes,
            Work::Call | Work::Kernel => {}
        }
        self.current = n;
        Ok(())
    }

    #[inline(always)]
    fn leave(
        &mut self,
        t: u64,
        _: &[(AttributeRef, AttributeValue)],
        _: RegionRef,
        _: usize,
        duration: u64,
    ) -> Result<(), SinkError> {
        self.event(t);
        let n = self.current;
        if n == ROOT {
            return Ok(());
        }
        let node = &mut self.nodes[n as usize];
        node.acc.time += duration;
        match node.kind {
            Kind::Call => {}
            Kind::Kernel => node.acc.kernel += duration,
            Kind::Copy => node.acc.copy += duration,
            Kind::Memset => node.acc.memset += duration,
        }
        self.current = node.parent;
        Ok(())
    }

    #[inline(always)]
    fn send(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], msg: &Message) -> Result<(), SinkError> {
        self.event(t);
        self.acc(self.current).sent += msg.bytes;
        Ok(())
    }

    #[inline(always)]
    fn recv(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], msg: &Message) -> Result<(), SinkError> {
        self.event(t);
        self.acc(self.current).received += msg.bytes;
        Ok(())
    }

    #[inline(always)]
    fn record(&mut self, t: u64, _: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        match *r {
            // Samples of a metric location are not work of the program.
            Record::Metric { .. } => {}
            Record::CollectiveEnd { sent, received, .. } => {
                self.event(t);
                let a = self.acc(self.current);
                a.sent += sent;
                a.received += received;
            }
            _ => self.event(t),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
