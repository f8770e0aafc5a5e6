//! Writing events: the tag, the time delta, then the fields in the order
//! `decode.rs` reads them. Everything an event holds goes through here.

use super::{Collective, Event, KernelConfig, MemCopy, MemoryOp, Message, tag};
use crate::varint::{self, Sink};

/// An event that is a tag, the time delta and a region.
#[inline(always)]
fn put_region<S: Sink>(out: &mut S, tag: u8, delta: i64, region: u32) {
    out.push(tag);
    varint::put_i64(out, delta);
    varint::put_u64(out, u64::from(region));
}

#[inline(always)]
pub(crate) fn put_msg<S: Sink>(out: &mut S, m: &Message) {
    varint::put_u64(out, u64::from(m.peer));
    varint::put_u64(out, u64::from(m.comm));
    varint::put_i64(out, i64::from(m.tag));
    varint::put_u64(out, m.bytes);
}

pub(crate) fn put_coll<S: Sink>(out: &mut S, k: &Collective) {
    out.push(k.op as u8);
    varint::put_u64(out, u64::from(k.comm));
    varint::put_u64(out, k.root.map_or(0, |r| u64::from(r) + 1));
    varint::put_u64(out, k.sent);
    varint::put_u64(out, k.received);
}

fn put_config<S: Sink>(out: &mut S, k: &KernelConfig) {
    for v in k.grid.iter().chain(k.block.iter()) {
        varint::put_u64(out, u64::from(*v));
    }
    varint::put_u64(out, u64::from(k.registers));
    varint::put_u64(out, u64::from(k.static_shared));
    varint::put_u64(out, u64::from(k.dynamic_shared));
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

fn put_memory<S: Sink>(out: &mut S, m: &MemoryOp) {
    varint::put_u64(out, u64::from(m.region));
    varint::put_u64(out, u64::from(m.correlation));
    varint::put_u64(out, m.address);
    varint::put_u64(out, m.bytes);
    out.push(m.memory as u8);
    varint::put_u64(out, u64::from(m.stream));
    out.push(m.flags);
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
            // A node id is written as a region id is.
            Event::Sample { frame } => put_region(out, tag::SAMPLE, delta, *frame),
            Event::CallPath { frame } => put_region(out, tag::CALL_PATH, delta, *frame),
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
}
