//! Sizes and field offsets of the records gputrace reads, per generated
//! module, written out so that a regeneration that moves a field fails here
//! with its name (bindgen's own assertions in the generated files check
//! Rust against clang; these pin the numbers gputrace's readers rely on).
//! The second half documents which fields sit at the same offset in every
//! version of a record, i.e. which prefix a reader may share, and the few
//! places where versions disagree.

use std::mem::{offset_of, size_of};

use cupti_sys::{v12_9, v13_0, v13_5};

/// `offsets!(Type, size N; field @ offset: type, ...)`: checks the size, each
/// offset, and (at compile time) each field's type.
macro_rules! offsets {
    ($ty:ty, size $size:expr; $($field:ident @ $off:expr $(=> $fty:ty)?),* $(,)?) => {{
        assert_eq!(size_of::<$ty>(), $size, "size of {}", stringify!($ty));
        $(
            assert_eq!(offset_of!($ty, $field), $off, "{}::{}", stringify!($ty), stringify!($field));
            $( let _ = |r: &$ty| -> $fty { r.$field }; )?
        )*
    }};
}

/// Fields every kernel record since `Kernel9` shares.
macro_rules! kernel {
    ($ty:ty, size $size:expr) => {
        offsets!($ty, size $size;
            kind @ 0 => u32, registersPerThread @ 6 => u16,
            start @ 16 => u64, end @ 24 => u64, completed @ 32 => u64,
            deviceId @ 40 => u32, contextId @ 44 => u32, streamId @ 48 => u32,
            gridX @ 52 => i32, gridY @ 56 => i32, gridZ @ 60 => i32,
            blockX @ 64 => i32, blockY @ 68 => i32, blockZ @ 72 => i32,
            staticSharedMemory @ 76 => i32, dynamicSharedMemory @ 80 => i32,
            localMemoryPerThread @ 84 => u32, localMemoryTotal @ 88 => u32,
            correlationId @ 92 => u32, gridId @ 96 => i64,
            name @ 104 => *const std::ffi::c_char,
            queued @ 120 => u64, submitted @ 128 => u64, launchType @ 136 => u8,
            graphNodeId @ 144 => u64, graphId @ 156 => u32,
            channelID @ 168 => u32, clusterX @ 176 => u32,
        )
    };
}

/// Fields every host/device copy record since `Memcpy5` shares.
macro_rules! memcpy {
    ($ty:ty, size $size:expr) => {
        offsets!($ty, size $size;
            kind @ 0 => u32, copyKind @ 4 => u8, srcKind @ 5 => u8, dstKind @ 6 => u8,
            flags @ 7 => u8, bytes @ 8 => u64, start @ 16 => u64, end @ 24 => u64,
            deviceId @ 32 => u32, contextId @ 36 => u32, streamId @ 40 => u32,
            correlationId @ 44 => u32, runtimeCorrelationId @ 48 => u32,
            graphNodeId @ 64 => u64, graphId @ 72 => u32, channelID @ 76 => u32,
        )
    };
}

/// Fields every memset record since `Memset4` shares.
macro_rules! memset {
    ($ty:ty, size $size:expr) => {
        offsets!($ty, size $size;
            kind @ 0 => u32, value @ 4 => u32, bytes @ 8 => u64,
            start @ 16 => u64, end @ 24 => u64,
            deviceId @ 32 => u32, contextId @ 36 => u32, streamId @ 40 => u32,
            correlationId @ 44 => u32, flags @ 48 => u16, memoryKind @ 50 => u16,
            graphNodeId @ 64 => u64, graphId @ 72 => u32,
        )
    };
}

/// `CUpti_ActivityNvLink4` up to `physicalNvLinkCount`; NvLink5 shares it.
macro_rules! nvlink_head {
    ($ty:ty, size $size:expr) => {
        offsets!($ty, size $size;
            kind @ 0 => u32, nvlinkVersion @ 4 => u32, typeDev0 @ 8 => u32, typeDev1 @ 12 => u32,
            idDev0 @ 16, idDev1 @ 32, flag @ 48 => u32, physicalNvLinkCount @ 52 => u32,
        )
    };
}

/// Device fields since `Device4`.
macro_rules! device {
    ($ty:ty, size $size:expr) => {
        offsets!($ty, size $size;
            kind @ 0 => u32, flags @ 4 => u32, globalMemoryBandwidth @ 8 => u64,
            globalMemorySize @ 16 => u64, l2CacheSize @ 28 => u32, coreClockRate @ 36 => u32,
            numMemcpyEngines @ 40 => u32, numMultiprocessors @ 44 => u32,
            computeCapabilityMajor @ 104 => u32, computeCapabilityMinor @ 108 => u32,
            id @ 112 => u32, eccEnabled @ 116 => u32, uuid @ 120, name @ 136 => *const std::ffi::c_char,
            isCudaVisible @ 144 => u8, isMigEnabled @ 145 => u8,
            gpuInstanceId @ 152 => u32, computeInstanceId @ 156 => u32, migUuid @ 160,
        )
    };
}

/// The records whose single definition every module shares.
macro_rules! unversioned {
    ($m:ident) => {
        offsets!($m::CUpti_Activity, size 8; kind @ 0 => u32);
        offsets!($m::CUpti_ActivityAPI, size 40;
            kind @ 0 => u32, cbid @ 4 => u32, start @ 8 => u64, end @ 16 => u64,
            processId @ 24 => u32, threadId @ 28 => u32, correlationId @ 32 => u32,
            returnValue @ 36 => u32);
        offsets!($m::CUpti_ActivityMemcpyPtoP4, size 96;
            kind @ 0 => u32, copyKind @ 4 => u8, srcKind @ 5 => u8, dstKind @ 6 => u8,
            flags @ 7 => u8, bytes @ 8 => u64, start @ 16 => u64, end @ 24 => u64,
            deviceId @ 32 => u32, contextId @ 36 => u32, streamId @ 40 => u32,
            srcDeviceId @ 44 => u32, srcContextId @ 48 => u32,
            dstDeviceId @ 52 => u32, dstContextId @ 56 => u32, correlationId @ 60 => u32,
            graphNodeId @ 72 => u64, graphId @ 80 => u32);
        offsets!($m::CUpti_ActivitySynchronization, size 40;
            kind @ 0 => u32, type_ @ 4 => u32, start @ 8 => u64, end @ 16 => u64,
            correlationId @ 24 => u32, contextId @ 28 => u32, streamId @ 32 => u32,
            cudaEventId @ 36 => u32);
        offsets!($m::CUpti_ActivitySynchronization2, size 56;
            kind @ 0 => u32, type_ @ 4 => u32, start @ 8 => u64, end @ 16 => u64,
            correlationId @ 24 => u32, contextId @ 28 => u32, streamId @ 32 => u32,
            cudaEventId @ 36 => u32, cudaEventSyncId @ 40 => u64, returnValue @ 48 => u32);
        nvlink_head!($m::CUpti_ActivityNvLink4, size 136);
        offsets!($m::CUpti_ActivityNvLink4, size 136;
            portDev0 @ 56 => [i8; 32], portDev1 @ 88 => [i8; 32], bandwidth @ 120 => u64,
            nvswitchConnected @ 128 => u8);
        device!($m::CUpti_ActivityDevice4, size 176);
        device!($m::CUpti_ActivityDevice5, size 184);
        offsets!($m::CUpti_ActivityDevice5, size 184; isNumaNode @ 176 => u32, numaId @ 180 => u32);
        offsets!($m::CUpti_ActivityContext, size 16;
            kind @ 0 => u32, contextId @ 4 => u32, deviceId @ 8 => u32,
            computeApiKind @ 12 => u16, nullStreamId @ 14 => u16);
        offsets!($m::CUpti_ActivityContext2, size 24;
            contextId @ 4 => u32, deviceId @ 8 => u32, parentContextId @ 16 => u32,
            isGreenContext @ 20 => u8, numMultiprocessors @ 22 => u16);
        offsets!($m::CUpti_ActivityContext3, size 32;
            contextId @ 4 => u32, deviceId @ 8 => u32, parentContextId @ 16 => u32,
            cigMode @ 24 => u32);
        offsets!($m::CUpti_ActivityStream, size 24;
            kind @ 0 => u32, contextId @ 4 => u32, streamId @ 8 => u32, priority @ 12 => u32,
            flag @ 16 => u32, correlationId @ 20 => u32);
        offsets!($m::CUpti_ActivityOverhead, size 40;
            kind @ 0 => u32, overheadKind @ 4 => u32, objectKind @ 8 => u32, objectId @ 12,
            start @ 24 => u64, end @ 32 => u64);
        offsets!($m::CUpti_ActivityOverhead3, size 56;
            overheadKind @ 4 => u32, objectKind @ 8 => u32, objectId @ 12,
            start @ 24 => u64, end @ 32 => u64, correlationId @ 40 => u32,
            overheadData @ 48 => *mut std::ffi::c_void);
        offsets!($m::CUpti_ActivityMarker2, size 56;
            kind @ 0 => u32, flags @ 4 => u32, timestamp @ 8 => u64, id @ 16 => u32,
            objectKind @ 20 => u32, objectId @ 24, name @ 40 => *const std::ffi::c_char,
            domain @ 48 => *const std::ffi::c_char);
        offsets!($m::CUpti_ActivityExternalCorrelation, size 24;
            kind @ 0 => u32, externalKind @ 4 => u32, externalId @ 8 => u64,
            correlationId @ 16 => u32);
        offsets!($m::CUpti_ActivityMemory, size 80;
            kind @ 0 => u32, memoryKind @ 4 => u32, address @ 8 => u64, bytes @ 16 => u64,
            start @ 24 => u64, end @ 32 => u64, processId @ 56 => u32, deviceId @ 60 => u32,
            contextId @ 64 => u32, name @ 72 => *const std::ffi::c_char);
        offsets!($m::CUpti_ActivityMemory3, size 120;
            kind @ 0 => u32, memoryOperationType @ 4 => u32, memoryKind @ 8 => u32,
            correlationId @ 12 => u32, address @ 16 => u64, bytes @ 24 => u64,
            timestamp @ 32 => u64, PC @ 40 => u64, processId @ 48 => u32,
            deviceId @ 52 => u32, contextId @ 56 => u32, streamId @ 60 => u32,
            name @ 64 => *const std::ffi::c_char, isAsync @ 72 => u32);
        offsets!($m::CUpti_ActivityMemory4, size 128;
            memoryOperationType @ 4 => u32, address @ 16 => u64, bytes @ 24 => u64,
            timestamp @ 32 => u64, deviceId @ 52 => u32, streamId @ 60 => u32,
            source @ 120 => *const std::ffi::c_char);
        offsets!($m::CUpti_ActivityGraphTrace, size 48;
            kind @ 0 => u32, correlationId @ 4 => u32, start @ 8 => u64, end @ 16 => u64,
            deviceId @ 24 => u32, graphId @ 28 => u32, contextId @ 32 => u32, streamId @ 36 => u32);
        offsets!($m::CUpti_ActivityGraphTrace2, size 56;
            kind @ 0 => u32, correlationId @ 4 => u32, start @ 8 => u64, end @ 16 => u64,
            deviceId @ 24 => u32, graphId @ 28 => u32, contextId @ 32 => u32, streamId @ 36 => u32,
            endDeviceId @ 48 => u32, endContextId @ 52 => u32);
        offsets!($m::CUpti_ActivityName, size 32;
            kind @ 0 => u32, objectKind @ 4 => u32, objectId @ 8, name @ 24 => *const std::ffi::c_char);
        offsets!($m::CUpti_CallbackData, size 72;
            callbackSite @ 0 => u32, functionName @ 8 => *const std::ffi::c_char,
            functionParams @ 16 => *const std::ffi::c_void,
            functionReturnValue @ 24 => *mut std::ffi::c_void,
            symbolName @ 32 => *const std::ffi::c_char, context @ 40, contextUid @ 48 => u32,
            correlationData @ 56 => *mut u64, correlationId @ 64 => u32);
        offsets!($m::CUpti_ResourceData, size 24; context @ 0, resourceHandle @ 8, resourceDescriptor @ 16);
        offsets!($m::CUpti_SynchronizeData, size 16; context @ 0, stream @ 8);
        offsets!($m::CUuuid, size 16; bytes @ 0 => [std::ffi::c_char; 16]);
    };
}

#[test]
fn v12_9_records() {
    use v12_9 as m;
    unversioned!(m);
    kernel!(m::CUpti_ActivityKernel9, size 208);
    memcpy!(m::CUpti_ActivityMemcpy5, size 88);
    memcpy!(m::CUpti_ActivityMemcpy6, size 96);
    offsets!(m::CUpti_ActivityMemcpy6, size 96; pad2 @ 84 => u32, copyCount @ 88 => u64);
    memset!(m::CUpti_ActivityMemset4, size 88);
    offsets!(m::CUpti_ActivityMemset4, size 88; pad2 @ 84 => u32);
    assert_eq!(m::CUPTI_API_VERSION, 28);
    assert_eq!(m::CUPTI_MAX_NVLINK_PORTS, 32);
}

#[test]
fn v13_0_records() {
    use v13_0 as m;
    unversioned!(m);
    kernel!(m::CUpti_ActivityKernel9, size 208);
    kernel!(m::CUpti_ActivityKernel10, size 216);
    offsets!(m::CUpti_ActivityKernel10, size 216; isDeviceLaunched @ 208 => u8);
    memcpy!(m::CUpti_ActivityMemcpy6, size 96);
    offsets!(m::CUpti_ActivityMemcpy6, size 96;
        isDeviceLaunched @ 84 => u8, pad2 @ 85 => [u8; 3], copyCount @ 88 => u64);
    memset!(m::CUpti_ActivityMemset4, size 88);
    offsets!(m::CUpti_ActivityMemset4, size 88; isDeviceLaunched @ 84 => u8, pad2 @ 85 => [u8; 3]);
    assert_eq!(m::CUPTI_API_VERSION, 130_001);
}

#[test]
fn v13_5_records() {
    use v13_5 as m;
    unversioned!(m);
    kernel!(m::CUpti_ActivityKernel10, size 216);
    kernel!(m::CUpti_ActivityKernel11, size 224);
    kernel!(m::CUpti_ActivityKernel12, size 232);
    kernel!(m::CUpti_ActivityKernel13, size 248);
    offsets!(m::CUpti_ActivityKernel13, size 248;
        isDeviceLaunched @ 208 => u8, priority @ 216 => i32, executionModel @ 224 => u32,
        sourceGraphId @ 232 => u32, sourceGraphNodeId @ 240 => u64);
    memcpy!(m::CUpti_ActivityMemcpy6, size 96);
    memcpy!(m::CUpti_ActivityMemcpy7, size 112);
    offsets!(m::CUpti_ActivityMemcpy7, size 112;
        isDeviceLaunched @ 84 => u8, copyCount @ 88 => u64,
        sourceGraphId @ 96 => u32, sourceGraphNodeId @ 104 => u64);
    memset!(m::CUpti_ActivityMemset5, size 104);
    offsets!(m::CUpti_ActivityMemset5, size 104;
        isDeviceLaunched @ 84 => u8, sourceGraphId @ 88 => u32, sourceGraphNodeId @ 96 => u64);
    nvlink_head!(m::CUpti_ActivityNvLink5, size 88);
    offsets!(m::CUpti_ActivityNvLink5, size 88;
        portDev0 @ 56 => *mut u32, portDev1 @ 64 => *mut u32, bandwidth @ 72 => u64,
        nvswitchConnected @ 80 => u8);
    device!(m::CUpti_ActivityDevice6, size 192);
    offsets!(m::CUpti_ActivityDevice6, size 192;
        isNumaNode @ 176 => u32, numaId @ 180 => u32, numTpcs @ 184 => u32);
    offsets!(m::CUpti_ActivityContext4, size 40;
        contextId @ 4 => u32, deviceId @ 8 => u32, parentContextId @ 16 => u32,
        cigMode @ 24 => u32, processId @ 32 => u64);
    assert_eq!(m::CUPTI_API_VERSION, 130_500);
}

/// `same_offsets!([T, ...]; field, ...)`: each field sits at one offset in
/// every listed struct.
macro_rules! same_offsets {
    ($types:tt; $($field:ident),* $(,)?) => {
        $( same_offsets!(@field $field $types); )*
    };
    (@field $field:ident [$first:ty $(, $ty:ty)* $(,)?]) => {{
        let at = offset_of!($first, $field);
        $(
            assert_eq!(
                offset_of!($ty, $field), at,
                "{}::{} vs {}", stringify!($ty), stringify!($field), stringify!($first)
            );
        )*
    }};
}

/// A reader of one record family can use the same offsets for every
/// version of the record, in every module: these fields never moved.
#[test]
fn fields_gputrace_reads_share_offsets_across_versions() {
    same_offsets!([
        v12_9::CUpti_ActivityKernel9, v13_0::CUpti_ActivityKernel9, v13_0::CUpti_ActivityKernel10,
        v13_5::CUpti_ActivityKernel10, v13_5::CUpti_ActivityKernel11,
        v13_5::CUpti_ActivityKernel12, v13_5::CUpti_ActivityKernel13,
    ]; start, end, deviceId, contextId, streamId, correlationId, gridX, gridY, gridZ,
        blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory,
        localMemoryTotal, name, graphId, graphNodeId, channelID, clusterX, localMemoryTotal_v2,
        maxActiveClusters);
    same_offsets!([v13_0::CUpti_ActivityKernel10, v13_5::CUpti_ActivityKernel13]; isDeviceLaunched);
    same_offsets!([
        v12_9::CUpti_ActivityMemcpy5, v12_9::CUpti_ActivityMemcpy6, v13_0::CUpti_ActivityMemcpy6,
        v13_5::CUpti_ActivityMemcpy7,
    ]; copyKind, srcKind, dstKind, flags, bytes, start, end, deviceId, contextId, streamId,
        correlationId, graphNodeId, graphId, channelID);
    same_offsets!([v12_9::CUpti_ActivityMemcpy6, v13_5::CUpti_ActivityMemcpy7]; copyCount);
    same_offsets!([
        v12_9::CUpti_ActivityMemset4, v13_0::CUpti_ActivityMemset4, v13_5::CUpti_ActivityMemset5,
    ]; value, bytes, start, end, deviceId, contextId, streamId, correlationId, flags, memoryKind);
    same_offsets!([v12_9::CUpti_ActivitySynchronization, v12_9::CUpti_ActivitySynchronization2];
        type_, start, end, correlationId, contextId, streamId, cudaEventId);
    same_offsets!([
        v12_9::CUpti_ActivityDevice4, v12_9::CUpti_ActivityDevice5, v13_5::CUpti_ActivityDevice6,
    ]; globalMemoryBandwidth, globalMemorySize, numMultiprocessors, computeCapabilityMajor,
        computeCapabilityMinor, id, uuid, name);
    same_offsets!([
        v12_9::CUpti_ActivityContext, v12_9::CUpti_ActivityContext2,
        v12_9::CUpti_ActivityContext3, v13_5::CUpti_ActivityContext4,
    ]; contextId, deviceId, computeApiKind, nullStreamId);
    same_offsets!([v12_9::CUpti_ActivityOverhead, v12_9::CUpti_ActivityOverhead2,
        v12_9::CUpti_ActivityOverhead3]; overheadKind, objectKind, objectId, start, end);
    same_offsets!([v12_9::CUpti_ActivityMemory3, v12_9::CUpti_ActivityMemory4];
        memoryOperationType, memoryKind, correlationId, address, bytes, timestamp, PC,
        processId, deviceId, contextId, streamId, name, isAsync);
    same_offsets!([v12_9::CUpti_ActivityNvLink4, v13_5::CUpti_ActivityNvLink5];
        nvlinkVersion, typeDev0, typeDev1, idDev0, idDev1, flag, physicalNvLinkCount, portDev0);
}

/// Where versions disagree. A reader must pick the struct per release
/// (`CuptiVersion::record_struct`) for these.
#[test]
fn where_versions_differ() {
    // NvLink5 (13.2 on) replaced the int8_t[32] port arrays by pointers:
    // portDev1, bandwidth and nvswitchConnected moved, and the record shrank.
    assert_eq!(offset_of!(v12_9::CUpti_ActivityNvLink4, bandwidth), 120);
    assert_eq!(offset_of!(v13_5::CUpti_ActivityNvLink5, bandwidth), 72);
    assert_ne!(offset_of!(v12_9::CUpti_ActivityNvLink4, portDev1), offset_of!(v13_5::CUpti_ActivityNvLink5, portDev1));
    assert!(size_of::<v13_5::CUpti_ActivityNvLink5>() < size_of::<v13_5::CUpti_ActivityNvLink4>());

    // Memcpy6 and Memset4 keep their names and sizes, but 12.x headers end
    // them with `pad2: u32` where 13.x headers have `isDeviceLaunched: u8`.
    let _ = |r: &v12_9::CUpti_ActivityMemcpy6| -> u32 { r.pad2 };
    let _ = |r: &v13_0::CUpti_ActivityMemcpy6| -> u8 { r.isDeviceLaunched };
    let _ = |r: &v12_9::CUpti_ActivityMemset4| -> u32 { r.pad2 };
    let _ = |r: &v13_0::CUpti_ActivityMemset4| -> u8 { r.isDeviceLaunched };
    assert_eq!(size_of::<v12_9::CUpti_ActivityMemcpy6>(), size_of::<v13_0::CUpti_ActivityMemcpy6>());

    // Each newer kernel record appends to the previous one.
    assert_eq!(size_of::<v12_9::CUpti_ActivityKernel9>(), 208);
    assert_eq!(size_of::<v13_0::CUpti_ActivityKernel10>(), 216);
    assert_eq!(size_of::<v13_5::CUpti_ActivityKernel11>(), 224);
    assert_eq!(size_of::<v13_5::CUpti_ActivityKernel13>(), 248);

    // Invalid-id markers changed meaning in 13.5's headers.
    assert_eq!(v13_0::CUPTI_INVALID_CONTEXT_ID, u32::MAX);
    assert_eq!(v13_5::CUPTI_INVALID_CONTEXT_ID, 0);
    assert_eq!(v13_0::CUPTI_NVLINK_INVALID_PORT, -1);
    assert_eq!(v13_5::CUPTI_NVLINK_INVALID_PORT, u32::MAX);
    assert_eq!(v13_5::CUPTI_MAX_NVLINK_PORTS, 256);
}
