//! The profile being built: its definitions, each tree's nodes in
//! definition order, and its severities (rows by call-tree node, values by
//! location, kept as bits of the metric's type).

use crate::{
    CnodeId, DataType, Error, GroupId, GroupType, LocationId, LocationType, Metric, MetricId, MetricKind, NodeId,
    Region, RegionId, Result, Value,
};

pub(crate) struct MetricDef {
    pub(crate) unique_name: String,
    pub(crate) display_name: String,
    pub(crate) data_type: DataType,
    pub(crate) kind: MetricKind,
    pub(crate) unit: String,
    pub(crate) url: String,
    pub(crate) description: String,
    pub(crate) parent: Option<MetricId>,
    /// Per call-tree node, the values by location (as bits; empty: zero).
    pub(crate) rows: Vec<Vec<u64>>,
}

pub(crate) struct RegionDef {
    pub(crate) name: String,
    pub(crate) mangled_name: String,
    pub(crate) paradigm: String,
    pub(crate) role: String,
    pub(crate) module: String,
    pub(crate) begin_line: i64,
    pub(crate) end_line: i64,
    pub(crate) description: String,
}

pub(crate) struct CnodeDef {
    pub(crate) region: RegionId,
    pub(crate) parent: Option<CnodeId>,
}

pub(crate) struct NodeDef {
    pub(crate) name: String,
    pub(crate) class: String,
    pub(crate) parent: Option<NodeId>,
    pub(crate) attributes: Vec<(String, String)>,
}

pub(crate) struct GroupDef {
    pub(crate) name: String,
    pub(crate) rank: i64,
    pub(crate) ty: GroupType,
    pub(crate) node: NodeId,
}

pub(crate) struct LocationDef {
    pub(crate) name: String,
    pub(crate) rank: i64,
    pub(crate) ty: LocationType,
    pub(crate) group: GroupId,
}

/// A profile being built: definitions and severities.
#[derive(Default)]
pub struct Cube {
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) metrics: Vec<MetricDef>,
    pub(crate) regions: Vec<RegionDef>,
    pub(crate) cnodes: Vec<CnodeDef>,
    pub(crate) nodes: Vec<NodeDef>,
    pub(crate) groups: Vec<GroupDef>,
    pub(crate) locations: Vec<LocationDef>,
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
}

fn wrong_type(metric: &str, ty: DataType, given: Value) -> Error {
    Error::WrongType { metric: metric.to_string(), expected: ty.name(), given: given.type_name() }
}
