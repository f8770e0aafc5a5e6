//! CUDA in the archive: devices, contexts, streams, copy windows, NVLink
//! topology and metrics, and the attributes that GPU events carry.
//!
//! - GPUs are identified by UUID per host, so two ranks sharing a GPU
//!   share its `CUDA Device d` system-tree node (class `GPU`, domain
//!   ACCELERATOR_DEVICE, with name, UUID, SMs, memory, compute capability
//!   and one `NVLink to ...` property per NVLink connection);
//! - each CUDA context of a process is a location group `CUDA Context c
//!   of rank r` (`of process r` for a process without MPI; type
//!   ACCELERATOR) under its device, created by the process;
//! - each stream is a location `CUDA[d:s] rank r` (ACCELERATOR_STREAM, id
//!   `(1 << 20 | n) << 32 | rank`); NVLink samples go to `NVLink GPU d`,
//!   NVML's GPU metrics (utilization, memory, clock, power, temperature)
//!   to `GPU d metrics`, a process's allocations, frees, memory in use
//!   and unified-memory counters to `CUDA memory GPU d rank r` (METRIC
//!   locations, id `(1 << 21 | n) << 32 | rank`);
//! - copies are RMA operations: one `CUDA` communicator spans every CUDA
//!   process's master thread and all streams, with an RMA window per
//!   context; a peer copy's remote is a stream of the other GPU, in
//!   whichever process owns it.

use std::collections::{BTreeMap, HashMap};

use crate::Result;
use otf2::{
    AttributeRef, AttributeValue, CommFlags, Definitions, GroupFlags, GroupType, LocationGroupRef, LocationGroupType,
    LocationType, MetricMember, MetricMode, MetricOccurrence, Paradigm as OtfParadigm, ParadigmClass, RecorderKind,
    RmaWinFlags, SystemTreeDomain, SystemTreeNodeRef, Type,
};
use raw::{CudaObject, LinkEnd, LocationKind};

use super::{Layout, LocationPlan, LocationRole};
use crate::inputs::Process;

/// The attributes GPU events carry.
#[derive(Debug, Clone, Copy)]
pub struct CudaAttributes {
    pub correlation: AttributeRef,
    pub grid: [AttributeRef; 3],
    pub block: [AttributeRef; 3],
    pub registers: AttributeRef,
    pub static_shared: AttributeRef,
    pub dynamic_shared: AttributeRef,
    pub bytes: AttributeRef,
    pub copy_kind: AttributeRef,
    pub src_memory: AttributeRef,
    pub dst_memory: AttributeRef,
    pub src_device: AttributeRef,
    pub dst_device: AttributeRef,
    pub memory: AttributeRef,
}

fn attributes(defs: &mut Definitions) -> CudaAttributes {
    let mut a = |name: &str, desc: &str, ty: Type| defs.attribute(name, desc, ty);
    CudaAttributes {
        correlation: a("CUDA correlation id", "joins an API call to the kernels and copies it launched", Type::U32),
        grid: [
            a("grid x", "kernel grid size, x", Type::U32),
            a("grid y", "kernel grid size, y", Type::U32),
            a("grid z", "kernel grid size, z", Type::U32),
        ],
        block: [
            a("block x", "kernel block size, x", Type::U32),
            a("block y", "kernel block size, y", Type::U32),
            a("block z", "kernel block size, z", Type::U32),
        ],
        registers: a("registers per thread", "registers per thread of the kernel", Type::U32),
        static_shared: a("static shared memory", "bytes of static shared memory per block", Type::U32),
        dynamic_shared: a("dynamic shared memory", "bytes of dynamic shared memory per block", Type::U32),
        bytes: a("bytes", "bytes copied or set", Type::U64),
        copy_kind: a("copy kind", "HtoD, DtoH, DtoD, HtoH or PtoP", Type::String),
        src_memory: a("source memory", "pageable, pinned, device, array, managed", Type::String),
        dst_memory: a("destination memory", "pageable, pinned, device, array, managed", Type::String),
        src_device: a("source device", "CUDA device the copy read from", Type::String),
        dst_device: a("destination device", "CUDA device the copy wrote to", Type::String),
        memory: a("memory kind", "memory a memset wrote", Type::String),
    }
}

/// A GPU of the archive.
struct Device {
    host: String,
    uuid: [u8; 16],
    node: SystemTreeNodeRef,
}

pub fn define(
    defs: &mut Definitions,
    processes: &[Process],
    nodes: &BTreeMap<String, SystemTreeNodeRef>,
    layout: &mut Layout,
) -> Result<()> {
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        plan.metrics = vec![HashMap::new(); p.defs.len()];
    }
    // A GPU seen, or a CUDA stream that recorded anything: a process
    // stopped before CUPTI handed back a buffer (a hang, a kill) has its
    // API calls and their correlation ids, and no device or context yet.
    let any_gpu = processes.iter().any(|p| {
        p.defs.iter().any(|d| !d.devices.is_empty() || !d.contexts.is_empty())
            || p.streams
                .iter()
                .zip(&p.defs)
                .any(|(s, d)| s.header.producer == raw::Producer::Cuda && d.untraced.is_none())
    });
    layout.cuda_host_ranks = vec![None; processes.len()];
    if !any_gpu && !processes.iter().any(has_nccl) {
        return Ok(());
    }
    defs.paradigm(OtfParadigm::Cuda, "CUDA", ParadigmClass::Accelerator);
    layout.cuda = Some(attributes(defs));

    let devices = define_devices(defs, processes, nodes, layout);
    nvlink_properties(defs, processes, &devices, &layout.device_names);
    let gpu = define_gpu_locations(defs, processes, &devices, layout)?;
    layout.cuda_host_ranks = gpu.host_ranks.clone();
    if gpu.members.is_empty() {
        return Ok(());
    }
    define_windows(defs, processes, devices.len(), layout, gpu);
    Ok(())
}

fn has_nccl(p: &Process) -> bool {
    p.defs.iter().any(|d| !d.nccl_comms.is_empty())
}

/// The archive's GPUs, by (host, UUID), in order of (rank, ordinal): a
/// system-tree node each, with its properties; every process plan gets
/// its ordinals' GPUs.
fn define_devices(
    defs: &mut Definitions,
    processes: &[Process],
    nodes: &BTreeMap<String, SystemTreeNodeRef>,
    layout: &mut Layout,
) -> Vec<Device> {
    let mut devices: Vec<Device> = Vec::new();
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        let mut ordinals: BTreeMap<u32, [u8; 16]> = BTreeMap::new();
        for d in &p.defs {
            for (ord, dev) in &d.devices {
                ordinals.insert(*ord, dev.uuid);
            }
            for dev in d.contexts.values() {
                // A context whose device record was lost: name it by ordinal.
                let mut placeholder = [0u8; 16];
                placeholder[..4].copy_from_slice(&dev.to_le_bytes());
                placeholder[15] = 0xff;
                ordinals.entry(*dev).or_insert(placeholder);
            }
        }
        for (ord, uuid) in ordinals {
            let index = match devices.iter().position(|d| d.host == p.host && d.uuid == uuid) {
                Some(i) => i,
                None => {
                    let k = devices.iter().filter(|d| d.host == p.host).count();
                    let name = format!("CUDA Device {k}");
                    let node = defs.system_tree_node(&name, "GPU", Some(nodes[&p.host]));
                    defs.system_tree_node_domain(node, SystemTreeDomain::AcceleratorDevice);
                    if let Some(dev) = p.defs.iter().find_map(|d| d.devices.get(&ord)) {
                        let props: [(&str, String); 5] = [
                            ("name", dev.name.clone()),
                            ("UUID", uuid_string(&dev.uuid)),
                            ("multiprocessors", dev.multiprocessors.to_string()),
                            ("memory", format!("{} bytes", dev.memory)),
                            (
                                "compute capability",
                                format!("{}.{}", dev.compute_capability.0, dev.compute_capability.1),
                            ),
                        ];
                        for (k, v) in props {
                            let v = defs.string(&v);
                            defs.system_tree_node_property(node, k, AttributeValue::String(v));
                        }
                    }
                    devices.push(Device { host: p.host.clone(), uuid, node });
                    layout.device_names.push(name);
                    devices.len() - 1
                }
            };
            plan.devices.insert(ord, index);
        }
    }
    devices
}

/// The GPU locations of every process and who is in the CUDA
/// communicator.
struct GpuLocations {
    /// The CUDA communicator's members (location ids): per process its
    /// first host thread, then its streams.
    members: Vec<u64>,
    /// Streams that get a window: (process, location plan, context).
    windows_todo: Vec<(usize, usize, u32)>,
    /// Each process's host thread's rank in the CUDA communicator.
    host_ranks: Vec<Option<u32>>,
}

/// Contexts (location groups), streams and metric locations, and the
/// metric classes of each stream's metrics.
fn define_gpu_locations(
    defs: &mut Definitions,
    processes: &[Process],
    devices: &[Device],
    layout: &mut Layout,
) -> Result<GpuLocations> {
    let mut cuda_members: Vec<u64> = Vec::new();
    let mut windows_todo: Vec<(usize, usize, u32)> = Vec::new(); // (process, location plan, context)
    let mut host_ranks: Vec<Option<u32>> = vec![None; processes.len()];
    for (pi, (p, plan)) in processes.iter().zip(layout.processes.iter_mut()).enumerate() {
        let process_group = plan.group.expect("process groups are defined first");
        // Processes sharing a GPU have the same context and stream ids:
        // the names say whose they are.
        let whose = whose(p);
        let names = CudaNames::of(p);
        for (ordinal, name) in &names.devices {
            if let Some(&dev) = plan.devices.get(ordinal) {
                let v = defs.string(name);
                defs.system_tree_node_property(devices[dev].node, "NVTX name", AttributeValue::String(v));
            }
        }
        let mut context_groups: BTreeMap<u32, LocationGroupRef> = BTreeMap::new();
        let mut context_group = |defs: &mut Definitions, ctx: u32, device: usize| {
            *context_groups.entry(ctx).or_insert_with(|| {
                defs.location_group(
                    &names.named(names.contexts.get(&ctx), format!("CUDA Context {ctx} of {whose}")),
                    LocationGroupType::Accelerator,
                    devices[device].node,
                    Some(process_group),
                )
            })
        };
        let mut streams = 0u64;
        let mut metric_locations = 0u64;
        let first_gpu_location = plan.locations.len();
        for (s, d) in p.defs.iter().enumerate() {
            let mut ids: Vec<_> = d.locations.iter().collect();
            ids.sort_by_key(|(id, _)| **id);
            for (id, (kind, raw_name)) in ids {
                match *kind {
                    LocationKind::GpuStream { device, context, stream } => {
                        let Some(&dev) = plan.devices.get(&device) else {
                            continue;
                        };
                        let group = context_group(defs, context, dev);
                        let k = device_index_on_host(devices, dev);
                        let lid = super::location_id(p.rank, (1 << 20) | streams);
                        streams += 1;
                        let name =
                            names.named(names.streams.get(&(context, stream)), format!("CUDA[{k}:{stream}] {whose}"));
                        let location = defs.location(lid, &name, LocationType::AcceleratorStream, group)?;
                        windows_todo.push((pi, plan.locations.len(), context));
                        plan.locations.push(LocationPlan {
                            location,
                            main: false,
                            feeds: vec![(s, *id)],
                            role: LocationRole::Host, // replaced once the windows exist
                        });
                    }
                    LocationKind::DeviceMetrics { device } => {
                        let Some(&dev) = plan.devices.get(&device) else {
                            continue;
                        };
                        let k = device_index_on_host(devices, dev);
                        let lid = super::location_id(p.rank, (1 << 21) | metric_locations);
                        metric_locations += 1;
                        // The agent's three kinds: NVLink traffic, NVML's
                        // GPU metrics (`GPU metrics d`), and the process's
                        // memory on the GPU (`CUDA memory d`).
                        let name = if raw_name.starts_with("GPU metrics") {
                            format!("GPU {k} metrics")
                        } else if raw_name.starts_with("CUDA memory") {
                            format!("CUDA memory GPU {k} {whose}")
                        } else {
                            format!("NVLink GPU {k}")
                        };
                        let location = defs.location(lid, &name, LocationType::Metric, process_group)?;
                        plan.locations.push(LocationPlan {
                            location,
                            main: false,
                            feeds: vec![(s, *id)],
                            role: LocationRole::Metrics,
                        });
                    }
                    LocationKind::HostThread { .. } | LocationKind::Lane { .. } => {}
                }
            }
            for (mid, m) in &d.metrics {
                let mut member = MetricMember::new(&m.name, &m.unit, metric_mode(m.cumulative), Type::U64);
                member.description = &m.description;
                let mm = defs.metric_member(member);
                let class = defs.metric_class(&[mm], MetricOccurrence::Asynchronous, RecorderKind::Abstract)?;
                plan.metrics[s].insert(*mid, class);
            }
        }
        if streams > 0 || has_nccl(p) {
            if let Some(host) = plan.locations.iter().find(|l| l.role == LocationRole::Host) {
                host_ranks[pi] = Some(cuda_members.len() as u32);
                cuda_members.push(host.location.id());
            }
            for l in &plan.locations[first_gpu_location..] {
                if l.role != LocationRole::Metrics {
                    cuda_members.push(l.location.id());
                }
            }
        }
    }
    Ok(GpuLocations { members: cuda_members, windows_todo, host_ranks })
}

/// The CUDA communicator (every process's host thread and streams) and
/// an RMA window per context, through which copies are one-sided
/// communication; each stream's role gets its window and ranks.
fn define_windows(
    defs: &mut Definitions,
    processes: &[Process],
    devices: usize,
    layout: &mut Layout,
    gpu: GpuLocations,
) {
    let GpuLocations { members: cuda_members, windows_todo, host_ranks } = gpu;
    let rank_of: HashMap<u64, u32> = cuda_members.iter().enumerate().map(|(i, l)| (*l, i as u32)).collect();
    defs.group("CUDA locations", GroupType::CommLocations, OtfParadigm::Cuda, GroupFlags::NONE, &cuda_members);
    let all: Vec<u64> = (0..cuda_members.len() as u64).collect();
    let group = defs.group("CUDA", GroupType::CommGroup, OtfParadigm::Cuda, GroupFlags::NONE, &all);
    let comm = defs.comm("CUDA", group, None, CommFlags::NONE);
    layout.cuda_comm = Some(comm);
    let mut windows = HashMap::new();
    layout.device_ranks = vec![None; devices];
    for (pi, li, ctx) in windows_todo {
        let p = &processes[pi];
        let window = *windows
            .entry((pi, ctx))
            .or_insert_with(|| defs.rma_win(&format!("CUDA Context {ctx} of {}", whose(p)), comm, RmaWinFlags::NONE));
        let plan = &mut layout.processes[pi];
        let loc = &plan.locations[li];
        let own_rank = rank_of[&loc.location.id()];
        let (s, id) = loc.feeds[0];
        let Some((LocationKind::GpuStream { device, .. }, _)) = p.defs[s].locations.get(&id) else {
            continue;
        };
        let dev = plan.devices[device];
        layout.device_ranks[dev].get_or_insert(own_rank);
        let host_rank = host_ranks[pi].unwrap_or(own_rank);
        plan.locations[li].role = LocationRole::GpuStream { window, own_rank, host_rank, device: dev };
    }
}

/// `rank r` for an MPI process, `process r` for another: as its process
/// group is named (`MPI Rank r`, `Process r`).
/// The names a process gave its CUDA objects through NVTX, found by the
/// handles the CUDA agent saw created (a name for a handle the agent did
/// not see is dropped: it cannot be placed).
#[derive(Default)]
struct CudaNames {
    devices: BTreeMap<u32, String>,
    contexts: HashMap<u32, String>,
    streams: HashMap<(u32, u32), String>,
}

impl CudaNames {
    fn of(p: &Process) -> CudaNames {
        let handles: HashMap<(CudaObject, u64), (u32, u32)> =
            p.defs.iter().flat_map(|d| d.cuda_handles.iter().map(|(k, v)| (*k, *v))).collect();
        let mut names = CudaNames::default();
        for ((kind, handle), name) in p.defs.iter().flat_map(|d| d.cuda_names.iter()) {
            let ids = handles.get(&(*kind, *handle)).copied();
            match (kind, ids) {
                (CudaObject::Device, _) => {
                    if let Ok(ordinal) = u32::try_from(*handle) {
                        names.devices.insert(ordinal, name.clone());
                    }
                }
                (CudaObject::Context, Some((ctx, _))) => {
                    names.contexts.insert(ctx, name.clone());
                }
                (CudaObject::Stream, Some(ids)) => {
                    names.streams.insert(ids, name.clone());
                }
                _ => {}
            }
        }
        names
    }

    /// `name (usual)` when the program named it, else the usual name.
    fn named(&self, name: Option<&String>, usual: String) -> String {
        match name {
            Some(n) => format!("{n} ({usual})"),
            None => usual,
        }
    }
}

fn whose(p: &Process) -> String {
    if p.mpi.is_some() { format!("rank {}", p.rank) } else { format!("process {}", p.rank) }
}

fn metric_mode(cumulative: bool) -> MetricMode {
    if cumulative { MetricMode::AccumulatedStart } else { MetricMode::AbsolutePoint }
}

/// The index of archive device `dev` among the devices of its host.
fn device_index_on_host(devices: &[Device], dev: usize) -> usize {
    devices[..dev].iter().filter(|d| d.host == devices[dev].host).count()
}

/// `NVLink to CUDA Device j` properties on both ends of every link.
fn nvlink_properties(defs: &mut Definitions, processes: &[Process], devices: &[Device], names: &[String]) {
    let mut seen = Vec::new();
    for p in processes {
        for l in p.defs.iter().flat_map(|d| d.nvlinks.iter()) {
            let key = (p.host.clone(), l.ends);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let find = |end: &LinkEnd| match end {
                LinkEnd::Gpu(uuid) => devices.iter().position(|d| d.host == p.host && d.uuid == *uuid),
                LinkEnd::Other(_) => None,
            };
            let describe = |end: &LinkEnd| match (end, find(end)) {
                (_, Some(i)) => names[i].clone(),
                (LinkEnd::Gpu(uuid), None) => format!("GPU {}", uuid_string(uuid)),
                (LinkEnd::Other(i), None) => format!("CPU or NVSwitch {i}"),
            };
            let value = format!(
                "{} links, NVLink {}, {} kB/s{}",
                l.links,
                l.version,
                l.bandwidth,
                if l.nvswitch { ", through NVSwitch" } else { "" }
            );
            for (here, there) in [(0, 1), (1, 0)] {
                if let Some(i) = find(&l.ends[here]) {
                    let v = defs.string(&value);
                    let name = format!("NVLink to {}", describe(&l.ends[there]));
                    defs.system_tree_node_property(devices[i].node, &name, AttributeValue::String(v));
                }
            }
        }
    }
}

/// A UUID in the usual 8-4-4-4-12 form, prefixed `GPU-` as nvidia-smi does.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}
