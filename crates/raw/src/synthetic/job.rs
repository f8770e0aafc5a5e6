//! A synthetic job of many ranks on many nodes, shaped like what the MPI
//! hooks and the CUDA agent write (see [`write_job`]).

use std::io;
use std::path::Path;

use super::ChunkWriter;
use crate::defs::rank_runs;
use crate::{
    ChunkKind, Collective, CollectiveOp, CommDef, CopyKind, Definition, DeviceDef, Event, KernelConfig, LocationKind,
    MemCopy, MemoryKind, Message, Paradigm, Producer, RegionRole, StreamFile, StreamHeader, stream_file_name,
};

/// The shape of a synthetic job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    pub ranks: u32,
    /// Ranks per simulated node; each node has its own clock domain.
    pub ranks_per_node: u32,
    /// Steps of the ring exchange (one step every millisecond).
    pub iterations: u64,
    /// Whether each rank also has a CUDA agent stream (a kernel and a
    /// copy per step on one GPU stream, their API calls on the main thread).
    pub gpu: bool,
    /// How wrong (ns) the clock offsets measured at MPI_Init and at
    /// MPI_Finalize are on every node but rank 0's: added on odd nodes,
    /// subtracted on even ones. `(0, 0)`: the true offsets.
    pub offset_error: (i64, i64),
}

/// What the job holds, for checking a merge against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Events of all ranks.
    pub events: u64,
    /// Point-to-point sends of all ranks (each has one receive).
    pub sends: u64,
    /// Collective operations per rank.
    pub collectives: u64,
    /// Locations of all ranks (host threads and GPU streams).
    pub locations: u64,
    /// Raw stream files written.
    pub streams: u64,
    pub nodes: u32,
}

/// One step every millisecond, starting after MPI_Init.
const STEP: u64 = 1_000_000;
/// Global time (ns) of the first process start.
const START: u64 = 1_000_000_000;
/// Global time at which every MPI_Init returns (its clock sync just before).
const INIT_DONE: u64 = START + 100_000_000;
const REALTIME_EPOCH: u64 = 1_760_000_000_000_000_000;
const CHUNK: usize = 256 << 10;

/// One simulated node's CLOCK_MONOTONIC relative to the global time line:
/// `local = global + base + global × drift / 10⁹`. Node 0 (rank 0's) is the
/// reference (no drift); the others booted seconds to hours apart and
/// drift up to ±50 µs per second against it.
#[derive(Debug, Clone, Copy)]
struct NodeClock {
    base: i64,
    drift_ppb: i64,
    /// What the node's CLOCK_REALTIME is off by (NTP).
    realtime_error: i64,
    domain: u64,
}

impl NodeClock {
    fn of(node: u32) -> NodeClock {
        let h = mix(u64::from(node) ^ 0x5eed);
        if node == 0 {
            return NodeClock { base: 86_400_000_000_000, drift_ppb: 0, realtime_error: 0, domain: mix(1 << 40) };
        }
        NodeClock {
            // 1 s to about 3 h after node 0's boot, or before it.
            base: 86_400_000_000_000 + (h % 10_000_000_000_000) as i64 - 5_000_000_000_000,
            drift_ppb: (mix(h) % 100_001) as i64 - 50_000,
            // ±20 ms: the realtime pair alone would not order messages.
            realtime_error: (mix(h ^ 7) % 40_000_001) as i64 - 20_000_000,
            domain: mix((1 << 40) + u64::from(node)),
        }
    }

    fn local(&self, global: u64) -> u64 {
        let g = i128::from(global);
        (g + i128::from(self.base) + g * i128::from(self.drift_ppb) / 1_000_000_000) as u64
    }
}

/// splitmix64: deterministic jitter and clock parameters.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Writes the raw streams of `job` into `raw_dir`: per rank an MPI stream
/// and (with `gpu`) a CUDA stream, as the MPI hooks and the CUDA agent of
/// one process on host `nodeNNNN` write them.
///
/// Every rank, each step, launches a kernel and copies its result back
/// (CUDA API calls on its main thread, the kernel and copy on GPU stream
/// 7), sends to its right neighbour and receives from its left one
/// (MPI_Send, MPI_Recv), and every tenth step joins an MPI_Allreduce;
/// after MPI_Init all join an MPI_Bcast from rank 0. The MPI streams hold
/// what the hooks define (MpiRank, MPI_COMM_WORLD and MPI_COMM_SELF, the
/// MPI regions) and the clock synchronization at MPI_Init and
/// MPI_Finalize: each node has its own clock domain and a CLOCK_MONOTONIC
/// seconds to hours away from rank 0's, drifting, so only the measured
/// offsets put each receive after its send (by at least 5 µs).
pub fn write_job(raw_dir: &Path, job: &Job) -> io::Result<JobCounts> {
    let rpn = job.ranks_per_node.max(1);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(job.ranks.max(1) as usize);
    let per_rank = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                s.spawn(move || -> io::Result<Vec<JobCounts>> {
                    (0..job.ranks)
                        .filter(|r| *r as usize % workers == w)
                        .map(|r| write_rank(raw_dir, job, rpn, r))
                        .collect()
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().map_err(|_| io::Error::other("a writer thread panicked"))??);
        }
        Ok::<_, io::Error>(all)
    })?;
    let mut total = JobCounts { nodes: job.ranks.div_ceil(rpn), ..JobCounts::default() };
    for c in per_rank {
        total.events += c.events;
        total.sends += c.sends;
        total.collectives = c.collectives;
        total.locations += c.locations;
        total.streams += c.streams;
    }
    Ok(total)
}

/// Region ids of the MPI stream.
const R_INIT: u32 = 1;
const R_FINALIZE: u32 = 2;
const R_SEND: u32 = 3;
const R_RECV: u32 = 4;
const R_ALLREDUCE: u32 = 5;
const R_BCAST: u32 = 6;

/// Region ids of the CUDA stream.
const R_LAUNCH: u32 = 1;
const R_MEMCPY_API: u32 = 2;
const R_KERNEL: u32 = 3;
const R_COPY: u32 = 4;

/// Where and when one rank runs: its node and that node's clock, the
/// global times its process starts and its MPI_Finalize begins.
#[derive(Debug, Clone, Copy)]
struct Placement {
    rank: u32,
    node: u32,
    clock: NodeClock,
    started: u64,
    finalize_at: u64,
}

impl Placement {
    /// The global time of step `i`: one every [`STEP`], jittered per rank.
    fn step_at(&self, i: u64) -> u64 {
        let jitter = mix(u64::from(self.rank) << 32 ^ i) % 2_000;
        INIT_DONE + 200_000 + i * STEP + jitter
    }
}

fn write_rank(raw_dir: &Path, job: &Job, rpn: u32, rank: u32) -> io::Result<JobCounts> {
    let node = rank / rpn;
    let clock = NodeClock::of(node);
    let host = format!("node{node:04}");
    let pid = 4000 + 13 * (rank % rpn);
    let started = START + u64::from(rank % rpn) * 2_000_000 + u64::from(node) * 10_000;
    let header = |producer| StreamHeader {
        producer,
        host: host.clone(),
        pid,
        process_start: clock.local(started) / 10_000_000,
        clock_domain: clock.domain,
        monotonic_ns: clock.local(started),
        realtime_ns: (i128::from(REALTIME_EPOCH + started) + i128::from(clock.realtime_error)) as u64,
        rank_hint: Some(rank),
        command: vec!["./app".into(), "--steps".into(), job.iterations.to_string()],
    };
    let mut counts = JobCounts { streams: 1, locations: 1, ..JobCounts::default() };
    let finalize_at = INIT_DONE + 200_000 + job.iterations * STEP + 500_000;
    let at = Placement { rank, node, clock, started, finalize_at };

    // The MPI stream.
    let stream =
        StreamFile::create(&raw_dir.join(stream_file_name(&host, pid, Producer::Mpi)), &header(Producer::Mpi))?;
    let mut defs = mpi_definitions(job, rank, pid);
    clock_sync(&at, INIT_DONE - 50_000, job.offset_error.0, &mut defs);
    stream.write_chunk(ChunkKind::Definitions, None, &defs)?;
    write_mpi_events(&stream, job, &at, &mut counts)?;
    let mut end = Vec::new();
    clock_sync(&at, finalize_at + 100_000, job.offset_error.1, &mut end);
    let ended = clock.local(finalize_at + 300_000);
    Definition::StreamEnd { time: ended, exit_started: ended }.encode(&mut end);
    stream.write_chunk(ChunkKind::Definitions, None, &end)?;
    drop(stream);

    if job.gpu {
        let step_at = |i| at.step_at(i);
        write_cuda(raw_dir, job, rank, &header(Producer::Cuda), clock, step_at, finalize_at, &mut counts)?;
    }
    Ok(counts)
}

/// What the MPI hooks define for `rank`: the MPI regions, the main
/// thread, MPI_COMM_WORLD and MPI_COMM_SELF, the rank.
fn mpi_definitions(job: &Job, rank: u32, pid: u32) -> Vec<u8> {
    let mut defs = Vec::new();
    let mut strings = Strings::default();
    let regions: [(u32, &str, RegionRole, &str); 6] = [
        (R_INIT, "MPI_Init", RegionRole::Function, "MPI_ENV"),
        (R_FINALIZE, "MPI_Finalize", RegionRole::Function, "MPI_ENV"),
        (R_SEND, "MPI_Send", RegionRole::Point2Point, "MPI_P2P"),
        (R_RECV, "MPI_Recv", RegionRole::Point2Point, "MPI_P2P"),
        (R_ALLREDUCE, "MPI_Allreduce", RegionRole::CollAll2All, "MPI_COLL"),
        (R_BCAST, "MPI_Bcast", RegionRole::CollOne2All, "MPI_COLL"),
    ];
    for (id, name, role, group) in regions {
        let name = strings.id(name, &mut defs);
        let group = strings.id(group, &mut defs);
        Definition::Region { id, name, canonical: 0, paradigm: Paradigm::Mpi, role, group }.encode(&mut defs);
    }
    let thread = strings.id("main thread", &mut defs);
    Definition::Location { id: 0, kind: LocationKind::HostThread { tid: pid, is_main: true }, name: thread }
        .encode(&mut defs);
    let world =
        CommDef { id: 0, key: (0, 0), name: "MPI_COMM_WORLD".into(), members: rank_runs(0..job.ranks), parent: None };
    Definition::Comm(world).encode(&mut defs);
    let own = CommDef {
        id: 1,
        key: (rank, u64::MAX),
        name: "MPI_COMM_SELF".into(),
        members: rank_runs([rank]),
        parent: None,
    };
    Definition::Comm(own).encode(&mut defs);
    Definition::MpiRank { rank, size: job.ranks }.encode(&mut defs);
    defs
}

/// The clock measured at `global` (in MPI_Init or MPI_Finalize; see the
/// MPI hooks' clocksync.rs): offset = rank 0's clock − this one, wrong
/// by `wrong` (added on odd nodes, subtracted on even ones), error =
/// half a round trip. Rank 0's node is the reference: no offset.
fn clock_sync(at: &Placement, global: u64, wrong: i64, defs: &mut Vec<u8>) {
    let reference = NodeClock::of(0);
    let sign = if at.node % 2 == 1 { 1 } else { -1 };
    let local = at.clock.local(global);
    let (offset, error) = if at.node == 0 {
        (0, 0)
    } else {
        let offset = (i128::from(reference.local(global)) - i128::from(local)) as i64;
        (offset + sign * wrong, 300 + mix(global) % 600)
    };
    Definition::ClockSync { local, offset, error }.encode(defs);
}

/// The MPI stream's events: MPI_Init, a broadcast from rank 0, each step
/// a send to the right and a receive from the left (every tenth an
/// all-reduce too), MPI_Finalize.
fn write_mpi_events(stream: &StreamFile, job: &Job, at: &Placement, counts: &mut JobCounts) -> io::Result<()> {
    let Placement { rank, clock, started, finalize_at, .. } = *at;
    let mut out = ChunkWriter::with_capacity(stream, CHUNK);
    let mut ev = |global: u64, e: Event, counts: &mut JobCounts| {
        counts.events += 1;
        out.push_at(0, clock.local(global), &e, CHUNK)
    };
    let c = counts;
    ev(started + 1_000_000, Event::Enter { region: R_INIT }, c)?;
    ev(INIT_DONE, Event::Leave { region: R_INIT }, c)?;
    let bcast = Collective {
        op: CollectiveOp::Bcast,
        comm: 0,
        root: Some(0),
        sent: if rank == 0 { 64 * u64::from(job.ranks) } else { 0 },
        received: 64,
    };
    ev(INIT_DONE + 10_000, Event::Enter { region: R_BCAST }, c)?;
    ev(INIT_DONE + 10_100, Event::MpiCollectiveBegin, c)?;
    ev(INIT_DONE + 60_000, Event::MpiCollectiveEnd(bcast), c)?;
    ev(INIT_DONE + 60_100, Event::Leave { region: R_BCAST }, c)?;
    c.collectives += 1;
    let right = (rank + 1) % job.ranks;
    let left = (rank + job.ranks - 1) % job.ranks;
    for i in 0..job.iterations {
        let g = at.step_at(i);
        let tag = (i % 16) as i32;
        let bytes = 1024 * (1 + i % 8);
        ev(g + 100_000, Event::Enter { region: R_SEND }, c)?;
        ev(g + 101_000, Event::MpiSend(Message { peer: right, comm: 0, tag, bytes }), c)?;
        ev(g + 102_000, Event::Leave { region: R_SEND }, c)?;
        ev(g + 103_000, Event::Enter { region: R_RECV }, c)?;
        // The left neighbour sent at its g + 101 µs, its jitter < 2 µs.
        ev(g + 108_000, Event::MpiRecv(Message { peer: left, comm: 0, tag, bytes }), c)?;
        ev(g + 108_500, Event::Leave { region: R_RECV }, c)?;
        c.sends += 1;
        if i % 10 == 9 {
            let coll = Collective { op: CollectiveOp::Allreduce, comm: 0, root: None, sent: 8, received: 8 };
            ev(g + 200_000, Event::Enter { region: R_ALLREDUCE }, c)?;
            ev(g + 200_100, Event::MpiCollectiveBegin, c)?;
            ev(g + 230_000, Event::MpiCollectiveEnd(coll), c)?;
            ev(g + 230_100, Event::Leave { region: R_ALLREDUCE }, c)?;
            c.collectives += 1;
        }
    }
    ev(finalize_at, Event::Enter { region: R_FINALIZE }, c)?;
    ev(finalize_at + 200_000, Event::Leave { region: R_FINALIZE }, c)?;
    out.flush()
}

/// The CUDA agent's stream of one rank.
#[allow(clippy::too_many_arguments)]
fn write_cuda(
    raw_dir: &Path,
    job: &Job,
    rank: u32,
    header: &StreamHeader,
    clock: NodeClock,
    step_at: impl Fn(u64) -> u64,
    finalize_at: u64,
    counts: &mut JobCounts,
) -> io::Result<()> {
    let stream = StreamFile::create(&raw_dir.join(stream_file_name(&header.host, header.pid, Producer::Cuda)), header)?;
    counts.streams += 1;
    counts.locations += 1;
    let mut defs = Vec::new();
    let mut strings = Strings::default();
    let gpu = rank % job.ranks_per_node.max(1);
    let mut uuid = [0u8; 16];
    uuid[..4].copy_from_slice(&(rank / job.ranks_per_node.max(1)).to_le_bytes());
    uuid[4..8].copy_from_slice(&gpu.to_le_bytes());
    uuid[15] = 0x5a;
    Definition::Device(DeviceDef {
        id: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        uuid,
        multiprocessors: 132,
        memory: 85_045_231_616,
        compute_capability: (9, 0),
    })
    .encode(&mut defs);
    let regions: [(u32, &str, Option<&str>, RegionRole, &str); 4] = [
        (R_LAUNCH, "cudaLaunchKernel", None, RegionRole::Wrapper, "CUDA runtime"),
        (R_MEMCPY_API, "cudaMemcpy", None, RegionRole::Wrapper, "CUDA runtime"),
        (
            R_KERNEL,
            "saxpy(int, float, float const*, float*)",
            Some("_Z5saxpyifPKfPf"),
            RegionRole::Function,
            "CUDA kernel",
        ),
        (R_COPY, "[CUDA memcpy DtoH]", None, RegionRole::DataTransfer, ""),
    ];
    for (id, name, mangled, role, group) in regions {
        let name = strings.id(name, &mut defs);
        let canonical = mangled.map_or(0, |m| strings.id(m, &mut defs));
        let group = if group.is_empty() { 0 } else { strings.id(group, &mut defs) };
        Definition::Region { id, name, canonical, paradigm: Paradigm::Cuda, role, group }.encode(&mut defs);
    }
    let thread = strings.id("main thread", &mut defs);
    let tid = header.pid;
    Definition::Location { id: 0, kind: LocationKind::HostThread { tid, is_main: true }, name: thread }
        .encode(&mut defs);
    Definition::Context { id: 1, device: 0 }.encode(&mut defs);
    let stream_name = strings.id("CUDA stream 7", &mut defs);
    let kind = LocationKind::GpuStream { device: 0, context: 1, stream: 7 };
    Definition::Location { id: 1, kind, name: stream_name }.encode(&mut defs);
    stream.write_chunk(ChunkKind::Definitions, None, &defs)?;

    // The agent writes a location's events in batches, one chunk each.
    let mut api = ChunkWriter::with_capacity(&stream, CHUNK);
    let mut gpu_out = ChunkWriter::with_capacity(&stream, CHUNK);
    let config =
        KernelConfig { grid: [4096, 1, 1], block: [256, 1, 1], registers: 16, static_shared: 0, dynamic_shared: 0 };
    let mut events = 0;
    for i in 0..job.iterations {
        let g = step_at(i);
        let corr = (2 * i + 1) as u32;
        let at = |t: u64| clock.local(g + t);
        api.push_at(0, at(0), &Event::EnterCorrelated { region: R_LAUNCH, correlation: corr }, CHUNK)?;
        api.push_at(0, at(5_000), &Event::Leave { region: R_LAUNCH }, CHUNK)?;
        api.push_at(0, at(62_000), &Event::EnterCorrelated { region: R_MEMCPY_API, correlation: corr + 1 }, CHUNK)?;
        api.push_at(0, at(80_000), &Event::Leave { region: R_MEMCPY_API }, CHUNK)?;
        gpu_out.push_at(1, at(10_000), &Event::KernelBegin { region: R_KERNEL, correlation: corr, config }, CHUNK)?;
        gpu_out.push_at(1, at(60_000), &Event::Leave { region: R_KERNEL }, CHUNK)?;
        let copy = MemCopy {
            region: R_COPY,
            correlation: corr + 1,
            kind: CopyKind::DeviceToHost,
            src: MemoryKind::Device,
            dst: MemoryKind::Pageable,
            bytes: 16384,
            peer: None,
            id: i,
        };
        gpu_out.push_at(1, at(65_000), &Event::CopyBegin(copy), CHUNK)?;
        gpu_out.push_at(1, at(75_000), &Event::CopyEnd { region: R_COPY, id: i }, CHUNK)?;
        events += 8;
    }
    api.flush()?;
    gpu_out.flush()?;
    counts.events += events;
    let mut end = Vec::new();
    let ended = clock.local(finalize_at + 250_000);
    Definition::StreamEnd { time: ended, exit_started: ended }.encode(&mut end);
    stream.write_chunk(ChunkKind::Definitions, None, &end).map(drop)
}

/// A stream's strings, interned as the recorder does.
#[derive(Default)]
struct Strings(Vec<String>);

impl Strings {
    fn id(&mut self, s: &str, defs: &mut Vec<u8>) -> u32 {
        if let Some(i) = self.0.iter().position(|x| x == s) {
            return i as u32 + 1;
        }
        self.0.push(s.to_string());
        let id = self.0.len() as u32;
        Definition::String { id, value: s.to_string() }.encode(defs);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_clocks_differ_by_seconds_and_keep_order() {
        let (a, b) = (NodeClock::of(0), NodeClock::of(5));
        let gap = (a.local(START) as i128 - b.local(START) as i128).abs();
        assert!(gap > 1_000_000_000, "{gap}");
        assert_ne!(a.domain, b.domain);
        assert!(b.local(START + 1) >= b.local(START));
    }

    #[test]
    fn a_job_has_every_stream() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job { ranks: 10, ranks_per_node: 4, iterations: 20, gpu: true, offset_error: (0, 0) };
        let c = write_job(dir.path(), &job).unwrap();
        assert_eq!(c.streams, 20);
        assert_eq!(c.nodes, 3);
        assert_eq!(c.sends, 200);
        assert_eq!(c.collectives, 3);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 20);
        let raw = crate::RawFile::open(&dir.path().join(stream_file_name("node0002", 4013, Producer::Mpi))).unwrap();
        assert!(raw.problems.is_empty(), "{:?}", raw.problems);
        assert_eq!(raw.header.rank_hint, Some(9));
        let syncs = raw.definitions.iter().filter(|d| matches!(d, Definition::ClockSync { .. })).count();
        assert_eq!(syncs, 2);
    }
}
