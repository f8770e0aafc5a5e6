//! What an archive's definitions mean for the reports: processes (by MPI
//! rank where there is one), host threads, GPU streams and metric
//! locations, GPUs, what kind of work each region is, and which process
//! each rank of each communicator is.
//!
//! Both naming schemes are understood: gputrace's (see
//! docs/otf2-mapping.md) and Score-P's, which share most of it — MPI
//! regions named as the functions, CUDA API regions as the calls, kernels
//! by their demangled names on `CUDA[d:s]` stream locations. Where they
//! differ the rules fall back on names: a stream is a location of type
//! ACCELERATOR_STREAM *or* named `CUDA[...]`, a GPU is a system-tree node
//! of class `GPU` *or* the device number in a stream's name.

use std::collections::HashMap;

use otf2::reader::{GlobalDefs, MetricDef};

use super::regions::region_kinds;
pub use super::regions::{CopyKind, NvtxRegion, NvtxStyle, RegionInfo, RegionKind};
use otf2::{
    AttributeRef, AttributeValue, CommRef, GroupType, LocationGroupRef, LocationGroupType, LocationRef, LocationType,
    MetricRef, Paradigm, RegionRef, RmaWinRef, SystemTreeDomain, SystemTreeNodeRef,
};

/// What a location records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocationKind {
    HostThread,
    GpuStream,
    Metrics,
}

/// A location, placed.
#[derive(Clone, Debug)]
pub struct LocationInfo {
    pub kind: LocationKind,
    pub name: String,
    /// Index into [`Model::processes`].
    pub process: usize,
    /// Index into [`Model::gpus`], for streams and NVLink metric locations.
    pub gpu: Option<usize>,
}

/// A process: an MPI rank, a non-MPI process, or a location group that
/// stands alone.
#[derive(Clone, Debug)]
pub struct ProcessInfo {
    pub name: String,
    /// Its MPI world rank, when it is an MPI process.
    pub rank: Option<u32>,
    /// The system-tree node (host) it ran on.
    pub host: String,
    /// The GPU its streams are on, when they are all on one.
    pub gpu: Option<usize>,
    /// What its sources lost before it became events: (kind's key,
    /// count), from its `GPUTRACE::LOST::<KIND>` properties.
    pub lost: Vec<(String, u64)>,
}

/// A GPU of the archive.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    /// `CUDA Device d`, prefixed with the host when there are several.
    pub label: String,
    /// The node's name (`CUDA Device d`) and host, to resolve attributes.
    pub device: String,
    pub host: String,
    /// The `name` property (the product), when known.
    pub product: String,
    /// `NVLink to ...` properties: (other end, description).
    pub links: Vec<(String, String)>,
}

/// The attributes the reports read, where the archive defines them.
#[derive(Clone, Copy, Debug, Default)]
pub struct KnownAttributes {
    pub correlation: Option<AttributeRef>,
    pub bytes: Option<AttributeRef>,
    pub src_device: Option<AttributeRef>,
    pub dst_device: Option<AttributeRef>,
    /// `CUDA graph id`: of kernels, copies and memsets a graph ran, and of
    /// graph executions.
    pub graph: Option<AttributeRef>,
    /// `source address`, `destination address`: of copies whose API call
    /// was seen (`GPUTRACE_CUDA_ENABLE=...,memory`).
    pub src_address: Option<AttributeRef>,
    pub dst_address: Option<AttributeRef>,
}

/// Who the ranks of a communicator are.
#[derive(Clone, Debug)]
pub struct CommInfo {
    /// Location of each rank; `None` where the definitions do not say.
    pub locations: Vec<Option<LocationRef>>,
    /// Process of each rank.
    pub processes: Vec<Option<usize>>,
    /// A self-communicator: its one rank is the event's own process.
    pub is_self: bool,
    /// NCCL's (paradigm CUDA): messages on it are NCCL send/recv.
    pub is_nccl: bool,
}

/// The definitions, interpreted.
#[derive(Clone, Debug)]
pub struct Model {
    pub locations: HashMap<LocationRef, LocationInfo>,
    pub processes: Vec<ProcessInfo>,
    pub gpus: Vec<GpuInfo>,
    /// By region id (OTF2 assigns them densely from 0).
    pub regions: Vec<RegionInfo>,
    pub attributes: KnownAttributes,
    pub comms: HashMap<CommRef, CommInfo>,
    /// The communicator of each RMA window.
    pub windows: HashMap<RmaWinRef, CommRef>,
    /// Metric name (its first member's) by metric class or instance.
    pub metric_names: HashMap<MetricRef, String>,
    /// Metric unit (its first member's) by metric class or instance.
    pub metric_units: HashMap<MetricRef, String>,
    /// The archive's time origin (ticks) and ticks per second.
    pub origin: u64,
    pub resolution: u64,
    pub length: u64,
}

impl Model {
    pub fn new(defs: &GlobalDefs) -> Self {
        let clock = defs.clock_properties.unwrap_or(otf2::ClockProperties {
            timer_resolution: 1_000_000_000,
            global_offset: 0,
            trace_length: 0,
            realtime_timestamp: None,
        });
        let mut model = Model {
            locations: HashMap::new(),
            processes: Vec::new(),
            gpus: Vec::new(),
            regions: Vec::new(),
            attributes: known_attributes(defs),
            comms: HashMap::new(),
            windows: defs.rma_wins.iter().map(|(w, d)| (*w, d.comm)).collect(),
            metric_names: metric_strings(defs, |m| m.name),
            metric_units: metric_strings(defs, |m| m.unit),
            origin: clock.global_offset,
            resolution: clock.timer_resolution.max(1),
            length: clock.trace_length,
        };
        model.place_locations(defs);
        model.regions = region_kinds(defs);
        model.comms = comms(defs, &model);
        model
    }

    /// The region's info; regions the definitions lack read as "other".
    pub fn region(&self, region: RegionRef) -> Option<&RegionInfo> {
        self.regions.get(region.id() as usize)
    }

    /// Nanoseconds from the trace's start to `time`.
    pub fn ns_since_start(&self, time: u64) -> u64 {
        let ticks = time.saturating_sub(self.origin);
        if self.resolution == 1_000_000_000 {
            ticks
        } else {
            (u128::from(ticks) * 1_000_000_000 / u128::from(self.resolution)) as u64
        }
    }

    /// Ticks to nanoseconds (durations).
    pub fn ns(&self, ticks: u64) -> u64 {
        if self.resolution == 1_000_000_000 {
            ticks
        } else {
            (u128::from(ticks) * 1_000_000_000 / u128::from(self.resolution)) as u64
        }
    }

    /// A process label: `rank r` for MPI processes, else its name.
    pub fn process_label(&self, p: usize) -> String {
        let info = &self.processes[p];
        match info.rank {
            Some(r) => format!("rank {r}"),
            None => info.name.clone(),
        }
    }

    /// The GPU a device name (`CUDA Device d`, from a copy's attributes) of
    /// a process's host stands for.
    pub fn gpu_by_device(&self, process: usize, device: &str) -> Option<usize> {
        let host = &self.processes.get(process)?.host;
        self.gpus.iter().position(|g| g.device == device && &g.host == host)
    }

    fn place_locations(&mut self, defs: &GlobalDefs) {
        let gpu_nodes = self.place_gpus(defs);
        let process_of_group = self.place_processes(defs, &gpu_nodes);
        self.place_streams(defs, &gpu_nodes, &process_of_group);
    }

    /// GPUs first: system-tree nodes of class GPU (gputrace) or accelerator
    /// domain, with their properties; returns the GPU of each such node.
    fn place_gpus(&mut self, defs: &GlobalDefs) -> HashMap<SystemTreeNodeRef, usize> {
        let node_name = |n: Option<SystemTreeNodeRef>| {
            n.and_then(|n| defs.system_tree_nodes.get(&n)).map_or(String::new(), |d| defs.string(d.name).to_owned())
        };
        let mut gpu_nodes: HashMap<SystemTreeNodeRef, usize> = HashMap::new();
        for (&node, def) in &defs.system_tree_nodes {
            let is_gpu = defs.string(def.class_name).eq_ignore_ascii_case("gpu")
                || defs
                    .system_tree_node_domains
                    .iter()
                    .any(|(n, d)| *n == node && *d == SystemTreeDomain::AcceleratorDevice);
            if is_gpu {
                gpu_nodes.insert(node, self.gpus.len());
                self.gpus.push(GpuInfo {
                    label: String::new(),
                    device: defs.string(def.name).to_owned(),
                    host: node_name(def.parent),
                    product: String::new(),
                    links: Vec::new(),
                });
            }
        }
        for p in &defs.system_tree_node_properties {
            let Some(&g) = gpu_nodes.get(&p.owner) else { continue };
            let name = defs.string(p.name);
            let value = match p.value {
                AttributeValue::String(s) => defs.string(s).to_owned(),
                v => v.as_u64().map(|x| x.to_string()).unwrap_or_default(),
            };
            if name == "name" {
                self.gpus[g].product = value;
            } else if let Some(other) = name.strip_prefix("NVLink to ") {
                self.gpus[g].links.push((other.to_owned(), value));
            }
        }
        gpu_nodes
    }

    /// Processes: location groups of type PROCESS; accelerator groups
    /// belong to the process that created them (or stand alone, as in
    /// Score-P traces without creators). Returns each group's process.
    fn place_processes(
        &mut self,
        defs: &GlobalDefs,
        gpu_nodes: &HashMap<SystemTreeNodeRef, usize>,
    ) -> HashMap<LocationGroupRef, usize> {
        let mpi_ranks = mpi_rank_of_groups(defs);
        let mut process_of_group: HashMap<LocationGroupRef, usize> = HashMap::new();
        let mut groups: Vec<_> = defs.location_groups.iter().collect();
        // Processes in rank order, then the rest in definition order.
        groups.sort_by_key(|(g, d)| (d.ty != LocationGroupType::Process, mpi_ranks.get(g).copied(), **g));
        for &(&g, def) in &groups {
            let standalone = def.ty == LocationGroupType::Process || def.creating_group.is_none();
            if standalone {
                process_of_group.insert(g, self.processes.len());
                let name = defs.string(def.name).to_owned();
                let rank = mpi_ranks
                    .get(&g)
                    .copied()
                    .or_else(|| name.strip_prefix("MPI Rank ").and_then(|r| r.trim().parse().ok()));
                let host = host_of(defs, def.system_tree_parent, gpu_nodes);
                let lost = defs
                    .location_group_properties
                    .iter()
                    .filter(|p| p.owner == g)
                    .filter_map(|p| {
                        let key = defs.string(p.name).strip_prefix(crate::lost::PROPERTY_PREFIX)?;
                        Some((key.to_owned(), p.value.as_u64()?))
                    })
                    .collect();
                self.processes.push(ProcessInfo { name, rank, host, gpu: None, lost });
            }
        }
        if self.processes.is_empty() {
            // Locations always have a group; this only keeps indices valid
            // for archives whose groups all name missing creators.
            self.processes.push(ProcessInfo {
                name: "process".into(),
                rank: None,
                host: String::new(),
                gpu: None,
                lost: Vec::new(),
            });
        }
        for &(&g, def) in &groups {
            if let Some(creator) = def.creating_group
                && !process_of_group.contains_key(&g)
            {
                let p = process_of_group.get(&creator).copied().unwrap_or(0);
                process_of_group.insert(g, p);
            }
        }
        process_of_group
    }

    /// Every location: what it records, its process and GPU; a process
    /// whose streams are all on one GPU gets that GPU; GPU labels.
    fn place_streams(
        &mut self,
        defs: &GlobalDefs,
        gpu_nodes: &HashMap<SystemTreeNodeRef, usize>,
        process_of_group: &HashMap<LocationGroupRef, usize>,
    ) {
        let mut process_gpus: Vec<Vec<usize>> = vec![Vec::new(); self.processes.len()];
        for (&loc, def) in &defs.locations {
            let name = defs.string(def.name).to_owned();
            let group = defs.location_groups.get(&def.group);
            let process = process_of_group.get(&def.group).copied().unwrap_or(0);
            let kind = match def.ty {
                LocationType::AcceleratorStream => LocationKind::GpuStream,
                LocationType::Metric => LocationKind::Metrics,
                _ if name.starts_with("CUDA[") => LocationKind::GpuStream,
                // OTF2 2.x's GPU location type (3), as older Score-P writes.
                LocationType::Raw(3) => LocationKind::GpuStream,
                _ => LocationKind::HostThread,
            };
            let gpu = match kind {
                LocationKind::GpuStream => {
                    let node = group.and_then(|g| g.system_tree_parent);
                    node.and_then(|n| gpu_nodes.get(&n).copied()).or_else(|| self.gpu_from_name(&name, process))
                }
                LocationKind::Metrics => name
                    .strip_prefix("NVLink GPU ")
                    .or_else(|| name.strip_prefix("GPU ").and_then(|n| n.strip_suffix(" metrics")))
                    .or_else(|| name.strip_prefix("CUDA memory GPU ").and_then(|n| n.split(' ').next()))
                    .and_then(|d| self.gpu_by_device(process, &format!("CUDA Device {d}"))),
                LocationKind::HostThread => None,
            };
            if kind == LocationKind::GpuStream
                && let Some(g) = gpu
                && let Some(list) = process_gpus.get_mut(process)
                && !list.contains(&g)
            {
                list.push(g);
            }
            self.locations.insert(loc, LocationInfo { kind, name, process, gpu });
        }
        for (p, list) in process_gpus.iter().enumerate() {
            if let [one] = list[..] {
                self.processes[p].gpu = Some(one);
            }
        }
        let hosts: std::collections::BTreeSet<&str> = self.gpus.iter().map(|g| g.host.as_str()).collect();
        let several_hosts = hosts.len() > 1;
        for g in &mut self.gpus {
            g.label = if several_hosts { format!("{}/{}", g.host, g.device) } else { g.device.clone() };
        }
    }

    /// A GPU from a stream name `CUDA[d:s]` (Score-P without device
    /// nodes): device d of the process's host, added when new.
    fn gpu_from_name(&mut self, name: &str, process: usize) -> Option<usize> {
        let inner = name.strip_prefix("CUDA[")?.split([':', ']']).next()?;
        let d: u32 = inner.trim().parse().ok()?;
        let device = format!("CUDA Device {d}");
        if let Some(g) = self.gpu_by_device(process, &device) {
            return Some(g);
        }
        let host = self.processes.get(process)?.host.clone();
        self.gpus.push(GpuInfo { label: String::new(), device, host, product: String::new(), links: Vec::new() });
        Some(self.gpus.len() - 1)
    }
}

/// The host (the first non-GPU node) above a location group.
fn host_of(defs: &GlobalDefs, mut node: Option<SystemTreeNodeRef>, gpus: &HashMap<SystemTreeNodeRef, usize>) -> String {
    while let Some(n) = node {
        let Some(def) = defs.system_tree_nodes.get(&n) else { break };
        if !gpus.contains_key(&n) {
            return defs.string(def.name).to_owned();
        }
        node = def.parent;
    }
    String::new()
}

/// World ranks: the index of a group's location in the MPI paradigm's
/// COMM_LOCATIONS group.
fn mpi_rank_of_groups(defs: &GlobalDefs) -> HashMap<LocationGroupRef, u32> {
    let mut out = HashMap::new();
    let Some(world) = defs.groups.values().find(|g| g.ty == GroupType::CommLocations && g.paradigm == Paradigm::Mpi)
    else {
        return out;
    };
    for (rank, &loc) in world.members.iter().enumerate() {
        if let Some(def) = defs.locations.get(&LocationRef::from_id(loc)) {
            out.entry(def.group).or_insert(rank as u32);
        }
    }
    out
}

fn known_attributes(defs: &GlobalDefs) -> KnownAttributes {
    let mut a = KnownAttributes::default();
    for (&r, def) in &defs.attributes {
        let slot = match defs.string(def.name) {
            "CUDA correlation id" => &mut a.correlation,
            "bytes" => &mut a.bytes,
            "source device" => &mut a.src_device,
            "destination device" => &mut a.dst_device,
            "CUDA graph id" => &mut a.graph,
            "source address" => &mut a.src_address,
            "destination address" => &mut a.dst_address,
            _ => continue,
        };
        slot.get_or_insert(r);
    }
    a
}

/// A string of each metric's first member (its name, its unit).
fn metric_strings(
    defs: &GlobalDefs,
    which: impl Fn(&otf2::reader::MetricMemberDef) -> otf2::StringRef,
) -> HashMap<MetricRef, String> {
    let class_name = |class: MetricRef| match defs.metrics.get(&class) {
        Some(MetricDef::Class { members, .. }) => {
            members.first().and_then(|m| defs.metric_members.get(m)).map(|m| defs.string(which(m)).to_owned())
        }
        _ => None,
    };
    let mut out = HashMap::new();
    for (&m, def) in &defs.metrics {
        let name = match def {
            MetricDef::Class { .. } => class_name(m),
            MetricDef::Instance { class, .. } => class_name(*class),
            _ => None,
        };
        if let Some(n) = name {
            out.insert(m, n);
        }
    }
    out
}

fn comms(defs: &GlobalDefs, model: &Model) -> HashMap<CommRef, CommInfo> {
    let mut out = HashMap::new();
    for (&c, def) in &defs.comms {
        let Some(group) = defs.groups.get(&def.group) else { continue };
        let is_self = group.ty == GroupType::CommSelf;
        let locations: Vec<Option<LocationRef>> = match group.ty {
            GroupType::CommGroup => {
                let locations =
                    defs.groups.values().find(|g| g.ty == GroupType::CommLocations && g.paradigm == group.paradigm);
                group
                    .members
                    .iter()
                    .map(|&i| {
                        let loc = locations.and_then(|l| l.members.get(usize::try_from(i).ok()?))?;
                        Some(LocationRef::from_id(*loc))
                    })
                    .collect()
            }
            // What ViTE-style archives do: the comm's group lists locations.
            GroupType::CommLocations | GroupType::Locations => {
                group.members.iter().map(|&l| Some(LocationRef::from_id(l))).collect()
            }
            _ => Vec::new(),
        };
        let is_nccl = group.paradigm == Paradigm::Cuda && defs.string(def.name) != "CUDA";
        let processes =
            locations.iter().map(|l| l.and_then(|l| model.locations.get(&l)).map(|info| info.process)).collect();
        out.insert(c, CommInfo { locations, processes, is_self, is_nccl });
    }
    out
}
