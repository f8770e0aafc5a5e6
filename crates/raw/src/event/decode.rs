//! Reading events back, mirroring `encode.rs` field for field; an unknown
//! tag or value is [`Malformed`].

use super::{
    Collective, CollectiveOp, CopyKind, Event, KernelConfig, MemCopy, MemoryKind, MemoryOp, Message, PeerEnds, PoolOp,
    tag,
};
use crate::varint::{Cursor, Malformed};

pub(crate) fn get_msg(c: &mut Cursor<'_>) -> Result<Message, Malformed> {
    Ok(Message { peer: c.u32()?, comm: c.u32()?, tag: c.i32()?, bytes: c.u64()? })
}

pub(crate) fn get_coll(c: &mut Cursor<'_>) -> Result<Collective, Malformed> {
    let op = CollectiveOp::from_u8(c.u8()?).ok_or(Malformed)?;
    let comm = c.u32()?;
    let root = match c.u64()? {
        0 => None,
        r => Some(u32::try_from(r - 1).map_err(|_| Malformed)?),
    };
    Ok(Collective { op, comm, root, sent: c.u64()?, received: c.u64()? })
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
            tag::SAMPLE => Event::Sample { frame: c.u32()? },
            tag::CALL_PATH => Event::CallPath { frame: c.u32()? },
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
