//! Definitions: the names and identities that events refer to by number.
//!
//! A stream writes each definition once, in a definitions chunk, before the
//! first events chunk that uses it; ids are local to the stream. The stream
//! header chunk says which process and producer wrote the file.

use crate::Producer;
use crate::lost::SourceLoss;
use crate::varint::{self, Cursor, Malformed};

/// Who wrote a stream: the identity the merge uses to join the streams of
/// one process (host, pid and the process's start time, so that a reused
/// pid is a different process), and a pair of clock readings taken together
/// so that processes without an MPI clock sync can still be aligned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHeader {
    pub producer: Producer,
    pub host: String,
    pub pid: u32,
    /// Start time of the process in clock ticks after boot (`/proc/self/stat`).
    pub process_start: u64,
    /// Processes with the same clock domain (a hash of the kernel's boot
    /// id) read the same CLOCK_MONOTONIC.
    pub clock_domain: u64,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME, in ns, read together at open.
    pub monotonic_ns: u64,
    pub realtime_ns: u64,
    /// The rank the launcher announced in the environment, if any.
    pub rank_hint: Option<u32>,
    /// The program and its arguments (cut to a few KiB).
    pub command: Vec<String>,
}

/// Programming model a region belongs to; mapped to OTF2 paradigms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Paradigm {
    User = 1,
    Mpi = 2,
    Cuda = 3,
    Nccl = 4,
    Measurement = 5,
    /// NVTX annotations (ranges and marks); OTF2 paradigm USER, as
    /// Score-P's user regions.
    Nvtx = 6,
}

/// A region's role, numbered as OTF2's region roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RegionRole {
    Unknown = 0,
    Function = 1,
    Wrapper = 2,
    /// A code region (NVTX start/end ranges, which need not nest).
    Code = 4,
    Barrier = 15,
    ImplicitBarrier = 16,
    CollOne2All = 23,
    CollAll2One = 24,
    CollAll2All = 25,
    CollOther = 26,
    FileIo = 27,
    Point2Point = 28,
    Rma = 29,
    DataTransfer = 30,
    Artificial = 31,
    Allocate = 35,
    Deallocate = 36,
}

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

impl Paradigm {
    fn from_u8(v: u8) -> Option<Self> {
        use Paradigm::*;
        [User, Mpi, Cuda, Nccl, Measurement, Nvtx].into_iter().find(|p| *p as u8 == v)
    }
}

/// What a location is in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocationKind {
    /// A host thread, by kernel thread id; `is_main` when tid == pid.
    HostThread { tid: u32, is_main: bool },
    /// A CUDA stream: CUPTI's device, context and stream ids.
    GpuStream { device: u32, context: u32, stream: u32 },
    /// Where samples of a device's metrics (NVLink traffic) are recorded.
    DeviceMetrics { device: u32 },
    /// A timeline a producer makes of its own, named by the producer (one
    /// NCCL channel's kernel work, one proxy channel's operations): `id`
    /// tells lanes of one stream apart, `gpu` whether it shows GPU work.
    Lane { id: u32, gpu: bool },
}

/// A GPU as the process saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDef {
    /// CUDA device ordinal in the process.
    pub id: u32,
    pub name: String,
    pub uuid: [u8; 16],
    pub multiprocessors: u32,
    pub memory: u64,
    pub compute_capability: (u32, u32),
}

/// One end of an NVLink: a GPU by UUID, or another device (a CPU or
/// NVSwitch port, "NPU" in CUPTI's words) by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkEnd {
    Gpu([u8; 16]),
    Other(u32),
}

/// An NVLink connection between two devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvLinkDef {
    pub ends: [LinkEnd; 2],
    pub version: u32,
    pub links: u32,
    /// Bandwidth as CUPTI reports it (kB/s).
    pub bandwidth: u64,
    /// CUPTI's link flags (peer access, system memory access, atomics).
    pub flags: u32,
    pub nvswitch: bool,
}

/// A metric the stream samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricDef {
    pub id: u32,
    pub name: String,
    pub unit: String,
    pub description: String,
    /// The CUDA device the metric belongs to.
    pub device: u32,
    /// Cumulative counter (true) or instantaneous value.
    pub cumulative: bool,
}

/// Runs of consecutive world ranks, `(first, count)`: a communicator's
/// members in compact form (a duplicate of the world is one run).
pub type RankRuns = Vec<(u32, u32)>;

/// A communicator as one process saw it. `key` is the same in every member
/// process (the world rank of its rank 0 and that process's creation
/// counter), so the merge can unify the members' definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommDef {
    pub id: u32,
    pub key: (u32, u64),
    pub name: String,
    /// Members in communicator rank order, as world ranks.
    pub members: RankRuns,
    /// The parent communicator's stream-local id, if known.
    pub parent: Option<u32>,
}

/// One definition record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Definition {
    String {
        id: u32,
        value: String,
    },
    /// `canonical` names the unique (mangled) name, 0 = same as `name`.
    Region {
        id: u32,
        name: u32,
        canonical: u32,
        paradigm: Paradigm,
        role: RegionRole,
        group: u32,
    },
    Location {
        id: u32,
        kind: LocationKind,
        name: u32,
    },
    /// The process is MPI rank `rank` of `size`.
    MpiRank {
        rank: u32,
        size: u32,
    },
    Comm(CommDef),
    /// A clock measurement: at local time `local`, the reference clock read
    /// `local + offset`, give or take `error` ns.
    ClockSync {
        local: u64,
        offset: i64,
        error: u64,
    },
    /// `count` events of `location` were lost (a write failed).
    Dropped {
        location: u32,
        count: u64,
    },
    /// The producer finished cleanly at `time`; it began finishing (the
    /// program had ended its work) at `exit_started`.
    StreamEnd {
        time: u64,
        exit_started: u64,
    },
    /// The program named communicator `id` (MPI_Comm_set_name).
    CommName {
        id: u32,
        name: String,
    },
    /// Signal `signal` was about to kill the process at `time`; what the
    /// recorder held was written out first.
    Signal {
        signal: u32,
        time: u64,
    },
    /// The program named its thread `tid` (nvtxNameOsThread): the name of
    /// that thread's location; the last one counts.
    ThreadName {
        tid: u32,
        name: String,
    },
    /// The program named a CUDA object through NVTX (`nvtxNameCudaDevice`,
    /// `nvtxNameCuContext`, `nvtxNameCudaStream`...): `handle` is the
    /// device ordinal, or the CUcontext/CUstream pointer; the last name
    /// counts.
    CudaName {
        kind: CudaObject,
        handle: u64,
        name: String,
    },
    /// The CUDA agent saw a context or stream created: its handle (the
    /// CUcontext/CUstream pointer) and CUPTI's ids for it (`stream` 0 for a
    /// context), so that names given to handles find their locations.
    CudaHandle {
        kind: CudaObject,
        handle: u64,
        context: u32,
        stream: u32,
    },
    Device(DeviceDef),
    /// CUPTI context `id` lives on device `device`.
    Context {
        id: u32,
        device: u32,
    },
    NvLink(NvLinkDef),
    Metric(MetricDef),
    /// An NCCL communicator as one member saw it: NCCL's communicator id
    /// (the same in every member), its size and this process's rank in it.
    /// The merge puts the members together from every process's record.
    NcclComm {
        id: u32,
        comm_hash: u64,
        nranks: u32,
        rank: u32,
        name: String,
    },
    /// The stream's producer recorded nothing in this process, and says
    /// why (`CUPTI could not be loaded: ...`): the merge tells the user
    /// what was not traced rather than that the program did nothing.
    Untraced {
        reason: String,
    },
    /// The timer the process read its timestamps from (written when its
    /// stream opens): the archive says which.
    Timer(gputrace_clock::Timer),
    /// `count` records of kind `what` the stream's source (CUPTI, NCCL)
    /// or the producer's own pipeline lost before they became events, so
    /// far: a later record of the same kind supersedes an earlier one
    /// (format version 5).
    SourceLost {
        what: SourceLoss,
        count: u64,
    },
}

/// What a [`Definition::CudaName`] or [`Definition::CudaHandle`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaObject {
    Device,
    Context,
    Stream,
}

impl CudaObject {
    fn code(self) -> u8 {
        match self {
            CudaObject::Device => 0,
            CudaObject::Context => 1,
            CudaObject::Stream => 2,
        }
    }

    fn from_code(c: u8) -> Result<CudaObject, Malformed> {
        Ok(match c {
            0 => CudaObject::Device,
            1 => CudaObject::Context,
            2 => CudaObject::Stream,
            _ => return Err(Malformed),
        })
    }
}

mod tag {
    pub const STRING: u8 = 1;
    pub const REGION: u8 = 2;
    pub const LOCATION: u8 = 3;
    pub const MPI_RANK: u8 = 4;
    pub const COMM: u8 = 5;
    pub const CLOCK_SYNC: u8 = 6;
    pub const DROPPED: u8 = 7;
    pub const STREAM_END: u8 = 8;
    pub const DEVICE: u8 = 9;
    pub const CONTEXT: u8 = 10;
    pub const NVLINK: u8 = 11;
    pub const METRIC: u8 = 12;
    pub const NCCL_COMM: u8 = 13;
    pub const SIGNAL: u8 = 14;
    pub const COMM_NAME: u8 = 15;
    pub const THREAD_NAME: u8 = 16;
    pub const UNTRACED: u8 = 17;
    pub const CUDA_NAME: u8 = 18;
    pub const CUDA_HANDLE: u8 = 19;
    pub const TIMER: u8 = 20;
    pub const SOURCE_LOST: u8 = 21;
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
                put_u64(out, u64::from(*name));
            }
            Definition::MpiRank { rank, size } => {
                out.push(tag::MPI_RANK);
                put_u64(out, u64::from(*rank));
                put_u64(out, u64::from(*size));
            }
            Definition::Comm(c) => {
                out.push(tag::COMM);
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
            Definition::ClockSync { local, offset, error } => {
                out.push(tag::CLOCK_SYNC);
                put_u64(out, *local);
                put_i64(out, *offset);
                put_u64(out, *error);
            }
            Definition::Dropped { location, count } => {
                out.push(tag::DROPPED);
                put_u64(out, u64::from(*location));
                put_u64(out, *count);
            }
            Definition::StreamEnd { time, exit_started } => {
                out.push(tag::STREAM_END);
                put_u64(out, *time);
                put_u64(out, *exit_started);
            }
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
                put_u64(out, u64::from(d.id));
                put_bytes(out, d.name.as_bytes());
                out.extend_from_slice(&d.uuid);
                put_u64(out, u64::from(d.multiprocessors));
                put_u64(out, d.memory);
                put_u64(out, u64::from(d.compute_capability.0));
                put_u64(out, u64::from(d.compute_capability.1));
            }
            Definition::Context { id, device } => {
                out.push(tag::CONTEXT);
                put_u64(out, u64::from(*id));
                put_u64(out, u64::from(*device));
            }
            Definition::NvLink(l) => {
                out.push(tag::NVLINK);
                put_end(out, &l.ends[0]);
                put_end(out, &l.ends[1]);
                put_u64(out, u64::from(l.version));
                put_u64(out, u64::from(l.links));
                put_u64(out, l.bandwidth);
                put_u64(out, u64::from(l.flags));
                out.push(u8::from(l.nvswitch));
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
                match *timer {
                    gputrace_clock::Timer::ClockGettime => out.push(0),
                    gputrace_clock::Timer::Tsc { hz, source } => {
                        out.push(source.code());
                        put_u64(out, hz);
                    }
                }
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
                put_u64(out, u64::from(m.id));
                put_bytes(out, m.name.as_bytes());
                put_bytes(out, m.unit.as_bytes());
                put_bytes(out, m.description.as_bytes());
                put_u64(out, u64::from(m.device));
                out.push(u8::from(m.cumulative));
            }
        }
    }

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
            tag::LOCATION => {
                let id = c.u32()?;
                let kind = match c.u8()? {
                    1 => LocationKind::HostThread { tid: c.u32()?, is_main: c.u8()? != 0 },
                    2 => LocationKind::GpuStream { device: c.u32()?, context: c.u32()?, stream: c.u32()? },
                    3 => LocationKind::DeviceMetrics { device: c.u32()? },
                    4 => LocationKind::Lane { id: c.u32()?, gpu: c.u8()? != 0 },
                    _ => return Err(Malformed),
                };
                Definition::Location { id, kind, name: c.u32()? }
            }
            tag::MPI_RANK => Definition::MpiRank { rank: c.u32()?, size: c.u32()? },
            tag::COMM => {
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
                Definition::Comm(CommDef { id, key, name, members, parent })
            }
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
            tag::TIMER => Definition::Timer(match c.u8()? {
                0 => gputrace_clock::Timer::ClockGettime,
                k => {
                    let source = gputrace_clock::MapSource::from_code(k).ok_or(Malformed)?;
                    gputrace_clock::Timer::Tsc { hz: c.u64()?, source }
                }
            }),
            tag::CUDA_NAME => {
                Definition::CudaName { kind: CudaObject::from_code(c.u8()?)?, handle: c.u64()?, name: c.string()? }
            }
            tag::CUDA_HANDLE => Definition::CudaHandle {
                kind: CudaObject::from_code(c.u8()?)?,
                handle: c.u64()?,
                context: c.u32()?,
                stream: c.u32()?,
            },
            tag::SOURCE_LOST => Definition::SourceLost { what: SourceLoss::from_code(c.u8()?), count: c.u64()? },
            _ => return Err(Malformed),
        })
    }
}

/// Compresses world ranks, in communicator order, into runs.
pub fn rank_runs(ranks: impl IntoIterator<Item = u32>) -> RankRuns {
    let mut runs: RankRuns = Vec::new();
    for r in ranks {
        match runs.last_mut() {
            Some((first, count)) if first.wrapping_add(*count) == r => *count += 1,
            _ => runs.push((r, 1)),
        }
    }
    runs
}

/// Expands runs back into world ranks.
pub fn expand_runs(runs: &[(u32, u32)]) -> impl Iterator<Item = u32> + '_ {
    runs.iter().flat_map(|&(first, count)| (0..count).map(move |i| first + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_round_trip() {
        let defs = vec![
            Definition::String { id: 1, value: "MPI_Send".into() },
            Definition::Region {
                id: 2,
                name: 1,
                canonical: 0,
                paradigm: Paradigm::Mpi,
                role: RegionRole::Point2Point,
                group: 0,
            },
            Definition::Location { id: 0, kind: LocationKind::HostThread { tid: 42, is_main: true }, name: 1 },
            Definition::MpiRank { rank: 3, size: 4 },
            Definition::Comm(CommDef {
                id: 1,
                key: (2, 7),
                name: "MPI_COMM_WORLD".into(),
                members: vec![(0, 4)],
                parent: Some(0),
            }),
            Definition::ClockSync { local: 100, offset: -5, error: 2 },
            Definition::Dropped { location: 0, count: 9 },
            Definition::SourceLost { what: SourceLoss::CuptiDropped, count: 1234 },
            Definition::SourceLost { what: SourceLoss::NcclThreadExit, count: 0 },
            Definition::SourceLost { what: SourceLoss::Other(99), count: u64::MAX },
            Definition::StreamEnd { time: 1234, exit_started: 1200 },
            Definition::Signal { signal: 15, time: 1300 },
            Definition::Untraced { reason: "CUPTI could not be loaded: no libcupti.so".into() },
            Definition::Timer(gputrace_clock::Timer::ClockGettime),
            Definition::Timer(gputrace_clock::Timer::Tsc {
                hz: 2_445_406_000,
                source: gputrace_clock::MapSource::Command,
            }),
            Definition::Timer(gputrace_clock::Timer::Tsc {
                hz: 3_000_000_000,
                source: gputrace_clock::MapSource::Process,
            }),
            Definition::Timer(gputrace_clock::Timer::Tsc {
                hz: 2_400_000_123,
                source: gputrace_clock::MapSource::HostFile,
            }),
            Definition::CommName { id: 1, name: "halo rows".into() },
            Definition::ThreadName { tid: 4243, name: "data loader".into() },
            Definition::CudaName { kind: CudaObject::Stream, handle: 0x7f00_1234_5600, name: "copies".into() },
            Definition::CudaName { kind: CudaObject::Device, handle: 1, name: "second GPU".into() },
            Definition::CudaHandle { kind: CudaObject::Stream, handle: 0x7f00_1234_5600, context: 1, stream: 13 },
            Definition::CudaHandle { kind: CudaObject::Context, handle: 0x55aa_0000, context: 1, stream: 0 },
            Definition::Region {
                id: 3,
                name: 1,
                canonical: 0,
                paradigm: Paradigm::Nvtx,
                role: RegionRole::Code,
                group: 1,
            },
            Definition::Location {
                id: 3,
                kind: LocationKind::GpuStream { device: 1, context: 2, stream: 13 },
                name: 0,
            },
            Definition::Location { id: 4, kind: LocationKind::DeviceMetrics { device: 1 }, name: 0 },
            Definition::Location { id: 5, kind: LocationKind::Lane { id: 9, gpu: true }, name: 0 },
            Definition::Device(DeviceDef {
                id: 1,
                name: "NVIDIA H200".into(),
                uuid: [7; 16],
                multiprocessors: 132,
                memory: 141 << 30,
                compute_capability: (9, 0),
            }),
            Definition::Context { id: 2, device: 1 },
            Definition::NcclComm { id: 4, comm_hash: 0xfeed_beef, nranks: 2, rank: 1, name: "world".into() },
            Definition::NvLink(NvLinkDef {
                ends: [LinkEnd::Gpu([1; 16]), LinkEnd::Other(3)],
                version: 4,
                links: 18,
                bandwidth: 849_960_000,
                flags: 2,
                nvswitch: false,
            }),
            Definition::Metric(MetricDef {
                id: 1,
                name: "NVLink TX".into(),
                unit: "bytes".into(),
                description: "bytes sent".into(),
                device: 1,
                cumulative: true,
            }),
        ];
        let mut buf = Vec::new();
        for d in &defs {
            d.encode(&mut buf);
        }
        let mut c = Cursor::new(&buf);
        for d in &defs {
            assert_eq!(&Definition::decode(&mut c).unwrap(), d);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn header_round_trips() {
        let h = StreamHeader {
            producer: Producer::Mpi,
            host: "node1".into(),
            pid: 77,
            process_start: 12345,
            clock_domain: 99,
            monotonic_ns: 1,
            realtime_ns: 2,
            rank_hint: Some(0),
            command: vec!["./app".into(), "-x".into()],
        };
        let mut buf = Vec::new();
        h.encode(&mut buf);
        assert_eq!(StreamHeader::decode(&buf).unwrap(), h);
    }

    #[test]
    fn runs_compress_and_expand() {
        let ranks = [0, 1, 2, 3, 8, 9, 5];
        let runs = rank_runs(ranks);
        assert_eq!(runs, vec![(0, 4), (8, 2), (5, 1)]);
        assert_eq!(expand_runs(&runs).collect::<Vec<_>>(), ranks);
    }
}
