//! The memory reports: CUDA allocations and frees per process, GPU and
//! memory kind (`cuda_mem_sum`), the largest allocations
//! (`cuda_mem_largest`), allocations never freed (`cuda_mem_leaks`) and
//! unified memory (`cuda_uvm_sum`).
//!
//! Read from the `CUDA memory GPU d ...` locations gputrace writes: an
//! allocation is an Enter of a region `CUDA alloc (<kind>)` carrying the
//! `address` and `bytes` attributes, a free one of `CUDA free (<kind>)`;
//! the memory in use is counted here from them (the archive's `CUDA
//! memory in use` metrics say the same over time), so that the peak is
//! exact whatever the metrics' sampling. Unified memory counters are the
//! `UVM ...` cumulative metrics: their last value per location.

use std::collections::{BTreeMap, HashMap};

use otf2::{AttributeRef, LocationRef, RegionRef};

use crate::model::Model;

/// The largest allocations kept for `cuda_mem_largest`.
pub const LARGEST: usize = 20;

/// One allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub process: usize,
    pub gpu: Option<usize>,
    /// `device`, `pinned`, `device, async`, ...
    pub kind: String,
    pub address: u64,
    pub bytes: u64,
    /// Nanoseconds since the archive's start.
    pub time: u64,
}

/// Totals of one (process, GPU, kind).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindTotals {
    pub allocs: u64,
    pub alloc_bytes: u64,
    pub frees: u64,
    pub freed_bytes: u64,
    pub in_use: u64,
    pub peak: u64,
    pub leaked: u64,
    pub leaked_bytes: u64,
}

/// What the pass gathered about memory.
#[derive(Debug, Default)]
pub struct MemoryStats {
    /// By (process, GPU, kind); kind `all` holds every kind's.
    pub totals: BTreeMap<(usize, Option<usize>, String), KindTotals>,
    /// The largest allocations, largest first.
    pub largest: Vec<Allocation>,
    /// Allocations never freed, by time.
    pub leaks: Vec<Allocation>,
    /// Unified memory: by (process, GPU, metric name), the last value.
    pub uvm: BTreeMap<(usize, Option<usize>, String), u64>,
    /// Per location being read: live allocations by address.
    live: HashMap<u64, Allocation>,
    /// Region → (alloc?, kind), or None when not a memory region.
    regions: HashMap<RegionRef, Option<(bool, String)>>,
    address: Option<Option<AttributeRef>>,
}

/// `CUDA alloc (device, async)` → (true, `device, async`).
pub fn parse_region(name: &str) -> Option<(bool, String)> {
    let (alloc, rest) = if let Some(r) = name.strip_prefix("CUDA alloc (") {
        (true, r)
    } else {
        (false, name.strip_prefix("CUDA free (")?)
    };
    Some((alloc, rest.strip_suffix(')')?.to_string()))
}

impl MemoryStats {
    fn address_attribute(&mut self, defs: &otf2::reader::GlobalDefs) -> Option<AttributeRef> {
        *self.address.get_or_insert_with(|| {
            defs.attributes.iter().find(|(_, a)| defs.string(a.name) == "address").map(|(r, _)| *r)
        })
    }

    /// An Enter on a location of process `process`, GPU `gpu`.
    #[allow(clippy::too_many_arguments)]
    pub fn enter(
        &mut self,
        model: &Model,
        defs: &otf2::reader::GlobalDefs,
        region: RegionRef,
        attributes: &otf2::reader::Attributes<'_>,
        bytes_attr: Option<AttributeRef>,
        process: usize,
        gpu: Option<usize>,
        time: u64,
    ) {
        let which = self
            .regions
            .entry(region)
            .or_insert_with(|| model.region(region).and_then(|r| parse_region(&r.name)))
            .clone();
        let Some((alloc, kind)) = which else { return };
        let address_attr = self.address_attribute(defs);
        let get = |a: Option<AttributeRef>| a.and_then(|a| attributes.get(a)).and_then(|v| v.as_u64());
        let address = get(address_attr).unwrap_or(0);
        let bytes = get(bytes_attr).unwrap_or(0);
        let time = model.ns_since_start(time);
        if alloc {
            let a = Allocation { process, gpu, kind: kind.clone(), address, bytes, time };
            for k in [kind.as_str(), "all"] {
                let t = self.totals.entry((process, gpu, k.to_string())).or_default();
                t.allocs += 1;
                t.alloc_bytes += bytes;
                t.in_use += bytes;
                t.peak = t.peak.max(t.in_use);
            }
            self.note_largest(&a);
            self.live.insert(address, a);
        } else {
            // The size is the allocation's, where it was seen.
            let (bytes, kind) = match self.live.remove(&address) {
                Some(a) => (a.bytes, a.kind),
                None => (bytes, kind),
            };
            for k in [kind.as_str(), "all"] {
                let t = self.totals.entry((process, gpu, k.to_string())).or_default();
                t.frees += 1;
                t.freed_bytes += bytes;
                t.in_use = t.in_use.saturating_sub(bytes);
            }
        }
    }

    fn note_largest(&mut self, a: &Allocation) {
        if self.largest.len() == LARGEST && self.largest.last().is_some_and(|l| l.bytes >= a.bytes) {
            return;
        }
        let at = self.largest.partition_point(|l| l.bytes >= a.bytes);
        self.largest.insert(at, a.clone());
        self.largest.truncate(LARGEST);
    }

    /// A metric sample: the unified-memory counters' last values.
    pub fn metric(&mut self, name: &str, value: u64, process: usize, gpu: Option<usize>) {
        if name.starts_with("UVM ") {
            let v = self.uvm.entry((process, gpu, name.to_string())).or_default();
            *v = (*v).max(value);
        }
    }

    /// The end of a location: what is still allocated is leaked.
    pub fn end_location(&mut self, _location: LocationRef) {
        let mut left: Vec<Allocation> = self.live.drain().map(|(_, a)| a).collect();
        left.sort_by_key(|a| (a.time, a.address));
        for a in left {
            for k in [a.kind.as_str(), "all"] {
                let t = self.totals.entry((a.process, a.gpu, k.to_string())).or_default();
                t.leaked += 1;
                t.leaked_bytes += a.bytes;
            }
            self.leaks.push(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_give_direction_and_kind() {
        assert_eq!(parse_region("CUDA alloc (device)"), Some((true, "device".into())));
        assert_eq!(parse_region("CUDA free (device, async)"), Some((false, "device, async".into())));
        assert_eq!(parse_region("CUDA memory pool created"), None);
        assert_eq!(parse_region("cudaMalloc"), None);
    }

    #[test]
    fn the_largest_stay_sorted_and_bounded() {
        let mut m = MemoryStats::default();
        let sizes: Vec<u64> = (0..(LARGEST as u64 + 5)).map(|i| (i * 7919) % 101).collect();
        for i in 0..(LARGEST as u64 + 5) {
            let a = Allocation {
                process: 0,
                gpu: None,
                kind: "device".into(),
                address: i,
                bytes: (i * 7919) % 101,
                time: i,
            };
            m.note_largest(&a);
        }
        assert_eq!(m.largest.len(), LARGEST);
        assert!(m.largest.windows(2).all(|w| w[0].bytes >= w[1].bytes));
        assert_eq!(m.largest[0].bytes, *sizes.iter().max().unwrap());
        let mut sorted = sizes.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let kept: Vec<u64> = m.largest.iter().map(|a| a.bytes).collect();
        assert_eq!(kept, sorted[..LARGEST]);
    }
}
