//! NCCL operations judged on the GPU (stragglers): each rank's NCCL
//! kernel joined to its collective call, the kernel time on its process's
//! streams since its previous NCCL kernel, and the GPUs' sampled clocks.
//!
//! A kernel joins the calls of its process made before it was launched
//! and not joined yet: its launch is inside the call, or in the
//! `ncclGroupEnd` of the group the call was made in. The launch's entry is
//! known when the archive has the launch call (`CUDA correlation id`;
//! NCCL launches with `cuLaunchKernelEx`, recorded with
//! `GPUTRACE_CUDA_ENABLE=default,driver`); else the kernel's start stands
//! for it, which a kernel launched before the call but started after its
//! entry would pass too. Send/receive kernels (`SendRecv`) join no
//! collective. Calls and kernel starts are read in either order (a kernel
//! often starts before its call returns; a straggling GPU starts it long
//! after), so each process keeps the calls whose kernel has not started
//! and the kernels started whose calls may still end. An operation is
//! judged once every rank has ended its call and started its kernel;
//! without every rank's kernel (no CUDA tracing), by the calls' entries,
//! at the latest at the end of the pass.

use std::collections::VecDeque;

use otf2::reader::EventContext;
use otf2::{CommRef, LocationRef, MetricRef, MetricValue, RegionRef};

use super::{Map, Pass};
use crate::analyze::stragglers::{Arrival, GpuArrival, GpuSamples, Link, Sampled, Transfers};

/// Calls waiting for their kernel, and kernels for their calls, kept per
/// process (the oldest go first).
const MAX_PER_PROCESS: usize = 1024;
/// Operations waiting for their calls or kernels (the oldest are judged
/// by their calls, or dropped, first).
const MAX_OPERATIONS: usize = 4096;

/// A kernel's start and its GPU's side.
#[derive(Clone)]
struct Started {
    start: u64,
    gpu: GpuArrival,
}

#[derive(Default)]
struct Operation {
    arrivals: Option<Vec<Arrival>>,
    /// (process, its kernel).
    kernels: Vec<(usize, Started)>,
}

/// A process's kernel time since its last NCCL kernel started.
#[derive(Default)]
struct KernelClock {
    /// That start, or the process's first kernel's.
    prev: Option<u64>,
    since: Vec<(RegionRef, u64)>,
    copies: Transfers,
}

#[derive(Default)]
pub(super) struct NcclGpu {
    /// Per process: NCCL calls whose kernel has not started (comm,
    /// sequence, call entry).
    waiting: Map<usize, VecDeque<(CommRef, u64, u64)>>,
    /// Per process: NCCL kernels started (their launch's entry, or their
    /// start).
    started: Map<usize, VecDeque<(u64, Started)>>,
    clocks: Map<usize, KernelClock>,
    operations: Map<(CommRef, u64), Operation>,
    order: VecDeque<(CommRef, u64)>,
    /// NVML's GPU metrics locations read, and their GPU.
    pub(super) metric_locations: Map<LocationRef, usize>,
    pub(super) metric_events: u64,
    samples: GpuSamples,
}

impl Pass<'_> {
    /// Host thread `l` ended the call (entered at `enter`) of the
    /// `seq`-th collective on NCCL communicator `comm`.
    pub(super) fn nccl_call_ended(&mut self, l: usize, comm: CommRef, seq: u64, enter: u64) {
        let process = self.locs[l].process;
        let started = self.nccl_gpu.started.entry(process).or_default();
        // Kernels launched before this call: not its (nor a later call's).
        while started.front().is_some_and(|(launched, _)| *launched < enter) {
            started.pop_front();
        }
        if let Some((_, k)) = started.front() {
            let k = k.clone();
            self.nccl_joined(comm, seq, process, k);
            return;
        }
        let waiting = self.nccl_gpu.waiting.entry(process).or_default();
        if waiting.len() >= MAX_PER_PROCESS {
            waiting.pop_front();
        }
        waiting.push_back((comm, seq, enter));
    }

    /// NCCL kernel `region` started at `t` on stream `l`, launched by
    /// `launch`.
    pub(super) fn nccl_kernel_started(&mut self, l: usize, region: RegionRef, t: u64, launch: Option<(usize, u64)>) {
        let process = self.locs[l].process;
        let clock = self.nccl_gpu.clocks.entry(process).or_default();
        let gpu = GpuArrival {
            gpu: self.locs[l].gpu,
            prev: clock.prev,
            kernels: std::mem::take(&mut clock.since),
            copies: clock.copies.take(),
        };
        clock.prev = Some(t);
        if self.region_name(region).contains("SendRecv") {
            return;
        }
        let launched = launch.and_then(|k| self.launches.get(&k)).map_or(t, |x| x.enter.min(t));
        let k = Started { start: t, gpu };
        let mut joined = Vec::new();
        if let Some(waiting) = self.nccl_gpu.waiting.get_mut(&process) {
            while let Some(&(comm, seq, enter)) = waiting.front()
                && enter <= launched
            {
                waiting.pop_front();
                joined.push((comm, seq));
            }
        }
        for (comm, seq) in joined {
            self.nccl_joined(comm, seq, process, k.clone());
        }
        let started = self.nccl_gpu.started.entry(process).or_default();
        if started.len() >= MAX_PER_PROCESS {
            started.pop_front();
        }
        started.push_back((launched, k));
    }

    /// A kernel other than NCCL's ran on stream `l` from `start` to `end`:
    /// its time since the process's last NCCL kernel started counts (the
    /// first such kernel begins the first interval).
    pub(super) fn nccl_other_kernel(&mut self, l: usize, region: RegionRef, start: u64, end: u64) {
        let clock = self.nccl_gpu.clocks.entry(self.locs[l].process).or_default();
        let dt = end.saturating_sub(start.max(*clock.prev.get_or_insert(start)));
        if dt == 0 {
            return;
        }
        match clock.since.iter_mut().find(|(r, _)| *r == region) {
            Some((_, ns)) => *ns += dt,
            None => clock.since.push((region, dt)),
        }
    }

    /// A copy `region` of `bytes` ran on stream `l` from `start` to `end`:
    /// its time since the process's last NCCL kernel started counts (the
    /// stragglers' links).
    pub(super) fn nccl_copy(&mut self, l: usize, region: RegionRef, (start, end): (u64, u64), bytes: u64) {
        let clock = self.nccl_gpu.clocks.entry(self.locs[l].process).or_default();
        let dt = end.saturating_sub(start.max(*clock.prev.get_or_insert(start)));
        if dt > 0 {
            clock.copies.add(Link::Copy(region), dt, bytes);
        }
    }

    /// Every rank ended its call of the `seq`-th operation on `comm`.
    pub(super) fn nccl_operation(&mut self, comm: CommRef, seq: u64, arrivals: Vec<Arrival>) {
        self.nccl_op(comm, seq).arrivals = Some(arrivals);
        self.nccl_judge((comm, seq));
    }

    /// The operations still waiting for kernels, judged by their calls.
    pub(super) fn nccl_flush(&mut self) {
        let mut left: Vec<_> = self.nccl_gpu.operations.drain().collect();
        left.sort_by_key(|((c, s), _)| (c.id(), *s));
        for ((comm, _), op) in left {
            if let Some(arrivals) = op.arrivals {
                self.stragglers.operation(comm, &arrivals, &self.nccl_gpu.samples);
            }
        }
        self.nccl_gpu.order.clear();
    }

    /// A GPU metric sample on one of NVML's GPU metrics locations.
    pub(super) fn nccl_metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        let Some(&gpu) = self.nccl_gpu.metric_locations.get(&ev.location) else { return };
        self.nccl_gpu.metric_events += 1;
        let Some(which) = self.model.metric_names.get(&metric).and_then(|n| Sampled::of(n)) else { return };
        let value = match values.first() {
            Some(MetricValue::U64(v)) => *v,
            Some(MetricValue::I64(v)) => (*v).max(0) as u64,
            Some(MetricValue::F64(v)) if v.is_finite() => v.max(0.0) as u64,
            _ => return,
        };
        self.nccl_gpu.samples.add(which, gpu, ev.time, value);
    }

    fn nccl_op(&mut self, comm: CommRef, seq: u64) -> &mut Operation {
        let g = &mut self.nccl_gpu;
        if !g.operations.contains_key(&(comm, seq)) {
            g.order.push_back((comm, seq));
            if g.order.len() > MAX_OPERATIONS
                && let Some(old) = g.order.pop_front()
                && let Some(Operation { arrivals: Some(arrivals), .. }) = g.operations.remove(&old)
            {
                self.stragglers.operation(old.0, &arrivals, &g.samples);
            }
        }
        self.nccl_gpu.operations.entry((comm, seq)).or_default()
    }

    fn nccl_joined(&mut self, comm: CommRef, seq: u64, process: usize, k: Started) {
        self.nccl_op(comm, seq).kernels.push((process, k));
        self.nccl_judge((comm, seq));
    }

    /// Judges an operation by its kernels' starts once every rank's call
    /// and kernel are known.
    fn nccl_judge(&mut self, key: (CommRef, u64)) {
        let Some(op) = self.nccl_gpu.operations.get(&key) else { return };
        let Some(arrivals) = &op.arrivals else { return };
        if !arrivals.iter().all(|a| op.kernels.iter().any(|(p, _)| *p == a.process)) {
            return;
        }
        let Some(op) = self.nccl_gpu.operations.remove(&key) else { return };
        let mut arrivals = op.arrivals.unwrap_or_default();
        for a in &mut arrivals {
            if let Some((_, k)) = op.kernels.iter().find(|(p, _)| *p == a.process) {
                a.enter = k.start;
                a.gpu = Some(k.gpu.clone());
            }
        }
        self.stragglers.operation(key.0, &arrivals, &self.nccl_gpu.samples);
    }
}
