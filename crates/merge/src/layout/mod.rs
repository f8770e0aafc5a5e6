//! The archive's definitions: system tree, processes, locations, regions
//! and communicators, laid out as Score-P lays them out so that Vampir
//! shows a gputrace archive as it shows a Score-P one.
//!
//! - system tree: the machine `Linux` (class `machine`, domain MACHINE,
//!   property `platform`) → one `node` per host (domain SHARED_MEMORY) →
//!   `MPI Rank r` process groups (`Process r` for processes that never
//!   called MPI), and under the node one `CUDA Device d` per GPU
//!   ([`cuda`]);
//! - host threads: `Master thread` and `Pthread n` (or the name the
//!   program gave the thread with nvtxNameOsThread), CPU_THREAD locations
//!   with id `n << 32 | rank` (Score-P's: the master threads are 0..n-1);
//! - regions: one per (name, paradigm, role) over all processes; MPI
//!   regions with an empty description and source file `MPI`, as
//!   Score-P's; one program region per program (its base name, canonical
//!   name the command line, paradigm MEASUREMENT_SYSTEM, role ARTIFICIAL),
//!   and the program's name and arguments for the ProgramBegin event on
//!   each process's master thread ([`Program`]);
//! - MPI communicators ([`mpi`]); CUDA contexts, streams, copy windows and
//!   NVLink metrics ([`cuda`]).

mod cuda;
mod mpi;
mod nccl;
mod sampling;

pub use sampling::Sampled;

use std::collections::{BTreeMap, HashMap};

use crate::Result;
use otf2::{
    AttributeValue, CommRef, Definitions, LocationGroupRef, LocationGroupType, LocationRef, LocationType, MetricRef,
    Paradigm as OtfParadigm, ParadigmClass, ParadigmProperty, Region, RegionRef, RegionRole as OtfRole, RmaWinRef,
    SystemTreeDomain, SystemTreeNodeRef,
};
use raw::{LocationKind, Paradigm, RegionRole};

use crate::inputs::{Process, RegionDef};
pub use cuda::CudaAttributes;

/// A host thread of a process: its tid, whether it is the main thread, and
/// the (stream, stream-local location) pairs that recorded on it.
pub(crate) type HostThread = (u32, bool, Vec<(usize, u32)>);

/// What a location is, as the event pass needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationRole {
    Host,
    /// A CUDA stream: the copy window of its context, its own rank and its
    /// process's master thread's rank in the CUDA communicator, and the
    /// archive-wide index of its device.
    GpuStream {
        window: RmaWinRef,
        own_rank: u32,
        host_rank: u32,
        device: usize,
    },
    /// Where a device's metrics are sampled.
    Metrics,
}

/// One archive location and where its events come from.
#[derive(Debug)]
pub struct LocationPlan {
    pub location: LocationRef,
    /// (stream index, stream-local location id) pairs feeding it.
    pub feeds: Vec<(usize, u32)>,
    pub role: LocationRole,
    /// The process's master thread, which carries ProgramBegin and
    /// ProgramEnd.
    pub main: bool,
}

/// What a process ran, for its ProgramBegin event: the program's name
/// and its arguments as strings of the archive, and its process id (the
/// `ProcessId` attribute).
#[derive(Debug, Clone)]
pub struct Program {
    pub name: otf2::StringRef,
    pub args: Vec<otf2::StringRef>,
    pub pid: u64,
}

/// The attributes Score-P defines in every archive: `ProcessId` (on
/// ProgramBegin), `ThreadId`, `SOURCE_CODE_LOCATION`.
#[derive(Debug, Clone, Copy)]
pub struct ProgramAttributes {
    pub process_id: otf2::AttributeRef,
}

/// Location id of a process's `index`-th location: Score-P's scheme,
/// `index << 32 | rank`.
pub fn location_id(rank: u32, index: u64) -> u64 {
    (index << 32) | u64::from(rank)
}

/// The definitions of one process, translated.
#[derive(Debug, Default)]
pub struct ProcessPlan {
    pub group: Option<LocationGroupRef>,
    pub locations: Vec<LocationPlan>,
    /// Per stream: stream-local region id → (archive region, summary index).
    pub regions: Vec<Vec<Option<(RegionRef, usize)>>>,
    /// Per stream: stream-local communicator id → archive communicator.
    pub comms: Vec<Vec<Option<CommRef>>>,
    /// Per stream: stream-local metric id → archive metric.
    pub metrics: Vec<HashMap<u32, MetricRef>>,
    /// CUDA device ordinal of this process → archive-wide device index.
    pub devices: HashMap<u32, usize>,
    /// What the process ran, when its command is known.
    pub program: Option<Program>,
    /// What each run of a CUDA graph's NCCL kernel moves, by graph node.
    pub graph_traffic: crate::graph_traffic::GraphTraffic,
    /// Per stream: its sampled stacks' contexts ([`sampling`]).
    pub samples: Vec<sampling::Contexts>,
    /// The call path of each launch that recorded one, by correlation id.
    pub launch_paths: crate::launch_paths::LaunchPaths,
    /// What took the process's samples.
    pub interrupt: Option<otf2::InterruptGeneratorRef>,
}

/// Everything the event pass needs.
#[derive(Debug, Default)]
pub struct Layout {
    pub processes: Vec<ProcessPlan>,
    /// Region names by summary index.
    pub region_names: Vec<(String, Paradigm)>,
    /// The regions' definitions by summary index (names, paradigm, role,
    /// group), for those who describe them elsewhere (a profile).
    pub regions: Vec<RegionDef>,
    /// The sampled calling contexts, for the profile's call tree.
    pub sampled: Sampled,
    /// Present when the trace holds GPU activity.
    pub cuda: Option<CudaAttributes>,
    /// Per archive-wide device: the rank, in the CUDA communicator, of the
    /// location that stands for it as a peer copy's other end.
    pub device_ranks: Vec<Option<u32>>,
    /// Per archive-wide device: its name in the archive (`CUDA Device d`).
    pub device_names: Vec<String>,
    /// Per process: its master thread's rank in the CUDA communicator, the
    /// group that NCCL communicators index into.
    pub cuda_host_ranks: Vec<Option<u32>>,
    /// The communicator of all CUDA locations (the parent of NCCL's).
    pub cuda_comm: Option<CommRef>,
    /// `ProcessId` and the other attributes of the program's events.
    pub program_attributes: Option<ProgramAttributes>,
}

pub(super) fn otf2_paradigm(p: Paradigm) -> OtfParadigm {
    match p.shown_as() {
        Paradigm::Mpi => OtfParadigm::Mpi,
        Paradigm::Cuda => OtfParadigm::Cuda,
        Paradigm::Measurement => OtfParadigm::MeasurementSystem,
        _ => OtfParadigm::User,
    }
}

fn otf2_role(r: RegionRole) -> OtfRole {
    OtfRole::from_raw(r as u8)
}

/// Defines everything in `defs` and returns the translation tables;
/// `warn` hears of what the definitions cannot say right (an NCCL
/// communicator with ranks that were not traced).
pub fn define(defs: &mut Definitions, processes: &[Process], warn: &dyn Fn(&str)) -> Result<Layout> {
    defs.paradigm(OtfParadigm::Mpi, "MPI", ParadigmClass::Process);
    let template = defs.string("Comm ${id}");
    defs.paradigm_property(OtfParadigm::Mpi, ParadigmProperty::CommNameTemplate, AttributeValue::String(template));
    let template = defs.string("Win ${id}");
    defs.paradigm_property(OtfParadigm::Mpi, ParadigmProperty::RmaWinNameTemplate, AttributeValue::String(template));
    // Score-P's system tree: the machine (named as Score-P names a plain
    // Linux cluster), its platform, and the nodes with shared memory.
    let machine = defs.system_tree_node(MACHINE_NAME, "machine", None);
    let platform = defs.string(PLATFORM);
    defs.system_tree_node_property(machine, "platform", AttributeValue::String(platform));
    defs.system_tree_node_domain(machine, SystemTreeDomain::Machine);
    let mut nodes: BTreeMap<String, SystemTreeNodeRef> = BTreeMap::new();
    for p in processes {
        if !nodes.contains_key(&p.host) {
            let node = defs.system_tree_node(&p.host, "node", Some(machine));
            defs.system_tree_node_domain(node, SystemTreeDomain::SharedMemory);
            nodes.insert(p.host.clone(), node);
        }
    }

    let mut layout = Layout::default();
    let mut programs: Vec<(String, String)> = Vec::new();
    let mut masters: BTreeMap<u32, LocationRef> = BTreeMap::new();
    for p in processes {
        let name = if p.mpi.is_some() { format!("MPI Rank {}", p.rank) } else { format!("Process {}", p.rank) };
        let group = defs.location_group(&name, LocationGroupType::Process, nodes[&p.host], None);
        // What its sources lost, one property per kind (UINT64).
        for (what, n) in &p.lost {
            defs.location_group_property(group, &crate::lost_property(*what), AttributeValue::U64(*n));
        }
        let mut plan = ProcessPlan {
            group: Some(group),
            program: program(defs, p, &mut programs),
            graph_traffic: crate::graph_traffic::of(p),
            launch_paths: crate::launch_paths::of(p),
            ..ProcessPlan::default()
        };
        let names: HashMap<u32, &str> =
            p.defs.iter().flat_map(|d| d.thread_names.iter().map(|(tid, name)| (*tid, name.as_str()))).collect();
        let threads = host_threads(p);
        // A process whose main thread recorded nothing (its work all on
        // threads it started) has no master thread: its threads are
        // Pthread 1, 2, ... rather than the first one named the master.
        let has_main = threads.iter().any(|t| t.1);
        for (n, (tid, is_main, feeds)) in threads.into_iter().enumerate() {
            // A name the program gave the thread (nvtxNameOsThread) wins.
            let lname = match names.get(&tid) {
                Some(name) => (*name).to_string(),
                None if is_main => "Master thread".to_string(),
                None => format!("Pthread {}", if has_main { n } else { n + 1 }),
            };
            let location = defs.location(location_id(p.rank, n as u64), &lname, LocationType::CpuThread, group)?;
            if n == 0 && p.mpi.is_some() {
                masters.insert(p.rank, location);
            }
            plan.locations.push(LocationPlan { location, feeds, role: LocationRole::Host, main: n == 0 });
        }
        // Lanes: timelines the producers made themselves, named by them.
        let mut lanes = 0u64;
        for (s, d) in p.defs.iter().enumerate() {
            let mut ids: Vec<_> =
                d.locations.iter().filter(|(_, (k, _))| matches!(k, LocationKind::Lane { .. })).collect();
            ids.sort_by_key(|(id, _)| **id);
            for (id, (kind, name)) in ids {
                let LocationKind::Lane { gpu, .. } = *kind else { continue };
                let ty = if gpu { LocationType::AcceleratorStream } else { LocationType::CpuThread };
                let lid = location_id(p.rank, (1 << 22) | lanes);
                lanes += 1;
                let location = defs.location(lid, name, ty, group)?;
                let feeds = vec![(s, *id)];
                plan.locations.push(LocationPlan { location, feeds, role: LocationRole::Host, main: false });
            }
        }
        layout.processes.push(plan);
    }
    define_regions(defs, processes, &mut layout);
    cuda::define(defs, processes, &nodes, &mut layout)?;
    mpi::define(defs, processes, &masters, &mut layout);
    nccl::define(defs, processes, &mut layout, warn);
    sampling::define(defs, processes, &mut layout);
    // Score-P's attributes and program regions last: OTF2 writes small ids
    // in fewer bytes, and the ids events use on every kernel and call
    // (the first regions, the CUDA attributes) stay the smallest.
    let process_id = defs.attribute("ProcessId", "Process identifier", otf2::Type::U64);
    defs.attribute("ThreadId", "Thread identifier", otf2::Type::U64);
    defs.attribute("SOURCE_CODE_LOCATION", "Source code location", otf2::Type::SourceCodeLocation);
    layout.program_attributes = Some(ProgramAttributes { process_id });
    for (path, canonical) in &programs {
        let base = path.rsplit('/').next().unwrap_or(path);
        let mut region = Region::new(base, OtfRole::Artificial, OtfParadigm::MeasurementSystem);
        region.canonical_name = canonical;
        defs.region(region);
    }
    Ok(layout)
}

/// Score-P's name of the machine (`SCOREP_MACHINE_NAME`'s default on a
/// Linux cluster without a platform of its own) and its platform.
pub const MACHINE_NAME: &str = "Linux";
pub const PLATFORM: &str = "Linux";

/// The program process `p` ran, from its command line: its name and
/// arguments for ProgramBegin; each distinct command line goes to
/// `programs`, for the program regions Score-P defines (base name, the
/// command line as canonical name).
fn program(defs: &mut Definitions, p: &Process, programs: &mut Vec<(String, String)>) -> Option<Program> {
    let (path, args) = p.command.split_first()?;
    let canonical = p.command.join(" ");
    if !programs.iter().any(|(_, c)| *c == canonical) {
        programs.push((path.clone(), canonical));
    }
    Some(Program {
        name: defs.string(path),
        args: args.iter().map(|a| defs.string(a)).collect(),
        pid: u64::from(p.pid),
    })
}

/// The host threads of a process: its streams' thread locations joined by
/// tid, main thread first, then in order of definition.
pub(crate) fn host_threads(p: &Process) -> Vec<HostThread> {
    let mut threads: Vec<HostThread> = Vec::new();
    for (s, d) in p.defs.iter().enumerate() {
        let mut ids: Vec<_> = d.locations.iter().collect();
        ids.sort_by_key(|(id, _)| **id);
        for (id, (kind, _)) in ids {
            let LocationKind::HostThread { tid, is_main } = *kind else {
                continue;
            };
            match threads.iter_mut().find(|t| t.0 == tid) {
                Some(t) => t.2.push((s, *id)),
                None => threads.push((tid, is_main, vec![(s, *id)])),
            }
        }
    }
    threads.sort_by_key(|t| !t.1);
    threads
}

/// One archive region per distinct (name, canonical name, paradigm, role).
fn define_regions(defs: &mut Definitions, processes: &[Process], layout: &mut Layout) {
    let mut region_index: HashMap<RegionDef, (RegionRef, usize)> = HashMap::new();
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        for d in &p.defs {
            let max = d.regions.keys().copied().max().unwrap_or(0) as usize;
            let mut table = vec![None; max + 1];
            let mut ids: Vec<_> = d.regions.keys().copied().collect();
            ids.sort_unstable();
            for id in ids {
                let r = &d.regions[&id];
                let entry = *region_index.entry(r.clone()).or_insert_with(|| {
                    let mut region = Region::new(&r.name, otf2_role(r.role), otf2_paradigm(r.paradigm));
                    if r.paradigm == Paradigm::Mpi {
                        // Score-P's MPI regions: no description, file `MPI`.
                        region.source_file = "MPI";
                    } else {
                        region.description = &r.group;
                    }
                    if !r.canonical.is_empty() {
                        region.canonical_name = &r.canonical;
                    }
                    let rr = defs.region(region);
                    layout.region_names.push((r.name.clone(), r.paradigm));
                    layout.regions.push(r.clone());
                    (rr, layout.region_names.len() - 1)
                });
                table[id as usize] = Some(entry);
            }
            plan.regions.push(table);
        }
    }
}
