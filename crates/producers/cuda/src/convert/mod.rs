//! Records → raw events: which location each record belongs to, what
//! events it becomes, and in which order they are written.
//!
//! - API calls become regions on the calling host thread (CUPTI reports
//!   the kernel's tid, so the MPI stream's thread and the CUDA stream's
//!   thread are the same location in the archive), entered with the call's
//!   correlation id;
//! - synchronizations become regions on the thread whose API call they
//!   belong to (found by correlation id; a synchronization seen before its
//!   call waits for the next buffer);
//! - kernels, copies and memsets become regions on their stream's location;
//! - devices, contexts and NVLink connections become definitions, once;
//! - allocations, frees, pools and unified-memory counters go to
//!   [`crate::memory`].
//!
//! Within one buffer, each location's intervals are sorted by start (the
//! longer first on ties) and swept with a stack, so that nested calls
//! (a runtime call and the driver calls inside it) come out properly
//! nested whatever order CUPTI delivered them in.

use std::collections::{HashMap, HashSet, VecDeque};

use config::{CudaSource, EnabledSet};
use raw::{Definition, DeviceDef, Event, LinkEnd, LocationKind, NvLinkDef, Paradigm, RegionRole};
use recorder::Recorder;

use crate::graphs::Graphs;
use crate::memory::Memory;
use crate::names;
use crate::records::{ApiDomain, NvLink, Record, Span, Strings};

/// Names the records refer to by number.
pub trait Names: Strings {
    /// CUPTI's name of API callback `cbid` of `domain`.
    fn api(&self, domain: ApiDomain, cbid: u32) -> Option<String>;

    /// The thread of synchronizing call `correlation` where the runtime
    /// API is recorded from callbacks (no API record brings it).
    fn sync_thread(&self, _correlation: u32) -> Option<u32> {
        None
    }

    /// Whether host thread `tid` is one of the agent's own (its CUDA calls
    /// are not the program's).
    fn own_thread(&self, _tid: u32) -> bool {
        false
    }

    /// The (source, destination) addresses of copy `correlation`, where
    /// its API call was seen (`memory`: see [`crate::copies`]).
    fn copy_ends(&self, _correlation: u32) -> Option<crate::copies::Ends> {
        None
    }
}

/// What `GPUTRACE_CUDA_ENABLE` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Enabled {
    pub driver: bool,
    /// The runtime calls that make or wait for GPU work ([`names::is_work_call`]).
    pub runtime: bool,
    /// Every runtime call.
    pub runtime_all: bool,
    pub kernel: bool,
    pub memcpy: bool,
    pub memset: bool,
    pub peer: bool,
    pub sync: bool,
    pub nvlink: bool,
    /// One region per graph execution instead of the graphs' nodes.
    pub graph: bool,
    pub memory: bool,
    pub uvm: bool,
}

impl Enabled {
    pub fn from_set(set: &EnabledSet<CudaSource>) -> Enabled {
        Enabled {
            driver: set.contains(CudaSource::Driver),
            runtime: set.contains(CudaSource::Runtime),
            runtime_all: set.contains(CudaSource::RuntimeAll),
            kernel: set.contains(CudaSource::Kernel),
            memcpy: set.contains(CudaSource::Memcpy),
            memset: set.contains(CudaSource::Memset),
            peer: set.contains(CudaSource::Peer),
            sync: set.contains(CudaSource::Sync),
            nvlink: set.contains(CudaSource::Nvlink),
            graph: set.contains(CudaSource::Graph),
            memory: set.contains(CudaSource::Memory),
            uvm: set.contains(CudaSource::Uvm),
        }
    }

    pub fn any(&self) -> bool {
        self.driver
            || self.runtime
            || self.runtime_all
            || self.kernel
            || self.memcpy
            || self.memset
            || self.peer
            || self.sync
            || self.nvlink
            || self.graph
            || self.memory
            || self.uvm
    }
}

/// One interval on a location: its events at start and end.
#[derive(Debug, Clone, Copy)]
struct Interval {
    start: u64,
    end: u64,
    begin: Event,
    finish: Event,
    /// Attribute events that go right before `begin`.
    pre: Pre,
}

/// The attributes of an interval's begin, (name, value) pairs written as
/// attribute events right before it: a graph node's two ids, a copy's two
/// addresses. Fixed room, no allocation per interval, smaller than the
/// events themselves (intervals are sorted by the buffer).
#[derive(Debug, Clone, Copy)]
struct Pre {
    attributes: [(u32, u64); 4],
    len: u8,
}

impl Pre {
    const NONE: Pre = Pre { attributes: [(0, 0); 4], len: 0 };

    fn of(attributes: Option<[(u32, u64); 2]>) -> Pre {
        let mut pre = Pre::NONE;
        for (name, value) in attributes.into_iter().flatten() {
            pre.push(name, value);
        }
        pre
    }

    fn push(&mut self, name: u32, value: u64) {
        if let Some(slot) = self.attributes.get_mut(usize::from(self.len)) {
            *slot = (name, value);
            self.len += 1;
        }
    }

    fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.attributes[..usize::from(self.len)].iter().map(|&(name, value)| Event::Attribute { name, value })
    }
}

/// How many correlation ids → thread are remembered for late
/// synchronization records.
const CORRELATION_MEMORY: usize = 1 << 16;

/// The conversion state of one process.
pub struct Converter {
    enabled: Enabled,
    pid: u32,
    threads: HashMap<u32, u32>,
    streams: HashMap<(u32, u32, u32), u32>,
    api_regions: HashMap<(ApiDomain, u32), Option<u32>>,
    /// Runtime callback id → whether it is a work call.
    work_calls: HashMap<u32, bool>,
    kernel_regions: HashMap<u64, Option<u32>>,
    named_regions: HashMap<&'static str, Option<u32>>,
    devices: HashSet<u32>,
    contexts: HashSet<u32>,
    nvlinks: HashSet<[[u8; 16]; 2]>,
    correlation_threads: HashMap<u32, u32>,
    correlation_order: VecDeque<u32>,
    pending_syncs: Vec<Record>,
    next_copy: u64,
    graphs: Graphs,
    thread_name: fn(u32) -> String,
    /// Device ordinal → UUID, for the NVLink sampler.
    pub device_uuids: HashMap<u32, [u8; 16]>,
    memory: Memory,
    /// String ids of [`SOURCE_ADDRESS`] and [`DESTINATION_ADDRESS`].
    address_names: Option<(u32, u32)>,
}

/// The attribute of the address a copy read from (with `memory`).
pub const SOURCE_ADDRESS: &str = "source address";
/// The attribute of the address a copy wrote to (with `memory`).
pub const DESTINATION_ADDRESS: &str = "destination address";

mod work;

impl Converter {
    /// A converter for process `pid`; `thread_name` names host threads.
    pub fn new(enabled: Enabled, pid: u32, thread_name: fn(u32) -> String) -> Converter {
        Converter {
            enabled,
            pid,
            threads: HashMap::new(),
            streams: HashMap::new(),
            api_regions: HashMap::new(),
            work_calls: HashMap::new(),
            kernel_regions: HashMap::new(),
            named_regions: HashMap::new(),
            devices: HashSet::new(),
            contexts: HashSet::new(),
            nvlinks: HashSet::new(),
            correlation_threads: HashMap::new(),
            correlation_order: VecDeque::new(),
            pending_syncs: Vec::new(),
            next_copy: 1,
            graphs: Graphs::default(),
            thread_name,
            device_uuids: HashMap::new(),
            memory: Memory::default(),
            address_names: None,
        }
    }

    /// Whether `records` hold GPU work: kernels, copies, memsets or
    /// synchronizations, not only API calls (cuInit, cudaGetDeviceCount)
    /// and definitions. A process that never did any leaves no trace: a
    /// launcher or a tool that only asks CUDA what GPUs there are.
    pub fn has_work(&self, records: &[Record]) -> bool {
        let e = self.enabled;
        records.iter().any(|r| match r {
            Record::Kernel { .. }
            | Record::Memcpy { .. }
            | Record::PeerCopy { .. }
            | Record::Memset { .. }
            | Record::Sync { .. }
            | Record::GraphTrace { .. } => true,
            // Allocations are work when they are recorded (else the
            // process would get a stream with nothing in it).
            Record::Memory(_) => e.memory,
            Record::Uvm(_) => e.uvm,
            _ => false,
        })
    }

    /// Converts one buffer's records and writes them to `rec`.
    pub fn convert(&mut self, records: &[Record], names: &dyn Names, rec: &Recorder) {
        for r in records {
            if let Record::Api { correlation, thread, .. } = r {
                self.remember_correlation(*correlation, *thread);
            }
        }
        let mut intervals: HashMap<u32, Vec<Interval>> = HashMap::new();
        let pending = std::mem::take(&mut self.pending_syncs);
        for r in pending.iter().chain(records) {
            self.record(r, names, rec, &mut intervals);
        }
        let mut locations: Vec<_> = intervals.into_iter().collect();
        locations.sort_by_key(|(l, _)| *l);
        for (location, items) in locations {
            rec.write_batch(location, &sweep(items));
        }
        self.memory.write(rec);
    }

    /// Writes what waits for a later buffer, at the end of the process:
    /// synchronizations whose API call never showed up are dropped.
    pub fn finish(&mut self, rec: &Recorder) {
        if !self.pending_syncs.is_empty() {
            tracing::debug!(count = self.pending_syncs.len(), "synchronizations without their API call dropped");
            rec.note_lost(raw::SourceLoss::CudaSyncWithoutCall, self.pending_syncs.len() as u64);
            self.pending_syncs.clear();
        }
        rec.flush_definitions();
    }

    fn remember_correlation(&mut self, correlation: u32, thread: u32) {
        if self.correlation_threads.insert(correlation, thread).is_none() {
            self.correlation_order.push_back(correlation);
            if self.correlation_order.len() > CORRELATION_MEMORY
                && let Some(old) = self.correlation_order.pop_front()
            {
                self.correlation_threads.remove(&old);
            }
        }
    }

    fn record(&mut self, r: &Record, names: &dyn Names, rec: &Recorder, out: &mut HashMap<u32, Vec<Interval>>) {
        let e = self.enabled;
        match *r {
            Record::Api { domain, cbid, start, end, thread, correlation } => {
                let on = match domain {
                    ApiDomain::Driver => e.driver,
                    ApiDomain::Runtime => e.runtime || e.runtime_all,
                };
                if !on || names.own_thread(thread) {
                    return;
                }
                let Some(region) = self.api_region(domain, cbid, names, rec) else {
                    return;
                };
                // `runtime` alone: CUPTI records the work calls only where
                // it can select them (12.5+); an older CUPTI records every
                // call, and the others are left out here.
                if domain == ApiDomain::Runtime && !e.runtime_all && !self.work_call(cbid, names) {
                    return;
                }
                let loc = self.thread_location(thread, rec);
                push(out, loc, start, end, Event::EnterCorrelated { region, correlation }, Event::Leave { region });
            }
            Record::Sync { start, end, kind, correlation, .. } => {
                if !e.sync {
                    return;
                }
                let known = self.correlation_threads.get(&correlation).copied();
                let Some(thread) = known.or_else(|| names.sync_thread(correlation)) else {
                    self.pending_syncs.push(*r);
                    return;
                };
                let Some(region) = self.named_region(names::sync_region(kind), RegionRole::ImplicitBarrier, rec) else {
                    return;
                };
                let loc = self.thread_location(thread, rec);
                push(out, loc, start, end, Event::EnterCorrelated { region, correlation }, Event::Leave { region });
            }
            Record::Kernel { .. }
            | Record::GraphTrace { .. }
            | Record::Memcpy { .. }
            | Record::PeerCopy { .. }
            | Record::Memset { .. } => self.work(r, names, rec, out),
            Record::Device { id, name, uuid, multiprocessors, memory, cc } => {
                self.device_uuids.insert(id, uuid);
                if self.devices.insert(id) {
                    let name = names.get(name).unwrap_or_else(|| format!("GPU {id}"));
                    rec.define(&Definition::Device(DeviceDef {
                        id,
                        name,
                        uuid,
                        multiprocessors,
                        memory,
                        compute_capability: cc,
                    }));
                }
            }
            Record::Context { id, device } => {
                if self.contexts.insert(id) {
                    rec.define(&Definition::Context { id, device });
                }
            }
            Record::NvLink(l) => {
                if e.nvlink && self.nvlinks.insert(l.ids) {
                    rec.define(&Definition::NvLink(nvlink_def(&l)));
                }
            }
            Record::Memory(m) => {
                if e.memory {
                    self.memory.op(&m, rec);
                }
            }
            Record::Pool(p) => {
                if e.memory {
                    self.memory.pool(&p, rec);
                }
            }
            Record::Uvm(u) => {
                if e.uvm {
                    self.memory.uvm(&u, rec);
                }
            }
            // A kind this CUPTI release writes in a struct the agent does
            // not know: counted, not dropped silently.
            Record::Other(_) => rec.note_lost(raw::SourceLoss::CuptiUndecodable, 1),
        }
    }

    fn thread_location(&mut self, tid: u32, rec: &Recorder) -> u32 {
        let (pid, name) = (self.pid, self.thread_name);
        *self
            .threads
            .entry(tid)
            .or_insert_with(|| rec.define_location(LocationKind::HostThread { tid, is_main: tid == pid }, &name(tid)))
    }

    fn stream_location(&mut self, s: &Span, rec: &Recorder) -> u32 {
        if self.contexts.insert(s.context) {
            rec.define(&Definition::Context { id: s.context, device: s.device });
        }
        *self.streams.entry((s.device, s.context, s.stream)).or_insert_with(|| {
            let kind = LocationKind::GpuStream { device: s.device, context: s.context, stream: s.stream };
            rec.define_location(kind, &format!("CUDA stream {}", s.stream))
        })
    }

    fn api_region(&mut self, domain: ApiDomain, cbid: u32, names: &dyn Names, rec: &Recorder) -> Option<u32> {
        *self.api_regions.entry((domain, cbid)).or_insert_with(|| {
            let full = names.api(domain, cbid).unwrap_or_else(|| format!("CUDA API {cbid}"));
            let group = match domain {
                ApiDomain::Driver => "CUDA driver",
                ApiDomain::Runtime => "CUDA runtime",
            };
            rec.region(names::api_name(&full), None, Paradigm::Cuda, RegionRole::Wrapper, group)
        })
    }

    fn work_call(&mut self, cbid: u32, names: &dyn Names) -> bool {
        *self.work_calls.entry(cbid).or_insert_with(|| {
            names.api(ApiDomain::Runtime, cbid).is_some_and(|full| names::is_work_call(names::api_name(&full)))
        })
    }

    fn kernel_region(&mut self, name: u64, names: &dyn Names, rec: &Recorder) -> Option<u32> {
        *self.kernel_regions.entry(name).or_insert_with(|| {
            let mangled = names.get(name).unwrap_or_else(|| "[unknown kernel]".into());
            let demangled = names::demangle(&mangled);
            let canonical = (demangled != mangled).then_some(mangled.as_str());
            rec.region(&demangled, canonical, Paradigm::Cuda, RegionRole::Function, "CUDA kernel")
        })
    }

    fn named_region(&mut self, name: &'static str, role: RegionRole, rec: &Recorder) -> Option<u32> {
        *self.named_regions.entry(name).or_insert_with(|| rec.region(name, None, Paradigm::Cuda, role, "CUDA"))
    }
}

fn push(out: &mut HashMap<u32, Vec<Interval>>, loc: u32, start: u64, end: u64, begin: Event, finish: Event) {
    push_with(out, loc, start, end, begin, finish, Pre::NONE);
}

fn push_with(
    out: &mut HashMap<u32, Vec<Interval>>,
    loc: u32,
    start: u64,
    end: u64,
    begin: Event,
    finish: Event,
    pre: Pre,
) {
    out.entry(loc).or_default().push(Interval { start, end: end.max(start), begin, finish, pre });
}

fn nvlink_def(l: &NvLink) -> NvLinkDef {
    let end = |i: usize| {
        if l.types[i] == 1 {
            LinkEnd::Gpu(l.ids[i])
        } else {
            LinkEnd::Other(u32::from_le_bytes([l.ids[i][0], l.ids[i][1], l.ids[i][2], l.ids[i][3]]))
        }
    };
    NvLinkDef {
        ends: [end(0), end(1)],
        version: l.version,
        links: l.links,
        bandwidth: l.bandwidth,
        flags: l.flags,
        nvswitch: l.nvswitch,
    }
}

/// One location's intervals as events in time order, nested intervals
/// inside their enclosing ones.
fn sweep(mut items: Vec<Interval>) -> Vec<(u64, Event)> {
    items.sort_by_key(|i| (i.start, std::cmp::Reverse(i.end)));
    let mut out = Vec::with_capacity(items.len() * 2);
    let mut open: Vec<(u64, Event)> = Vec::new();
    for it in items {
        while let Some(&(end, finish)) = open.last() {
            if end > it.start {
                break;
            }
            out.push((end, finish));
            open.pop();
        }
        out.extend(it.pre.events().map(|e| (it.start, e)));
        out.push((it.start, it.begin));
        open.push((it.end, it.finish));
    }
    while let Some(top) = open.pop() {
        out.push(top);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: u64, end: u64, id: u32) -> Interval {
        Interval { start, end, begin: Event::Enter { region: id }, finish: Event::Leave { region: id }, pre: Pre::NONE }
    }

    #[test]
    fn nested_calls_come_out_nested() {
        // A runtime call [10, 50] with driver calls [10, 20] and [30, 40]
        // inside, delivered inner first, and a later call [60, 70].
        let out = sweep(vec![iv(30, 40, 3), iv(10, 20, 2), iv(60, 70, 4), iv(10, 50, 1)]);
        let ids: Vec<(u64, Event)> = out;
        let expect = [
            (10, Event::Enter { region: 1 }),
            (10, Event::Enter { region: 2 }),
            (20, Event::Leave { region: 2 }),
            (30, Event::Enter { region: 3 }),
            (40, Event::Leave { region: 3 }),
            (50, Event::Leave { region: 1 }),
            (60, Event::Enter { region: 4 }),
            (70, Event::Leave { region: 4 }),
        ];
        assert_eq!(ids, expect);
    }

    /// A graph node's attribute events go right before its begin event,
    /// after the Leave of the node before it at the same time, so that
    /// the merge attaches them to the right Enter.
    #[test]
    fn attributes_come_right_before_their_begin() {
        let attr = |value| Event::Attribute { name: 9, value };
        let mut second = iv(20, 30, 2);
        second.pre = Pre::of(Some([(9, 7), (9, 42)]));
        let out = sweep(vec![second, iv(10, 20, 1)]);
        let events: Vec<Event> = out.iter().map(|(_, e)| *e).collect();
        assert_eq!(
            events,
            [
                Event::Enter { region: 1 },
                Event::Leave { region: 1 },
                attr(7),
                attr(42),
                Event::Enter { region: 2 },
                Event::Leave { region: 2 },
            ]
        );
        assert_eq!(out[2].0, 20);
    }

    #[test]
    fn back_to_back_and_empty_intervals_keep_order() {
        let out = sweep(vec![iv(20, 30, 2), iv(10, 20, 1), iv(30, 30, 3)]);
        let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, [10, 20, 20, 30, 30, 30]);
        assert_eq!(out[1].1, Event::Leave { region: 1 });
        assert_eq!(out[4].1, Event::Enter { region: 3 });
    }
}
