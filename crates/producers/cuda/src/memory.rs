//! Memory records → raw events: allocations, frees and pools on one
//! `CUDA memory d` location per GPU of the process, with the memory in
//! use as metrics updated at each allocation and free, and the unified
//! memory counters as cumulative metrics on the same location.
//!
//! - an allocation or free is a [`raw::Event::MemAlloc`] /
//!   [`raw::Event::MemFree`] (the merge makes it a zero-length region with
//!   address, bytes, memory kind and stream as attributes);
//! - `CUDA memory in use` (every kind) and `CUDA <kind> memory in use`
//!   follow each of them, in bytes;
//! - unified memory: `UVM CPU page faults`, `UVM GPU page faults`,
//!   `UVM bytes HtoD`, `UVM bytes DtoH`, `UVM bytes DtoD`, `UVM thrashing`
//!   are running totals, one sample per CUPTI record (at its end).
//!
//! The memory in use is counted in the order CUPTI delivers the records,
//! sorted by time within a buffer; a free whose allocation the agent
//! never saw (made before tracing began) takes away nothing.

use std::collections::HashMap;

use raw::RegionRole;
use raw::{
    Definition, Event, LocationKind, MemoryKind, MemoryOp as RawMemoryOp, MetricDef, Paradigm, PoolOp as RawPoolOp,
};
use recorder::Recorder;

use crate::records::{MemoryOp, PoolOp, UvmCounter};

/// The unified-memory counters gputrace configures, by CUPTI's counter
/// kind: (kind, metric name, unit, description).
pub const UVM_COUNTERS: [(u32, &str, &str, &str); 6] = [
    (3, "UVM CPU page faults", "faults", "CPU page faults on managed memory, running total (CUPTI)"),
    (4, "UVM GPU page faults", "fault groups", "GPU page fault groups on managed memory, running total (CUPTI)"),
    (1, "UVM bytes HtoD", "bytes", "managed memory migrated host to device, running total (CUPTI)"),
    (2, "UVM bytes DtoH", "bytes", "managed memory migrated device to host, running total (CUPTI)"),
    (8, "UVM bytes DtoD", "bytes", "managed memory migrated between devices, running total (CUPTI)"),
    (5, "UVM thrashing", "events", "managed memory regions the driver found thrashing, running total (CUPTI)"),
];

/// The memory of one GPU in the process.
#[derive(Debug, Default)]
struct Device {
    location: Option<u32>,
    /// Live allocations: address → (bytes, kind, flags).
    live: HashMap<u64, (u64, MemoryKind, u8)>,
    total: u64,
    by_kind: [u64; 8],
    /// Metric ids: [0] the total, [1 + kind] per kind.
    in_use_metrics: [Option<u32>; 9],
    uvm: [u64; UVM_COUNTERS.len()],
    uvm_metrics: [Option<u32>; UVM_COUNTERS.len()],
    events: Vec<(u64, Event)>,
}

/// The memory state of one process.
#[derive(Debug, Default)]
pub struct Memory {
    devices: HashMap<u32, Device>,
    regions: HashMap<String, Option<u32>>,
}

/// The name of an allocation's or free's region: `CUDA alloc (device)`,
/// `CUDA free (device, async)`.
pub fn region_name(alloc: bool, memory: MemoryKind, flags: u8) -> String {
    let what = if alloc { "alloc" } else { "free" };
    let asynchronous = if flags & RawMemoryOp::ASYNC != 0 { ", async" } else { "" };
    format!("CUDA {what} ({}{asynchronous})", memory.name())
}

/// The region of a pool operation (CUPTI's 1 created, 2 destroyed, 3 trimmed).
pub fn pool_region_name(op: u32) -> &'static str {
    match op {
        1 => "CUDA memory pool created",
        2 => "CUDA memory pool destroyed",
        3 => "CUDA memory pool trimmed",
        _ => "CUDA memory pool operation",
    }
}

impl Memory {
    fn region(&mut self, name: &str, role: RegionRole, rec: &Recorder) -> Option<u32> {
        if let Some(r) = self.regions.get(name) {
            return *r;
        }
        let r = rec.region(name, None, Paradigm::Cuda, role, "CUDA memory");
        self.regions.insert(name.to_string(), r);
        r
    }

    /// CUPTI's device id, or for a record that names none (an invalid
    /// id: host memory may come so) the process's first GPU.
    fn ordinal(&self, device: u32) -> u32 {
        if device != u32::MAX { device } else { self.devices.keys().min().copied().unwrap_or(0) }
    }

    fn device(&mut self, device: u32, rec: &Recorder) -> &mut Device {
        let device = self.ordinal(device);
        let d = self.devices.entry(device).or_default();
        if d.location.is_none() {
            d.location =
                Some(rec.define_location(LocationKind::DeviceMetrics { device }, &format!("CUDA memory {device}")));
        }
        d
    }

    /// An allocation or free.
    pub fn op(&mut self, m: &MemoryOp, rec: &Recorder) {
        let memory = MemoryKind::from_u8(m.memory.min(255) as u8);
        let mut flags = 0;
        if m.is_async {
            flags |= RawMemoryOp::ASYNC;
        }
        match m.pool_type {
            1 => flags |= RawMemoryOp::POOL,
            2 => flags |= RawMemoryOp::IMPORTED_POOL,
            _ => {}
        }
        let ordinal = self.ordinal(m.device);
        let d = self.device(ordinal, rec);
        // A free is named, sized and counted as its allocation was, where
        // the agent saw it (CUPTI's free records may say less).
        let (bytes, memory, flags) = if m.alloc {
            d.live.insert(m.address, (m.bytes, memory, flags));
            (m.bytes, memory, flags)
        } else {
            d.live.remove(&m.address).unwrap_or((0, memory, flags))
        };
        let kind = memory;
        let role = if m.alloc { RegionRole::Allocate } else { RegionRole::Deallocate };
        let region = self.region(&region_name(m.alloc, memory, flags), role, rec);
        let d = self.device(ordinal, rec);
        let k = kind as usize;
        if m.alloc {
            d.total += bytes;
            d.by_kind[k] += bytes;
        } else {
            d.total = d.total.saturating_sub(bytes);
            d.by_kind[k] = d.by_kind[k].saturating_sub(bytes);
        }
        if let Some(region) = region {
            let op = RawMemoryOp {
                region,
                correlation: m.correlation,
                address: m.address,
                bytes: if m.alloc || bytes == 0 { m.bytes } else { bytes },
                memory,
                stream: m.stream,
                flags,
            };
            d.events.push((m.time, if m.alloc { Event::MemAlloc(op) } else { Event::MemFree(op) }));
        }
        let (total, of_kind) = (d.total, d.by_kind[k]);
        let total_id = in_use_metric(d, 0, ordinal, "CUDA memory in use", rec);
        let kind_name = format!("CUDA {} memory in use", kind.name());
        let kind_id = in_use_metric(d, 1 + k, ordinal, &kind_name, rec);
        d.events.push((m.time, Event::Metric { metric: total_id, value: total }));
        d.events.push((m.time, Event::Metric { metric: kind_id, value: of_kind }));
    }

    /// A pool created, destroyed or trimmed.
    pub fn pool(&mut self, p: &PoolOp, rec: &Recorder) {
        let Some(region) = self.region(pool_region_name(p.op), RegionRole::Artificial, rec) else {
            return;
        };
        let d = self.device(p.device, rec);
        let op = RawPoolOp {
            region,
            correlation: p.correlation,
            address: p.address,
            size: p.size,
            release_threshold: p.release_threshold,
            utilized: p.utilized,
        };
        d.events.push((p.time, Event::MemPool(op)));
    }

    /// A unified-memory counter record.
    pub fn uvm(&mut self, u: &UvmCounter, rec: &Recorder) {
        let Some(i) = UVM_COUNTERS.iter().position(|c| c.0 == u.kind) else {
            return;
        };
        let device = match u.kind {
            1 => u.dst,
            // Thrashing: a mask of the devices involved.
            5 if u.src != 0 => u.src.trailing_zeros(),
            5 => u32::MAX,
            // CPU faults name no GPU: the process's first one.
            3 => u32::MAX,
            _ => u.src,
        };
        let device = self.ordinal(device);
        let d = self.device(device, rec);
        // A CPU fault's value is the faulting instruction's address and a
        // thrashing record's the region's size (CUPTI's docs): one each.
        d.uvm[i] += match u.kind {
            3 | 5 => 1,
            _ => u.value,
        };
        let id = *d.uvm_metrics[i].get_or_insert_with(|| {
            let id = crate::nvlink::next_metric_ids(1);
            let (_, name, unit, description) = UVM_COUNTERS[i];
            rec.define(&Definition::Metric(MetricDef {
                id,
                name: name.into(),
                unit: unit.into(),
                description: description.into(),
                device,
                cumulative: true,
            }));
            id
        });
        let t = if u.kind == 3 || u.kind == 5 { u.start } else { u.end.max(u.start) };
        d.events.push((t, Event::Metric { metric: id, value: d.uvm[i] }));
    }

    /// Writes the events gathered from one buffer, in time order per GPU.
    pub fn write(&mut self, rec: &Recorder) {
        for d in self.devices.values_mut() {
            if d.events.is_empty() {
                continue;
            }
            let Some(location) = d.location else { continue };
            // Stable: an allocation's region stays before its metrics.
            d.events.sort_by_key(|(t, _)| *t);
            rec.write_batch(location, &d.events);
            d.events.clear();
        }
    }
}

fn in_use_metric(d: &mut Device, slot: usize, device: u32, name: &str, rec: &Recorder) -> u32 {
    *d.in_use_metrics[slot].get_or_insert_with(|| {
        let id = crate::nvlink::next_metric_ids(1);
        let description = if slot == 0 {
            "bytes the process has allocated through CUDA and not freed, every kind (CUPTI)".to_string()
        } else {
            format!("bytes of {name} allocated by the process and not freed (CUPTI)")
        };
        rec.define(&Definition::Metric(MetricDef {
            id,
            name: name.into(),
            unit: "bytes".into(),
            description,
            device,
            cumulative: false,
        }));
        id
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_say_what_and_which_memory() {
        assert_eq!(region_name(true, MemoryKind::Device, 0), "CUDA alloc (device)");
        assert_eq!(region_name(false, MemoryKind::Pinned, 0), "CUDA free (pinned)");
        let f = RawMemoryOp::ASYNC | RawMemoryOp::POOL;
        assert_eq!(region_name(true, MemoryKind::Device, f), "CUDA alloc (device, async)");
        assert_eq!(pool_region_name(1), "CUDA memory pool created");
        assert_eq!(pool_region_name(9), "CUDA memory pool operation");
    }
}
