//! Events: what happened on one location at one time.
//!
//! An event is encoded as a tag byte, the zigzag delta of its timestamp from
//! the previous event of the same chunk, and its fields as LEB128 varints.
//! Region, communicator and location numbers are stream-local definition
//! ids; ranks are ranks within the event's communicator, as in OTF2.
//!
//! This module holds the event types and their tags; `encode.rs` writes
//! them and `decode.rs` reads them back, field for field in the same order.

mod decode;
mod encode;

pub(crate) use decode::{get_coll, get_msg};
pub(crate) use encode::{put_coll, put_msg};

/// A collective operation, numbered as OTF2 numbers them so that the merge
/// can pass the value through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CollectiveOp {
    Barrier = 0,
    Bcast = 1,
    Gather = 2,
    Gatherv = 3,
    Scatter = 4,
    Scatterv = 5,
    Allgather = 6,
    Allgatherv = 7,
    Alltoall = 8,
    Alltoallv = 9,
    Alltoallw = 10,
    Allreduce = 11,
    Reduce = 12,
    ReduceScatter = 13,
    Scan = 14,
    Exscan = 15,
    ReduceScatterBlock = 16,
    CreateHandle = 17,
    DestroyHandle = 18,
    Allocate = 19,
    Deallocate = 20,
    CreateHandleAndAllocate = 21,
    DestroyHandleAndDeallocate = 22,
}

impl CollectiveOp {
    pub fn from_u8(v: u8) -> Option<Self> {
        use CollectiveOp::*;
        const ALL: [CollectiveOp; 23] = [
            Barrier,
            Bcast,
            Gather,
            Gatherv,
            Scatter,
            Scatterv,
            Allgather,
            Allgatherv,
            Alltoall,
            Alltoallv,
            Alltoallw,
            Allreduce,
            Reduce,
            ReduceScatter,
            Scan,
            Exscan,
            ReduceScatterBlock,
            CreateHandle,
            DestroyHandle,
            Allocate,
            Deallocate,
            CreateHandleAndAllocate,
            DestroyHandleAndDeallocate,
        ];
        ALL.get(v as usize).copied()
    }
}

/// A message's envelope: peer rank within the communicator, communicator
/// id, tag and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    pub peer: u32,
    pub comm: u32,
    pub tag: i32,
    pub bytes: u64,
}

/// What a collective did: its communicator, root (a rank within the
/// communicator; `None` when the operation has no root) and bytes moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collective {
    pub op: CollectiveOp,
    pub comm: u32,
    pub root: Option<u32>,
    pub sent: u64,
    pub received: u64,
}

/// What a GPU copy moved between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CopyKind {
    HostToDevice = 1,
    DeviceToHost = 2,
    DeviceToDevice = 3,
    HostToHost = 4,
    /// Between two GPUs (a peer copy).
    PeerToPeer = 5,
    /// Anything else CUPTI reports (arrays, unknown).
    Other = 6,
}

impl CopyKind {
    pub fn from_u8(v: u8) -> Option<Self> {
        use CopyKind::*;
        [HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, PeerToPeer, Other].into_iter().find(|k| *k as u8 == v)
    }

    /// Short name: HtoD, DtoH, DtoD, HtoH, PtoP, other.
    pub fn short_name(self) -> &'static str {
        match self {
            CopyKind::HostToDevice => "HtoD",
            CopyKind::DeviceToHost => "DtoH",
            CopyKind::DeviceToDevice => "DtoD",
            CopyKind::HostToHost => "HtoH",
            CopyKind::PeerToPeer => "PtoP",
            CopyKind::Other => "other",
        }
    }
}

/// Memory a copy or memset touched, as CUPTI classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MemoryKind {
    Unknown = 0,
    Pageable = 1,
    Pinned = 2,
    Device = 3,
    Array = 4,
    Managed = 5,
    DeviceStatic = 6,
    ManagedStatic = 7,
}

impl MemoryKind {
    pub fn from_u8(v: u8) -> Self {
        use MemoryKind::*;
        [Pageable, Pinned, Device, Array, Managed, DeviceStatic, ManagedStatic]
            .into_iter()
            .find(|k| *k as u8 == v)
            .unwrap_or(Unknown)
    }

    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Unknown => "unknown",
            MemoryKind::Pageable => "pageable",
            MemoryKind::Pinned => "pinned",
            MemoryKind::Device => "device",
            MemoryKind::Array => "array",
            MemoryKind::Managed => "managed",
            MemoryKind::DeviceStatic => "device static",
            MemoryKind::ManagedStatic => "managed static",
        }
    }
}

/// A kernel launch's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers: u32,
    pub static_shared: u32,
    pub dynamic_shared: u32,
}

/// The GPUs and contexts at both ends of a peer copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerEnds {
    pub src_device: u32,
    pub dst_device: u32,
    pub src_context: u32,
    pub dst_context: u32,
}

/// A GPU copy, recorded at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemCopy {
    pub region: u32,
    pub correlation: u32,
    pub kind: CopyKind,
    pub src: MemoryKind,
    pub dst: MemoryKind,
    pub bytes: u64,
    pub peer: Option<PeerEnds>,
    /// Pairs this start with its [`Event::CopyEnd`].
    pub id: u64,
}

/// An allocation or a free, on the memory location of the process's GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryOp {
    /// The zero-length region that shows it (`CUDA alloc (device)`).
    pub region: u32,
    /// The API call that made it (0 if unknown).
    pub correlation: u32,
    pub address: u64,
    pub bytes: u64,
    pub memory: MemoryKind,
    /// CUPTI's stream id (0 for synchronous allocations).
    pub stream: u32,
    /// [`MemoryOp::ASYNC`], [`MemoryOp::POOL`], [`MemoryOp::IMPORTED_POOL`].
    pub flags: u8,
}

impl MemoryOp {
    /// Stream-ordered: `cudaMallocAsync`, `cudaFreeAsync`.
    pub const ASYNC: u8 = 1;
    /// From a memory pool the process created (`cudaMallocFromPoolAsync`)
    /// or the device's default pool.
    pub const POOL: u8 = 2;
    /// From a pool imported from another process.
    pub const IMPORTED_POOL: u8 = 4;
}

/// A memory pool created, destroyed or trimmed; which one the region says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOp {
    pub region: u32,
    pub correlation: u32,
    pub address: u64,
    pub size: u64,
    pub release_threshold: u64,
    /// Bytes of the pool in use (trims).
    pub utilized: u64,
}

/// One event; the timestamp travels beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Enter {
        region: u32,
    },
    Leave {
        region: u32,
    },
    MpiSend(Message),
    MpiRecv(Message),
    MpiIsend {
        msg: Message,
        request: u64,
    },
    MpiIsendComplete {
        request: u64,
    },
    MpiIrecvRequest {
        request: u64,
    },
    MpiIrecv {
        msg: Message,
        request: u64,
    },
    MpiRequestTest {
        request: u64,
    },
    MpiRequestCancelled {
        request: u64,
    },
    MpiCollectiveBegin,
    MpiCollectiveEnd(Collective),
    NonBlockingCollectiveRequest {
        request: u64,
    },
    NonBlockingCollectiveComplete {
        coll: Collective,
        request: u64,
    },
    /// Enter of a region that carries a CUDA correlation id (an API call,
    /// a synchronization), so that what it launched can be joined to it.
    EnterCorrelated {
        region: u32,
        correlation: u32,
    },
    /// A kernel starts on its stream; its end is a Leave of `region`.
    KernelBegin {
        region: u32,
        correlation: u32,
        config: KernelConfig,
    },
    /// A copy starts on its stream.
    CopyBegin(MemCopy),
    /// The copy `id` (region `region`) ends.
    CopyEnd {
        region: u32,
        id: u64,
    },
    /// A memset starts on its stream; its end is a Leave of `region`.
    MemsetBegin {
        region: u32,
        correlation: u32,
        bytes: u64,
        memory: MemoryKind,
    },
    /// A sample of metric `metric` (a definition id).
    Metric {
        metric: u32,
        value: u64,
    },
    /// An attribute of the next event of the same location: `name` is a
    /// string id, the value a number. Producers whose events carry
    /// free-form details (NCCL's algorithm, protocol, channels) use these
    /// instead of an event type of their own.
    Attribute {
        name: u32,
        value: u64,
    },
    /// A string attribute of the next event: `value` is a string id.
    AttributeString {
        name: u32,
        value: u32,
    },
    /// Memory allocated (a zero-length region with the allocation's details).
    MemAlloc(MemoryOp),
    /// Memory freed.
    MemFree(MemoryOp),
    /// A memory pool operation.
    MemPool(PoolOp),
    /// The thread's call stack, sampled on its CPU time: `frame` is the
    /// innermost node of the process's stack tree
    /// ([`Definition::Frame`](crate::Definition::Frame); format version 7).
    Sample {
        frame: u32,
    },
    /// The call path of the next Enter of the same location
    /// (`GPUTRACE_UNWINDING`): `frame` is the innermost node of the
    /// process's stack tree, the caller of the function entered (format
    /// version 8).
    CallPath {
        frame: u32,
    },
}

/// The bit of a [`Definition::Frame`](crate::Definition::Frame)'s address
/// that marks a region's node (no user-space address has it on x86-64):
/// its low 32 bits are a region of the stream, the MPI function called
/// at the node's parent, the leaf of an MPI call's call path (version 8).
pub const REGION_NODE: u64 = 1 << 63;

mod tag {
    pub const ENTER: u8 = 1;
    pub const LEAVE: u8 = 2;
    pub const MPI_SEND: u8 = 3;
    pub const MPI_RECV: u8 = 4;
    pub const MPI_ISEND: u8 = 5;
    pub const MPI_ISEND_COMPLETE: u8 = 6;
    pub const MPI_IRECV_REQUEST: u8 = 7;
    pub const MPI_IRECV: u8 = 8;
    pub const MPI_REQUEST_TEST: u8 = 9;
    pub const MPI_REQUEST_CANCELLED: u8 = 10;
    pub const MPI_COLLECTIVE_BEGIN: u8 = 11;
    pub const MPI_COLLECTIVE_END: u8 = 12;
    pub const NBC_REQUEST: u8 = 13;
    pub const NBC_COMPLETE: u8 = 14;
    pub const ENTER_CORRELATED: u8 = 15;
    pub const KERNEL_BEGIN: u8 = 16;
    pub const COPY_BEGIN: u8 = 17;
    pub const COPY_END: u8 = 18;
    pub const MEMSET_BEGIN: u8 = 19;
    pub const METRIC: u8 = 20;
    pub const ATTRIBUTE: u8 = 21;
    pub const ATTRIBUTE_STRING: u8 = 22;
    // Memory (format version 4); 23..40 are left for other additions.
    pub const MEM_ALLOC: u8 = 40;
    pub const MEM_FREE: u8 = 41;
    pub const MEM_POOL: u8 = 42;
    // Sampled call stacks (format version 7).
    pub const SAMPLE: u8 = 43;
    // An MPI call's call path (format version 8).
    pub const CALL_PATH: u8 = 44;
}

/// The most bytes one event can take, timestamp included: the writer keeps
/// this much room at the end of a buffer.
pub const MAX_EVENT_LEN: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::varint::Cursor;

    fn samples() -> Vec<Event> {
        let msg = Message { peer: 3, comm: 1, tag: -7, bytes: 1 << 40 };
        let coll = Collective { op: CollectiveOp::Allreduce, comm: 2, root: Some(0), sent: 8, received: 16 };
        vec![
            Event::Enter { region: 5 },
            Event::Leave { region: 5 },
            Event::MpiSend(msg),
            Event::MpiRecv(msg),
            Event::MpiIsend { msg, request: 9 },
            Event::MpiIsendComplete { request: 9 },
            Event::MpiIrecvRequest { request: 10 },
            Event::MpiIrecv { msg, request: 10 },
            Event::MpiRequestTest { request: 10 },
            Event::Sample { frame: 1 << 20 },
            Event::CallPath { frame: 1 << 21 },
            Event::MpiRequestCancelled { request: 10 },
            Event::MpiCollectiveBegin,
            Event::MpiCollectiveEnd(coll),
            Event::MpiCollectiveEnd(Collective { root: None, ..coll }),
            Event::NonBlockingCollectiveRequest { request: 11 },
            Event::NonBlockingCollectiveComplete { coll, request: 11 },
            Event::EnterCorrelated { region: 3, correlation: 77 },
            Event::KernelBegin {
                region: 4,
                correlation: 78,
                config: KernelConfig {
                    grid: [1, 2, 3],
                    block: [256, 1, 1],
                    registers: 32,
                    static_shared: 0,
                    dynamic_shared: 4096,
                },
            },
            Event::CopyBegin(MemCopy {
                region: 5,
                correlation: 79,
                kind: CopyKind::PeerToPeer,
                src: MemoryKind::Device,
                dst: MemoryKind::Device,
                bytes: 1 << 33,
                peer: Some(PeerEnds { src_device: 0, dst_device: 1, src_context: 1, dst_context: 2 }),
                id: 12,
            }),
            Event::CopyBegin(MemCopy {
                region: 6,
                correlation: 80,
                kind: CopyKind::HostToDevice,
                src: MemoryKind::Pageable,
                dst: MemoryKind::Device,
                bytes: 4,
                peer: None,
                id: 13,
            }),
            Event::CopyEnd { region: 5, id: 12 },
            Event::MemsetBegin { region: 7, correlation: 81, bytes: 64, memory: MemoryKind::Device },
            Event::Metric { metric: 2, value: 123456 },
            Event::Attribute { name: 9, value: 1 << 40 },
            Event::AttributeString { name: 9, value: 12 },
            Event::MemAlloc(MemoryOp {
                region: 8,
                correlation: 82,
                address: 0x7f12_3456_0000,
                bytes: 1 << 30,
                memory: MemoryKind::Device,
                stream: 0,
                flags: 0,
            }),
            Event::MemFree(MemoryOp {
                region: 9,
                correlation: 83,
                address: 0x7f12_3456_0000,
                bytes: 1 << 30,
                memory: MemoryKind::Device,
                stream: 13,
                flags: MemoryOp::ASYNC | MemoryOp::POOL,
            }),
            Event::MemAlloc(MemoryOp {
                region: 10,
                correlation: 0,
                address: u64::MAX,
                bytes: 4096,
                memory: MemoryKind::Pinned,
                stream: u32::MAX,
                flags: MemoryOp::IMPORTED_POOL,
            }),
            Event::MemPool(PoolOp {
                region: 11,
                correlation: 84,
                address: 0x7f00_0000_0000,
                size: 1 << 21,
                release_threshold: u64::MAX,
                utilized: 1 << 20,
            }),
        ]
    }

    #[test]
    fn every_event_round_trips() {
        let mut buf = Vec::new();
        for (i, e) in samples().iter().enumerate() {
            e.encode(i as i64 - 3, &mut buf);
        }
        let mut c = Cursor::new(&buf);
        for (i, e) in samples().iter().enumerate() {
            assert_eq!(Event::decode(&mut c).unwrap(), (i as i64 - 3, *e));
        }
        assert!(c.is_empty());
    }

    #[test]
    fn no_event_exceeds_the_reserved_room() {
        let big = Message { peer: u32::MAX, comm: u32::MAX, tag: i32::MIN, bytes: u64::MAX };
        let mut buf = Vec::new();
        Event::MpiIrecv { msg: big, request: u64::MAX }.encode(i64::MIN, &mut buf);
        assert!(buf.len() <= MAX_EVENT_LEN, "{}", buf.len());
        buf.clear();
        let coll = Collective {
            op: CollectiveOp::Alltoallw,
            comm: u32::MAX,
            root: Some(u32::MAX - 1),
            sent: u64::MAX,
            received: u64::MAX,
        };
        Event::NonBlockingCollectiveComplete { coll, request: u64::MAX }.encode(i64::MAX, &mut buf);
        assert!(buf.len() <= MAX_EVENT_LEN, "{}", buf.len());
    }

    #[test]
    fn memory_events_fit_and_stay_small() {
        let mut buf = Vec::new();
        let big = MemoryOp {
            region: u32::MAX,
            correlation: u32::MAX,
            address: u64::MAX,
            bytes: u64::MAX,
            memory: MemoryKind::ManagedStatic,
            stream: u32::MAX,
            flags: u8::MAX,
        };
        Event::MemFree(big).encode(i64::MIN, &mut buf);
        assert!(buf.len() <= MAX_EVENT_LEN, "{}", buf.len());
        buf.clear();
        let p = PoolOp {
            region: u32::MAX,
            correlation: u32::MAX,
            address: u64::MAX,
            size: u64::MAX,
            release_threshold: u64::MAX,
            utilized: u64::MAX,
        };
        Event::MemPool(p).encode(i64::MAX, &mut buf);
        assert!(buf.len() <= MAX_EVENT_LEN, "{}", buf.len());
        // A typical cudaMalloc: a 47-bit address, 1 MiB, on stream 0, a
        // microsecond after the previous event: 19 bytes.
        buf.clear();
        let m = MemoryOp {
            region: 3,
            correlation: 1200,
            address: 0x7f3a_c000_0000,
            bytes: 1 << 20,
            memory: MemoryKind::Device,
            stream: 0,
            flags: 0,
        };
        Event::MemAlloc(m).encode(1000, &mut buf);
        assert_eq!(buf.len(), 19, "{buf:?}");
    }

    #[test]
    fn typical_events_are_small() {
        let mut buf = Vec::new();
        Event::Enter { region: 12 }.encode(300, &mut buf);
        assert_eq!(buf.len(), 4);
    }
}
