//! Reading definitions and the stream header back, mirroring `encode.rs`
//! field for field; an unknown tag or value is [`Malformed`].

use super::{
    CapturedOp, CommDef, CudaObject, Definition, DeviceDef, LinkEnd, LocationKind, MetricDef, NvLinkDef, Paradigm,
    RegionRole, StreamHeader, tag,
};
use crate::Producer;
use crate::lost::SourceLoss;
use crate::varint::{Cursor, Malformed};

impl RegionRole {
    fn from_u8(v: u8) -> Self {
        use RegionRole::*;
        [
            Function,
            Wrapper,
            Code,
            Barrier,
            ImplicitBarrier,
            CollOne2All,
            CollAll2One,
            CollAll2All,
            CollOther,
            FileIo,
            Point2Point,
            Rma,
            DataTransfer,
            Artificial,
            Allocate,
            Deallocate,
        ]
        .into_iter()
        .find(|r| *r as u8 == v)
        .unwrap_or(Unknown)
    }
}

impl CudaObject {
    fn from_code(c: u8) -> Result<CudaObject, Malformed> {
        Ok(match c {
            0 => CudaObject::Device,
            1 => CudaObject::Context,
            2 => CudaObject::Stream,
            _ => return Err(Malformed),
        })
    }
}

fn get_location_kind(c: &mut Cursor<'_>) -> Result<LocationKind, Malformed> {
    Ok(match c.u8()? {
        1 => LocationKind::HostThread { tid: c.u32()?, is_main: c.u8()? != 0 },
        2 => LocationKind::GpuStream { device: c.u32()?, context: c.u32()?, stream: c.u32()? },
        3 => LocationKind::DeviceMetrics { device: c.u32()? },
        4 => LocationKind::Lane { id: c.u32()?, gpu: c.u8()? != 0 },
        _ => return Err(Malformed),
    })
}

fn get_comm(c: &mut Cursor<'_>) -> Result<CommDef, Malformed> {
    let id = c.u32()?;
    let key = (c.u32()?, c.u64()?);
    let name = c.string()?;
    let n = c.u64()?;
    let mut members = Vec::new();
    for _ in 0..n {
        members.push((c.u32()?, c.u32()?));
    }
    let parent = match c.u64()? {
        0 => None,
        p => Some(u32::try_from(p - 1).map_err(|_| Malformed)?),
    };
    Ok(CommDef { id, key, name, members, parent })
}

fn get_timer(c: &mut Cursor<'_>) -> Result<gputrace_clock::Timer, Malformed> {
    Ok(match c.u8()? {
        0 => gputrace_clock::Timer::ClockGettime,
        k => {
            let source = gputrace_clock::MapSource::from_code(k).ok_or(Malformed)?;
            gputrace_clock::Timer::Tsc { hz: c.u64()?, source }
        }
    })
}

fn get_uuid(c: &mut Cursor<'_>) -> Result<[u8; 16], Malformed> {
    let mut u = [0u8; 16];
    for b in &mut u {
        *b = c.u8()?;
    }
    Ok(u)
}

fn get_end(c: &mut Cursor<'_>) -> Result<LinkEnd, Malformed> {
    match c.u8()? {
        1 => Ok(LinkEnd::Gpu(get_uuid(c)?)),
        2 => Ok(LinkEnd::Other(c.u32()?)),
        _ => Err(Malformed),
    }
}

impl StreamHeader {
    pub fn decode(bytes: &[u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(bytes);
        let producer = Producer::from_u8(c.u8()?).ok_or(Malformed)?;
        let host = c.string()?;
        let pid = c.u32()?;
        let process_start = c.u64()?;
        let clock_domain = c.u64()?;
        let monotonic_ns = c.u64()?;
        let realtime_ns = c.u64()?;
        let rank_hint = match c.u64()? {
            0 => None,
            r => Some(u32::try_from(r - 1).map_err(|_| Malformed)?),
        };
        let n = c.u64()?;
        let mut command = Vec::new();
        for _ in 0..n {
            command.push(c.string()?);
        }
        Ok(StreamHeader {
            producer,
            host,
            pid,
            process_start,
            clock_domain,
            monotonic_ns,
            realtime_ns,
            rank_hint,
            command,
        })
    }
}

impl Definition {
    pub fn decode(c: &mut Cursor<'_>) -> Result<Definition, Malformed> {
        Ok(match c.u8()? {
            tag::STRING => Definition::String { id: c.u32()?, value: c.string()? },
            tag::REGION => Definition::Region {
                id: c.u32()?,
                name: c.u32()?,
                canonical: c.u32()?,
                paradigm: Paradigm::from_u8(c.u8()?).ok_or(Malformed)?,
                role: RegionRole::from_u8(c.u8()?),
                group: c.u32()?,
            },
            tag::LOCATION => Definition::Location { id: c.u32()?, kind: get_location_kind(c)?, name: c.u32()? },
            tag::MPI_RANK => Definition::MpiRank { rank: c.u32()?, size: c.u32()? },
            tag::COMM => Definition::Comm(get_comm(c)?),
            tag::CLOCK_SYNC => Definition::ClockSync { local: c.u64()?, offset: c.i64()?, error: c.u64()? },
            tag::DROPPED => Definition::Dropped { location: c.u32()?, count: c.u64()? },
            tag::STREAM_END => Definition::StreamEnd { time: c.u64()?, exit_started: c.u64()? },
            tag::COMM_NAME => Definition::CommName { id: c.u32()?, name: c.string()? },
            tag::SIGNAL => Definition::Signal { signal: c.u32()?, time: c.u64()? },
            tag::THREAD_NAME => Definition::ThreadName { tid: c.u32()?, name: c.string()? },
            tag::DEVICE => Definition::Device(DeviceDef {
                id: c.u32()?,
                name: c.string()?,
                uuid: get_uuid(c)?,
                multiprocessors: c.u32()?,
                memory: c.u64()?,
                compute_capability: (c.u32()?, c.u32()?),
            }),
            tag::NCCL_COMM => Definition::NcclComm {
                id: c.u32()?,
                comm_hash: c.u64()?,
                nranks: c.u32()?,
                rank: c.u32()?,
                name: c.string()?,
            },
            tag::CONTEXT => Definition::Context { id: c.u32()?, device: c.u32()? },
            tag::NVLINK => Definition::NvLink(NvLinkDef {
                ends: [get_end(c)?, get_end(c)?],
                version: c.u32()?,
                links: c.u32()?,
                bandwidth: c.u64()?,
                flags: c.u32()?,
                nvswitch: c.u8()? != 0,
            }),
            tag::METRIC => Definition::Metric(MetricDef {
                id: c.u32()?,
                name: c.string()?,
                unit: c.string()?,
                description: c.string()?,
                device: c.u32()?,
                cumulative: c.u8()? != 0,
            }),
            tag::UNTRACED => Definition::Untraced { reason: c.string()? },
            tag::TIMER => Definition::Timer(get_timer(c)?),
            tag::CUDA_NAME => {
                Definition::CudaName { kind: CudaObject::from_code(c.u8()?)?, handle: c.u64()?, name: c.string()? }
            }
            tag::CUDA_HANDLE => Definition::CudaHandle {
                kind: CudaObject::from_code(c.u8()?)?,
                handle: c.u64()?,
                context: c.u32()?,
                stream: c.u32()?,
            },
            tag::EXPIRED => Definition::Expired { location: c.u32()?, events: c.u64()?, until: c.u64()? },
            tag::SOURCE_LOST => Definition::SourceLost { what: SourceLoss::from_code(c.u8()?), count: c.u64()? },
            tag::GRAPH_NODE => {
                Definition::GraphNode { node: c.u64()?, original: c.u64()?, thread: c.u32()?, time: c.u64()? }
            }
            tag::GRAPH_CAPTURED => {
                let (call, thread, start, end) = (c.u64()?, c.u32()?, c.u64()?, c.u64()?);
                let op = match c.u8()? {
                    0 => CapturedOp::Send(crate::event::get_msg(c)?),
                    1 => CapturedOp::Recv(crate::event::get_msg(c)?),
                    2 => CapturedOp::Collective(crate::event::get_coll(c)?),
                    _ => return Err(Malformed),
                };
                Definition::GraphCaptured { call, thread, start, end, op }
            }
            tag::GRAPH_LAUNCH_REPORTED => Definition::GraphLaunchReported { call: c.u64()? },
            tag::MODULE => Definition::Module(super::Module {
                start: c.u64()?,
                end: c.u64()?,
                bias: c.u64()?,
                path: c.string()?,
                build_id: c.bytes()?.to_vec(),
            }),
            tag::SAMPLING_PERIOD => Definition::SamplingPeriod { ns: c.u64()? },
            tag::FRAME => Definition::Frame { id: c.u32()?, parent: c.u32()?, address: c.u64()? },
            tag::PY_CODE => {
                let (id, line) = (c.u32()?, c.u32()?);
                Definition::PyCode { id, line, name: c.string()?, file: c.string()? }
            }
            tag::PY_FRAME => Definition::PyFrame { id: c.u32()?, parent: c.u32()?, code: c.u32()?, line: c.u32()? },
            _ => return Err(Malformed),
        })
    }
}
