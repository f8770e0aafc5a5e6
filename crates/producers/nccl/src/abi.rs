//! NCCL's profiler plugin interface, versions 1 to 6, as C lays it out.
//!
//! Declared by hand from NCCL's published headers (`ext-profiler/` up to
//! 2.29.3, `plugins/profiler/` and `src/include/plugin/profiler/` after;
//! each version's layout has not changed since the release that introduced
//! it: v1 2.23.4, v2 2.24.3, v3 2.26.2, v4 2.27.3, v5 2.28.3, v6 2.29.2).
//! The structs are read by NCCL and written by it: every field, type and
//! padding byte matters, and the tests at the end pin sizes and offsets.
//!
//! Differences that matter between versions: the descriptor's `type` is a
//! `uint8_t` up to v4 and a `uint64_t` from v5; v1 numbers the function,
//! data type, algorithm and protocol (`uint8_t`) where later versions pass
//! strings; v1–v3 name the communicator in collective and point-to-point
//! descriptors (`name`, `commHash`), v4+ in `init`; v4 renamed
//! `nMaxChannels` to `nChannels` and added it to point-to-point; v5 added
//! the API events and `parentGroup`; v6 the copy-engine events. State
//! arguments carry `proxyOp{transSize, steps}` up to v3 and
//! `proxyStep{transSize}`, `netPlugin`, `kernelCh{pTimer}` from v4.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};

/// `ncclResult_t`.
pub type NcclResult = c_int;
pub const NCCL_SUCCESS: NcclResult = 0;
pub const NCCL_INTERNAL_ERROR: NcclResult = 3;

/// Event type bits (`ncclProfile*`), used both as the descriptor's type
/// and in the activation mask.
pub mod event {
    pub const GROUP: u64 = 1 << 0;
    pub const COLL: u64 = 1 << 1;
    pub const P2P: u64 = 1 << 2;
    pub const PROXY_OP: u64 = 1 << 3;
    pub const PROXY_STEP: u64 = 1 << 4;
    pub const PROXY_CTRL: u64 = 1 << 5;
    pub const KERNEL_CH: u64 = 1 << 6;
    pub const NET_PLUGIN: u64 = 1 << 7;
    pub const GROUP_API: u64 = 1 << 8;
    pub const COLL_API: u64 = 1 << 9;
    pub const P2P_API: u64 = 1 << 10;
    pub const KERNEL_LAUNCH: u64 = 1 << 11;
    pub const CE_COLL: u64 = 1 << 12;
    pub const CE_SYNC: u64 = 1 << 13;
    pub const CE_BATCH: u64 = 1 << 14;
}

/// `ncclDebugLogger_t`: a variadic C function; the plugin never calls it.
pub type DebugLogger = *const c_void;

/// `proxyOp` (every version; `pid_t` is `int` on Linux).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProxyOpDescr {
    pub pid: c_int,
    pub channelId: u8,
    pub peer: c_int,
    pub nSteps: c_int,
    pub chunkSize: c_int,
    pub isSend: c_int,
}

/// `proxyStep` (every version).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProxyStepDescr {
    pub step: c_int,
}

/// `netPlugin` (v3+).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NetPluginDescr {
    pub id: i64,
    pub data: *mut c_void,
}

// ---- v1 (NCCL 2.23) ----

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollDescr_v1 {
    pub name: *const c_char,
    pub commHash: u64,
    pub seqNumber: u64,
    pub func: u8,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: u8,
    pub op: u32,
    pub trafficBytes: usize,
    pub nMaxChannels: u8,
    pub nWarps: u8,
    pub algo: u8,
    pub proto: u8,
    pub isCollnet: c_int,
    pub isNvls: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct P2pDescr_v1 {
    pub name: *const c_char,
    pub commHash: u64,
    pub func: u8,
    pub buff: *mut c_void,
    pub datatype: u8,
    pub count: usize,
    pub peer: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v1 {
    pub coll: CollDescr_v1,
    pub p2p: P2pDescr_v1,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v1 {
    pub type_: u8,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v1,
}

/// v1–v3 state arguments.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProxyOpStateArgs_v1 {
    pub transSize: usize,
    pub steps: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProxyCtrlStateArgs {
    pub appendedProxyOps: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union EventStateArgs_v1 {
    pub proxyOp: ProxyOpStateArgs_v1,
    pub proxyCtrl: ProxyCtrlStateArgs,
}

// ---- v2 (NCCL 2.24, 2.25) ----

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollDescr_v2 {
    pub name: *const c_char,
    pub commHash: u64,
    pub seqNumber: u64,
    pub func: *const c_char,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: *const c_char,
    pub trafficBytes: usize,
    pub nMaxChannels: u8,
    pub nWarps: u8,
    pub algo: *const c_char,
    pub proto: *const c_char,
}

/// v2 and v3.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct P2pDescr_v2 {
    pub name: *const c_char,
    pub commHash: u64,
    pub func: *const c_char,
    pub buff: *mut c_void,
    pub datatype: *const c_char,
    pub count: usize,
    pub peer: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v2 {
    pub coll: CollDescr_v2,
    pub p2p: P2pDescr_v2,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v2 {
    pub type_: u8,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v2,
}

// ---- v3 (NCCL 2.26) ----

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollDescr_v3 {
    pub name: *const c_char,
    pub commHash: u64,
    pub seqNumber: u64,
    pub func: *const c_char,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: *const c_char,
    pub nMaxChannels: u8,
    pub nWarps: u8,
    pub algo: *const c_char,
    pub proto: *const c_char,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelChDescr_v3 {
    pub channelId: u8,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v3 {
    pub coll: CollDescr_v3,
    pub p2p: P2pDescr_v2,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
    pub kernelCh: KernelChDescr_v3,
    pub netPlugin: NetPluginDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v3 {
    pub type_: u8,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v3,
}

// ---- v4 (NCCL 2.27) ----

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollDescr_v4 {
    pub seqNumber: u64,
    pub func: *const c_char,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: *const c_char,
    pub nChannels: u8,
    pub nWarps: u8,
    pub algo: *const c_char,
    pub proto: *const c_char,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct P2pDescr_v4 {
    pub func: *const c_char,
    pub buff: *mut c_void,
    pub datatype: *const c_char,
    pub count: usize,
    pub peer: c_int,
    pub nChannels: u8,
}

/// v4+.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelChDescr_v4 {
    pub channelId: u8,
    pub pTimer: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v4 {
    pub coll: CollDescr_v4,
    pub p2p: P2pDescr_v4,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
    pub kernelCh: KernelChDescr_v4,
    pub netPlugin: NetPluginDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v4 {
    pub type_: u8,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v4,
}

/// v4+ state arguments (v6 uses v5's, which are v4's).
#[repr(C)]
#[derive(Clone, Copy)]
pub union EventStateArgs_v4 {
    pub proxyStep: usize,
    pub proxyCtrl: ProxyCtrlStateArgs,
    pub netPlugin: *mut c_void,
    pub kernelCh: u64,
}

// ---- v5 (NCCL 2.28) and v6 (NCCL 2.29+) ----

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GroupApiDescr {
    pub graphCaptured: bool,
    pub groupDepth: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollApiDescr {
    pub func: *const c_char,
    pub count: usize,
    pub datatype: *const c_char,
    pub root: c_int,
    pub stream: *mut c_void,
    pub graphCaptured: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct P2pApiDescr {
    pub func: *const c_char,
    pub count: usize,
    pub datatype: *const c_char,
    pub stream: *mut c_void,
    pub graphCaptured: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelLaunchDescr {
    pub stream: *mut c_void,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CollDescr_v5 {
    pub seqNumber: u64,
    pub func: *const c_char,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: *const c_char,
    pub nChannels: u8,
    pub nWarps: u8,
    pub algo: *const c_char,
    pub proto: *const c_char,
    pub parentGroup: *mut c_void,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct P2pDescr_v5 {
    pub func: *const c_char,
    pub buff: *mut c_void,
    pub datatype: *const c_char,
    pub count: usize,
    pub peer: c_int,
    pub nChannels: u8,
    pub parentGroup: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v5 {
    pub groupApi: GroupApiDescr,
    pub collApi: CollApiDescr,
    pub p2pApi: P2pApiDescr,
    pub kernelLaunch: KernelLaunchDescr,
    pub coll: CollDescr_v5,
    pub p2p: P2pDescr_v5,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
    pub kernelCh: KernelChDescr_v4,
    pub netPlugin: NetPluginDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v5 {
    pub type_: u64,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v5,
}

/// v6's copy-engine collective (`ceColl`); not recorded, declared so that
/// the union has its true size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CeCollDescr {
    pub seqNumber: u64,
    pub func: *const c_char,
    pub sendBuff: *const c_void,
    pub recvBuff: *mut c_void,
    pub count: usize,
    pub root: c_int,
    pub datatype: *const c_char,
    pub syncStrategy: *const c_char,
    pub intraBatchSync: bool,
    pub batchSize: u32,
    pub numBatches: u32,
    pub ceSeqNum: u32,
    pub stream: *mut c_void,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CeCollSyncDescr {
    pub isComplete: bool,
    pub nRanks: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CeCollBatchDescr {
    pub numOps: c_int,
    pub totalBytes: usize,
    pub useIntraSync: bool,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrUnion_v6 {
    pub groupApi: GroupApiDescr,
    pub collApi: CollApiDescr,
    pub p2pApi: P2pApiDescr,
    pub kernelLaunch: KernelLaunchDescr,
    pub coll: CollDescr_v5,
    pub p2p: P2pDescr_v5,
    pub proxyOp: ProxyOpDescr,
    pub proxyStep: ProxyStepDescr,
    pub kernelCh: KernelChDescr_v4,
    pub netPlugin: NetPluginDescr,
    pub ceColl: CeCollDescr,
    pub ceCollSync: CeCollSyncDescr,
    pub ceCollBatch: CeCollBatchDescr,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventDescr_v6 {
    pub type_: u64,
    pub parentObj: *mut c_void,
    pub rank: c_int,
    pub u: DescrUnion_v6,
}

// ---- the plugin structs ----

pub type InitFn_v1 = unsafe extern "C" fn(context: *mut *mut c_void, eActivationMask: *mut c_int) -> NcclResult;
pub type InitFn_v4 = unsafe extern "C" fn(
    context: *mut *mut c_void,
    eActivationMask: *mut c_int,
    commName: *const c_char,
    commHash: u64,
    nNodes: c_int,
    nranks: c_int,
    rank: c_int,
    logfn: DebugLogger,
) -> NcclResult;
pub type InitFn_v5 = unsafe extern "C" fn(
    context: *mut *mut c_void,
    commId: u64,
    eActivationMask: *mut c_int,
    commName: *const c_char,
    nNodes: c_int,
    nranks: c_int,
    rank: c_int,
    logfn: DebugLogger,
) -> NcclResult;
pub type StopFn = unsafe extern "C" fn(eHandle: *mut c_void) -> NcclResult;
pub type FinalizeFn = unsafe extern "C" fn(context: *mut c_void) -> NcclResult;

/// Declares `ncclProfiler_vN_t`: `{name, init, startEvent, stopEvent,
/// recordEventState, finalize}`, the state being a C enum (`int`).
macro_rules! profiler_struct {
    ($name:ident, $init:ty, $descr:ty, $args:ty) => {
        #[repr(C)]
        pub struct $name {
            pub name: *const c_char,
            pub init: $init,
            pub startEvent: unsafe extern "C" fn(
                context: *mut c_void,
                eHandle: *mut *mut c_void,
                eDescr: *mut $descr,
            ) -> NcclResult,
            pub stopEvent: StopFn,
            pub recordEventState:
                unsafe extern "C" fn(eHandle: *mut c_void, eState: c_int, eStateArgs: *mut $args) -> NcclResult,
            pub finalize: FinalizeFn,
        }

        // SAFETY: the struct is immutable and its pointers name a static
        // string and functions; NCCL only reads it.
        unsafe impl Sync for $name {}
    };
}

profiler_struct!(Profiler_v1, InitFn_v1, EventDescr_v1, EventStateArgs_v1);
profiler_struct!(Profiler_v2, InitFn_v1, EventDescr_v2, EventStateArgs_v1);
profiler_struct!(Profiler_v3, InitFn_v1, EventDescr_v3, EventStateArgs_v1);
profiler_struct!(Profiler_v4, InitFn_v4, EventDescr_v4, EventStateArgs_v4);
profiler_struct!(Profiler_v5, InitFn_v5, EventDescr_v5, EventStateArgs_v4);
profiler_struct!(Profiler_v6, InitFn_v5, EventDescr_v6, EventStateArgs_v4);

#[cfg(test)]
mod tests {
    //! Sizes and offsets derived by hand from the C headers (x86-64 and
    //! aarch64 Linux: LP64, natural alignment, `bool` one byte).
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn shared_members() {
        assert_eq!(size_of::<ProxyOpDescr>(), 24);
        assert_eq!(offset_of!(ProxyOpDescr, channelId), 4);
        assert_eq!(offset_of!(ProxyOpDescr, peer), 8);
        assert_eq!(offset_of!(ProxyOpDescr, isSend), 20);
        assert_eq!(size_of::<NetPluginDescr>(), 16);
        assert_eq!(size_of::<ProxyOpStateArgs_v1>(), 16);
        assert_eq!(size_of::<EventStateArgs_v1>(), 16);
        assert_eq!(size_of::<EventStateArgs_v4>(), 8);
        assert_eq!(size_of::<KernelChDescr_v4>(), 16);
        assert_eq!(offset_of!(KernelChDescr_v4, pTimer), 8);
    }

    #[test]
    fn v1_layout() {
        assert_eq!(offset_of!(CollDescr_v1, func), 24);
        assert_eq!(offset_of!(CollDescr_v1, count), 48);
        assert_eq!(offset_of!(CollDescr_v1, root), 56);
        assert_eq!(offset_of!(CollDescr_v1, datatype), 60);
        assert_eq!(offset_of!(CollDescr_v1, op), 64);
        assert_eq!(offset_of!(CollDescr_v1, trafficBytes), 72);
        assert_eq!(offset_of!(CollDescr_v1, nMaxChannels), 80);
        assert_eq!(offset_of!(CollDescr_v1, proto), 83);
        assert_eq!(offset_of!(CollDescr_v1, isNvls), 88);
        assert_eq!(size_of::<CollDescr_v1>(), 96);
        assert_eq!(offset_of!(P2pDescr_v1, datatype), 32);
        assert_eq!(offset_of!(P2pDescr_v1, peer), 48);
        assert_eq!(size_of::<P2pDescr_v1>(), 56);
        assert_eq!(offset_of!(EventDescr_v1, parentObj), 8);
        assert_eq!(offset_of!(EventDescr_v1, rank), 16);
        assert_eq!(offset_of!(EventDescr_v1, u), 24);
        assert_eq!(size_of::<EventDescr_v1>(), 120);
    }

    #[test]
    fn v2_v3_layout() {
        assert_eq!(offset_of!(CollDescr_v2, datatype), 64);
        assert_eq!(offset_of!(CollDescr_v2, trafficBytes), 72);
        assert_eq!(offset_of!(CollDescr_v2, nMaxChannels), 80);
        assert_eq!(offset_of!(CollDescr_v2, algo), 88);
        assert_eq!(offset_of!(CollDescr_v2, proto), 96);
        assert_eq!(size_of::<CollDescr_v2>(), 104);
        assert_eq!(size_of::<EventDescr_v2>(), 128);
        assert_eq!(offset_of!(P2pDescr_v2, peer), 48);
        assert_eq!(offset_of!(CollDescr_v3, nMaxChannels), 72);
        assert_eq!(offset_of!(CollDescr_v3, algo), 80);
        assert_eq!(size_of::<CollDescr_v3>(), 96);
        assert_eq!(size_of::<EventDescr_v3>(), 120);
    }

    #[test]
    fn v4_layout() {
        assert_eq!(offset_of!(CollDescr_v4, func), 8);
        assert_eq!(offset_of!(CollDescr_v4, count), 32);
        assert_eq!(offset_of!(CollDescr_v4, root), 40);
        assert_eq!(offset_of!(CollDescr_v4, datatype), 48);
        assert_eq!(offset_of!(CollDescr_v4, nChannels), 56);
        assert_eq!(offset_of!(CollDescr_v4, algo), 64);
        assert_eq!(size_of::<CollDescr_v4>(), 80);
        assert_eq!(offset_of!(P2pDescr_v4, peer), 32);
        assert_eq!(offset_of!(P2pDescr_v4, nChannels), 36);
        assert_eq!(size_of::<P2pDescr_v4>(), 40);
        assert_eq!(size_of::<EventDescr_v4>(), 104);
        assert_eq!(offset_of!(EventDescr_v4, u), 24);
    }

    #[test]
    fn v5_v6_layout() {
        assert_eq!(offset_of!(GroupApiDescr, groupDepth), 4);
        assert_eq!(offset_of!(CollApiDescr, root), 24);
        assert_eq!(offset_of!(CollApiDescr, graphCaptured), 40);
        assert_eq!(size_of::<CollApiDescr>(), 48);
        assert_eq!(offset_of!(P2pApiDescr, graphCaptured), 32);
        assert_eq!(size_of::<P2pApiDescr>(), 40);
        assert_eq!(offset_of!(CollDescr_v5, parentGroup), 80);
        assert_eq!(size_of::<CollDescr_v5>(), 88);
        assert_eq!(offset_of!(P2pDescr_v5, parentGroup), 40);
        assert_eq!(size_of::<P2pDescr_v5>(), 48);
        assert_eq!(offset_of!(EventDescr_v5, parentObj), 8);
        assert_eq!(offset_of!(EventDescr_v5, rank), 16);
        assert_eq!(offset_of!(EventDescr_v5, u), 24);
        assert_eq!(size_of::<EventDescr_v5>(), 112);
        assert_eq!(offset_of!(CeCollDescr, intraBatchSync), 64);
        assert_eq!(offset_of!(CeCollDescr, batchSize), 68);
        assert_eq!(offset_of!(CeCollDescr, stream), 80);
        assert_eq!(size_of::<CeCollDescr>(), 88);
        assert_eq!(size_of::<CeCollBatchDescr>(), 24);
        assert_eq!(size_of::<EventDescr_v6>(), 112);
    }

    #[test]
    fn plugin_structs_are_six_pointers() {
        for size in [
            size_of::<Profiler_v1>(),
            size_of::<Profiler_v2>(),
            size_of::<Profiler_v3>(),
            size_of::<Profiler_v4>(),
            size_of::<Profiler_v5>(),
            size_of::<Profiler_v6>(),
        ] {
            assert_eq!(size, 48);
        }
        assert_eq!(offset_of!(Profiler_v5, init), 8);
        assert_eq!(offset_of!(Profiler_v5, startEvent), 16);
        assert_eq!(offset_of!(Profiler_v5, stopEvent), 24);
        assert_eq!(offset_of!(Profiler_v5, recordEventState), 32);
        assert_eq!(offset_of!(Profiler_v5, finalize), 40);
    }
}
