//! The addresses a copy read and wrote, from the API call that made it —
//! what attributes a copy to the allocations it touched (the copy report
//! by allocation, `cuda_mem_copies`).
//!
//! CUPTI's copy records carry the bytes and the kinds of memory, not the
//! addresses; the API call's parameters have them. With the `memory`
//! member on, the agent enables CUPTI's callbacks on the copy calls of
//! the runtime and the driver (only those: a cost per copy call, none
//! elsewhere), reads destination and source at the call's entry and keeps
//! them by correlation id — the id CUPTI also gives the copy's record —
//! until the record arrives; the converter then writes them as the
//! attributes `source address` and `destination address` of the copy.
//!
//! Both the runtime call and the driver call it makes may report the
//! same copy: the later one overwrites an equal entry, and entries whose
//! record never comes (a failed call, a copy kind not recorded) are
//! dropped once [`WINDOW`] newer correlation ids have been seen.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::records::ApiDomain;

/// Where a copy call's parameters keep destination and source: byte
/// offsets into the call's parameter struct (CUPTI's generated
/// `*_params` structs; both are pointer-sized).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamLayout {
    pub dst: usize,
    pub src: usize,
}

/// `{dst, src, bytes, ...}`: cudaMemcpy(Async), cuMemcpy(HtoD|DtoH|DtoD)(Async), cuMemcpy(Async).
const PLAIN: ParamLayout = ParamLayout { dst: 0, src: 8 };
/// `{dst, dstDevice|dstContext, src, ...}`: the peer copies.
const PEER: ParamLayout = ParamLayout { dst: 0, src: 16 };

/// The runtime copy calls whose parameters name both ends, by CUPTI
/// callback id (cupti_runtime_cbid.h, the same in CUDA 12 and 13).
const RUNTIME: [(u32, ParamLayout); 6] = [
    (31, PLAIN),  // cudaMemcpy_v3020
    (41, PLAIN),  // cudaMemcpyAsync_v3020
    (215, PLAIN), // cudaMemcpy_ptds_v7000
    (225, PLAIN), // cudaMemcpyAsync_ptsz_v7000
    (160, PEER),  // cudaMemcpyPeer_v4000
    (161, PEER),  // cudaMemcpyPeerAsync_v4000
];

/// The driver copy calls, by callback id (cupti_driver_cbid.h).
const DRIVER: [(u32, ParamLayout); 20] = [
    (276, PLAIN), // cuMemcpyHtoD_v2
    (277, PLAIN), // cuMemcpyHtoDAsync_v2
    (278, PLAIN), // cuMemcpyDtoH_v2
    (279, PLAIN), // cuMemcpyDtoHAsync_v2
    (280, PLAIN), // cuMemcpyDtoD_v2
    (281, PLAIN), // cuMemcpyDtoDAsync_v2
    (305, PLAIN), // cuMemcpy
    (306, PLAIN), // cuMemcpyAsync
    (318, PEER),  // cuMemcpyPeer
    (319, PEER),  // cuMemcpyPeerAsync
    (397, PLAIN), // cuMemcpyHtoD_v2_ptds
    (398, PLAIN), // cuMemcpyDtoH_v2_ptds
    (399, PLAIN), // cuMemcpyDtoD_v2_ptds
    (408, PLAIN), // cuMemcpy_ptds
    (409, PEER),  // cuMemcpyPeer_ptds
    (418, PLAIN), // cuMemcpyAsync_ptsz
    (421, PLAIN), // cuMemcpyHtoDAsync_v2_ptsz
    (422, PLAIN), // cuMemcpyDtoHAsync_v2_ptsz
    (423, PLAIN), // cuMemcpyDtoDAsync_v2_ptsz
    (426, PEER),  // cuMemcpyPeerAsync_ptsz
];

/// Every copy call whose callback the agent enables.
pub fn calls() -> impl Iterator<Item = (ApiDomain, u32)> {
    let runtime = RUNTIME.iter().map(|&(c, _)| (ApiDomain::Runtime, c));
    let driver = DRIVER.iter().map(|&(c, _)| (ApiDomain::Driver, c));
    runtime.chain(driver)
}

/// Where call `cbid` of `domain` keeps its copy's ends; `None` for calls
/// that are not such copies.
pub fn layout(domain: ApiDomain, cbid: u32) -> Option<ParamLayout> {
    let table: &[(u32, ParamLayout)] = match domain {
        ApiDomain::Runtime => &RUNTIME,
        ApiDomain::Driver => &DRIVER,
    };
    table.iter().find(|(c, _)| *c == cbid).map(|&(_, l)| l)
}

/// How many correlation ids an entry waits for its record.
pub const WINDOW: u32 = 1 << 16;

/// A copy's ends: (source, destination).
pub type Ends = (u64, u64);

/// Copy ends by correlation id, from the calls to the records.
#[derive(Debug, Default)]
pub struct CopyAddresses {
    // A lock on the copy call's path: taken once per copy call, only
    // with `memory` on; a copy call costs microseconds already.
    by_correlation: Mutex<BTreeMap<u32, Ends>>,
}

impl CopyAddresses {
    /// Notes the ends of the copy call `correlation`.
    pub fn note(&self, correlation: u32, ends: Ends) {
        let mut map = self.by_correlation.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(correlation, ends);
        // Entries whose record never came, far behind: dropped.
        if let Some((&oldest, _)) = map.first_key_value()
            && correlation.wrapping_sub(oldest) > WINDOW
            && correlation > WINDOW
        {
            let keep = map.split_off(&(correlation - WINDOW));
            *map = keep;
        }
    }

    /// The ends of copy `correlation`, kept for another look.
    pub fn peek(&self, correlation: u32) -> Option<Ends> {
        self.by_correlation.lock().unwrap_or_else(|e| e.into_inner()).get(&correlation).copied()
    }

    /// The ends of copy `correlation`, forgotten once taken.
    pub fn take(&self, correlation: u32) -> Option<Ends> {
        self.by_correlation.lock().unwrap_or_else(|e| e.into_inner()).remove(&correlation)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_correlation.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_calls_are_known_by_domain_and_id() {
        assert_eq!(layout(ApiDomain::Runtime, 41), Some(PLAIN));
        assert_eq!(layout(ApiDomain::Runtime, 160), Some(PEER));
        assert_eq!(layout(ApiDomain::Driver, 276), Some(PLAIN));
        assert_eq!(layout(ApiDomain::Driver, 318), Some(PEER));
        // cudaLaunchKernel (211) and cuLaunchKernel (307) are no copies.
        assert_eq!(layout(ApiDomain::Runtime, 211), None);
        assert_eq!(layout(ApiDomain::Driver, 307), None);
        assert_eq!(calls().count(), 6 + 20);
    }

    #[test]
    fn ends_are_taken_once_and_stale_ones_dropped() {
        let a = CopyAddresses::default();
        a.note(5, (0x10, 0x20));
        assert_eq!(a.peek(5), Some((0x10, 0x20)));
        assert_eq!(a.take(5), Some((0x10, 0x20)));
        assert_eq!(a.take(5), None);
        // One whose record never comes goes once WINDOW newer ids passed.
        a.note(7, (1, 2));
        a.note(8, (3, 4));
        a.note(8 + WINDOW, (5, 6));
        assert_eq!(a.len(), 2);
        assert_eq!(a.take(7), None);
        assert_eq!(a.take(8), Some((3, 4)));
    }
}
