//! CUPTI activity records, decoded into one version-independent [`Record`].
//!
//! CUPTI writes, for each activity kind, the struct of its own release
//! (`CUpti_ActivityKernel9` in 12.x, `Kernel10` in 13.0, ...). The struct to
//! read comes from [`CuptiVersion::record_struct`]; one macro per record
//! family copies the fields gputrace uses out of whichever struct it is,
//! so the rest of the agent never sees a versioned type. Names (kernels,
//! devices) are pointers into CUPTI's memory, kept as numbers here and
//! resolved through [`Strings`], so that records captured on a GPU machine
//! decode the same way offline.

use cupti_sys::{self as sys, CuptiVersion, RecordStruct, v12_9, v13_0, v13_5};
use raw::KernelConfig;

/// Where an API call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiDomain {
    Driver,
    Runtime,
}

/// A decoded activity record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Api {
        domain: ApiDomain,
        cbid: u32,
        start: u64,
        end: u64,
        thread: u32,
        correlation: u32,
    },
    Kernel {
        span: Span,
        correlation: u32,
        name: u64,
        config: KernelConfig,
        graph: GraphNode,
    },
    Memcpy {
        span: Span,
        correlation: u32,
        bytes: u64,
        kind: u8,
        src: u8,
        dst: u8,
        graph: GraphNode,
    },
    PeerCopy {
        span: Span,
        correlation: u32,
        bytes: u64,
        src: u8,
        dst: u8,
        ends: [(u32, u32); 2],
        graph: GraphNode,
    },
    Memset {
        span: Span,
        correlation: u32,
        bytes: u64,
        memory: u16,
        graph: GraphNode,
    },
    /// One execution of a CUDA graph (`GRAPH_TRACE`): from its first
    /// node's start to its last node's end, on the stream it was launched
    /// into; `correlation` is the launch call's.
    GraphTrace {
        span: Span,
        correlation: u32,
        graph: u32,
    },
    Sync {
        start: u64,
        end: u64,
        kind: u32,
        context: u32,
        stream: u32,
        correlation: u32,
    },
    NvLink(NvLink),
    Device {
        id: u32,
        name: u64,
        uuid: [u8; 16],
        multiprocessors: u32,
        memory: u64,
        cc: (u32, u32),
    },
    Context {
        id: u32,
        device: u32,
    },
    /// An allocation or free (`MEMORY2`).
    Memory(MemoryOp),
    /// A memory pool created, destroyed or trimmed (`MEMORY_POOL`).
    Pool(PoolOp),
    /// A unified-memory counter record (`UNIFIED_MEMORY_COUNTER`).
    Uvm(UvmCounter),
    /// A kind gputrace does not use.
    Other(u32),
}

/// When and where a GPU activity ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
}

/// The CUDA graph node a kernel, copy or memset ran as. CUPTI's ids:
/// `graph` is the graph's (unique per process), `node` the node's; both
/// are 0 for work that was not launched from a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GraphNode {
    pub graph: u32,
    pub node: u64,
}

impl GraphNode {
    /// Whether the work ran as a node of a graph.
    pub fn is_graph(self) -> bool {
        self.graph != 0
    }
}

/// An NVLink connection as CUPTI reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvLink {
    pub version: u32,
    /// CUPTI's device types of both ends (1 GPU, 2 NPU = CPU/NVSwitch).
    pub types: [u32; 2],
    /// GPU ends: their UUIDs; other ends: their index in the first 4 bytes.
    pub ids: [[u8; 16]; 2],
    pub flags: u32,
    pub links: u32,
    pub bandwidth: u64,
    pub nvswitch: bool,
}

/// An allocation or a free as CUPTI's `MEMORY2` records report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryOp {
    /// An allocation (else a free).
    pub alloc: bool,
    /// CUPTI's memory kind (`CUpti_ActivityMemoryKind`: 1 pageable,
    /// 2 pinned, 3 device, 5 managed ...), as [`raw::MemoryKind`] numbers it.
    pub memory: u32,
    pub address: u64,
    pub bytes: u64,
    pub time: u64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
    pub correlation: u32,
    /// Stream-ordered (`cudaMallocAsync`, `cudaFreeAsync`).
    pub is_async: bool,
    /// The pool of an asynchronous allocation: 0 none, 1 local, 2 imported.
    pub pool_type: u32,
    /// That pool's base address.
    pub pool: u64,
}

/// A memory pool operation (`MEMORY_POOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOp {
    /// 1 created, 2 destroyed, 3 trimmed.
    pub op: u32,
    /// 1 local, 2 imported.
    pub pool_type: u32,
    pub address: u64,
    pub size: u64,
    pub release_threshold: u64,
    pub utilized: u64,
    pub time: u64,
    pub device: u32,
    pub correlation: u32,
}

/// One unified-memory counter record: a group of page faults or one
/// migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UvmCounter {
    /// `CUpti_ActivityUnifiedMemoryCounterKind`: 1 bytes HtoD, 2 bytes
    /// DtoH, 3 CPU page faults, 4 GPU page faults, 5 thrashing, 8 bytes DtoD.
    pub kind: u32,
    /// Bytes for transfers, faults for fault groups (for GPU page faults
    /// CUPTI reports the faults of one group).
    pub value: u64,
    pub start: u64,
    /// Equal to `start` for CPU page faults.
    pub end: u64,
    pub address: u64,
    /// Source and destination device (transfers); the faulting device
    /// (GPU faults, in `dst`).
    pub src: u32,
    pub dst: u32,
    pub stream: u32,
    pub flags: u32,
}

/// Resolves the name pointers of records.
pub trait Strings {
    /// The NUL-terminated string at address `ptr`, if known.
    fn get(&self, ptr: u64) -> Option<String>;
}

/// Copies a record struct out of the bytes CUPTI wrote.
fn read<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: `bytes` holds at least size_of::<T>() bytes; T is a plain C
    // struct of integers and pointers (bindgen output) for which any bit
    // pattern is valid; read_unaligned makes no alignment assumption.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

fn uuid(bytes: [std::ffi::c_char; 16]) -> [u8; 16] {
    bytes.map(|b| b as u8)
}

macro_rules! span {
    ($r:expr) => {
        Span { start: $r.start, end: $r.end, device: $r.deviceId, context: $r.contextId, stream: $r.streamId }
    };
}

macro_rules! graph_node {
    ($r:expr) => {
        GraphNode { graph: $r.graphId, node: $r.graphNodeId }
    };
}

macro_rules! kernel {
    ($r:expr) => {{
        let r = $r;
        Record::Kernel {
            span: span!(r),
            correlation: r.correlationId,
            name: r.name as u64,
            config: KernelConfig {
                grid: [r.gridX as u32, r.gridY as u32, r.gridZ as u32],
                block: [r.blockX as u32, r.blockY as u32, r.blockZ as u32],
                registers: u32::from(r.registersPerThread),
                static_shared: r.staticSharedMemory as u32,
                dynamic_shared: r.dynamicSharedMemory as u32,
            },
            graph: graph_node!(r),
        }
    }};
}

macro_rules! memcpy {
    ($r:expr) => {{
        let r = $r;
        Record::Memcpy {
            span: span!(r),
            correlation: r.correlationId,
            bytes: r.bytes,
            kind: r.copyKind,
            src: r.srcKind,
            dst: r.dstKind,
            graph: graph_node!(r),
        }
    }};
}

macro_rules! memset {
    ($r:expr) => {{
        let r = $r;
        Record::Memset {
            span: span!(r),
            correlation: r.correlationId,
            bytes: r.bytes,
            memory: r.memoryKind,
            graph: graph_node!(r),
        }
    }};
}

macro_rules! sync {
    ($r:expr) => {{
        let r = $r;
        Record::Sync {
            start: r.start,
            end: r.end,
            kind: r.type_,
            context: r.contextId,
            stream: r.streamId,
            correlation: r.correlationId,
        }
    }};
}

macro_rules! nvlink {
    ($r:expr) => {{
        let r = $r;
        // SAFETY: (the union reads) both members are plain bytes; the
        // type fields say which one is meant, and either reading is valid.
        let ids = unsafe { [uuid(r.idDev0.uuidDev.bytes), uuid(r.idDev1.uuidDev.bytes)] };
        Record::NvLink(NvLink {
            version: r.nvlinkVersion,
            types: [r.typeDev0, r.typeDev1],
            ids,
            flags: r.flag,
            links: r.physicalNvLinkCount,
            bandwidth: r.bandwidth,
            nvswitch: r.nvswitchConnected != 0,
        })
    }};
}

macro_rules! device {
    ($r:expr) => {{
        let r = $r;
        Record::Device {
            id: r.id,
            name: r.name as u64,
            uuid: uuid(r.uuid.bytes),
            multiprocessors: r.numMultiprocessors,
            memory: r.globalMemorySize,
            cc: (r.computeCapabilityMajor, r.computeCapabilityMinor),
        }
    }};
}

macro_rules! context {
    ($r:expr) => {{
        let r = $r;
        Record::Context { id: r.contextId, device: r.deviceId }
    }};
}

macro_rules! memory {
    ($r:expr) => {{
        let r = $r;
        let pool = r.memoryPoolConfig;
        Record::Memory(MemoryOp {
            alloc: r.memoryOperationType == sys::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
            memory: r.memoryKind,
            address: r.address,
            bytes: r.bytes,
            time: r.timestamp,
            device: r.deviceId,
            context: r.contextId,
            stream: r.streamId,
            correlation: r.correlationId,
            is_async: r.isAsync != 0,
            pool_type: pool.memoryPoolType,
            pool: pool.address,
        })
    }};
}

macro_rules! pool {
    ($r:expr) => {{
        let r = $r;
        Record::Pool(PoolOp {
            op: r.memoryPoolOperationType,
            pool_type: r.memoryPoolType,
            address: r.address,
            size: r.size,
            release_threshold: r.releaseThreshold,
            utilized: r.utilizedSize,
            time: r.timestamp,
            device: r.deviceId,
            correlation: r.correlationId,
        })
    }};
}

macro_rules! uvm {
    ($r:expr) => {{
        let r = $r;
        Record::Uvm(UvmCounter {
            kind: r.counterKind,
            value: r.value,
            start: r.start,
            end: r.end,
            address: r.address,
            src: r.srcId,
            dst: r.dstId,
            stream: r.streamId,
            flags: r.flags,
        })
    }};
}

/// Decodes the record in `bytes` (which starts with its `kind`), written by
/// a CUPTI of `version`. `None` when the bytes are too short for the
/// struct that release writes.
/// Whether a record of GPU work is complete: a forced flush (the agent's
/// at exit) hands back the records of work still running, with no end
/// yet. Others are always complete.
pub fn complete(r: &Record) -> bool {
    match r {
        Record::Kernel { span, .. } | Record::Memcpy { span, .. } | Record::Memset { span, .. } => {
            span.start > 0 && span.end >= span.start
        }
        _ => true,
    }
}

pub fn decode(version: CuptiVersion, bytes: &[u8]) -> Option<Record> {
    let kind: u32 = read(bytes)?;
    let Some(rs) = version.record_struct(kind) else {
        return Some(Record::Other(kind));
    };
    use RecordStruct as R;
    Some(match rs {
        R::Api => {
            let r: v12_9::CUpti_ActivityAPI = read(bytes)?;
            let domain = if kind == sys::CUPTI_ACTIVITY_KIND_RUNTIME { ApiDomain::Runtime } else { ApiDomain::Driver };
            Record::Api {
                domain,
                cbid: r.cbid,
                start: r.start,
                end: r.end,
                thread: r.threadId,
                correlation: r.correlationId,
            }
        }
        R::Kernel9 => kernel!(read::<v12_9::CUpti_ActivityKernel9>(bytes)?),
        R::Kernel10 => kernel!(read::<v13_0::CUpti_ActivityKernel10>(bytes)?),
        R::Kernel11 => kernel!(read::<v13_5::CUpti_ActivityKernel11>(bytes)?),
        R::Kernel12 => kernel!(read::<v13_5::CUpti_ActivityKernel12>(bytes)?),
        R::Kernel13 => kernel!(read::<v13_5::CUpti_ActivityKernel13>(bytes)?),
        R::Memcpy5 => memcpy!(read::<v12_9::CUpti_ActivityMemcpy5>(bytes)?),
        R::Memcpy6Cuda12 => memcpy!(read::<v12_9::CUpti_ActivityMemcpy6>(bytes)?),
        R::Memcpy6 => memcpy!(read::<v13_0::CUpti_ActivityMemcpy6>(bytes)?),
        R::Memcpy7 => memcpy!(read::<v13_5::CUpti_ActivityMemcpy7>(bytes)?),
        R::MemcpyPtoP4 => {
            let r: v12_9::CUpti_ActivityMemcpyPtoP4 = read(bytes)?;
            Record::PeerCopy {
                span: span!(r),
                correlation: r.correlationId,
                bytes: r.bytes,
                src: r.srcKind,
                dst: r.dstKind,
                ends: [(r.srcDeviceId, r.srcContextId), (r.dstDeviceId, r.dstContextId)],
                graph: graph_node!(r),
            }
        }
        R::Memset4Cuda12 => memset!(read::<v12_9::CUpti_ActivityMemset4>(bytes)?),
        R::Memset4 => memset!(read::<v13_0::CUpti_ActivityMemset4>(bytes)?),
        R::Memset5 => memset!(read::<v13_5::CUpti_ActivityMemset5>(bytes)?),
        R::Synchronization => sync!(read::<v12_9::CUpti_ActivitySynchronization>(bytes)?),
        R::Synchronization2 => sync!(read::<v12_9::CUpti_ActivitySynchronization2>(bytes)?),
        R::NvLink4 => nvlink!(read::<v12_9::CUpti_ActivityNvLink4>(bytes)?),
        R::NvLink5 => nvlink!(read::<v13_5::CUpti_ActivityNvLink5>(bytes)?),
        R::Device4 => device!(read::<v12_9::CUpti_ActivityDevice4>(bytes)?),
        R::Device5 => device!(read::<v12_9::CUpti_ActivityDevice5>(bytes)?),
        R::Device6 => device!(read::<v13_5::CUpti_ActivityDevice6>(bytes)?),
        R::Context => context!(read::<v12_9::CUpti_ActivityContext>(bytes)?),
        R::Context2 => context!(read::<v12_9::CUpti_ActivityContext2>(bytes)?),
        R::Context3 => context!(read::<v12_9::CUpti_ActivityContext3>(bytes)?),
        R::Context4 => context!(read::<v13_5::CUpti_ActivityContext4>(bytes)?),
        // GraphTrace2 appends two fields gputrace does not read.
        R::GraphTrace | R::GraphTrace2 => {
            let r: v12_9::CUpti_ActivityGraphTrace = read(bytes)?;
            Record::GraphTrace { span: span!(r), correlation: r.correlationId, graph: r.graphId }
        }
        R::Memory3 => memory!(read::<v12_9::CUpti_ActivityMemory3>(bytes)?),
        R::Memory4 => memory!(read::<v12_9::CUpti_ActivityMemory4>(bytes)?),
        R::MemoryPool2 => pool!(read::<v12_9::CUpti_ActivityMemoryPool2>(bytes)?),
        R::MemoryPool3 => pool!(read::<v13_0::CUpti_ActivityMemoryPool3>(bytes)?),
        R::UnifiedMemoryCounter2 => uvm!(read::<v12_9::CUpti_ActivityUnifiedMemoryCounter2>(bytes)?),
        R::UnifiedMemoryCounter3 => uvm!(read::<v12_9::CUpti_ActivityUnifiedMemoryCounter3>(bytes)?),
        _ => Record::Other(kind),
    })
}

/// The size of the struct a CUPTI of `version` writes for the record at
/// the start of `bytes`, if known.
pub fn record_size(version: CuptiVersion, bytes: &[u8]) -> Option<usize> {
    let kind: u32 = read(bytes)?;
    version.record_struct(kind).map(RecordStruct::size)
}
