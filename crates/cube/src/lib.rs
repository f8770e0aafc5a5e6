//! A writer of CUBE4 profiles: the `.cubex` files that Cube, CubeLib's
//! command-line tools (`cube_stat`, `cube_dump`) and pycubexr read.
//!
//! A profile has three dimensions, each a tree: the **metrics** (time,
//! visits, bytes...), the **call tree** (call-tree nodes, each calling a
//! region from its parent's), and the **system tree** (system-tree nodes
//! such as a machine and its hosts, location groups such as processes,
//! and locations such as threads or GPU streams). A *severity* is a
//! metric's value at one (call-tree node, location).
//!
//! Build a [`Cube`] (definitions first, then severities in any order) and
//! [`write_to`](Cube::write_to) a path: the file appears complete or not
//! at all (written beside it, then renamed).
//!
//! ```
//! use cube::{Cube, DataType, GroupType, LocationType, Metric, MetricKind, Region};
//! let mut c = Cube::new();
//! let time = c.metric(Metric::new("time", "Time", DataType::Double, MetricKind::Inclusive, "sec"), None).unwrap();
//! let main = c.region(Region::new("main", "user", "function"));
//! let root = c.cnode(main, None).unwrap();
//! let machine = c.system_tree_node("machine", "machine", None).unwrap();
//! let rank0 = c.location_group("MPI Rank 0", 0, GroupType::Process, machine).unwrap();
//! let thread = c.location("Master thread", 0, LocationType::Thread, rank0).unwrap();
//! c.set(time, root, thread, 1.5).unwrap();
//! let mut bytes = Vec::new();
//! c.write(&mut bytes).unwrap();
//! ```
//!
//! # The format, as written here
//!
//! A `.cubex` file is a POSIX (ustar) tar archive holding `anchor.xml`
//! (every definition) and, per metric with id `n`, `n.index` and
//! `n.data`. The index is `CUBEX.INDEX`, the 32-bit integer 1 (its byte
//! order is the file's), a 16-bit version 0, the 8-bit index format 1
//! (sparse), the number `N` of rows and `N` 32-bit row positions in
//! increasing order. The data is `CUBEX.DATA` and then `N` rows of one
//! value per location (in location id order), in the metric's data type.
//! A row's position is its call-tree node's place in an enumeration of
//! the call tree that depends on the metric's kind: depth first (each node
//! before its children) for exclusive metrics, "wide" (a node's children
//! numbered together when the node is reached, depth first otherwise) for
//! inclusive ones. Rows left out are zero. Every definition gets the id of
//! its place in its tree, depth first, so that ids and positions agree
//! wherever a reader assumes they do. A metric without any nonzero value
//! still gets one (zero) row: pycubexr refuses an empty index.

mod tar;
mod xml;

use std::io::Write;
use std::path::{Path, PathBuf};

/// What went wrong building or writing a cube.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A handle that this cube did not give out.
    #[error("no {what} {id} in this cube")]
    Unknown { what: &'static str, id: u32 },
    /// A value of the wrong type for its metric.
    #[error("metric {metric} holds {expected} values, not {given}")]
    WrongType { metric: String, expected: &'static str, given: &'static str },
    /// A cube that readers would reject: it lacks a metric, call-tree
    /// node or location.
    #[error("a cube needs at least one {0}")]
    Empty(&'static str),
    /// The file could not be written (nothing was left at `path`).
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// Writing to a stream failed.
    #[error("writing the cube: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

macro_rules! handle {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            /// The handle's index, in definition order.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

handle!(
    /// A metric of a [`Cube`].
    MetricId
);
handle!(
    /// A region (function, MPI call, kernel...) of a [`Cube`].
    RegionId
);
handle!(
    /// A call-tree node of a [`Cube`].
    CnodeId
);
handle!(
    /// A system-tree node (machine, host, device) of a [`Cube`].
    NodeId
);
handle!(
    /// A location group (process, GPU context) of a [`Cube`].
    GroupId
);
handle!(
    /// A location (thread, GPU stream) of a [`Cube`].
    LocationId
);

/// How a metric's values are stored (`dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// `UINT64`: counts, bytes.
    Uint64,
    /// `INT64`.
    Int64,
    /// `DOUBLE`: times in seconds.
    Double,
}

impl DataType {
    fn name(self) -> &'static str {
        match self {
            DataType::Uint64 => "UINT64",
            DataType::Int64 => "INT64",
            DataType::Double => "DOUBLE",
        }
    }
}

/// What a stored value at a call-tree node means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// The node's own share (Score-P's `visits`, `bytes_sent`): a reader
    /// adds the subtree for the inclusive value.
    Exclusive,
    /// The node with everything called from it (Score-P's `time`): a
    /// reader subtracts the children for the exclusive value.
    Inclusive,
}

impl MetricKind {
    fn name(self) -> &'static str {
        match self {
            MetricKind::Exclusive => "EXCLUSIVE",
            MetricKind::Inclusive => "INCLUSIVE",
        }
    }
}

/// A metric's definition.
#[derive(Debug, Clone, Copy)]
pub struct Metric<'a> {
    /// The name tools look metrics up by (`time`, `visits`).
    pub unique_name: &'a str,
    /// The name shown (`Time`).
    pub display_name: &'a str,
    pub data_type: DataType,
    pub kind: MetricKind,
    /// Unit of measurement: `sec`, `occ`, `bytes`.
    pub unit: &'a str,
    /// Where its documentation is (may be empty).
    pub url: &'a str,
    pub description: &'a str,
}

impl<'a> Metric<'a> {
    pub fn new(
        unique_name: &'a str,
        display_name: &'a str,
        data_type: DataType,
        kind: MetricKind,
        unit: &'a str,
    ) -> Self {
        Metric { unique_name, display_name, data_type, kind, unit, url: "", description: "" }
    }

    pub fn description(self, description: &'a str) -> Self {
        Metric { description, ..self }
    }
}

/// A region's definition: what a call-tree node calls.
#[derive(Debug, Clone, Copy)]
pub struct Region<'a> {
    pub name: &'a str,
    /// The mangled (or full) name; the name when empty.
    pub mangled_name: &'a str,
    /// `mpi`, `cuda`, `user`, `measurement`...
    pub paradigm: &'a str,
    /// `function`, `point2point`, `barrier`, `artificial`...
    pub role: &'a str,
    /// The source file or module (may be empty).
    pub module: &'a str,
    /// First and last source line, -1 when unknown.
    pub begin_line: i64,
    pub end_line: i64,
    pub description: &'a str,
}

impl<'a> Region<'a> {
    pub fn new(name: &'a str, paradigm: &'a str, role: &'a str) -> Self {
        Region { name, mangled_name: "", paradigm, role, module: "", begin_line: -1, end_line: -1, description: "" }
    }
}

/// What a location group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    /// A process (an MPI rank).
    Process,
    /// A group of metric locations.
    Metrics,
    /// An accelerator context (a CUDA context); needs Cube 4.7 to read.
    Accelerator,
}

impl GroupType {
    fn name(self) -> &'static str {
        match self {
            GroupType::Process => "process",
            GroupType::Metrics => "metrics",
            GroupType::Accelerator => "accelerator",
        }
    }
}

/// What a location is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationType {
    /// A CPU thread.
    Thread,
    /// An accelerator stream (a CUDA stream); needs Cube 4.7 to read.
    AcceleratorStream,
    /// Where metrics are sampled.
    Metric,
}

impl LocationType {
    fn name(self) -> &'static str {
        match self {
            LocationType::Thread => "thread",
            LocationType::AcceleratorStream => "accelerator stream",
            LocationType::Metric => "metric",
        }
    }
}

/// A severity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    fn type_name(self) -> &'static str {
        match self {
            Value::U64(_) => "UINT64",
            Value::I64(_) => "INT64",
            Value::F64(_) => "DOUBLE",
        }
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::U64(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}

struct MetricDef {
    unique_name: String,
    display_name: String,
    data_type: DataType,
    kind: MetricKind,
    unit: String,
    url: String,
    description: String,
    parent: Option<MetricId>,
    /// Per call-tree node, the values by location (as bits; empty: zero).
    rows: Vec<Vec<u64>>,
}

struct RegionDef {
    name: String,
    mangled_name: String,
    paradigm: String,
    role: String,
    module: String,
    begin_line: i64,
    end_line: i64,
    description: String,
}

struct CnodeDef {
    region: RegionId,
    parent: Option<CnodeId>,
}

struct NodeDef {
    name: String,
    class: String,
    parent: Option<NodeId>,
    attributes: Vec<(String, String)>,
}

struct GroupDef {
    name: String,
    rank: i64,
    ty: GroupType,
    node: NodeId,
}

struct LocationDef {
    name: String,
    rank: i64,
    ty: LocationType,
    group: GroupId,
}

/// A profile being built: definitions and severities.
#[derive(Default)]
pub struct Cube {
    attributes: Vec<(String, String)>,
    metrics: Vec<MetricDef>,
    regions: Vec<RegionDef>,
    cnodes: Vec<CnodeDef>,
    nodes: Vec<NodeDef>,
    groups: Vec<GroupDef>,
    locations: Vec<LocationDef>,
}

fn next<T>(v: &[T]) -> u32 {
    u32::try_from(v.len()).expect("fewer than 2^32 definitions of a kind")
}

impl Cube {
    pub fn new() -> Cube {
        Cube::default()
    }

    /// An attribute of the whole profile (`Creator`).
    pub fn attribute(&mut self, key: &str, value: &str) {
        self.attributes.push((key.to_string(), value.to_string()));
    }

    /// Defines a metric, at the root of the metric tree or under
    /// `parent`. A reader shows a collapsed metric as itself plus its
    /// children, so a child holds what its parent's own values do not.
    pub fn metric(&mut self, m: Metric<'_>, parent: Option<MetricId>) -> Result<MetricId> {
        if let Some(p) = parent {
            self.check(p.0, self.metrics.len(), "metric")?;
        }
        let id = MetricId(next(&self.metrics));
        self.metrics.push(MetricDef {
            unique_name: m.unique_name.to_string(),
            display_name: m.display_name.to_string(),
            data_type: m.data_type,
            kind: m.kind,
            unit: m.unit.to_string(),
            url: m.url.to_string(),
            description: m.description.to_string(),
            parent,
            rows: Vec::new(),
        });
        Ok(id)
    }

    /// Defines a region.
    pub fn region(&mut self, r: Region<'_>) -> RegionId {
        let id = RegionId(next(&self.regions));
        self.regions.push(RegionDef {
            name: r.name.to_string(),
            mangled_name: if r.mangled_name.is_empty() { r.name } else { r.mangled_name }.to_string(),
            paradigm: r.paradigm.to_string(),
            role: r.role.to_string(),
            module: r.module.to_string(),
            begin_line: r.begin_line,
            end_line: r.end_line,
            description: r.description.to_string(),
        });
        id
    }

    /// A call-tree node calling `region`, a root or a child of `parent`.
    /// Nodes are not deduplicated: the caller keeps its handles.
    pub fn cnode(&mut self, region: RegionId, parent: Option<CnodeId>) -> Result<CnodeId> {
        self.check(region.0, self.regions.len(), "region")?;
        if let Some(p) = parent {
            self.check(p.0, self.cnodes.len(), "call-tree node")?;
        }
        let id = CnodeId(next(&self.cnodes));
        self.cnodes.push(CnodeDef { region, parent });
        Ok(id)
    }

    /// A system-tree node (a machine, a host, a GPU): `class` says what
    /// it is.
    pub fn system_tree_node(&mut self, name: &str, class: &str, parent: Option<NodeId>) -> Result<NodeId> {
        if let Some(p) = parent {
            self.check(p.0, self.nodes.len(), "system-tree node")?;
        }
        let id = NodeId(next(&self.nodes));
        self.nodes.push(NodeDef { name: name.to_string(), class: class.to_string(), parent, attributes: Vec::new() });
        Ok(id)
    }

    /// An attribute of a system-tree node (a GPU's UUID).
    pub fn node_attribute(&mut self, node: NodeId, key: &str, value: &str) -> Result<()> {
        self.check(node.0, self.nodes.len(), "system-tree node")?;
        self.nodes[node.index()].attributes.push((key.to_string(), value.to_string()));
        Ok(())
    }

    /// A location group under a system-tree node; `rank` is the process's
    /// rank. A group without locations is left out of the file.
    pub fn location_group(&mut self, name: &str, rank: i64, ty: GroupType, node: NodeId) -> Result<GroupId> {
        self.check(node.0, self.nodes.len(), "system-tree node")?;
        let id = GroupId(next(&self.groups));
        self.groups.push(GroupDef { name: name.to_string(), rank, ty, node });
        Ok(id)
    }

    /// A location of a group; `rank` is its number within the group.
    pub fn location(&mut self, name: &str, rank: i64, ty: LocationType, group: GroupId) -> Result<LocationId> {
        self.check(group.0, self.groups.len(), "location group")?;
        let id = LocationId(next(&self.locations));
        self.locations.push(LocationDef { name: name.to_string(), rank, ty, group });
        Ok(id)
    }

    /// Number of locations defined.
    pub fn location_count(&self) -> usize {
        self.locations.len()
    }

    /// Number of call-tree nodes defined.
    pub fn cnode_count(&self) -> usize {
        self.cnodes.len()
    }

    fn check(&self, id: u32, len: usize, what: &'static str) -> Result<()> {
        if (id as usize) < len { Ok(()) } else { Err(Error::Unknown { what, id }) }
    }

    /// The row of `metric` at `cnode`, long enough for `location`, and the
    /// metric's type.
    fn cell(&mut self, metric: MetricId, cnode: CnodeId, location: LocationId) -> Result<(&mut u64, DataType, &str)> {
        self.check(metric.0, self.metrics.len(), "metric")?;
        self.check(cnode.0, self.cnodes.len(), "call-tree node")?;
        self.check(location.0, self.locations.len(), "location")?;
        let m = &mut self.metrics[metric.index()];
        if m.rows.len() <= cnode.index() {
            m.rows.resize_with(cnode.index() + 1, Vec::new);
        }
        let row = &mut m.rows[cnode.index()];
        if row.len() <= location.index() {
            row.resize(location.index() + 1, 0);
        }
        Ok((&mut row[location.index()], m.data_type, &m.unique_name))
    }

    /// Sets the severity of `metric` at (`cnode`, `location`).
    pub fn set(
        &mut self,
        metric: MetricId,
        cnode: CnodeId,
        location: LocationId,
        value: impl Into<Value>,
    ) -> Result<()> {
        let value = value.into();
        let (cell, ty, name) = self.cell(metric, cnode, location)?;
        *cell = match (ty, value) {
            (DataType::Uint64, Value::U64(v)) => v,
            (DataType::Int64, Value::I64(v)) => v as u64,
            (DataType::Double, Value::F64(v)) => v.to_bits(),
            (ty, v) => return Err(wrong_type(name, ty, v)),
        };
        Ok(())
    }

    /// Adds to the severity of `metric` at (`cnode`, `location`)
    /// (integers saturate).
    pub fn add(
        &mut self,
        metric: MetricId,
        cnode: CnodeId,
        location: LocationId,
        value: impl Into<Value>,
    ) -> Result<()> {
        let value = value.into();
        let (cell, ty, name) = self.cell(metric, cnode, location)?;
        *cell = match (ty, value) {
            (DataType::Uint64, Value::U64(v)) => cell.saturating_add(v),
            (DataType::Int64, Value::I64(v)) => (*cell as i64).saturating_add(v) as u64,
            (DataType::Double, Value::F64(v)) => (f64::from_bits(*cell) + v).to_bits(),
            (ty, v) => return Err(wrong_type(name, ty, v)),
        };
        Ok(())
    }

    /// The severity of `metric` at (`cnode`, `location`): zero if never set.
    pub fn get(&self, metric: MetricId, cnode: CnodeId, location: LocationId) -> Result<Value> {
        self.check(metric.0, self.metrics.len(), "metric")?;
        self.check(cnode.0, self.cnodes.len(), "call-tree node")?;
        self.check(location.0, self.locations.len(), "location")?;
        let m = &self.metrics[metric.index()];
        let bits = m.rows.get(cnode.index()).and_then(|r| r.get(location.index())).copied().unwrap_or(0);
        Ok(match m.data_type {
            DataType::Uint64 => Value::U64(bits),
            DataType::Int64 => Value::I64(bits as i64),
            DataType::Double => Value::F64(f64::from_bits(bits)),
        })
    }

    /// Writes the `.cubex` archive to `out`.
    pub fn write(&self, out: &mut impl Write) -> Result<()> {
        if self.metrics.is_empty() {
            return Err(Error::Empty("metric"));
        }
        if self.cnodes.is_empty() {
            return Err(Error::Empty("call-tree node"));
        }
        if self.locations.is_empty() {
            return Err(Error::Empty("location"));
        }
        let plan = Plan::of(self);
        let anchor = xml::anchor(self, &plan);
        let mut tar = tar::Writer::new(out);
        tar.file("anchor.xml", anchor.as_bytes())?;
        for (m, def) in plan.metric_order.iter().map(|&m| (m, &self.metrics[m as usize])) {
            let positions = if def.kind == MetricKind::Inclusive { &plan.wide_position } else { &plan.deep_position };
            // (position, cnode) of the rows with a nonzero value.
            let mut rows: Vec<(u32, usize)> = def
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.iter().any(|&v| v != 0))
                .map(|(c, _)| (positions[c], c))
                .collect();
            if rows.is_empty() {
                let first = positions.iter().position(|&p| p == 0).expect("position 0 exists");
                rows.push((0, first));
            }
            rows.sort_unstable();
            let id = plan.metric_id[m as usize];
            let mut index = Vec::with_capacity(22 + 4 * rows.len());
            index.extend_from_slice(b"CUBEX.INDEX");
            index.extend_from_slice(&1u32.to_le_bytes());
            index.extend_from_slice(&0u16.to_le_bytes());
            index.push(1); // sparse: the rows are listed
            index.extend_from_slice(&(rows.len() as u32).to_le_bytes());
            for &(p, _) in &rows {
                index.extend_from_slice(&p.to_le_bytes());
            }
            let n = self.locations.len();
            let size = 10 + (rows.len() * n * 8) as u64;
            let data = tar.begin(&format!("{id}.data"), size)?;
            data.write_all(b"CUBEX.DATA")?;
            let mut line = vec![0u8; n * 8];
            for &(_, c) in &rows {
                line.fill(0);
                for (l, &v) in def.rows.get(c).into_iter().flatten().enumerate() {
                    let column = plan.location_column[l] as usize;
                    line[column * 8..column * 8 + 8].copy_from_slice(&v.to_le_bytes());
                }
                data.write_all(&line)?;
            }
            tar.end(size)?;
            tar.file(&format!("{id}.index"), &index)?;
        }
        tar.finish()?;
        Ok(())
    }

    /// Writes the `.cubex` archive to `path`, atomically: into a
    /// temporary file beside it, renamed over `path` once complete. On
    /// failure nothing is left behind (a file already at `path` stays as
    /// it was). Returns the file's size.
    pub fn write_to(&self, path: &Path) -> Result<u64> {
        let fail = |source| Error::Write { path: path.to_path_buf(), source };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = dir.join(format!(".{name}.{}.part", std::process::id()));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp).map_err(fail)?;
        let written = (|| -> Result<u64> {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            self.write(&mut out)?;
            let file = out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
            file.sync_all()?;
            let size = file.metadata()?.len();
            drop(file);
            std::fs::rename(&temp, path)?;
            Ok(size)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            match e {
                Error::Io(source) => fail(source),
                e => e,
            }
        })
    }
}

fn wrong_type(metric: &str, ty: DataType, given: Value) -> Error {
    Error::WrongType { metric: metric.to_string(), expected: ty.name(), given: given.type_name() }
}

/// The ids and orders a written cube uses.
struct Plan {
    /// Metrics depth first; their written ids by definition index.
    metric_order: Vec<u32>,
    metric_id: Vec<u32>,
    /// Children of each metric, call-tree node and system-tree node.
    metric_children: Vec<Vec<u32>>,
    cnode_children: Vec<Vec<u32>>,
    cnode_roots: Vec<u32>,
    node_children: Vec<Vec<u32>>,
    node_roots: Vec<u32>,
    /// Per system-tree node its groups; per group its locations.
    node_groups: Vec<Vec<u32>>,
    group_locations: Vec<Vec<u32>>,
    /// A call-tree node's place in the depth-first enumeration (also its
    /// written id) and in the wide one.
    deep_position: Vec<u32>,
    wide_position: Vec<u32>,
    /// A location's column in the data rows (also its written id).
    location_column: Vec<u32>,
}

impl Plan {
    fn of(c: &Cube) -> Plan {
        let (metric_children, metric_roots) = tree(c.metrics.iter().map(|m| m.parent.map(|p| p.index())));
        let metric_order = depth_first(&metric_roots, &metric_children);
        let mut metric_id = vec![0; c.metrics.len()];
        for (k, &m) in metric_order.iter().enumerate() {
            metric_id[m as usize] = k as u32;
        }

        let (cnode_children, cnode_roots) = tree(c.cnodes.iter().map(|n| n.parent.map(|p| p.index())));
        let mut deep_position = vec![0; c.cnodes.len()];
        for (k, &n) in depth_first(&cnode_roots, &cnode_children).iter().enumerate() {
            deep_position[n as usize] = k as u32;
        }
        let mut wide_position = vec![0; c.cnodes.len()];
        for (k, &n) in wide(&cnode_roots, &cnode_children).iter().enumerate() {
            wide_position[n as usize] = k as u32;
        }

        let (node_children, node_roots) = tree(c.nodes.iter().map(|n| n.parent.map(|p| p.index())));
        let mut node_groups = vec![Vec::new(); c.nodes.len()];
        for (i, g) in c.groups.iter().enumerate() {
            node_groups[g.node.index()].push(i as u32);
        }
        let mut group_locations = vec![Vec::new(); c.groups.len()];
        for (i, l) in c.locations.iter().enumerate() {
            group_locations[l.group.index()].push(i as u32);
        }
        // Locations in the order the system tree lists them: a node's
        // groups (and their locations) before its child nodes, as the
        // format requires them written.
        let mut location_column = vec![0; c.locations.len()];
        let mut column = 0u32;
        for n in depth_first(&node_roots, &node_children) {
            for &g in &node_groups[n as usize] {
                for &l in &group_locations[g as usize] {
                    location_column[l as usize] = column;
                    column += 1;
                }
            }
        }
        Plan {
            metric_order,
            metric_id,
            metric_children,
            cnode_children,
            cnode_roots,
            node_children,
            node_roots,
            node_groups,
            group_locations,
            deep_position,
            wide_position,
            location_column,
        }
    }
}

/// The nodes of a forest depth first, each before its children.
/// A tree from each element's parent (index): every element's children
/// and the roots, in definition order.
fn tree(parents: impl ExactSizeIterator<Item = Option<usize>>) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut children = vec![Vec::new(); parents.len()];
    let mut roots = Vec::new();
    for (i, parent) in parents.enumerate() {
        match parent {
            Some(p) => children[p].push(i as u32),
            None => roots.push(i as u32),
        }
    }
    (children, roots)
}

fn depth_first(roots: &[u32], children: &[Vec<u32>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(children.len());
    let mut stack: Vec<u32> = roots.iter().rev().copied().collect();
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(children[n as usize].iter().rev());
    }
    out
}

/// CubeLib's enumeration for inclusive metrics: each root, then, depth
/// first, at every node all of its children together.
fn wide(roots: &[u32], children: &[Vec<u32>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(children.len());
    for &root in roots {
        out.push(root);
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            out.extend_from_slice(&children[n as usize]);
            stack.extend(children[n as usize].iter().rev());
        }
    }
    out
}

#[cfg(test)]
mod tests;
