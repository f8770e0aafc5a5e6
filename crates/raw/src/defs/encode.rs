//! Writing definitions and the stream header: each record is its tag and
//! its fields as varints, in the order `decode.rs` reads them.

use super::{
    CapturedOp, CommDef, CudaObject, Definition, DeviceDef, LinkEnd, LocationKind, MetricDef, NvLinkDef, StreamHeader,
    tag,
};
use crate::varint;

impl CudaObject {
    fn code(self) -> u8 {
        match self {
            CudaObject::Device => 0,
            CudaObject::Context => 1,
            CudaObject::Stream => 2,
        }
    }
}

fn put_location_kind(out: &mut Vec<u8>, kind: &LocationKind) {
    use varint::put_u64;
    match kind {
        LocationKind::HostThread { tid, is_main } => {
            out.push(1);
            put_u64(out, u64::from(*tid));
            out.push(u8::from(*is_main));
        }
        LocationKind::GpuStream { device, context, stream } => {
            out.push(2);
            for v in [device, context, stream] {
                put_u64(out, u64::from(*v));
            }
        }
        LocationKind::DeviceMetrics { device } => {
            out.push(3);
            put_u64(out, u64::from(*device));
        }
        LocationKind::Lane { id, gpu } => {
            out.push(4);
            put_u64(out, u64::from(*id));
            out.push(u8::from(*gpu));
        }
    }
}

fn put_comm(out: &mut Vec<u8>, c: &CommDef) {
    use varint::{put_bytes, put_u64};
    put_u64(out, u64::from(c.id));
    put_u64(out, u64::from(c.key.0));
    put_u64(out, c.key.1);
    put_bytes(out, c.name.as_bytes());
    put_u64(out, c.members.len() as u64);
    for (first, count) in &c.members {
        put_u64(out, u64::from(*first));
        put_u64(out, u64::from(*count));
    }
    put_u64(out, c.parent.map_or(0, |p| u64::from(p) + 1));
}

fn put_device(out: &mut Vec<u8>, d: &DeviceDef) {
    use varint::{put_bytes, put_u64};
    put_u64(out, u64::from(d.id));
    put_bytes(out, d.name.as_bytes());
    out.extend_from_slice(&d.uuid);
    put_u64(out, u64::from(d.multiprocessors));
    put_u64(out, d.memory);
    put_u64(out, u64::from(d.compute_capability.0));
    put_u64(out, u64::from(d.compute_capability.1));
}

fn put_nvlink(out: &mut Vec<u8>, l: &NvLinkDef) {
    use varint::put_u64;
    put_end(out, &l.ends[0]);
    put_end(out, &l.ends[1]);
    put_u64(out, u64::from(l.version));
    put_u64(out, u64::from(l.links));
    put_u64(out, l.bandwidth);
    put_u64(out, u64::from(l.flags));
    out.push(u8::from(l.nvswitch));
}

fn put_metric(out: &mut Vec<u8>, m: &MetricDef) {
    use varint::{put_bytes, put_u64};
    put_u64(out, u64::from(m.id));
    put_bytes(out, m.name.as_bytes());
    put_bytes(out, m.unit.as_bytes());
    put_bytes(out, m.description.as_bytes());
    put_u64(out, u64::from(m.device));
    out.push(u8::from(m.cumulative));
}

fn put_timer(out: &mut Vec<u8>, timer: gputrace_clock::Timer) {
    match timer {
        gputrace_clock::Timer::ClockGettime => out.push(0),
        gputrace_clock::Timer::Tsc { hz, source } => {
            out.push(source.code());
            varint::put_u64(out, hz);
        }
    }
}

fn put_end(out: &mut Vec<u8>, e: &LinkEnd) {
    match e {
        LinkEnd::Gpu(uuid) => {
            out.push(1);
            out.extend_from_slice(uuid);
        }
        LinkEnd::Other(i) => {
            out.push(2);
            varint::put_u64(out, u64::from(*i));
        }
    }
}

const MAX_COMMAND_BYTES: usize = 4096;

impl StreamHeader {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.producer as u8);
        varint::put_bytes(out, self.host.as_bytes());
        varint::put_u64(out, u64::from(self.pid));
        varint::put_u64(out, self.process_start);
        varint::put_u64(out, self.clock_domain);
        varint::put_u64(out, self.monotonic_ns);
        varint::put_u64(out, self.realtime_ns);
        varint::put_u64(out, self.rank_hint.map_or(0, |r| u64::from(r) + 1));
        let mut budget = MAX_COMMAND_BYTES;
        let args: Vec<&String> = self
            .command
            .iter()
            .take_while(|a| {
                let fits = a.len() <= budget;
                budget = budget.saturating_sub(a.len());
                fits
            })
            .collect();
        varint::put_u64(out, args.len() as u64);
        for a in args {
            varint::put_bytes(out, a.as_bytes());
        }
    }
}

/// The CUDA graph definitions (format version 6) and the sampled stacks'
/// (version 7).
fn put_graph(out: &mut Vec<u8>, def: &Definition) {
    use varint::put_u64;
    match def {
        Definition::GraphNode { node, original, thread, time } => {
            out.push(tag::GRAPH_NODE);
            for v in [*node, *original, u64::from(*thread), *time] {
                put_u64(out, v);
            }
        }
        Definition::GraphCaptured { call, thread, start, end, op } => {
            out.push(tag::GRAPH_CAPTURED);
            for v in [*call, u64::from(*thread), *start, *end] {
                put_u64(out, v);
            }
            match op {
                CapturedOp::Send(m) => {
                    out.push(0);
                    crate::event::put_msg(out, m);
                }
                CapturedOp::Recv(m) => {
                    out.push(1);
                    crate::event::put_msg(out, m);
                }
                CapturedOp::Collective(k) => {
                    out.push(2);
                    crate::event::put_coll(out, k);
                }
            }
        }
        Definition::GraphLaunchReported { call } => {
            out.push(tag::GRAPH_LAUNCH_REPORTED);
            put_u64(out, *call);
        }
        Definition::Module(m) => {
            out.push(tag::MODULE);
            for v in [m.start, m.end, m.bias] {
                put_u64(out, v);
            }
            varint::put_bytes(out, m.path.as_bytes());
            varint::put_bytes(out, &m.build_id);
        }
        Definition::SamplingPeriod { ns } => put_words(out, tag::SAMPLING_PERIOD, &[*ns]),
        Definition::Frame { id, parent, address } => {
            put_words(out, tag::FRAME, &[u64::from(*id), u64::from(*parent), *address])
        }
        Definition::PyCode { id, name, file, line } => {
            put_words(out, tag::PY_CODE, &[u64::from(*id), u64::from(*line)]);
            varint::put_bytes(out, name.as_bytes());
            varint::put_bytes(out, file.as_bytes());
        }
        Definition::PyFrame { id, parent, code, line } => {
            let words = [*id, *parent, *code, *line].map(u64::from);
            put_words(out, tag::PY_FRAME, &words)
        }
        _ => {}
    }
}

impl Definition {
    pub fn encode(&self, out: &mut Vec<u8>) {
        use varint::{put_bytes, put_i64, put_u64};
        match self {
            Definition::String { id, value } => {
                out.push(tag::STRING);
                put_u64(out, u64::from(*id));
                put_bytes(out, value.as_bytes());
            }
            Definition::Region { id, name, canonical, paradigm, role, group } => {
                out.push(tag::REGION);
                put_u64(out, u64::from(*id));
                put_u64(out, u64::from(*name));
                put_u64(out, u64::from(*canonical));
                out.push(*paradigm as u8);
                out.push(*role as u8);
                put_u64(out, u64::from(*group));
            }
            Definition::Location { id, kind, name } => {
                out.push(tag::LOCATION);
                put_u64(out, u64::from(*id));
                put_location_kind(out, kind);
                put_u64(out, u64::from(*name));
            }
            Definition::MpiRank { rank, size } => {
                out.push(tag::MPI_RANK);
                put_u64(out, u64::from(*rank));
                put_u64(out, u64::from(*size));
            }
            Definition::Comm(c) => {
                out.push(tag::COMM);
                put_comm(out, c);
            }
            Definition::ClockSync { local, offset, error } => {
                out.push(tag::CLOCK_SYNC);
                put_u64(out, *local);
                put_i64(out, *offset);
                put_u64(out, *error);
            }
            Definition::Dropped { location, count } => put_words(out, tag::DROPPED, &[u64::from(*location), *count]),
            Definition::Expired { location, events, until } => {
                put_words(out, tag::EXPIRED, &[u64::from(*location), *events, *until])
            }
            Definition::StreamEnd { time, exit_started } => put_words(out, tag::STREAM_END, &[*time, *exit_started]),
            Definition::CommName { id, name } => {
                out.push(tag::COMM_NAME);
                put_u64(out, u64::from(*id));
                put_bytes(out, name.as_bytes());
            }
            Definition::ThreadName { tid, name } => {
                out.push(tag::THREAD_NAME);
                put_u64(out, u64::from(*tid));
                put_bytes(out, name.as_bytes());
            }
            Definition::Signal { signal, time } => {
                out.push(tag::SIGNAL);
                put_u64(out, u64::from(*signal));
                put_u64(out, *time);
            }
            Definition::Device(d) => {
                out.push(tag::DEVICE);
                put_device(out, d);
            }
            Definition::Context { id, device } => {
                out.push(tag::CONTEXT);
                put_u64(out, u64::from(*id));
                put_u64(out, u64::from(*device));
            }
            Definition::NvLink(l) => {
                out.push(tag::NVLINK);
                put_nvlink(out, l);
            }
            Definition::NcclComm { id, comm_hash, nranks, rank, name } => {
                out.push(tag::NCCL_COMM);
                put_u64(out, u64::from(*id));
                put_u64(out, *comm_hash);
                put_u64(out, u64::from(*nranks));
                put_u64(out, u64::from(*rank));
                put_bytes(out, name.as_bytes());
            }
            Definition::Untraced { reason } => {
                out.push(tag::UNTRACED);
                put_bytes(out, reason.as_bytes());
            }
            Definition::Timer(timer) => {
                out.push(tag::TIMER);
                put_timer(out, *timer);
            }
            Definition::CudaName { kind, handle, name } => {
                out.push(tag::CUDA_NAME);
                out.push(kind.code());
                put_u64(out, *handle);
                put_bytes(out, name.as_bytes());
            }
            Definition::CudaHandle { kind, handle, context, stream } => {
                out.push(tag::CUDA_HANDLE);
                out.push(kind.code());
                put_u64(out, *handle);
                put_u64(out, u64::from(*context));
                put_u64(out, u64::from(*stream));
            }
            Definition::SourceLost { what, count } => {
                out.push(tag::SOURCE_LOST);
                out.push(what.code());
                put_u64(out, *count);
            }
            Definition::Metric(m) => {
                out.push(tag::METRIC);
                put_metric(out, m);
            }
            Definition::GraphNode { .. }
            | Definition::GraphCaptured { .. }
            | Definition::GraphLaunchReported { .. }
            | Definition::Module(_)
            | Definition::SamplingPeriod { .. }
            | Definition::Frame { .. }
            | Definition::PyCode { .. }
            | Definition::PyFrame { .. } => put_graph(out, self),
        }
    }
}

/// A record of a tag and unsigned numbers.
fn put_words(out: &mut Vec<u8>, tag: u8, words: &[u64]) {
    out.push(tag);
    for &w in words {
        crate::varint::put_u64(out, w);
    }
}
