//! What each event of a location does to the pass: an Enter opens a
//! region on the stack (with a copy's bytes and ends, a kernel's NVTX
//! range, a graph launch), a Leave closes it, sends and RMA operations
//! feed the matrices, metrics the GPU's series and the NVLink counters.

use otf2::reader::{EventContext, EventVisitor};
use otf2::{CommRef, MetricRef, MetricValue, RegionRef, RmaWinRef};

use super::{MetricSeries, Open, Pass};
use crate::model::{CopyKind, LocationKind, RegionKind};

impl EventVisitor for Pass<'_> {
    fn calling_context_sample(
        &mut self,
        _: &EventContext<'_>,
        context: otf2::CallingContextRef,
        _: u32,
        _: otf2::InterruptGeneratorRef,
    ) {
        self.out.samples.add(self.process, context);
    }

    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        if self.kind == LocationKind::Metrics {
            let bytes = self.out.model.attributes.bytes;
            let (process, gpu) = (self.process, self.gpu);
            self.out.memory.enter(&self.out.model, self.defs, region, &ev.attributes, bytes, process, gpu, ev.time);
        }
        let kind = self.region_kind(region);
        let mut bytes = 0;
        let mut ends = None;
        if matches!(kind, RegionKind::Copy(_) | RegionKind::Memset) && !ev.attributes.is_empty() {
            let attrs = self.out.model.attributes;
            let number = |a: Option<otf2::AttributeRef>| a.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64());
            bytes = number(attrs.bytes).unwrap_or(0);
            if let (Some(src), Some(dst)) = (number(attrs.src_address), number(attrs.dst_address)) {
                ends = Some((src, dst));
            }
            if kind == RegionKind::Copy(CopyKind::PtoP) {
                let src = self.string_attr(ev, attrs.src_device);
                let dst = self.string_attr(ev, attrs.dst_device);
                let model = &self.out.model;
                let gpu = |d: Option<String>| d.and_then(|d| model.gpu_by_device(self.process, &d));
                match (gpu(src), gpu(dst)) {
                    (Some(s), Some(d)) => self.out.gpu.add_peer_copy(s, d, bytes),
                    _ => self.out.gpu.peer_unmapped += u128::from(bytes),
                }
            }
        }
        let mut nvtx_range = None;
        let mut graph = None;
        let correlation = self.out.model.attributes.correlation;
        let correlation = correlation.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64());
        if let Some(corr) = correlation {
            if self.kind == LocationKind::GpuStream
                && let Some(g) =
                    self.out.model.attributes.graph.and_then(|a| ev.attributes.get(a)).and_then(|v| v.as_u64())
            {
                graph = Some((g, corr));
            }
            match self.kind {
                // A CUDA call inside a range: the first call with an id
                // (the runtime's, around the driver's) names the range.
                LocationKind::HostThread if kind == RegionKind::CudaApi => {
                    if let Some(range) = self.innermost_range() {
                        self.launch_ranges.entry((self.process, corr)).or_insert(range);
                    }
                }
                LocationKind::GpuStream if kind == RegionKind::Kernel => {
                    nvtx_range = self.launch_ranges.get(&(self.process, corr)).copied();
                }
                _ => {}
            }
        }
        self.stack.push(Open { region, kind, start: ev.time, bytes, nvtx_range, graph, ends, correlation });
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let Some(depth) = self.stack.iter().rposition(|o| o.region == region) else { return };
        while self.stack.len() > depth {
            let open = self.stack.pop().expect("depth < len");
            self.close(open, ev.time);
        }
    }

    fn mpi_send(&mut self, _ev: &EventContext<'_>, receiver: u32, comm: CommRef, _tag: u32, length: u64) {
        self.message(comm, receiver, length);
    }

    fn mpi_isend(&mut self, _ev: &EventContext<'_>, receiver: u32, comm: CommRef, _tag: u32, length: u64, _id: u64) {
        self.message(comm, receiver, length);
    }

    fn rma_put(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, id: u64) {
        self.rma_start(ev, win, remote, bytes, id, true);
    }

    fn rma_get(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, id: u64) {
        self.rma_start(ev, win, remote, bytes, id, false);
    }

    fn rma_op_complete_blocking(&mut self, ev: &EventContext<'_>, _win: RmaWinRef, id: u64) {
        self.rma_end(ev, id);
    }

    fn rma_op_complete_non_blocking(&mut self, ev: &EventContext<'_>, _win: RmaWinRef, id: u64) {
        self.rma_end(ev, id);
    }

    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        let Some(name) = self.out.model.metric_names.get(&metric) else { return };
        let value = match values.first() {
            Some(MetricValue::U64(v)) => *v,
            Some(MetricValue::I64(v)) => (*v).max(0) as u64,
            Some(MetricValue::F64(v)) => v.max(0.0) as u64,
            None => return,
        };
        if name.starts_with("UVM ") || name.starts_with("CUDA ") {
            // The process's memory (cuda_mem_sum, cuda_uvm_sum), not the GPU's.
            self.out.memory.metric(name, value, self.process, self.gpu);
            return;
        }
        if !name.starts_with("NVLink ") {
            if self.kind == LocationKind::Metrics
                && let Some(g) = self.gpu
            {
                let series = self.out.gpu_metrics.entry((g, name.clone())).or_insert_with(|| MetricSeries {
                    unit: self.out.model.metric_units.get(&metric).cloned().unwrap_or_default(),
                    ..MetricSeries::default()
                });
                series.add(value);
                series.points.push((self.out.model.ns_since_start(ev.time), value));
            }
            return;
        }
        let c = self.nvlink.entry(self.location).or_default();
        match name.as_str() {
            "NVLink sent" => {
                c.sent = c.sent.max(value);
                c.samples += 1;
            }
            "NVLink received" => c.received = c.received.max(value),
            _ => {}
        }
    }
}
