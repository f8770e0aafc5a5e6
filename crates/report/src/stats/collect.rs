//! One pass over an archive that gathers everything the reports need:
//! durations per name and category, copy sizes, messages between ranks,
//! bytes between GPUs and the NVLink counters.
//!
//! Locations are read one at a time; while one is read the pass keeps its
//! open regions on a stack (an Enter's time, and a copy's bytes and GPUs).
//! What outlives a location is aggregate: [`durations::Table`] slots per
//! name, and matrices indexed by process or GPU.
//!
//! Host threads are read before streams, so that kernels can be summed
//! under the NVTX range that launched them (`nvtx_kern_sum`): a host
//! thread's pass notes, for each CUDA API call made inside an NVTX push/pop
//! range, its correlation id and the innermost such range; a stream's pass
//! looks each kernel's correlation id up there. What is kept between the
//! two is one map entry per launch inside a range.

use std::collections::HashMap;

use crate::Result;
use otf2::reader::{EventContext, GlobalDefs, TraceReader};
use otf2::{AttributeValue, CommRef, LocationRef, Paradigm, RegionRef, RmaWinRef};

use crate::durations;
use crate::matrix::{GpuMatrix, MpiMatrix};
use crate::model::{CopyKind, LocationKind, Model, NvtxStyle, RegionKind};
use crate::window::Window;

use super::longest::{Instance, Trace};

mod events;

/// Categories of per-name statistics, one report each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    CudaApi,
    Kernel,
    /// Copies and memsets, by kind.
    Memory,
    Mpi,
    Nccl,
    /// NVTX ranges by `domain:name`, one category per style.
    NvtxPushPop,
    NvtxStartEnd,
    /// Regions of paradigm USER (Score-P's user regions) and COMPILER
    /// (compiler instrumentation), NVTX's apart.
    User,
    Compiler,
}

/// Statistics of one name of one category.
#[derive(Debug)]
pub struct Named {
    pub name: String,
    /// Durations (ns).
    pub time: usize,
    /// Sizes (bytes), for memory operations.
    pub size: Option<usize>,
    /// The process, when statistics are kept per process (`--by-rank`).
    pub process: Option<usize>,
}

/// NVLink counters of one GPU: the largest cumulative value any process
/// sampled (processes sharing a GPU read the same device counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NvlinkCounters {
    pub sent: u64,
    pub received: u64,
    pub samples: u64,
}

/// The samples of one metric of one GPU (`gpu_metrics_sum`): every
/// process's that sampled the GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricSeries {
    pub unit: String,
    pub samples: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
    /// (ns since the trace's start, value), in the order read: what
    /// `gputrace plot --metrics` draws (a sample per period per GPU
    /// metric: 600 KiB per GPU metric and hour at the default 10 ms).
    pub points: Vec<(u64, u64)>,
}

impl MetricSeries {
    fn add(&mut self, value: u64) {
        if self.samples == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.sum += u128::from(value);
        self.samples += 1;
    }

    pub fn mean(&self) -> f64 {
        if self.samples == 0 { 0.0 } else { self.sum as f64 / self.samples as f64 }
    }
}

/// What the pass gathered.
#[derive(Debug)]
pub struct Collected {
    pub model: Model,
    pub times: durations::Table,
    pub sizes: durations::Table,
    pub named: HashMap<Category, Vec<Named>>,
    pub mpi: MpiMatrix,
    pub gpu: GpuMatrix,
    pub nvlink: Vec<NvlinkCounters>,
    /// GPU metrics other than NVLink's, by (GPU, metric name).
    pub gpu_metrics: std::collections::BTreeMap<(usize, String), MetricSeries>,
    pub events: u64,
    /// Kernel durations by (NVTX range, kernel name).
    pub nvtx_kern: NvtxKernels,
    /// CUDA graph executions (`cuda_graph_sum`).
    pub graphs: super::graphs::GraphExecutions,
    /// Allocations, frees, leaks and unified memory.
    pub memory: super::memory::MemoryStats,
    /// Whether [`Named`] statistics are per process (`--by-rank`).
    pub by_rank: bool,
    /// The longest instances, for the `*_trace` reports.
    pub longest: super::longest::Longest,
    /// Sampled call stacks (`sampled_sum`).
    pub samples: super::samples::Samples,
}

/// Kernels summed under the NVTX push/pop range whose thread launched them.
#[derive(Debug, Default)]
pub struct NvtxKernels {
    /// Range names (`domain:name`), by range index.
    pub ranges: Vec<String>,
    /// (range index, kernel name, durations slot in [`Collected::times`]).
    pub rows: Vec<(usize, String, usize)>,
    /// Kernels whose launch was made outside every push/pop range (or
    /// whose launch the archive lacks).
    pub outside: u64,
}

/// An open region.
struct Open {
    region: RegionRef,
    kind: RegionKind,
    start: u64,
    bytes: u64,
    /// Of a kernel: the NVTX range (index) its launch was made in.
    nvtx_range: Option<usize>,
    /// Of GPU work a CUDA graph ran: (graph id, launch correlation id).
    graph: Option<(u64, u64)>,
    /// Of a copy: the (source, destination) addresses, where known.
    ends: Option<(u64, u64)>,
    /// The CUDA correlation id, of API calls and GPU work.
    correlation: Option<u64>,
}

/// A copy seen only as an RMA operation (Score-P's way): its start.
struct RmaCopy {
    start: u64,
    kind: CopyKind,
    bytes: u64,
}

struct Pass<'a> {
    defs: &'a GlobalDefs,
    out: Collected,
    /// Slot per (category, name, process when by rank), and per region
    /// id, category and process.
    by_name: HashMap<(Category, String, Option<usize>), usize>,
    region_slots: HashMap<(Category, RegionRef, Option<usize>), usize>,
    location: LocationRef,
    kind: LocationKind,
    process: usize,
    gpu: Option<usize>,
    stack: Vec<Open>,
    /// (stack depth, receiver process) of sends inside open MPI regions.
    sends: Vec<(usize, usize)>,
    rma: HashMap<u64, RmaCopy>,
    /// Per NVLink metric location: (sent, received, samples).
    nvlink: HashMap<LocationRef, NvlinkCounters>,
    /// (process, correlation id) of CUDA API calls made inside an NVTX
    /// push/pop range → that range's index (the innermost one).
    launch_ranges: HashMap<(usize, u64), usize>,
    /// NVTX range index per region and per name.
    range_of_region: HashMap<RegionRef, usize>,
    range_by_name: HashMap<String, usize>,
    /// Row of `nvtx_kern` per (range index, kernel name).
    nvtx_kern_rows: HashMap<(usize, String), usize>,
}

/// Reads every location of the archive.
pub fn collect(reader: &mut TraceReader) -> Result<Collected> {
    collect_with(reader, false)
}

/// Reads every location of the archive; with `by_rank`, the statistics of
/// names are kept per process (a slot per name and process).
pub fn collect_with(reader: &mut TraceReader, by_rank: bool) -> Result<Collected> {
    collect_in(reader, by_rank, &Window::default())
}

/// [`collect_with`], of what is inside `window` only (see [`crate::window`]).
pub fn collect_in(reader: &mut TraceReader, by_rank: bool, window: &Window) -> Result<Collected> {
    collect_longest(reader, by_rank, window, super::longest::DEFAULT_LONGEST)
}

/// [`collect_in`], keeping the `longest` longest instances of each
/// `*_trace` report.
pub fn collect_longest(reader: &mut TraceReader, by_rank: bool, window: &Window, longest: usize) -> Result<Collected> {
    let model = Model::new(reader.defs());
    let cut = window.resolve(&model)?;
    let defs = reader.defs().clone();
    let processes = model.processes.len();
    let gpus = model.gpus.len();
    let mut pass = Pass {
        defs: &defs,
        out: Collected {
            model,
            times: durations::Table::default(),
            sizes: durations::Table::default(),
            named: HashMap::new(),
            mpi: MpiMatrix::new(processes),
            gpu: GpuMatrix::new(gpus),
            nvlink: vec![NvlinkCounters::default(); gpus],
            gpu_metrics: std::collections::BTreeMap::new(),
            events: 0,
            nvtx_kern: NvtxKernels::default(),
            graphs: Default::default(),
            memory: Default::default(),
            by_rank,
            longest: super::longest::Longest::new(longest),
            samples: super::samples::Samples::new(&defs),
        },
        by_name: HashMap::new(),
        region_slots: HashMap::new(),
        location: LocationRef::from_id(0),
        kind: LocationKind::HostThread,
        process: 0,
        gpu: None,
        stack: Vec::new(),
        sends: Vec::new(),
        rma: HashMap::new(),
        nvlink: HashMap::new(),
        launch_ranges: HashMap::new(),
        range_of_region: HashMap::new(),
        range_by_name: HashMap::new(),
        nvtx_kern_rows: HashMap::new(),
    };
    // Host threads first: their launches name the ranges kernels go under.
    let mut order = reader.locations();
    order.sort_by_key(|l| {
        let stream = pass.out.model.locations.get(l).is_some_and(|i| i.kind == LocationKind::GpuStream);
        (stream, *l)
    });
    for loc in order {
        let Some(info) = pass.out.model.locations.get(&loc) else { continue };
        if !cut.keeps_process(info.process) {
            continue;
        }
        (pass.location, pass.kind, pass.process, pass.gpu) = (loc, info.kind, info.process, info.gpu);
        let summary = cut.read_location(reader, loc, &mut pass).map_err(|e| crate::read_error(reader, loc, e))?;
        pass.out.events += summary.events;
        pass.out.memory.end_location(loc);
        pass.stack.clear();
        pass.sends.clear();
        pass.rma.clear();
    }
    for (loc, c) in std::mem::take(&mut pass.nvlink) {
        if let Some(g) = pass.out.model.locations.get(&loc).and_then(|l| l.gpu) {
            let n = &mut pass.out.nvlink[g];
            n.sent = n.sent.max(c.sent);
            n.received = n.received.max(c.received);
            n.samples += c.samples;
        }
    }
    Ok(pass.out)
}

impl Pass<'_> {
    fn category(kind: RegionKind) -> Option<Category> {
        Some(match kind {
            RegionKind::CudaApi | RegionKind::Sync => Category::CudaApi,
            RegionKind::Kernel => Category::Kernel,
            RegionKind::Copy(_) | RegionKind::Memset => Category::Memory,
            RegionKind::Mpi => Category::Mpi,
            RegionKind::Nccl => Category::Nccl,
            RegionKind::Nvtx | RegionKind::Graph | RegionKind::CudaMemory | RegionKind::Other => return None,
        })
    }

    /// The process statistics go under: this location's when by rank.
    fn rank_key(&self) -> Option<usize> {
        self.out.by_rank.then_some(self.process)
    }

    /// The slot of a name in a category (and process, by rank), made on
    /// first use.
    fn slot_by_name(&mut self, category: Category, name: &str) -> usize {
        let process = self.rank_key();
        if let Some(&s) = self.by_name.get(&(category, name.to_owned(), process)) {
            return s;
        }
        let time = self.out.times.slot();
        let size = (category == Category::Memory).then(|| self.out.sizes.slot());
        let list = self.out.named.entry(category).or_default();
        list.push(Named { name: name.to_owned(), time, size, process });
        let index = list.len() - 1;
        self.by_name.insert((category, name.to_owned(), process), index);
        index
    }

    fn record(&mut self, category: Category, slot: usize, ns: u64, bytes: Option<u64>) {
        let named = &self.out.named[&category][slot];
        let (time, size) = (named.time, named.size);
        self.out.times.add(time, ns);
        if let (Some(size), Some(b)) = (size, bytes) {
            self.out.sizes.add(size, b);
        }
    }

    /// The name a region's statistics go under: memory operations by kind
    /// (whatever a tool calls them), everything else by region name.
    fn stat_name(&self, region: RegionRef, kind: RegionKind) -> String {
        match kind {
            RegionKind::Copy(k) => k.region_name().to_owned(),
            RegionKind::Memset => "[CUDA memset]".to_owned(),
            _ => self.out.model.region(region).map_or_else(String::new, |r| match &r.nvtx {
                Some(n) => n.qualified(&r.name),
                None => r.name.clone(),
            }),
        }
    }

    fn region_kind(&self, region: RegionRef) -> RegionKind {
        self.out
            .model
            .region(region)
            .map_or(RegionKind::Other, |r| if self.kind == LocationKind::GpuStream { r.on_stream } else { r.on_host })
    }

    fn string_attr(&self, ev: &EventContext<'_>, attr: Option<otf2::AttributeRef>) -> Option<String> {
        match ev.attributes.get(attr?)? {
            AttributeValue::String(s) => Some(self.defs.string(s).to_owned()),
            _ => None,
        }
    }

    /// The innermost NVTX push/pop range open on this host thread, as a
    /// range index.
    fn innermost_range(&mut self) -> Option<usize> {
        let model = &self.out.model;
        let region = self.stack.iter().rev().find_map(|o| {
            let nvtx = model.region(o.region)?.nvtx.as_ref()?;
            (o.kind == RegionKind::Nvtx && nvtx.style == NvtxStyle::PushPop).then_some(o.region)
        })?;
        if let Some(&r) = self.range_of_region.get(&region) {
            return Some(r);
        }
        let name = self.stat_name(region, RegionKind::Nvtx);
        let ranges = &mut self.out.nvtx_kern.ranges;
        let r = *self.range_by_name.entry(name.clone()).or_insert_with(|| {
            ranges.push(name);
            ranges.len() - 1
        });
        self.range_of_region.insert(region, r);
        Some(r)
    }

    /// A kernel's duration under the range its launch was made in.
    fn record_nvtx_kernel(&mut self, range: usize, region: RegionRef, ns: u64) {
        let name = self.stat_name(region, RegionKind::Kernel);
        let row = match self.nvtx_kern_rows.get(&(range, name.clone())) {
            Some(&row) => row,
            None => {
                let time = self.out.times.slot();
                let rows = &mut self.out.nvtx_kern.rows;
                rows.push((range, name.clone(), time));
                self.nvtx_kern_rows.insert((range, name), rows.len() - 1);
                rows.len() - 1
            }
        };
        let time = self.out.nvtx_kern.rows[row].2;
        self.out.times.add(time, ns);
    }

    fn close(&mut self, open: Open, time: u64) {
        let ns = self.out.model.ns(time.saturating_sub(open.start));
        if let Some((src, dst)) = open.ends {
            let (process, bytes, start) = (self.process, open.bytes, self.out.model.ns_since_start(open.start));
            self.out.memory.copies.push(super::memory::CopyEnds { process, src, dst, bytes, start, ns });
        }
        if let Some((graph, correlation)) = open.graph {
            self.out.graphs.add(self.process, graph, correlation, open.kind, open.start, time);
        }
        if open.kind == RegionKind::Kernel {
            match open.nvtx_range {
                Some(range) => self.record_nvtx_kernel(range, open.region, ns),
                None => self.out.nvtx_kern.outside += 1,
            }
        }
        let depth = self.stack.len();
        // Sends made inside this region share its time.
        let mine = self.sends.iter().filter(|(d, _)| *d == depth).count();
        if mine > 0 {
            let share = ns as f64 / mine as f64;
            for &(_, to) in self.sends.iter().filter(|(d, _)| *d == depth) {
                self.out.mpi.add_time(self.process, to, share);
            }
            self.sends.retain(|(d, _)| *d != depth);
        }
        let category = match open.kind {
            // Marks have no length: they are not ranges.
            RegionKind::Nvtx => match self.out.model.region(open.region).and_then(|r| r.nvtx.as_ref()) {
                Some(n) if n.style == NvtxStyle::PushPop => Category::NvtxPushPop,
                Some(n) if n.style == NvtxStyle::StartEnd => Category::NvtxStartEnd,
                _ => return,
            },
            RegionKind::Other if self.kind == LocationKind::HostThread => {
                match self.out.model.region(open.region).map(|r| r.paradigm) {
                    Some(Paradigm::User) => Category::User,
                    Some(Paradigm::Compiler) => Category::Compiler,
                    _ => return,
                }
            }
            kind => match Self::category(kind) {
                Some(c) => c,
                None => return,
            },
        };
        let key = (category, open.region, self.rank_key());
        let slot = match self.region_slots.get(&key) {
            Some(&s) => s,
            None => {
                let name = self.stat_name(open.region, open.kind);
                let s = self.slot_by_name(category, &name);
                self.region_slots.insert(key, s);
                s
            }
        };
        let bytes = matches!(open.kind, RegionKind::Copy(_) | RegionKind::Memset).then_some(open.bytes);
        self.record(category, slot, ns, bytes);
        let trace = match category {
            Category::CudaApi => Trace::CudaApi,
            Category::Kernel | Category::Memory if self.kind == LocationKind::GpuStream => Trace::Gpu,
            Category::Mpi => Trace::Mpi,
            _ => return,
        };
        if !self.out.longest.wants(trace, ns) {
            self.out.longest.count(trace);
            return;
        }
        let instance = Instance {
            ns,
            start: self.out.model.ns_since_start(open.start),
            region: open.region,
            name: self.out.named[&category][slot].name.clone(),
            location: self.location,
            process: self.process,
            correlation: open.correlation,
            bytes,
        };
        self.out.longest.add(trace, instance);
    }

    /// A copy known only from its RMA record, on a stream outside any copy
    /// region: its kind from what the remote end is.
    fn rma_start(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, id: u64, put: bool) {
        if self.kind != LocationKind::GpuStream
            || self.stack.iter().any(|o| matches!(o.kind, RegionKind::Copy(_) | RegionKind::Memset))
        {
            return;
        }
        let model = &self.out.model;
        let remote_loc = model
            .windows
            .get(&win)
            .and_then(|c| model.comms.get(c))
            .and_then(|c| c.locations.get(remote as usize).copied().flatten());
        let remote_info = remote_loc.and_then(|l| model.locations.get(&l));
        let kind = match remote_info {
            Some(r) if r.kind == LocationKind::HostThread => {
                if put {
                    CopyKind::DtoH
                } else {
                    CopyKind::HtoD
                }
            }
            Some(r) if r.gpu.is_some() && r.gpu != self.gpu => CopyKind::PtoP,
            _ => CopyKind::DtoD,
        };
        if kind == CopyKind::PtoP
            && let (Some(a), Some(b)) = (self.gpu, remote_info.and_then(|r| r.gpu))
        {
            let (src, dst) = if put { (a, b) } else { (b, a) };
            self.out.gpu.add_peer_copy(src, dst, bytes);
        }
        self.rma.insert(id, RmaCopy { start: ev.time, kind, bytes });
    }

    fn rma_end(&mut self, ev: &EventContext<'_>, id: u64) {
        if let Some(c) = self.rma.remove(&id) {
            let slot = self.slot_by_name(Category::Memory, c.kind.region_name());
            let ns = self.out.model.ns(ev.time.saturating_sub(c.start));
            self.record(Category::Memory, slot, ns, Some(c.bytes));
        }
    }

    fn message(&mut self, comm: CommRef, peer: u32, bytes: u64) {
        let Some(info) = self.out.model.comms.get(&comm) else { return };
        let to = if info.is_self { Some(self.process) } else { info.processes.get(peer as usize).copied().flatten() };
        let Some(to) = to else { return };
        if info.is_nccl {
            let model = &self.out.model;
            let (a, b) = (model.processes[self.process].gpu, model.processes[to].gpu);
            match (a, b) {
                (Some(a), Some(b)) => self.out.gpu.add_nccl(a, b, bytes),
                _ => self.out.gpu.nccl_unmapped += u128::from(bytes),
            }
            return;
        }
        self.out.mpi.add_message(self.process, to, bytes);
        if let Some(depth) = self.stack.iter().rposition(|o| o.kind == RegionKind::Mpi) {
            self.sends.push((depth, to));
        }
    }
}
