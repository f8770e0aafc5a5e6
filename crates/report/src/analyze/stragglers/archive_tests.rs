//! Stragglers on the GPU, on hand-built archives of 4 ranks, each with its
//! GPU, an NCCL communicator and NVML's sampled SM clock: what the GPU test
//! (`tests/gpu/programs/straggler_gpu.cu`) shows on 4 GPUs, with known
//! times.

use std::path::Path;

use otf2::{
    ArchiveWriter, AttributeValue, Collective, CollectiveOp, CommFlags, GroupFlags, GroupType, LocationGroupType,
    LocationType, MetricMember, MetricMode, MetricOccurrence, MetricValue, Paradigm, ParadigmClass, RecorderKind,
    Region, RegionRole, Type,
};

use crate::analyze::{Analysis, Options, Straggler};

const RANKS: u64 = 4;
const ITERATIONS: u64 = 8;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// Every rank's compute kernel.
const COMPUTE: u64 = 10 * MS;
/// What rank 2's GPU does more: a spin kernel, or its compute kernel
/// longer at a lower clock.
const EXTRA: u64 = 20 * MS;
const SLOW: u64 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slowed {
    /// A kernel `spin_wait` before each all-reduce, at the same clock.
    Spin,
    /// Its compute kernel takes `EXTRA` more, its SM clock 1100 MHz.
    Clock,
    /// As `Spin`, without the GPU streams' events (CUDA not traced).
    NoKernels,
}

/// Per iteration i (from `i × 100 ms`), per rank: launches of `compute`
/// (and on rank 2 `spin_wait`), then `ncclAllReduce` (which launches the
/// NCCL kernel; rank 1's call returns only after its kernel started), then
/// `cudaStreamSynchronize` until the NCCL kernel ends. On the GPU: compute
/// from 10 µs for `COMPUTE`, then (rank 2) the extra work, then the NCCL
/// kernel, started 50 µs × rank after the compute kernel's end on the
/// others (the next latest is rank 3, 150 µs), 5 µs after rank 2's work.
/// Without `nccl_launch` the NCCL kernels' launch calls are not in the
/// archive (NCCL launches with the driver API, not recorded by default).
fn job(dir: &Path, slowed: Slowed, nccl_launch: bool) -> Analysis {
    let mut archive = ArchiveWriter::create(dir, "traces").unwrap();
    let d = archive.defs();
    d.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
    d.paradigm(Paradigm::Cuda, "CUDA", ParadigmClass::Accelerator);
    let corr = d.attribute("CUDA correlation id", "", Type::U64);
    let machine = d.system_tree_node("machine", "machine", None);
    let host = d.system_tree_node("host", "node", Some(machine));
    let member = d.metric_member(MetricMember::new("SM clock", "MHz", MetricMode::AbsolutePoint, Type::U64));
    let clock = d.metric_class(&[member], MetricOccurrence::Asynchronous, RecorderKind::Abstract).unwrap();
    let (mut masters, mut streams, mut metrics) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..RANKS {
        let gpu = d.system_tree_node(&format!("CUDA Device {r}"), "GPU", Some(host));
        let g = d.location_group(&format!("MPI Rank {r}"), LocationGroupType::Process, host, None);
        let ctx = d.location_group("CUDA Context 1", LocationGroupType::Accelerator, gpu, Some(g));
        masters.push(d.location(r << 32, "Master thread", LocationType::CpuThread, g).unwrap());
        streams.push(d.location(r << 32 | 1, &format!("CUDA[{r}:7]"), LocationType::AcceleratorStream, ctx).unwrap());
        metrics.push(d.location(r << 32 | 2, &format!("GPU {r} metrics"), LocationType::Metric, g).unwrap());
    }
    let ids: Vec<u64> = masters.iter().map(|m| m.id()).collect();
    let members: Vec<u64> = (0..RANKS).collect();
    d.group("MPI_COMM_WORLD locations", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &ids);
    let wg = d.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &members);
    d.comm("MPI_COMM_WORLD", wg, None, CommFlags::NONE);
    d.group("CUDA locations", GroupType::CommLocations, Paradigm::Cuda, GroupFlags::NONE, &ids);
    let ng = d.group("", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &members);
    let nccl = d.comm("NCCL 5f3a", ng, None, CommFlags::NONE);
    let mut region = |name: &str| d.region(Region::new(name, RegionRole::Function, Paradigm::Cuda));
    let (launch, sync, all_reduce) =
        (region("cudaLaunchKernel"), region("cudaStreamSynchronize"), region("ncclAllReduce"));
    let (compute, spin) = (region("void compute(float*, int)"), region("spin_wait(long long)"));
    let kernel = region("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    let id = |c: u64| [(corr, AttributeValue::U64(c))];
    let coll =
        Collective { op: CollectiveOp::Allreduce, comm: nccl, root: None, bytes_sent: 4096, bytes_received: 4096 };
    // When rank r's NCCL kernel starts, from its iteration's start.
    let nccl_start = |r: u64| match (r, slowed) {
        (SLOW, _) => 10 * US + COMPUTE + EXTRA + 5 * US,
        _ => 10 * US + COMPUTE + 50 * US * r,
    };
    let end = nccl_start(SLOW) + MS;
    for r in 0..RANKS {
        let mut w = archive.event_writer(masters[r as usize]).unwrap();
        for i in 0..ITERATIONS {
            let (b, c) = (i * 100 * MS, 10 * i);
            w.attributes(&id(c + 1)).unwrap().enter(b, launch).unwrap();
            w.leave(b + 5 * US, launch).unwrap();
            if r == SLOW && slowed != Slowed::Clock {
                w.attributes(&id(c + 2)).unwrap().enter(b + 10 * US, launch).unwrap();
                w.leave(b + 15 * US, launch).unwrap();
            }
            w.enter(b + 20 * US, all_reduce).unwrap();
            w.mpi_collective_begin(b + 20 * US).unwrap();
            if nccl_launch {
                w.attributes(&id(c + 3)).unwrap().enter(b + 22 * US, launch).unwrap();
                w.leave(b + 27 * US, launch).unwrap();
            }
            let returns = if r == 1 { b + nccl_start(1) + 30 * US } else { b + 30 * US };
            w.mpi_collective_end(returns, &coll).unwrap();
            w.leave(returns, all_reduce).unwrap();
            w.enter(returns + US, sync).unwrap();
            w.leave(b + end + 10 * US, sync).unwrap();
        }
        w.close().unwrap();
        let mut w = archive.event_writer(streams[r as usize]).unwrap();
        for i in (0..ITERATIONS).filter(|_| slowed != Slowed::NoKernels) {
            let (b, c) = (i * 100 * MS, 10 * i);
            let longer = if r == SLOW && slowed == Slowed::Clock { EXTRA } else { 0 };
            w.attributes(&id(c + 1)).unwrap().enter(b + 10 * US, compute).unwrap();
            w.leave(b + 10 * US + COMPUTE + longer, compute).unwrap();
            if r == SLOW && slowed == Slowed::Spin {
                w.attributes(&id(c + 2)).unwrap().enter(b + 10 * US + COMPUTE, spin).unwrap();
                w.leave(b + 10 * US + COMPUTE + EXTRA, spin).unwrap();
            }
            w.attributes(&id(c + 3)).unwrap().enter(b + nccl_start(r), kernel).unwrap();
            w.leave(b + end, kernel).unwrap();
        }
        w.close().unwrap();
        // NVML's SM clock every 5 ms: rank 2's GPU at 1100 MHz where slowed
        // by its clock.
        let mhz = if r == SLOW && slowed == Slowed::Clock { 1100 } else { 1980 };
        let mut w = archive.event_writer(metrics[r as usize]).unwrap();
        for t in (0..ITERATIONS * 100 * MS).step_by(5 * MS as usize) {
            w.metric(t + 1, clock, &[MetricValue::U64(mhz)]).unwrap();
        }
        w.close().unwrap();
    }
    let anchor = archive.anchor_path().to_owned();
    archive.close().unwrap();
    crate::analyze::analyze(&anchor, &Options::default()).unwrap()
}

fn nccl_straggler(a: &Analysis) -> &Straggler {
    let nccl: Vec<&Straggler> = a.stragglers.iter().filter(|s| s.paradigm == "NCCL").collect();
    assert!(!nccl.is_empty(), "{:#?}", a.stragglers);
    nccl[0]
}

/// Within 10 % of `want`, summed over the iterations.
fn near(got: u64, want: u64) -> bool {
    got.abs_diff(want) * 10 <= want
}

/// Rank 2's GPU ran `spin_wait` (20 ms) before each all-reduce, its host
/// calls on time: it is named for every all-reduce, by its kernels'
/// starts, late by about 20 ms each, the cause the kernel `spin_wait`
/// with its 20 ms each.
#[test]
fn a_gpu_spinning_before_each_collective_is_named_with_its_kernel() {
    for nccl_launch in [true, false] {
        spinning(nccl_launch);
    }
}

fn spinning(nccl_launch: bool) {
    let dir = tempfile::tempdir().unwrap();
    let a = job(dir.path(), Slowed::Spin, nccl_launch);
    let s = nccl_straggler(&a);
    assert_eq!((s.rank, s.operations, s.times_last, s.by_kernel), (Some(2), ITERATIONS, ITERATIONS, ITERATIONS));
    let late = EXTRA + 5 * US - 150 * US;
    assert_eq!(s.lateness_ns, ITERATIONS * late, "{s:#?}");
    assert!(near(s.lateness_ns, ITERATIONS * EXTRA), "{s:#?}");
    assert_eq!((s.cause_kind, s.cause.as_deref()), (Some("kernel"), Some("spin_wait(long long)")), "{s:#?}");
    assert!(near(s.cause_excess_ns, ITERATIONS * EXTRA), "{s:#?}");
    // Each other rank waited for it: 3 of them, rank 3 the least.
    let wait: u64 = (0..RANKS).filter(|r| *r != SLOW).map(|r| EXTRA + 5 * US - 50 * US * r).sum();
    assert_eq!(s.wait_caused_ns, ITERATIONS * wait);
    let line = crate::analyze::render::straggler_line(&a).unwrap();
    assert!(
        line.starts_with("Straggler: rank 2's GPU started 8 of 8 NCCL collectives on NCCL 5f3a (4 ranks: 0-3) last")
            && line.ends_with("; its GPU spent 160.00 ms longer in kernel spin_wait"),
        "{line}"
    );
    // Per iteration 10 events per thread (8 without the NCCL launch), 4
    // per stream, 4 more on rank 2; the clock samples not counted.
    let launches = if nccl_launch { 2 } else { 0 };
    assert_eq!(a.events, ITERATIONS * (RANKS * (12 + launches) + 4));
}

/// Rank 2's GPU ran its compute kernel 20 ms longer at 1100 MHz, the
/// others at 1980: the cause is its GPU's clock, with both clocks.
#[test]
fn a_gpu_at_a_lower_clock_is_named_with_its_clock() {
    let dir = tempfile::tempdir().unwrap();
    let a = job(dir.path(), Slowed::Clock, true);
    let s = nccl_straggler(&a);
    assert_eq!((s.rank, s.times_last, s.by_kernel), (Some(2), ITERATIONS, ITERATIONS), "{s:#?}");
    assert!(near(s.lateness_ns, ITERATIONS * EXTRA), "{s:#?}");
    assert_eq!(s.cause_kind, Some("gpu clock"), "{s:#?}");
    assert_eq!(s.cause.as_deref(), Some("SM clock 1100 MHz, the others' 1980 MHz"), "{s:#?}");
    assert_eq!(s.cause_excess_ns, s.lateness_ns, "the lateness it explains");
    let line = crate::analyze::render::straggler_line(&a).unwrap();
    assert!(line.ends_with("; its GPU ran at a lower clock (SM clock 1100 MHz, the others' 1980 MHz)"), "{line}");
}

/// Without the kernels the NCCL operations are judged by the calls'
/// entries, at the end of the pass: all entered at once here.
#[test]
fn without_kernels_nccl_operations_are_judged_by_their_calls() {
    let dir = tempfile::tempdir().unwrap();
    let a = job(dir.path(), Slowed::NoKernels, true);
    let nccl: Vec<&Straggler> = a.stragglers.iter().filter(|s| s.paradigm == "NCCL").collect();
    assert_eq!(nccl.iter().map(|s| s.times_last).sum::<u64>(), ITERATIONS, "{nccl:#?}");
    assert!(nccl.iter().all(|s| s.operations == ITERATIONS && s.by_kernel == 0 && s.lateness_ns == 0), "{nccl:#?}");
}
