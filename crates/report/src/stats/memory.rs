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
//!
//! Copies by allocation (`cuda_mem_copies`): a copy whose API call was
//! seen (`memory`) carries `source address` and `destination address`;
//! each end is attributed to the allocation of the same process that
//! held that address at the copy's start (addresses are reused: the
//! allocation's lifetime decides). Ends in no traced allocation
//! (pageable host memory, memory allocated before tracing) are counted
//! apart.

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
    /// Every allocation with the time it was freed (ns since the start;
    /// `None` while it lives), for the copies by allocation.
    pub lifetimes: Vec<(Allocation, Option<u64>)>,
    /// Copies with their ends' addresses.
    pub copies: Vec<CopyEnds>,
    /// Per location being read: live allocations by address (indices
    /// into `lifetimes`).
    live: HashMap<u64, usize>,
    /// Region → (alloc?, kind), or None when not a memory region.
    regions: HashMap<RegionRef, Option<(bool, String)>>,
    address: Option<Option<AttributeRef>>,
}

/// A copy whose addresses are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyEnds {
    pub process: usize,
    pub src: u64,
    pub dst: u64,
    pub bytes: u64,
    /// Start, ns since the archive's start, and duration.
    pub start: u64,
    pub ns: u64,
}

/// The copies that touched one allocation (`cuda_mem_copies`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopiesOf {
    pub allocation: Allocation,
    pub copies_in: u64,
    pub bytes_in: u64,
    pub copies_out: u64,
    pub bytes_out: u64,
    /// The copies' time, ns (a copy within one allocation counts once).
    pub ns: u64,
}

/// Copy ends in no traced allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unattributed {
    pub ends: u64,
    pub bytes: u64,
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
            self.live.insert(address, self.lifetimes.len());
            self.lifetimes.push((a, None));
        } else {
            // The size is the allocation's, where it was seen.
            let (bytes, kind) = match self.live.remove(&address) {
                Some(i) => {
                    let (a, freed) = &mut self.lifetimes[i];
                    *freed = Some(time);
                    (a.bytes, a.kind.clone())
                }
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
        let mut left: Vec<Allocation> = self.live.drain().map(|(_, i)| self.lifetimes[i].0.clone()).collect();
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

impl MemoryStats {
    /// The copies by allocation, most bytes first, and the ends that fell
    /// in no traced allocation.
    pub fn copies_by_allocation(&self) -> (Vec<CopiesOf>, Unattributed) {
        // Per process, allocations by address (then time).
        let mut index: Vec<(usize, u64, usize)> =
            self.lifetimes.iter().enumerate().map(|(i, (a, _))| (a.process, a.address, i)).collect();
        index.sort_unstable();
        let mut rows: HashMap<usize, CopiesOf> = HashMap::new();
        let mut outside = Unattributed::default();
        for c in &self.copies {
            let src = self.holder(&index, c.process, c.src, c.start);
            let dst = self.holder(&index, c.process, c.dst, c.start);
            for (end, into) in [(src, false), (dst, true)] {
                let Some(i) = end else {
                    outside.ends += 1;
                    outside.bytes += c.bytes;
                    continue;
                };
                let row = rows.entry(i).or_insert_with(|| CopiesOf {
                    allocation: self.lifetimes[i].0.clone(),
                    copies_in: 0,
                    bytes_in: 0,
                    copies_out: 0,
                    bytes_out: 0,
                    ns: 0,
                });
                if into {
                    row.copies_in += 1;
                    row.bytes_in += c.bytes;
                } else {
                    row.copies_out += 1;
                    row.bytes_out += c.bytes;
                }
                // A copy inside one allocation adds its time once.
                if !(into && src == dst) {
                    row.ns += c.ns;
                }
            }
        }
        let mut rows: Vec<CopiesOf> = rows.into_values().collect();
        rows.sort_by(|a, b| {
            (b.bytes_in + b.bytes_out, a.allocation.time).cmp(&(a.bytes_in + a.bytes_out, b.allocation.time))
        });
        (rows, outside)
    }

    /// The allocation of `process` that held `address` at `time`.
    fn holder(&self, index: &[(usize, u64, usize)], process: usize, address: u64, time: u64) -> Option<usize> {
        // Allocations starting at or below the address, nearest first; a
        // few back cover an address inside a block whose start is
        // shared by later, freed allocations.
        let end = index.partition_point(|&(p, a, _)| (p, a) <= (process, address));
        index[..end].iter().rev().take_while(|&&(p, _, _)| p == process).take(64).map(|&(_, _, i)| i).find(|&i| {
            let (a, freed) = &self.lifetimes[i];
            address < a.address.saturating_add(a.bytes) && a.time <= time && freed.is_none_or(|f| time <= f)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_go_to_the_allocation_that_held_the_address_then() {
        let mut m = MemoryStats::default();
        let alloc =
            |address, bytes, time| Allocation { process: 0, gpu: Some(0), kind: "device".into(), address, bytes, time };
        // 0x1000 (4 KiB) lives 0..100, then is reused by another 0..8 KiB
        // block 200..; a pinned block at 0x9000 lives throughout.
        m.lifetimes.push((alloc(0x1000, 4096, 0), Some(100)));
        m.lifetimes.push((alloc(0x1000, 8192, 200), None));
        m.lifetimes.push((Allocation { kind: "pinned".into(), ..alloc(0x9000, 1 << 16, 0) }, None));
        let copy = |src, dst, bytes, start| CopyEnds { process: 0, src, dst, bytes, start, ns: 10 };
        m.copies.push(copy(0x1000 + 16, 0x9000, 100, 50)); // first block → pinned
        m.copies.push(copy(0x1000 + 5000, 0x9000 + 8, 200, 300)); // second block (past the first's end) → pinned
        m.copies.push(copy(0x50, 0x1000, 7, 150)); // unknown → nothing live at 0x1000 at 150
        m.copies.push(copy(0x1000, 0x1000 + 4096, 64, 250)); // within the second block
        let (rows, outside) = m.copies_by_allocation();
        assert_eq!(outside, Unattributed { ends: 2, bytes: 14 });
        let find =
            |address, time| rows.iter().find(|r| r.allocation.address == address && r.allocation.time == time).unwrap();
        let first = find(0x1000, 0);
        assert_eq!((first.copies_out, first.bytes_out, first.copies_in), (1, 100, 0));
        let second = find(0x1000, 200);
        assert_eq!((second.copies_out, second.bytes_out, second.copies_in, second.bytes_in), (2, 264, 1, 64));
        assert_eq!(second.ns, 20, "the copy within the block counts its time once");
        let pinned = find(0x9000, 0);
        assert_eq!((pinned.copies_in, pinned.bytes_in), (2, 300));
        let first_row = &rows[0].allocation;
        assert_eq!((first_row.address, first_row.time), (0x1000, 200), "most bytes first");
    }

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
