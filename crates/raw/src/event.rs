//! Events: what happened on one location at one time.
//!
//! An event is encoded as a tag byte, the zigzag delta of its timestamp from
//! the previous event of the same chunk, and its fields as LEB128 varints.
//! Region, communicator and location numbers are stream-local definition
//! ids; ranks are ranks within the event's communicator, as in OTF2.

use crate::varint::{self, Cursor, Malformed, Sink};

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
}

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
}

/// The most bytes one event can take, timestamp included: the writer keeps
/// this much room at the end of a buffer.
pub const MAX_EVENT_LEN: usize = 256;

/// An event that is a tag, the time delta and a region.
#[inline(always)]
fn put_region<S: Sink>(out: &mut S, tag: u8, delta: i64, region: u32) {
    out.push(tag);
    varint::put_i64(out, delta);
    varint::put_u64(out, u64::from(region));
}

#[inline(always)]
fn put_msg<S: Sink>(out: &mut S, m: &Message) {
    varint::put_u64(out, u64::from(m.peer));
    varint::put_u64(out, u64::from(m.comm));
    varint::put_i64(out, i64::from(m.tag));
    varint::put_u64(out, m.bytes);
}

fn get_msg(c: &mut Cursor<'_>) -> Result<Message, Malformed> {
    Ok(Message { peer: c.u32()?, comm: c.u32()?, tag: c.i32()?, bytes: c.u64()? })
}

fn put_coll<S: Sink>(out: &mut S, k: &Collective) {
    out.push(k.op as u8);
    varint::put_u64(out, u64::from(k.comm));
    varint::put_u64(out, k.root.map_or(0, |r| u64::from(r) + 1));
    varint::put_u64(out, k.sent);
    varint::put_u64(out, k.received);
}

fn get_coll(c: &mut Cursor<'_>) -> Result<Collective, Malformed> {
    let op = CollectiveOp::from_u8(c.u8()?).ok_or(Malformed)?;
    let comm = c.u32()?;
    let root = match c.u64()? {
        0 => None,
        r => Some(u32::try_from(r - 1).map_err(|_| Malformed)?),
    };
    Ok(Collective { op, comm, root, sent: c.u64()?, received: c.u64()? })
}

fn put_config<S: Sink>(out: &mut S, k: &KernelConfig) {
    for v in k.grid.iter().chain(k.block.iter()) {
        varint::put_u64(out, u64::from(*v));
    }
    varint::put_u64(out, u64::from(k.registers));
    varint::put_u64(out, u64::from(k.static_shared));
    varint::put_u64(out, u64::from(k.dynamic_shared));
}

fn get_config(c: &mut Cursor<'_>) -> Result<KernelConfig, Malformed> {
    let mut k = KernelConfig::default();
    for v in k.grid.iter_mut().chain(k.block.iter_mut()) {
        *v = c.u32()?;
    }
    k.registers = c.u32()?;
    k.static_shared = c.u32()?;
    k.dynamic_shared = c.u32()?;
    Ok(k)
}

fn put_copy<S: Sink>(out: &mut S, k: &MemCopy) {
    varint::put_u64(out, u64::from(k.region));
    varint::put_u64(out, u64::from(k.correlation));
    out.push(k.kind as u8);
    out.push(k.src as u8);
    out.push(k.dst as u8);
    varint::put_u64(out, k.bytes);
    match &k.peer {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            for v in [p.src_device, p.dst_device, p.src_context, p.dst_context] {
                varint::put_u64(out, u64::from(v));
            }
        }
    }
    varint::put_u64(out, k.id);
}

fn get_copy(c: &mut Cursor<'_>) -> Result<MemCopy, Malformed> {
    let region = c.u32()?;
    let correlation = c.u32()?;
    let kind = CopyKind::from_u8(c.u8()?).ok_or(Malformed)?;
    let src = MemoryKind::from_u8(c.u8()?);
    let dst = MemoryKind::from_u8(c.u8()?);
    let bytes = c.u64()?;
    let peer = match c.u8()? {
        0 => None,
        1 => {
            Some(PeerEnds { src_device: c.u32()?, dst_device: c.u32()?, src_context: c.u32()?, dst_context: c.u32()? })
        }
        _ => return Err(Malformed),
    };
    Ok(MemCopy { region, correlation, kind, src, dst, bytes, peer, id: c.u64()? })
}

fn put_memory<S: Sink>(out: &mut S, m: &MemoryOp) {
    varint::put_u64(out, u64::from(m.region));
    varint::put_u64(out, u64::from(m.correlation));
    varint::put_u64(out, m.address);
    varint::put_u64(out, m.bytes);
    out.push(m.memory as u8);
    varint::put_u64(out, u64::from(m.stream));
    out.push(m.flags);
}

fn get_memory(c: &mut Cursor<'_>) -> Result<MemoryOp, Malformed> {
    Ok(MemoryOp {
        region: c.u32()?,
        correlation: c.u32()?,
        address: c.u64()?,
        bytes: c.u64()?,
        memory: MemoryKind::from_u8(c.u8()?),
        stream: c.u32()?,
        flags: c.u8()?,
    })
}

impl Event {
    /// [`encode`](Self::encode) for the recording hot path: the events an
    /// MPI call records (Enter, Leave, a send, a receive) are encoded in
    /// line, every other one out of line, so that the slot's append stays
    /// small enough to be inlined into the caller. The bytes are the same.
    #[inline(always)]
    pub(crate) fn encode_hot<S: Sink>(&self, delta: i64, out: &mut S) {
        match self {
            Event::Enter { region } => put_region(out, tag::ENTER, delta, *region),
            Event::Leave { region } => put_region(out, tag::LEAVE, delta, *region),
            Event::MpiSend(m) => {
                out.push(tag::MPI_SEND);
                varint::put_i64(out, delta);
                put_msg(out, m);
            }
            Event::MpiRecv(m) => {
                out.push(tag::MPI_RECV);
                varint::put_i64(out, delta);
                put_msg(out, m);
            }
            _ => self.encode_cold(delta, out),
        }
    }

    #[inline(never)]
    fn encode_cold<S: Sink>(&self, delta: i64, out: &mut S) {
        self.encode(delta, out);
    }

    /// Appends the event with its timestamp delta to `out`.
    #[inline]
    pub fn encode<S: Sink>(&self, delta: i64, out: &mut S) {
        let start = |out: &mut S, t: u8| {
            out.push(t);
            varint::put_i64(out, delta);
        };
        match self {
            Event::Enter { region } => put_region(out, tag::ENTER, delta, *region),
            Event::Leave { region } => put_region(out, tag::LEAVE, delta, *region),
            Event::MpiSend(m) => {
                start(out, tag::MPI_SEND);
                put_msg(out, m);
            }
            Event::MpiRecv(m) => {
                start(out, tag::MPI_RECV);
                put_msg(out, m);
            }
            Event::MpiIsend { msg, request } => {
                start(out, tag::MPI_ISEND);
                put_msg(out, msg);
                varint::put_u64(out, *request);
            }
            Event::MpiIsendComplete { request } => {
                start(out, tag::MPI_ISEND_COMPLETE);
                varint::put_u64(out, *request);
            }
            Event::MpiIrecvRequest { request } => {
                start(out, tag::MPI_IRECV_REQUEST);
                varint::put_u64(out, *request);
            }
            Event::MpiIrecv { msg, request } => {
                start(out, tag::MPI_IRECV);
                put_msg(out, msg);
                varint::put_u64(out, *request);
            }
            Event::MpiRequestTest { request } => {
                start(out, tag::MPI_REQUEST_TEST);
                varint::put_u64(out, *request);
            }
            Event::MpiRequestCancelled { request } => {
                start(out, tag::MPI_REQUEST_CANCELLED);
                varint::put_u64(out, *request);
            }
            Event::MpiCollectiveBegin => start(out, tag::MPI_COLLECTIVE_BEGIN),
            Event::MpiCollectiveEnd(k) => {
                start(out, tag::MPI_COLLECTIVE_END);
                put_coll(out, k);
            }
            Event::NonBlockingCollectiveRequest { request } => {
                start(out, tag::NBC_REQUEST);
                varint::put_u64(out, *request);
            }
            Event::NonBlockingCollectiveComplete { coll, request } => {
                start(out, tag::NBC_COMPLETE);
                put_coll(out, coll);
                varint::put_u64(out, *request);
            }
            Event::EnterCorrelated { region, correlation } => {
                start(out, tag::ENTER_CORRELATED);
                varint::put_u64(out, u64::from(*region));
                varint::put_u64(out, u64::from(*correlation));
            }
            Event::KernelBegin { region, correlation, config } => {
                start(out, tag::KERNEL_BEGIN);
                varint::put_u64(out, u64::from(*region));
                varint::put_u64(out, u64::from(*correlation));
                put_config(out, config);
            }
            Event::CopyBegin(k) => {
                start(out, tag::COPY_BEGIN);
                put_copy(out, k);
            }
            Event::CopyEnd { region, id } => {
                start(out, tag::COPY_END);
                varint::put_u64(out, u64::from(*region));
                varint::put_u64(out, *id);
            }
            Event::MemsetBegin { region, correlation, bytes, memory } => {
                start(out, tag::MEMSET_BEGIN);
                varint::put_u64(out, u64::from(*region));
                varint::put_u64(out, u64::from(*correlation));
                varint::put_u64(out, *bytes);
                out.push(*memory as u8);
            }
            Event::Metric { metric, value } => {
                start(out, tag::METRIC);
                varint::put_u64(out, u64::from(*metric));
                varint::put_u64(out, *value);
            }
            Event::Attribute { name, value } => {
                start(out, tag::ATTRIBUTE);
                varint::put_u64(out, u64::from(*name));
                varint::put_u64(out, *value);
            }
            Event::AttributeString { name, value } => {
                start(out, tag::ATTRIBUTE_STRING);
                varint::put_u64(out, u64::from(*name));
                varint::put_u64(out, u64::from(*value));
            }
            Event::MemAlloc(m) => {
                start(out, tag::MEM_ALLOC);
                put_memory(out, m);
            }
            Event::MemFree(m) => {
                start(out, tag::MEM_FREE);
                put_memory(out, m);
            }
            Event::MemPool(p) => {
                start(out, tag::MEM_POOL);
                for v in
                    [u64::from(p.region), u64::from(p.correlation), p.address, p.size, p.release_threshold, p.utilized]
                {
                    varint::put_u64(out, v);
                }
            }
        }
    }

    /// Reads one event and its timestamp delta.
    #[inline]
    pub(crate) fn decode(c: &mut Cursor<'_>) -> Result<(i64, Event), Malformed> {
        let t = c.u8()?;
        let delta = c.i64()?;
        let ev = match t {
            tag::ENTER => Event::Enter { region: c.u32()? },
            tag::LEAVE => Event::Leave { region: c.u32()? },
            tag::MPI_SEND => Event::MpiSend(get_msg(c)?),
            tag::MPI_RECV => Event::MpiRecv(get_msg(c)?),
            tag::MPI_ISEND => Event::MpiIsend { msg: get_msg(c)?, request: c.u64()? },
            tag::MPI_ISEND_COMPLETE => Event::MpiIsendComplete { request: c.u64()? },
            tag::MPI_IRECV_REQUEST => Event::MpiIrecvRequest { request: c.u64()? },
            tag::MPI_IRECV => Event::MpiIrecv { msg: get_msg(c)?, request: c.u64()? },
            tag::MPI_REQUEST_TEST => Event::MpiRequestTest { request: c.u64()? },
            tag::MPI_REQUEST_CANCELLED => Event::MpiRequestCancelled { request: c.u64()? },
            tag::MPI_COLLECTIVE_BEGIN => Event::MpiCollectiveBegin,
            tag::MPI_COLLECTIVE_END => Event::MpiCollectiveEnd(get_coll(c)?),
            tag::NBC_REQUEST => Event::NonBlockingCollectiveRequest { request: c.u64()? },
            tag::NBC_COMPLETE => Event::NonBlockingCollectiveComplete { coll: get_coll(c)?, request: c.u64()? },
            tag::ENTER_CORRELATED => Event::EnterCorrelated { region: c.u32()?, correlation: c.u32()? },
            tag::KERNEL_BEGIN => Event::KernelBegin { region: c.u32()?, correlation: c.u32()?, config: get_config(c)? },
            tag::COPY_BEGIN => Event::CopyBegin(get_copy(c)?),
            tag::COPY_END => Event::CopyEnd { region: c.u32()?, id: c.u64()? },
            tag::MEMSET_BEGIN => Event::MemsetBegin {
                region: c.u32()?,
                correlation: c.u32()?,
                bytes: c.u64()?,
                memory: MemoryKind::from_u8(c.u8()?),
            },
            tag::METRIC => Event::Metric { metric: c.u32()?, value: c.u64()? },
            tag::ATTRIBUTE => Event::Attribute { name: c.u32()?, value: c.u64()? },
            tag::ATTRIBUTE_STRING => Event::AttributeString { name: c.u32()?, value: c.u32()? },
            tag::MEM_ALLOC => Event::MemAlloc(get_memory(c)?),
            tag::MEM_FREE => Event::MemFree(get_memory(c)?),
            tag::MEM_POOL => Event::MemPool(PoolOp {
                region: c.u32()?,
                correlation: c.u32()?,
                address: c.u64()?,
                size: c.u64()?,
                release_threshold: c.u64()?,
                utilized: c.u64()?,
            }),
            _ => return Err(Malformed),
        };
        Ok((delta, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
