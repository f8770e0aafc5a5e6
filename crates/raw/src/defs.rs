//! Definitions: the names and identities that events refer to by number.
//!
//! A stream writes each definition once, in a definitions chunk, before the
//! first events chunk that uses it; ids are local to the stream. The stream
//! header chunk says which process and producer wrote the file.
//!
//! This module holds the types and their tags; `encode.rs` writes them and
//! `decode.rs` reads them back, field for field in the same order.

mod decode;
mod encode;

use crate::Producer;
use crate::lost::SourceLoss;

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

impl Paradigm {
    pub(crate) fn from_u8(v: u8) -> Option<Self> {
        use Paradigm::*;
        [User, Mpi, Cuda, Nccl, Measurement, Nvtx].into_iter().find(|p| *p as u8 == v)
    }

    /// The paradigm the archive and the profile show a region under,
    /// Score-P's: NCCL is CUDA's communication library (OTF2 3.0 has no
    /// NCCL paradigm), NVTX ranges are user regions. Always one of User,
    /// Mpi, Cuda and Measurement.
    pub fn shown_as(self) -> Paradigm {
        match self {
            Paradigm::Nccl => Paradigm::Cuda,
            Paradigm::Nvtx => Paradigm::User,
            p => p,
        }
    }
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
    /// A kernel node of a CUDA graph made on thread `thread` at `time`
    /// (format version 6): CUPTI's id of the node, and of the node it was
    /// cloned from when a graph was instantiated or cloned (0: made by
    /// stream capture or the graph API). The CUDA agent writes them so
    /// that the merge can tell which NCCL calls a graph's kernel runs.
    GraphNode {
        node: u64,
        original: u64,
        thread: u32,
        time: u64,
    },
    /// An NCCL send, receive or collective captured into a CUDA graph on
    /// thread `thread` (format version 6): nothing moved at the call; each
    /// launch of the graph moves it. `start..end` holds the call and its
    /// group's end, when NCCL adds its kernel to the graph; `call` names
    /// the call for [`Definition::GraphLaunchReported`].
    GraphCaptured {
        call: u64,
        thread: u32,
        start: u64,
        end: u64,
        op: CapturedOp,
    },
    /// NCCL reported the launches of captured call `call` itself (a graph
    /// with proxy operations, across nodes): they are recorded as they
    /// happen, and the merge adds none for the call's kernel (format
    /// version 6).
    GraphLaunchReported {
        call: u64,
    },
    /// The flight recorder (`GPUTRACE_FLIGHT_RECORDER`) gave back
    /// `events` events of `location` so far, the newest of them at
    /// `until`: the location's events start after a cut, and calls open
    /// at the cut have their Leave but not their Enter. A later record
    /// for the location supersedes an earlier one (format version 6).
    Expired {
        location: u32,
        events: u64,
        until: u64,
    },
    /// Threads sampled every `ns` of CPU time (version 7).
    SamplingPeriod {
        ns: u64,
    },
    /// A module mapped in the process, for the sampled addresses (version 7).
    Module(Module),
    /// A node of the sampled stacks' tree (version 7): ids from 1, parent 0 at the outermost
    /// frame; the address to look up (ip, return address − 1; [`crate::event::REGION_NODE`]).
    Frame {
        id: u32,
        parent: u32,
        address: u64,
    },
    /// A Python code object met in the sampled stacks (version 8): its id
    /// (from 1), qualified name (`Class.method`; the plain name before
    /// Python 3.11), file name and first line.
    PyCode {
        id: u32,
        name: String,
        file: String,
        line: u32,
    },
    /// A node of the sampled stacks' tree that is a Python frame (version
    /// 8): ids shared with [`Definition::Frame`]'s; the code object
    /// (a [`Definition::PyCode`]) and the line it was at (0: unknown).
    PyFrame {
        id: u32,
        parent: u32,
        code: u32,
        line: u32,
    },
}

/// A mapped module: executable addresses, bias added to the file's, path, build id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub path: String,
    pub build_id: Vec<u8>,
}

/// What a graph-captured NCCL call moves at each launch of its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturedOp {
    Send(crate::Message),
    Recv(crate::Message),
    Collective(crate::Collective),
}

/// What a [`Definition::CudaName`] or [`Definition::CudaHandle`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaObject {
    Device,
    Context,
    Stream,
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
    pub const GRAPH_NODE: u8 = 22;
    pub const GRAPH_CAPTURED: u8 = 23;
    pub const GRAPH_LAUNCH_REPORTED: u8 = 24;
    pub const EXPIRED: u8 = 25;
    pub const MODULE: u8 = 26;
    pub const FRAME: u8 = 27;
    pub const SAMPLING_PERIOD: u8 = 28;
    pub const PY_CODE: u8 = 29;
    pub const PY_FRAME: u8 = 30;
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
mod tests;
