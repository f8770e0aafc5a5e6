//! The event pass: every location's timeline, translated into the
//! archive's ids and handed to a [`Sink`] (the archive's event writer,
//! the summary's counters, or both).
//!
//! Region stacks are checked as events go by: a Leave that does not match
//! the innermost open region closes the regions opened inside it first; a
//! Leave of a region that is not open is dropped; regions still open when
//! a location's events end (a process killed mid-call) are closed at its
//! last timestamp. Each repair is counted in the summary.
//!
//! GPU events become what [`super::layout`] promises: kernels, copies and
//! memsets are regions on their stream with their parameters as
//! attributes; a copy is also an RMA operation of its context's window
//! (a get from the host for HtoD, a put for DtoH, DtoD and peer copies
//! from the source GPU), completed when the copy ends.

use std::collections::HashMap;

use otf2::{AttributeRef, AttributeValue, Collective as OtfCollective, CollectiveOp as OtfOp, CommRef, RegionRef};
use raw::{Collective, CopyKind, Event, KernelConfig};

use crate::Result;
use crate::inputs::Process;
use crate::layout::{CudaAttributes, Layout, LocationPlan, LocationRole, ProcessPlan};
use crate::sink::SinkError;
use crate::sink::{InContext, Left, Message, Record, Sink, Work};

mod attributes;
mod cut;
mod graph;
mod launched;
mod memory;
mod pipeline;

pub use attributes::Attributes;

pub(crate) use pipeline::EVENTS as PIPELINE_EVENTS;

/// The pass's own result: one word (see [`SinkError`]).
type Step = std::result::Result<(), SinkError>;
use crate::timeline::{Source, Timeline};

/// The state of one location's pass.
struct Pass<'a, S: Sink> {
    plan: &'a ProcessPlan,
    layout: &'a Layout,
    role: LocationRole,
    sink: S,
    stack: Vec<(RegionRef, usize, u64)>,
    process: &'a Process,
    /// Attributes of the next event, from attribute events.
    pending: Vec<(AttributeRef, AttributeValue)>,
    attributes: &'a mut Attributes,
    repairs: Repairs,
    /// The repeating attributes (launch configuration, memory kinds) last
    /// written for each region of this location: written again only when
    /// they change (docs/otf2-mapping.md, "Attributes written once").
    repeating: HashMap<RegionRef, Vec<(AttributeRef, AttributeValue)>>,
    /// A graph launch call whose NCCL traffic was written where it
    /// began: its region and correlation id, for the rest at its end
    /// ([`crate::graph_traffic`]).
    graph_launch: Option<(RegionRef, u32)>,
    /// The newest GPU work of the process the flight recorder gave back
    /// (0: none): a launch before it may have had its work given back,
    /// so it carries no correlation id (it would read as never finished).
    gpu_cut: u64,
    /// The call path of the next Enter (a CallPath event), and those of
    /// the open regions entered with one: (their depth in `stack`, it).
    next_cx: Option<InContext>,
    contexts: Vec<(usize, InContext)>,
}

/// What the pass of one location met and repaired.
#[derive(Debug, Default, Clone, Copy)]
pub struct Repairs {
    /// Raw events read.
    pub events: u64,
    /// Timestamps that went backwards, raised to the one before.
    pub clamped: u64,
    /// Regions closed because a Leave of an outer region or the end of
    /// the location came first.
    pub closed_open_regions: u64,
    /// Leaves of regions that were not open, dropped.
    pub unmatched_leaves: u64,
    /// Calls open at a flight recorder's cut, entered at the location's
    /// first event (not a repair: their Enter was given back).
    pub opened_at_cut: u64,
}

/// What a location's pass is given besides its sink.
pub struct Context<'a> {
    pub process: &'a Process,
    pub plan: &'a ProcessPlan,
    pub layout: &'a Layout,
    /// OTF2 attributes of attribute events, by (name, string-valued),
    /// shared by all locations.
    pub attributes: &'a mut Attributes,
    /// Told how many events were read, now and then, and of problems in
    /// the raw data.
    pub observer: &'a dyn crate::Observer,
    /// The location's raised timestamps ([`crate::correct::Floors::of`]):
    /// usually none.
    pub floors: Vec<(u64, u64)>,
    /// Read the location on a thread of its own while it is written
    /// ([`pipeline`]): a large location, and a thread is free.
    pub pipelined: bool,
    /// When the process was seen stopped without closing its trace: the
    /// calls still open at the location's end last until then.
    pub stopped_at: Option<u64>,
}

/// Hands the events of one location to `sink`.
pub fn location_events(cx: Context<'_>, loc: &LocationPlan, sink: impl Sink) -> Result<Repairs> {
    let process = cx.process;
    let mut sources = Vec::new();
    for &(stream, local) in &loc.feeds {
        let file = &process.streams[stream];
        for chunk in file.chunks.iter().filter(|c| c.header.location == local) {
            sources.push(Source { file, stream, chunk: *chunk });
        }
    }
    // A location the flight recorder cut: the calls open at the cut have
    // their Leave and not their Enter; they are entered at its first event.
    let cut = loc.feeds.iter().any(|&(stream, local)| process.defs[stream].expired.contains_key(&local));
    let mut at_cut = (cut && matches!(loc.role, LocationRole::Host))
        .then(|| cut::open_at_cut(cx.plan, Timeline::new(sources.clone())))
        .filter(|open| !open.is_empty());
    let timeline = Timeline::new(sources);
    let mut pass = Pass {
        plan: cx.plan,
        layout: cx.layout,
        role: loc.role,
        sink,
        stack: Vec::new(),
        process,
        pending: Vec::new(),
        attributes: cx.attributes,
        repairs: Repairs::default(),
        repeating: HashMap::new(),
        graph_launch: None,
        gpu_cut: cut::gpu_cut(process),
        next_cx: None,
        contexts: Vec::new(),
    };
    let mut last = 0u64;
    let mut count = 0u64;
    // The master thread carries the program's begin and end, at its first
    // and last event (Score-P's ProgramBegin, ProgramEnd).
    let program = if loc.main { cx.plan.program.as_ref() } else { None };
    let mut begun = false;
    let mut raise = crate::correct::Raise::new(cx.floors);
    // One event's step, in the plain loop and in the pipelined one's
    // batches alike (a closure called per event cost a 10-million-event
    // merge 11%).
    macro_rules! step {
        ($t:expr, $stream:expr, $ev:expr) => {{
            let t = raise.at($t);
            if !begun && let Some(p) = program {
                begun = true;
                pass.program(t, Some(p))?;
            }
            if let Some(open) = at_cut.take() {
                pass.repairs.opened_at_cut = open.len() as u64;
                for &(region, index) in open.iter().rev() {
                    pass.enter_region(t, &[], region, index, Work::Call)?;
                }
            }
            last = t;
            count += 1;
            if count.is_multiple_of(65536) {
                cx.observer.progress(65536);
            }
            pass.event(t, $stream, $ev)?;
        }};
    }
    let (clamped, problems) = if cx.pipelined {
        pipeline::pipelined(timeline, |batch| {
            for (t, stream, ev) in batch.drain(..) {
                step!(t, stream, ev);
            }
            Ok(())
        })?
    } else {
        let mut timeline = timeline;
        for (t, stream, ev) in &mut timeline {
            step!(t, stream, ev);
        }
        (timeline.clamped, timeline.problems)
    };
    cx.observer.progress(count % 65536);
    // Calls still in flight in a process seen stopped end when it was.
    let end = if pass.stack.is_empty() { last } else { cx.stopped_at.map_or(last, |s| s.max(last)) };
    pass.close_open_regions(end)?;
    if begun {
        pass.program(end, None)?;
    }
    pass.repairs.events = count;
    pass.repairs.clamped = clamped;
    for p in &problems {
        cx.observer.warning(&format!("{}: {p}", process.host));
    }
    Ok(pass.repairs)
}

impl<S: Sink> Pass<'_, S> {
    /// ProgramBegin (with the process id, as Score-P) or ProgramEnd.
    fn program(&mut self, t: u64, begin: Option<&crate::layout::Program>) -> Step {
        let attrs = match (begin, self.layout.program_attributes) {
            (Some(p), Some(a)) => vec![(a.process_id, AttributeValue::U64(p.pid))],
            _ => Vec::new(),
        };
        self.sink.program(t, &attrs, begin)
    }

    fn region(&self, stream: usize, id: u32) -> Option<(RegionRef, usize)> {
        self.plan.regions[stream].get(id as usize).copied().flatten()
    }

    fn is_nccl(&self, stream: usize) -> bool {
        self.process.streams[stream].header.producer == raw::Producer::Nccl
    }

    fn comm(&self, stream: usize, id: u32) -> Option<CommRef> {
        self.plan.comms.get(stream).and_then(|c| c.get(id as usize)).copied().flatten()
    }

    /// Message `m` of `stream` as the sink takes it, on the archive's
    /// communicator (`None`: one the archive does not have).
    fn message(&self, stream: usize, m: &raw::Message, request: Option<u64>) -> Message {
        let comm = self.comm(stream, m.comm);
        Message { peer: m.peer, comm, tag: m.tag as u32, bytes: m.bytes, request, nccl: self.is_nccl(stream) }
    }

    /// The end of collective `k` of `stream`.
    fn collective_end(&mut self, t: u64, stream: usize, k: &Collective, request: Option<u64>) -> Step {
        let collective = self.comm(stream, k.comm).map(|c| collective(k, c));
        let nccl = self.is_nccl(stream);
        self.emit(t, &[], Record::CollectiveEnd { collective, sent: k.sent, received: k.received, request, nccl })
    }

    /// Hands `record` to the sink with the pending attributes (those of
    /// attribute events before it) and `attrs`. A record the archive does
    /// not get leaves the pending attributes for the next one.
    #[inline(always)]
    fn emit(&mut self, t: u64, attrs: &[(AttributeRef, AttributeValue)], record: Record) -> Step {
        if self.pending.is_empty() || !crate::sink::written(&record) {
            self.sink.record(t, attrs, &record)?;
        } else {
            let mut all = std::mem::take(&mut self.pending);
            all.extend_from_slice(attrs);
            self.sink.record(t, &all, &record)?;
        }
        Ok(())
    }

    fn enter(&mut self, t: u64, stream: usize, id: u32, work: Work, attrs: &[(AttributeRef, AttributeValue)]) -> Step {
        let Some((region, index)) = self.region(stream, id) else {
            self.next_cx = None;
            return Ok(());
        };
        self.enter_region(t, attrs, region, index, work)
    }

    /// Enters a region known to the archive, with the pending attributes
    /// and `attrs`.
    #[inline]
    fn enter_region(
        &mut self,
        t: u64,
        attrs: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
    ) -> Step {
        if let Some(cx) = self.next_cx.take() {
            let mut all = std::mem::take(&mut self.pending);
            all.extend_from_slice(attrs);
            self.sink.enter_in(t, &all, region, index, work, cx)?;
            self.contexts.push((self.stack.len(), cx));
        } else if self.pending.is_empty() {
            self.sink.enter(t, attrs, region, index, work)?;
        } else {
            let mut all = std::mem::take(&mut self.pending);
            all.extend_from_slice(attrs);
            self.sink.enter(t, &all, region, index, work)?;
        }
        self.stack.push((region, index, t));
        Ok(())
    }

    /// Leaves an open region, with the pending attributes (OTF2 attaches
    /// them to the next record, whatever it is).
    #[inline]
    fn leave_region(&mut self, t: u64, region: RegionRef, index: usize, duration: u64) -> Step {
        if self.contexts.last().is_some_and(|c| c.0 == self.stack.len()) {
            let (_, cx) = self.contexts.pop().expect("checked");
            let all = std::mem::take(&mut self.pending);
            return self.sink.leave_in(t, &all, Left { region, index, duration }, cx);
        }
        if self.pending.is_empty() {
            self.sink.leave(t, &[], region, index, duration)
        } else {
            let all = std::mem::take(&mut self.pending);
            self.sink.leave(t, &all, region, index, duration)
        }
    }

    #[inline]
    fn leave(&mut self, t: u64, stream: usize, id: u32) -> Step {
        let Some((r, _)) = self.region(stream, id) else {
            return Ok(());
        };
        let Some(depth) = self.stack.iter().rposition(|(open, _, _)| *open == r) else {
            self.repairs.unmatched_leaves += 1;
            return Ok(());
        };
        while self.stack.len() > depth {
            let (open, index, since) = self.stack.pop().expect("depth < len");
            if open != r {
                self.repairs.closed_open_regions += 1;
            }
            self.leave_region(t, open, index, t - since)?;
        }
        Ok(())
    }

    /// The regions still open at the location's last event: calls that
    /// had not returned when its recording ended (a hung or killed
    /// process). Each is left there, its Leave marked with
    /// [`crate::archive::IN_FLIGHT`] for `analyze`.
    fn close_open_regions(&mut self, last: u64) -> Step {
        while let Some((open, index, since)) = self.stack.pop() {
            self.repairs.closed_open_regions += 1;
            if let Some(a) = self.named_attribute(
                crate::archive::IN_FLIGHT,
                "the call had not returned when the location's recording ended: its Leave is that end",
                otf2::Type::U64,
            ) {
                self.pending.retain(|(p, _)| *p != a);
                self.pending.push((a, AttributeValue::U64(1)));
            }
            self.leave_region(last, open, index, last - since)?;
        }
        Ok(())
    }

    fn event(&mut self, t: u64, stream: usize, ev: Event) -> Step {
        match ev {
            Event::Enter { region } => self.enter(t, stream, region, Work::Call, &[])?,
            Event::Leave { region } => {
                if self.graph_launch.is_some() {
                    self.graph_launch_ends(t, stream, region)?;
                }
                self.leave(t, stream, region)?
            }
            Event::MpiSend(m) | Event::MpiIsend { msg: m, .. } => {
                let request = if let Event::MpiIsend { request, .. } = ev { Some(request) } else { None };
                let m = self.message(stream, &m, request);
                if m.comm.is_some() && !self.pending.is_empty() {
                    let all = std::mem::take(&mut self.pending);
                    self.sink.send(t, &all, &m)?;
                } else {
                    self.sink.send(t, &[], &m)?;
                }
            }
            Event::MpiRecv(m) | Event::MpiIrecv { msg: m, .. } => {
                let request = if let Event::MpiIrecv { request, .. } = ev { Some(request) } else { None };
                let m = self.message(stream, &m, request);
                if m.comm.is_some() {
                    let all = std::mem::take(&mut self.pending);
                    self.sink.recv(t, &all, &m)?;
                }
            }
            Event::MpiCollectiveEnd(k) | Event::NonBlockingCollectiveComplete { coll: k, .. } => {
                let request =
                    if let Event::NonBlockingCollectiveComplete { request, .. } = ev { Some(request) } else { None };
                self.collective_end(t, stream, &k, request)?;
            }
            Event::MpiIsendComplete { request } => self.emit(t, &[], Record::IsendComplete { request })?,
            Event::MpiIrecvRequest { request } => self.emit(t, &[], Record::IrecvRequest { request })?,
            Event::MpiRequestTest { request } => self.emit(t, &[], Record::RequestTest { request })?,
            Event::MpiRequestCancelled { request } => self.emit(t, &[], Record::RequestCancelled { request })?,
            Event::MpiCollectiveBegin => self.emit(t, &[], Record::CollectiveBegin)?,
            Event::NonBlockingCollectiveRequest { request } => {
                self.emit(t, &[], Record::CollectiveRequest { request })?
            }
            Event::EnterCorrelated { region, correlation } => {
                let cuda = self.cuda().filter(|_| t > self.gpu_cut);
                let attrs: Vec<_> = cuda.map(|a| (a.correlation, correlation.into())).into_iter().collect();
                self.enter(t, stream, region, Work::Call, &attrs)?;
                if !self.plan.graph_traffic.is_empty() && self.graph_launch.is_none() {
                    self.graph_launch_begins(t, stream, region, correlation)?;
                }
            }
            Event::KernelBegin { region, correlation, config } => {
                let attrs = match self.cuda() {
                    Some(a) => {
                        let always = vec![(a.correlation, correlation.into())];
                        self.unless_repeated(stream, region, always, &launch_configuration(&a, &config))
                    }
                    None => Vec::new(),
                };
                self.launched(correlation);
                self.enter(t, stream, region, Work::Kernel, &attrs)?;
            }
            Event::MemsetBegin { region, correlation, bytes, memory } => {
                let attrs = match self.cuda() {
                    Some(a) => {
                        let memory = self.string(memory.name());
                        let always = vec![(a.correlation, correlation.into()), (a.bytes, bytes.into())];
                        self.unless_repeated(stream, region, always, &[(a.memory, memory)])
                    }
                    None => Vec::new(),
                };
                self.launched(correlation);
                self.enter(t, stream, region, Work::Memset { bytes }, &attrs)?;
            }
            Event::CopyBegin(k) => self.copy_begin(t, stream, &k)?,
            Event::CopyEnd { region, id } => {
                if let LocationRole::GpuStream { window, .. } = self.role {
                    self.emit(t, &[], Record::RmaComplete { window, id })?;
                }
                self.leave(t, stream, region)?;
            }
            Event::Attribute { name, value } => self.attribute(stream, name, Ok(value)),
            Event::AttributeString { name, value } => self.attribute(stream, name, Err(value)),
            Event::Metric { metric, value } => {
                if let Some(&metric) = self.plan.metrics[stream].get(&metric) {
                    self.emit(t, &[], Record::Metric { metric, value })?;
                }
            }
            Event::Sample { frame } => {
                let context = self.plan.samples.get(stream).and_then(|c| c.get(&frame));
                if let (Some(&(context, depth)), Some(generator)) = (context, self.plan.interrupt) {
                    self.emit(t, &[], Record::Sample { context, depth, generator })?;
                }
            }
            Event::CallPath { frame } => {
                self.next_cx = self
                    .plan
                    .samples
                    .get(stream)
                    .and_then(|c| c.get(&frame))
                    .map(|&(context, depth)| InContext { context, depth });
            }
            Event::MemAlloc(m) | Event::MemFree(m) => self.memory_op(t, stream, &m)?,
            Event::MemPool(p) => self.memory_pool(t, stream, &p)?,
        }
        Ok(())
    }

    /// An attribute of the merge's own (the memory events', the in-flight
    /// mark), defined at its first use (archives without such events do
    /// not get it).
    fn named_attribute(&mut self, name: &str, description: &str, ty: otf2::Type) -> Option<AttributeRef> {
        let mut defs = self.sink.defs()?;
        let key = (name.to_string(), ty == otf2::Type::String);
        Some(self.attributes.get(key, || defs.attribute(name, description, ty)))
    }

    /// An attribute event: remembered for the next record (only when
    /// the sink writes definitions: nothing else reads attributes).
    fn attribute(&mut self, stream: usize, name: u32, value: Result<u64, u32>) {
        let strings = &self.process.defs[stream].strings;
        let Some(name) = strings.get(&name) else { return };
        let Some(mut defs) = self.sink.defs() else { return };
        let key = (name.clone(), value.is_err());
        let attr = self.attributes.get(key, || {
            let ty = if value.is_err() { otf2::Type::String } else { otf2::Type::U64 };
            defs.attribute(name, "", ty)
        });
        let v = match value {
            Ok(n) => AttributeValue::U64(n),
            Err(s) => AttributeValue::String(defs.string(strings.get(&s).map_or("", String::as_str))),
        };
        // The same attribute twice on one record is refused by OTF2: the
        // later value wins.
        self.pending.retain(|(a, _)| *a != attr);
        self.pending.push((attr, v));
    }

    fn cuda(&self) -> Option<CudaAttributes> {
        self.layout.cuda
    }

    fn string(&mut self, s: &str) -> AttributeValue {
        match self.sink.defs() {
            Some(mut defs) => AttributeValue::String(defs.string(s)),
            None => AttributeValue::U32(0),
        }
    }

    /// `always` followed by `repeating`, unless the last event of the same
    /// region on this location had the same: a launch configuration or
    /// memory kind that repeats is written once (a reader carries an
    /// attribute an event lacks over from the region's previous event on
    /// the location). Nothing is stored or copied when it repeats.
    fn unless_repeated(
        &mut self,
        stream: usize,
        id: u32,
        mut always: Vec<(AttributeRef, AttributeValue)>,
        repeating: &[(AttributeRef, AttributeValue)],
    ) -> Vec<(AttributeRef, AttributeValue)> {
        let Some((region, _)) = self.region(stream, id) else {
            return always;
        };
        let last = self.repeating.entry(region).or_default();
        if last.as_slice() != repeating {
            last.clear();
            last.extend_from_slice(repeating);
            always.extend_from_slice(repeating);
        }
        always
    }

    fn device_name(&self, ordinal: u32) -> String {
        match self.plan.devices.get(&ordinal) {
            Some(&d) => self.layout.device_names[d].clone(),
            None => format!("CUDA device {ordinal} (unknown)"),
        }
    }

    fn copy_begin(&mut self, t: u64, stream: usize, k: &raw::MemCopy) -> Step {
        let attrs = match self.cuda() {
            Some(a) => {
                let mut always = vec![
                    (a.correlation, k.correlation.into()),
                    (a.bytes, k.bytes.into()),
                    (a.copy_kind, self.string(k.kind.short_name())),
                ];
                if let Some(p) = k.peer {
                    let (src, dst) = (self.device_name(p.src_device), self.device_name(p.dst_device));
                    always.push((a.src_device, self.string(&src)));
                    always.push((a.dst_device, self.string(&dst)));
                }
                let memories = [(a.src_memory, self.string(k.src.name())), (a.dst_memory, self.string(k.dst.name()))];
                self.unless_repeated(stream, k.region, always, &memories)
            }
            None => Vec::new(),
        };
        let Some((region, index)) = self.region(stream, k.region) else {
            return Ok(());
        };
        self.launched(k.correlation);
        self.enter_region(t, &attrs, region, index, Work::Copy { kind: k.kind, bytes: k.bytes })?;
        let LocationRole::GpuStream { window, own_rank, host_rank, device } = self.role else {
            return Ok(());
        };
        let (bytes, id) = (k.bytes, k.id);
        let record = match (k.kind, k.peer) {
            (CopyKind::HostToDevice, _) => Record::RmaGet { window, remote: host_rank, bytes, id },
            (CopyKind::DeviceToHost | CopyKind::HostToHost, _) => {
                Record::RmaPut { window, remote: host_rank, bytes, id }
            }
            (CopyKind::PeerToPeer, Some(p)) => {
                let src = self.plan.devices.get(&p.src_device).copied();
                let dst = self.plan.devices.get(&p.dst_device).copied();
                let rank_of = |d: Option<usize>| d.and_then(|d| self.layout.device_ranks.get(d).copied().flatten());
                if src == Some(device) || src.is_none() {
                    Record::RmaPut { window, remote: rank_of(dst).unwrap_or(own_rank), bytes, id }
                } else {
                    Record::RmaGet { window, remote: rank_of(src).unwrap_or(own_rank), bytes, id }
                }
            }
            _ => Record::RmaPut { window, remote: own_rank, bytes, id },
        };
        self.emit(t, &[], record)
    }
}

/// A kernel's launch configuration as attributes (on the stack: the
/// merge's per-kernel path).
fn launch_configuration(a: &CudaAttributes, k: &KernelConfig) -> [(AttributeRef, AttributeValue); 9] {
    [
        (a.grid[0], k.grid[0].into()),
        (a.block[0], k.block[0].into()),
        (a.grid[1], k.grid[1].into()),
        (a.block[1], k.block[1].into()),
        (a.grid[2], k.grid[2].into()),
        (a.block[2], k.block[2].into()),
        (a.registers, k.registers.into()),
        (a.static_shared, k.static_shared.into()),
        (a.dynamic_shared, k.dynamic_shared.into()),
    ]
}

fn collective(k: &Collective, comm: CommRef) -> OtfCollective {
    OtfCollective {
        op: OtfOp::from_raw(k.op as u8),
        comm,
        root: k.root,
        bytes_sent: k.sent,
        bytes_received: k.received,
    }
}
