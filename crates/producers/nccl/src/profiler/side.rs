//! Proxy operations and kernel channels, on locations of their own.
//!
//! Neither can be regions on the thread that reports them: a proxy thread
//! runs many operations at once (channels, peers, sends and receives
//! overlap), and kernel channel events arrive on the proxy thread after the
//! fact, with GPU times. Each gets a *lane*: a location per communicator,
//! channel and kind ("NCCL channel 3 (comm 0, rank 1)", "NCCL proxy send
//! channel 3 (comm 0, rank 1)"), whose events the plugin writes itself in
//! batches. On a lane, events follow one another: an operation that
//! started before the previous one on its lane ended (queued behind it)
//! is shown from that end on.
//!
//! Kernel channel times are the GPU's `%globaltimer` (ns), put on
//! CLOCK_MONOTONIC with a running estimate of the offset between the two
//! clocks: every KernelCh start and stop callback is a host reading taken
//! *after* the GPU reading it carries (NCCL's proxy thread polls for them),
//! so `host − gpu` is an upper bound of the true offset plus nothing; the
//! smallest value seen so far is the estimate. Events wait in memory until
//! a batch is written (at most [`LANE_BATCH`] events, at a communicator's
//! `finalize` and at exit), and are converted then, with the best estimate
//! at that time. Before v4 (no GPU timer) the callbacks' host times are
//! used, which lag the kernel by the proxy thread's polling delay.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use raw::{Event, LocationKind};

use super::{CommContext, PROXY_RECV, PROXY_SEND, Profiler};
use crate::model::ProxyOp;

/// A lane writes its events when it holds this many.
pub const LANE_BATCH: usize = 4096;

/// The offset from GPU %globaltimer to CLOCK_MONOTONIC.
#[derive(Debug)]
pub struct GpuClock {
    /// min(host − gpu) over all observations; `i64::MAX` before any.
    offset: AtomicI64,
}

impl Default for GpuClock {
    fn default() -> Self {
        GpuClock { offset: AtomicI64::new(i64::MAX) }
    }
}

impl GpuClock {
    /// A host reading `host` taken after the GPU reading `gpu`.
    pub fn observe(&self, host: u64, gpu: u64) {
        let d = (i128::from(host) - i128::from(gpu)).clamp(i128::from(i64::MIN), i128::from(i64::MAX - 1)) as i64;
        self.offset.fetch_min(d, Ordering::Relaxed);
    }

    /// The current estimate, if any.
    pub fn offset(&self) -> Option<i64> {
        let o = self.offset.load(Ordering::Relaxed);
        (o != i64::MAX).then_some(o)
    }

    /// `gpu` on CLOCK_MONOTONIC.
    pub fn to_host(&self, gpu: u64) -> Option<u64> {
        let o = self.offset()?;
        Some((i128::from(gpu) + i128::from(o)).clamp(0, i128::from(u64::MAX)) as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LaneKind {
    Kernel = 0,
    ProxySend = 1,
    ProxyRecv = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct LaneKey {
    kind: LaneKind,
    /// The communicator's stream-local id; `u32::MAX` for a proxy
    /// operation of another process (PXN).
    comm: u32,
    channel: u8,
}

/// A kernel channel's span, converted when written.
#[derive(Debug, Clone, Copy)]
struct KernelSpan {
    host: (u64, u64),
    gpu: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Lane {
    location: u32,
    last: u64,
    events: Vec<(u64, Event)>,
    kernels: Vec<KernelSpan>,
}

/// The lanes of the process.
#[derive(Debug, Default)]
pub(super) struct Side {
    lanes: Mutex<HashMap<LaneKey, Lane>>,
    pub clock: GpuClock,
}

fn lane_name(key: LaneKey, ctx: Option<&CommContext>) -> String {
    let whose = match ctx {
        Some(c) => format!("comm {}, rank {}", c.id, c.rank()),
        None => "another process".to_string(),
    };
    match key.kind {
        LaneKind::Kernel => format!("NCCL channel {} ({whose})", key.channel),
        LaneKind::ProxySend => format!("NCCL proxy send channel {} ({whose})", key.channel),
        LaneKind::ProxyRecv => format!("NCCL proxy recv channel {} ({whose})", key.channel),
    }
}

impl Side {
    fn with_lane<R>(&self, p: &Profiler, key: LaneKey, ctx: Option<&CommContext>, f: impl FnOnce(&mut Lane) -> R) -> R {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let lane = lanes.entry(key).or_insert_with(|| {
            let id = ((key.kind as u32) << 24) | ((key.comm & 0xffff) << 8) | u32::from(key.channel);
            let kind = LocationKind::Lane { id, gpu: matches!(key.kind, LaneKind::Kernel) };
            let location = p.rec.define_location(kind, &lane_name(key, ctx));
            Lane { location, last: 0, events: Vec::new(), kernels: Vec::new() }
        });
        let r = f(lane);
        if lane.events.len() + lane.kernels.len() * 2 >= LANE_BATCH {
            self.write_lane(p, key, lane);
        }
        r
    }

    /// A proxy operation that ended at `stop`.
    pub fn proxy_op(
        &self,
        p: &Profiler,
        ctx: Option<&'static CommContext>,
        op: &ProxyOp,
        start: u64,
        stop: u64,
        bytes: u64,
    ) {
        let (kind, which) =
            if op.is_send { (LaneKind::ProxySend, PROXY_SEND) } else { (LaneKind::ProxyRecv, PROXY_RECV) };
        let Some(region) = p.proxy_region(which) else { return };
        let key = LaneKey { kind, comm: ctx.map_or(u32::MAX, |c| c.id), channel: op.channel };
        let a = &p.attrs;
        self.with_lane(p, key, ctx, |lane| {
            let t0 = start.max(lane.last);
            let t1 = stop.max(t0);
            lane.events.extend_from_slice(&[
                p.attr(a.channel, u64::from(op.channel), t0),
                p.attr(a.peer, op.peer.max(0) as u64, t0),
                p.attr(a.steps, op.steps.max(0) as u64, t0),
                p.attr(a.chunk_size, op.chunk_size.max(0) as u64, t0),
                p.attr(a.bytes, bytes, t0),
                (t0, Event::Enter { region }),
                (t1, Event::Leave { region }),
            ]);
            lane.last = t1;
        });
    }

    /// A kernel channel that ended (its stop callback at `host_stop`).
    #[allow(clippy::too_many_arguments)]
    pub fn kernel_channel(
        &self,
        p: &Profiler,
        ctx: Option<&'static CommContext>,
        channel: u8,
        host_start: u64,
        host_stop: u64,
        gpu_start: Option<u64>,
        gpu_stop: Option<u64>,
    ) {
        let key = LaneKey { kind: LaneKind::Kernel, comm: ctx.map_or(u32::MAX, |c| c.id), channel };
        let gpu = match (gpu_start, gpu_stop) {
            (Some(a), Some(b)) => Some((a, b.max(a))),
            _ => None,
        };
        self.with_lane(p, key, ctx, |lane| {
            lane.kernels.push(KernelSpan { host: (host_start, host_stop.max(host_start)), gpu });
        });
    }

    /// Writes every lane's events.
    pub fn flush(&self, p: &Profiler) {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        for (key, lane) in lanes.iter_mut() {
            self.write_lane(p, *key, lane);
        }
    }

    fn write_lane(&self, p: &Profiler, key: LaneKey, lane: &mut Lane) {
        if !lane.kernels.is_empty() {
            let region = p.kernel_region(key.channel);
            let mut spans: Vec<(u64, u64)> = lane
                .kernels
                .drain(..)
                .map(|k| match k.gpu.and_then(|(a, b)| Some((self.clock.to_host(a)?, self.clock.to_host(b)?))) {
                    Some(t) => t,
                    None => k.host,
                })
                .collect();
            spans.sort_unstable();
            if let Some(region) = region {
                for (a, b) in spans {
                    let t0 = a.max(lane.last);
                    let t1 = b.max(t0);
                    lane.events.push((t0, Event::Enter { region }));
                    lane.events.push((t1, Event::Leave { region }));
                    lane.last = t1;
                }
            }
        }
        if !lane.events.is_empty() {
            p.rec.write_batch(lane.location, &lane.events);
            lane.events.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_smallest_host_minus_gpu() {
        let c = GpuClock::default();
        assert_eq!(c.to_host(5), None);
        let gpu_epoch = 1_700_000_000_000_000_000u64;
        c.observe(1_000_500, gpu_epoch + 1000);
        c.observe(1_000_900, gpu_epoch + 1200);
        // Offsets seen: 999_500 − E and 999_700 − E; the smaller is kept.
        assert_eq!(c.offset(), Some(999_500 - gpu_epoch as i64));
        assert_eq!(c.to_host(gpu_epoch + 2000), Some(1_001_500));
    }
}
