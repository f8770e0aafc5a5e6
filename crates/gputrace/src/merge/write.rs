//! The event pass: every location's timeline, translated into the
//! archive's ids, written through its event writer and counted for the
//! summary.
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

use anyhow::{Context, Result};
use otf2_writer::{
    AttributeRef, AttributeValue, Collective as OtfCollective, CollectiveOp as OtfOp, CommRef, EventWriter,
    MetricValue, RegionRef,
};
use raw::{Collective, Copy, CopyKind, Event, KernelConfig};

use super::inputs::Process;
use super::layout::{CudaAttributes, Layout, LocationPlan, LocationRole, ProcessPlan};
use super::progress::Progress;
use super::summary::Summary;
use super::timeline::{Source, Timeline};

/// The state of one location's pass.
struct Pass<'a, 'w> {
    plan: &'a ProcessPlan,
    layout: &'a Layout,
    role: LocationRole,
    writer: Option<EventWriter<'w>>,
    summary: &'a mut Summary,
    stack: Vec<(RegionRef, usize, u64)>,
    process: &'a Process,
    /// Attributes of the next event, from attribute events.
    pending: Vec<(AttributeRef, AttributeValue)>,
    attributes: &'a mut HashMap<(String, bool), AttributeRef>,
}

/// What the event pass of every location adds to.
pub struct Outputs<'a> {
    pub summary: &'a mut Summary,
    /// OTF2 attributes of attribute events, by (name, string-valued).
    pub attributes: &'a mut HashMap<(String, bool), AttributeRef>,
    pub progress: &'a Progress,
}

/// Writes (or, without a writer, only counts) the events of one location.
pub fn location_events(
    process: &Process,
    plan: &ProcessPlan,
    layout: &Layout,
    loc: &LocationPlan,
    writer: Option<EventWriter<'_>>,
    out: &mut Outputs<'_>,
) -> Result<()> {
    let (summary, attributes, progress) = (&mut *out.summary, &mut *out.attributes, out.progress);
    let mut sources = Vec::new();
    for &(stream, local) in &loc.feeds {
        let file = &process.streams[stream];
        for chunk in file.chunks.iter().filter(|c| c.header.location == local) {
            sources.push(Source { file, stream, chunk: *chunk });
        }
    }
    let mut timeline = Timeline::new(sources);
    let mut pass = Pass {
        plan,
        layout,
        role: loc.role,
        writer,
        summary,
        stack: Vec::new(),
        process,
        pending: Vec::new(),
        attributes,
    };
    let mut last = 0u64;
    let mut count = 0u64;
    for (t, stream, ev) in &mut timeline {
        last = t;
        count += 1;
        if count.is_multiple_of(65536) {
            progress.add(65536);
        }
        pass.event(t, stream, ev)?;
    }
    progress.add(count % 65536);
    pass.close_open_regions(last)?;
    pass.summary.events += count;
    pass.summary.clamped += timeline.clamped;
    for p in &timeline.problems {
        say!("[gputrace] warning: {}: {p}", process.host);
    }
    if let Some(w) = pass.writer {
        w.close().context("closing an event writer")?;
    }
    Ok(())
}

impl<'w> Pass<'_, 'w> {
    fn region(&self, stream: usize, id: u32) -> Option<(RegionRef, usize)> {
        self.plan.regions[stream].get(id as usize).copied().flatten()
    }

    fn is_nccl(&self, stream: usize) -> bool {
        self.process.streams[stream].header.producer == raw::Producer::Nccl
    }

    fn comm(&self, stream: usize, id: u32) -> Option<CommRef> {
        self.plan.comms.get(stream).and_then(|c| c.get(id as usize)).copied().flatten()
    }

    fn enter(&mut self, t: u64, stream: usize, id: u32, attrs: &[(AttributeRef, AttributeValue)]) -> Result<()> {
        let Some((r, idx)) = self.region(stream, id) else {
            return Ok(());
        };
        if let Some(w) = self.ready()? {
            if attrs.is_empty() {
                w.enter(t, r)?;
            } else {
                w.attributes(attrs)?.enter(t, r)?;
            }
        }
        self.stack.push((r, idx, t));
        Ok(())
    }

    fn leave(&mut self, t: u64, stream: usize, id: u32) -> Result<()> {
        let Some((r, _)) = self.region(stream, id) else {
            return Ok(());
        };
        let Some(depth) = self.stack.iter().rposition(|(open, _, _)| *open == r) else {
            self.summary.unmatched_leaves += 1;
            return Ok(());
        };
        while self.stack.len() > depth {
            let (open, idx, since) = self.stack.pop().expect("depth < len");
            if open != r {
                self.summary.closed_open_regions += 1;
            }
            if let Some(w) = self.ready()? {
                w.leave(t, open)?;
            }
            self.summary.region_done(idx, t - since);
        }
        Ok(())
    }

    fn close_open_regions(&mut self, last: u64) -> Result<()> {
        while let Some((open, idx, since)) = self.stack.pop() {
            self.summary.closed_open_regions += 1;
            if let Some(w) = self.ready()? {
                w.leave(last, open)?;
            }
            self.summary.region_done(idx, last - since);
        }
        Ok(())
    }

    fn event(&mut self, t: u64, stream: usize, ev: Event) -> Result<()> {
        match ev {
            Event::Enter { region } => self.enter(t, stream, region, &[])?,
            Event::Leave { region } => self.leave(t, stream, region)?,
            Event::MpiSend(m) | Event::MpiIsend { msg: m, .. } => {
                if self.is_nccl(stream) {
                    self.summary.nccl_messages += 1;
                    self.summary.nccl_message_bytes += m.bytes;
                } else {
                    self.summary.p2p_messages += 1;
                    self.summary.p2p_bytes += m.bytes;
                }
                if let Some(c) = self.comm(stream, m.comm)
                    && let Some(w) = self.ready()?
                {
                    match ev {
                        Event::MpiIsend { request, .. } => w.mpi_isend(t, m.peer, c, m.tag as u32, m.bytes, request)?,
                        _ => w.mpi_send(t, m.peer, c, m.tag as u32, m.bytes)?,
                    }
                }
            }
            Event::MpiRecv(m) | Event::MpiIrecv { msg: m, .. } => {
                if let Some(c) = self.comm(stream, m.comm)
                    && let Some(w) = self.ready()?
                {
                    match ev {
                        Event::MpiIrecv { request, .. } => w.mpi_irecv(t, m.peer, c, m.tag as u32, m.bytes, request)?,
                        _ => w.mpi_recv(t, m.peer, c, m.tag as u32, m.bytes)?,
                    }
                }
            }
            Event::MpiCollectiveEnd(k) | Event::NonBlockingCollectiveComplete { coll: k, .. } => {
                if self.is_nccl(stream) {
                    self.summary.nccl_collectives += 1;
                    self.summary.nccl_collective_bytes += k.sent;
                } else {
                    self.summary.collectives += 1;
                    self.summary.collective_bytes += k.sent;
                }
                if let Some(c) = self.comm(stream, k.comm)
                    && let Some(w) = self.ready()?
                {
                    match ev {
                        Event::NonBlockingCollectiveComplete { request, .. } => {
                            w.non_blocking_collective_complete(t, &collective(&k, c), request)?
                        }
                        _ => w.mpi_collective_end(t, &collective(&k, c))?,
                    }
                }
            }
            Event::MpiIsendComplete { request } => self.write(|w| w.mpi_isend_complete(t, request))?,
            Event::MpiIrecvRequest { request } => self.write(|w| w.mpi_irecv_request(t, request))?,
            Event::MpiRequestTest { request } => self.write(|w| w.mpi_request_test(t, request))?,
            Event::MpiRequestCancelled { request } => self.write(|w| w.mpi_request_cancelled(t, request))?,
            Event::MpiCollectiveBegin => self.write(|w| w.mpi_collective_begin(t))?,
            Event::NonBlockingCollectiveRequest { request } => {
                self.write(|w| w.non_blocking_collective_request(t, request))?
            }
            Event::EnterCorrelated { region, correlation } => {
                let attrs: Vec<_> = self.cuda().map(|a| (a.correlation, correlation.into())).into_iter().collect();
                self.enter(t, stream, region, &attrs)?;
            }
            Event::KernelBegin { region, correlation, config } => {
                self.summary.kernels += 1;
                let attrs = self.cuda().map(|a| kernel_attributes(&a, correlation, &config)).unwrap_or_default();
                self.enter(t, stream, region, &attrs)?;
            }
            Event::MemsetBegin { region, correlation, bytes, memory } => {
                self.summary.memsets += 1;
                self.summary.memset_bytes += bytes;
                let attrs = self
                    .cuda()
                    .map(|a| {
                        vec![
                            (a.correlation, correlation.into()),
                            (a.bytes, bytes.into()),
                            (a.memory, self.string(memory.name())),
                        ]
                    })
                    .unwrap_or_default();
                self.enter(t, stream, region, &attrs)?;
            }
            Event::CopyBegin(k) => self.copy_begin(t, stream, &k)?,
            Event::CopyEnd { region, id } => {
                if let LocationRole::GpuStream { window, .. } = self.role
                    && let Some(w) = self.ready()?
                {
                    w.rma_op_complete_blocking(t, window, id)?;
                }
                self.leave(t, stream, region)?;
            }
            Event::Attribute { name, value } => self.attribute(stream, name, Ok(value)),
            Event::AttributeString { name, value } => self.attribute(stream, name, Err(value)),
            Event::Metric { metric, value } => {
                if let Some(&m) = self.plan.metrics[stream].get(&metric)
                    && let Some(w) = self.ready()?
                {
                    w.metric(t, m, &[MetricValue::U64(value)])?;
                }
            }
        }
        Ok(())
    }

    fn write(&mut self, f: impl FnOnce(&mut EventWriter<'_>) -> otf2_writer::Result<()>) -> Result<()> {
        if let Some(w) = self.ready()? {
            f(w)?;
        }
        Ok(())
    }

    /// The writer, with the pending attributes attached to the record it
    /// writes next; call it only right before writing a record.
    fn ready(&mut self) -> Result<Option<&mut EventWriter<'w>>> {
        let Some(w) = self.writer.as_mut() else {
            self.pending.clear();
            return Ok(None);
        };
        if !self.pending.is_empty() {
            w.attributes(&self.pending)?;
            self.pending.clear();
        }
        Ok(Some(w))
    }

    /// An attribute event: remembered for the next record.
    fn attribute(&mut self, stream: usize, name: u32, value: Result<u64, u32>) {
        let strings = &self.process.defs[stream].strings;
        let Some(name) = strings.get(&name) else { return };
        let Some(w) = self.writer.as_mut() else { return };
        let key = (name.clone(), value.is_err());
        let attr = *self.attributes.entry(key).or_insert_with(|| {
            let ty = if value.is_err() { otf2_writer::Type::String } else { otf2_writer::Type::U64 };
            w.defs().attribute(name, "", ty)
        });
        let v = match value {
            Ok(n) => AttributeValue::U64(n),
            Err(s) => AttributeValue::String(w.defs().string(strings.get(&s).map_or("", String::as_str))),
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
        match &mut self.writer {
            Some(w) => AttributeValue::String(w.defs().string(s)),
            None => AttributeValue::U32(0),
        }
    }

    fn device_name(&self, ordinal: u32) -> String {
        match self.plan.devices.get(&ordinal) {
            Some(&d) => self.layout.device_names[d].clone(),
            None => format!("CUDA device {ordinal} (unknown)"),
        }
    }

    fn copy_begin(&mut self, t: u64, stream: usize, k: &Copy) -> Result<()> {
        self.summary.copy(k.kind, k.bytes);
        let attrs = match self.cuda() {
            Some(a) => {
                let mut v = vec![
                    (a.correlation, k.correlation.into()),
                    (a.bytes, k.bytes.into()),
                    (a.copy_kind, self.string(k.kind.short_name())),
                    (a.src_memory, self.string(k.src.name())),
                    (a.dst_memory, self.string(k.dst.name())),
                ];
                if let Some(p) = k.peer {
                    let (src, dst) = (self.device_name(p.src_device), self.device_name(p.dst_device));
                    v.push((a.src_device, self.string(&src)));
                    v.push((a.dst_device, self.string(&dst)));
                }
                v
            }
            None => Vec::new(),
        };
        self.enter(t, stream, k.region, &attrs)?;
        let LocationRole::GpuStream { window, own_rank, host_rank, device } = self.role else {
            return Ok(());
        };
        let Some(w) = &mut self.writer else {
            return Ok(());
        };
        match (k.kind, k.peer) {
            (CopyKind::HostToDevice, _) => w.rma_get(t, window, host_rank, k.bytes, k.id)?,
            (CopyKind::DeviceToHost | CopyKind::HostToHost, _) => w.rma_put(t, window, host_rank, k.bytes, k.id)?,
            (CopyKind::PeerToPeer, Some(p)) => {
                let src = self.plan.devices.get(&p.src_device).copied();
                let dst = self.plan.devices.get(&p.dst_device).copied();
                let rank_of = |d: Option<usize>| d.and_then(|d| self.layout.device_ranks.get(d).copied().flatten());
                if src == Some(device) || src.is_none() {
                    w.rma_put(t, window, rank_of(dst).unwrap_or(own_rank), k.bytes, k.id)?
                } else {
                    w.rma_get(t, window, rank_of(src).unwrap_or(own_rank), k.bytes, k.id)?
                }
            }
            _ => w.rma_put(t, window, own_rank, k.bytes, k.id)?,
        }
        Ok(())
    }
}

fn kernel_attributes(a: &CudaAttributes, correlation: u32, k: &KernelConfig) -> Vec<(AttributeRef, AttributeValue)> {
    let mut v = vec![(a.correlation, correlation.into())];
    for i in 0..3 {
        v.push((a.grid[i], k.grid[i].into()));
        v.push((a.block[i], k.block[i].into()));
    }
    v.push((a.registers, k.registers.into()));
    v.push((a.static_shared, k.static_shared.into()));
    v.push((a.dynamic_shared, k.dynamic_shared.into()));
    v
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
