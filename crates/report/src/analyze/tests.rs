//! The definitions on hand-built archives with exact timestamps: cases a
//! real run cannot pin down (a wait for several messages, a receive read
//! before its send, eager and rendezvous sends, an n-to-1 operation with
//! several senders, idle time of a known split).

use std::path::Path;

use otf2::{
    ArchiveWriter, AttributeValue, Collective, CollectiveOp, CommFlags, CommRef, EventWriter, GroupFlags, GroupType,
    LocationGroupType, LocationRef, LocationType, Paradigm, ParadigmClass, Region, RegionRef, RegionRole, Type,
};

use super::*;

mod critical_gpu;

/// An archive of `ranks` MPI ranks on one host, each with a master thread
/// and a CUDA stream, the regions the cases use, and MPI_COMM_WORLD.
struct Builder {
    archive: ArchiveWriter,
    masters: Vec<LocationRef>,
    streams: Vec<LocationRef>,
    world: CommRef,
    corr: otf2::AttributeRef,
}

impl Builder {
    fn new(dir: &Path, ranks: u64) -> Self {
        let mut archive = ArchiveWriter::create(dir, "traces").unwrap();
        let d = archive.defs();
        d.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
        d.paradigm(Paradigm::Cuda, "CUDA", ParadigmClass::Accelerator);
        let corr = d.attribute("CUDA correlation id", "", Type::U64);
        let machine = d.system_tree_node("machine", "machine", None);
        let host = d.system_tree_node("host", "node", Some(machine));
        let gpu = d.system_tree_node("CUDA Device 0", "GPU", Some(host));
        let mut masters = Vec::new();
        let mut streams = Vec::new();
        for r in 0..ranks {
            let g = d.location_group(&format!("MPI Rank {r}"), LocationGroupType::Process, host, None);
            let ctx = d.location_group("CUDA Context 1", LocationGroupType::Accelerator, gpu, Some(g));
            masters.push(d.location(r << 32, "Master thread", LocationType::CpuThread, g).unwrap());
            streams.push(
                d.location(r << 32 | 1, &format!("CUDA[0:{}]", 7 + r), LocationType::AcceleratorStream, ctx).unwrap(),
            );
        }
        let ids: Vec<u64> = masters.iter().map(|m| m.id()).collect();
        d.group("MPI_COMM_WORLD locations", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &ids);
        let members: Vec<u64> = (0..ranks).collect();
        let wg = d.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &members);
        let world = d.comm("MPI_COMM_WORLD", wg, None, CommFlags::NONE);
        Builder { archive, masters, streams, world, corr }
    }

    fn region(&mut self, name: &str, paradigm: Paradigm) -> RegionRef {
        let role = if paradigm == Paradigm::Mpi { RegionRole::Point2Point } else { RegionRole::Function };
        self.archive.defs().region(Region::new(name, role, paradigm))
    }

    /// Writes one location's events.
    fn write(&mut self, location: LocationRef, events: impl FnOnce(&mut EventWriter<'_>)) {
        let mut w = self.archive.event_writer(location).unwrap();
        events(&mut w);
        w.close().unwrap();
    }

    fn analyze(self) -> Analysis {
        let anchor = self.archive.anchor_path().to_owned();
        self.archive.close().unwrap();
        let options = Options { gap_threshold_ns: 100, ..Options::default() };
        let a = super::analyze(&anchor, &options).unwrap();
        totals_add_up(&a);
        a
    }
}

/// Each pattern's total is its findings' sum; every finding is counted in
/// one total.
fn totals_add_up(a: &Analysis) {
    for t in &a.totals {
        let mine: Vec<&Finding> = a.findings.iter().filter(|f| f.pattern == t.pattern).collect();
        assert_eq!(t.time_lost_ns, mine.iter().map(|f| f.time_lost_ns).sum::<u64>(), "{t:#?}");
        assert_eq!(t.instances, mine.iter().map(|f| f.instances).sum::<u64>(), "{t:#?}");
        assert_eq!(t.findings, mine.len() as u64, "{t:#?}");
        assert_eq!(t.worst_instance.time_lost_ns, mine.iter().map(|f| f.worst.time_lost_ns).max().unwrap());
    }
    let counted: u64 = a.totals.iter().map(|t| t.findings).sum();
    assert_eq!(counted, a.findings.len() as u64);
}

#[test]
fn totals_are_the_sums_of_their_findings() {
    // Two late senders to rank 0 (100 and 200 ns lost) and one to rank 1
    // (50 ns), on the world: one total of 350 ns in three instances, rank
    // 0 the worst (300 ns), the 200 ns wait the longest instance.
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 3);
    let world = b.world;
    let recv = b.region("MPI_Recv", Paradigm::Mpi);
    let send = b.region("MPI_Send", Paradigm::Mpi);
    b.write(b.masters[0], |w| {
        for (enter, from, late) in [(100u64, 1u32, 200u64), (300, 2, 500)] {
            w.enter(enter, recv).unwrap();
            w.mpi_recv(late + 2, from, world, 1, 8).unwrap();
            w.leave(late + 3, recv).unwrap();
        }
    });
    b.write(b.masters[1], |w| {
        w.enter(200, send).unwrap();
        w.mpi_send(201, 0, world, 1, 8).unwrap();
        w.leave(202, send).unwrap();
        w.enter(600, recv).unwrap();
        w.mpi_recv(652, 2, world, 1, 8).unwrap();
        w.leave(653, recv).unwrap();
    });
    b.write(b.masters[2], |w| {
        w.enter(500, send).unwrap();
        w.mpi_send(501, 0, world, 1, 8).unwrap();
        w.leave(502, send).unwrap();
        w.enter(650, send).unwrap();
        w.mpi_send(651, 1, world, 1, 8).unwrap();
        w.leave(652, send).unwrap();
    });
    let a = b.analyze();
    let t = a.totals.iter().find(|t| t.pattern == Pattern::LateSender).unwrap();
    assert_eq!((t.time_lost_ns, t.instances, t.findings), (350, 3, 2), "{t:#?}");
    assert_eq!((t.worst_rank.rank, t.worst_rank.time_lost_ns), (Some(0), 300), "{t:#?}");
    assert_eq!((t.worst_instance.rank, t.worst_instance.time_lost_ns), (Some(0), 200), "{t:#?}");
    assert_eq!(t.worst_instance.partner_rank, Some(2));
    assert!((t.share_of_run - 100.0 * 350.0 / a.run_ns as f64).abs() < 1e-9, "{t:#?} of {}", a.run_ns);
    let f = one(&a, Pattern::LateSender, 1);
    assert_eq!((f.communicator_size, f.communicator_ranks.as_deref()), (Some(3), Some("0-2")), "{f:#?}");
}

#[test]
fn rank_lists_are_runs() {
    use super::totals::rank_list;
    assert_eq!(rank_list(&[Some(0), Some(1), Some(2), Some(3)], 8), "0-3");
    assert_eq!(rank_list(&[Some(3), Some(1)], 8), "1,3");
    assert_eq!(rank_list(&[Some(0), Some(2), Some(4), Some(5)], 2), "0,2,… (1 more)");
    assert_eq!(rank_list(&[Some(7), None], 8), "7,?");
}

fn one(a: &Analysis, pattern: Pattern, rank: u32) -> &Finding {
    let f: Vec<&Finding> = a.findings.iter().filter(|f| f.pattern == pattern && f.rank == Some(rank)).collect();
    assert_eq!(f.len(), 1, "{pattern:?} on rank {rank}: {:#?}", a.findings);
    f[0]
}

fn none(a: &Analysis, pattern: Pattern) {
    assert!(a.findings.iter().all(|f| f.pattern != pattern), "no {pattern:?}: {:#?}", a.findings);
}

#[test]
fn a_wait_for_several_messages_counts_the_latest_sender_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 3);
    let (send, irecv, waitall) = (
        b.region("MPI_Send", Paradigm::Mpi),
        b.region("MPI_Irecv", Paradigm::Mpi),
        b.region("MPI_Waitall", Paradigm::Mpi),
    );
    let world = b.world;
    // Rank 0 posts two receives at 100 and waits from 200; rank 1 sends at
    // 300, rank 2 at 500: the wait lasts until 500, 300 ns of Late Sender.
    b.write(b.masters[0], |w| {
        for (t, id) in [(100, 1), (110, 2)] {
            w.enter(t, irecv).unwrap();
            w.mpi_irecv_request(t + 1, id).unwrap();
            w.leave(t + 2, irecv).unwrap();
        }
        w.enter(200, waitall).unwrap();
        w.mpi_irecv(320, 1, world, 5, 8, 1).unwrap();
        w.mpi_irecv(520, 2, world, 5, 8, 2).unwrap();
        w.leave(530, waitall).unwrap();
    });
    for (r, t) in [(1usize, 300u64), (2, 500)] {
        b.write(b.masters[r], |w| {
            w.enter(t, send).unwrap();
            w.mpi_send(t + 1, 0, world, 5, 8).unwrap();
            w.leave(t + 5, send).unwrap();
        });
    }
    let a = b.analyze();
    let f = one(&a, Pattern::LateSender, 0);
    assert_eq!(f.time_lost_ns, 300, "{f:#?}");
    assert_eq!(f.call_path, ["MPI_Waitall"]);
    assert_eq!(f.communicator.as_deref(), Some("MPI_COMM_WORLD"));
    assert_eq!(f.instances, 2, "{f:#?}");
    assert_eq!(f.worst.partner_rank, Some(2), "rank 1's message 100 ns, then rank 2's 200 more");
    none(&a, Pattern::LateReceiver);
}

#[test]
fn a_receive_read_before_its_send_is_still_matched_and_clamped_to_the_call() {
    // Rank 1's clock runs ahead: its send appears to start after the
    // receive completed. The wait is cut at the receive's completion.
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 2);
    let (send, recv) = (b.region("MPI_Send", Paradigm::Mpi), b.region("MPI_Recv", Paradigm::Mpi));
    let world = b.world;
    b.write(b.masters[0], |w| {
        w.enter(100, recv).unwrap();
        w.mpi_recv(400, 1, world, 0, 8).unwrap();
        w.leave(410, recv).unwrap();
    });
    b.write(b.masters[1], |w| {
        w.enter(900, send).unwrap();
        w.mpi_send(901, 0, world, 0, 8).unwrap();
        w.leave(905, send).unwrap();
    });
    let a = b.analyze();
    assert_eq!(one(&a, Pattern::LateSender, 0).time_lost_ns, 300);
    // Paired all the same, and said.
    assert_eq!(a.messages, crate::analyze::MessageCount { matched: 1, received_before_sent: 1 });
    assert_eq!(a.notes, ["1 of 1 messages were received before they were sent: the clocks of their hosts disagree"]);
}

#[test]
fn a_late_receiver_is_a_send_still_in_progress_when_the_receive_is_posted() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 2);
    let (send, ssend, recv) = (
        b.region("MPI_Send", Paradigm::Mpi),
        b.region("MPI_Ssend", Paradigm::Mpi),
        b.region("MPI_Recv", Paradigm::Mpi),
    );
    let world = b.world;
    b.write(b.masters[0], |w| {
        // Eager: the send returned at 120, before the receive at 500.
        w.enter(100, send).unwrap();
        w.mpi_send(101, 1, world, 1, 8).unwrap();
        w.leave(120, send).unwrap();
        // Synchronous: from 1000 until the receive, posted at 1700.
        w.enter(1000, ssend).unwrap();
        w.mpi_send(1001, 1, world, 2, 8).unwrap();
        w.leave(1750, ssend).unwrap();
    });
    b.write(b.masters[1], |w| {
        w.enter(500, recv).unwrap();
        w.mpi_recv(510, 0, world, 1, 8).unwrap();
        w.leave(511, recv).unwrap();
        w.enter(1700, recv).unwrap();
        w.mpi_recv(1740, 0, world, 2, 8).unwrap();
        w.leave(1741, recv).unwrap();
    });
    let a = b.analyze();
    let f = one(&a, Pattern::LateReceiver, 0);
    assert_eq!((f.time_lost_ns, f.instances), (700, 1), "{f:#?}");
    assert_eq!(f.call_path, ["MPI_Ssend"]);
    assert_eq!(f.worst.partner_rank, Some(1));
    none(&a, Pattern::LateSender);
}

fn collective(w: &mut EventWriter<'_>, region: RegionRef, enter: u64, exit: u64, coll: &Collective) {
    w.enter(enter, region).unwrap();
    w.mpi_collective_begin(enter + 1).unwrap();
    w.mpi_collective_end(exit - 1, coll).unwrap();
    w.leave(exit, region).unwrap();
}

#[test]
fn collectives_wait_as_scalasca_defines_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 3);
    let world = b.world;
    let (reduce, bcast, barrier, allreduce) = (
        b.region("MPI_Reduce", Paradigm::Mpi),
        b.region("MPI_Bcast", Paradigm::Mpi),
        b.region("MPI_Barrier", Paradigm::Mpi),
        b.region("MPI_Allreduce", Paradigm::Mpi),
    );
    let c = |op, root, sent, received| Collective { op, comm: world, root, bytes_sent: sent, bytes_received: received };
    // Reduce to 0: root enters at 0, senders at 100 and 300: Early Reduce
    // until the first sender, 100. Bcast from 2 (enters at 1500): ranks
    // entering at 1000 and 1200 wait 500 and 300. Barrier: the last at
    // 2600, the others at 2000 and 2500. Allreduce: the last at 3500.
    let enters = [[0, 1000, 2000, 3000], [100, 1200, 2500, 3200], [300, 1500, 2600, 3500]];
    for (r, e) in enters.iter().enumerate() {
        let master = b.masters[r];
        b.write(master, |w| {
            let (sent, received) = if r == 0 { (8, 24) } else { (8, 0) };
            collective(w, reduce, e[0], 400, &c(CollectiveOp::Reduce, Some(0), sent, received));
            let (sent, received) = if r == 2 { (16, 8) } else { (0, 8) };
            collective(w, bcast, e[1], 1600, &c(CollectiveOp::Bcast, Some(2), sent, received));
            collective(w, barrier, e[2], 2700, &c(CollectiveOp::Barrier, None, 0, 0));
            collective(w, allreduce, e[3], 3600, &c(CollectiveOp::Allreduce, None, 8, 8));
        });
    }
    let a = b.analyze();
    let er = one(&a, Pattern::EarlyReduce, 0);
    assert_eq!((er.time_lost_ns, er.worst.partner_rank), (100, Some(1)), "{er:#?}");
    assert!(a.findings.iter().filter(|f| f.pattern == Pattern::EarlyReduce).count() == 1);
    assert_eq!(one(&a, Pattern::LateBroadcast, 0).time_lost_ns, 500);
    assert_eq!(one(&a, Pattern::LateBroadcast, 1).time_lost_ns, 300);
    assert_eq!(one(&a, Pattern::WaitAtBarrier, 0).time_lost_ns, 600);
    assert_eq!(one(&a, Pattern::WaitAtBarrier, 1).time_lost_ns, 100);
    assert_eq!(one(&a, Pattern::WaitAtNxN, 0).time_lost_ns, 500);
    assert_eq!(one(&a, Pattern::WaitAtNxN, 1).time_lost_ns, 300);
    for p in [Pattern::LateBroadcast, Pattern::WaitAtBarrier, Pattern::WaitAtNxN] {
        assert!(a.findings.iter().all(|f| f.pattern != p || f.rank != Some(2)), "rank 2 is the late one");
    }
    assert_eq!(one(&a, Pattern::WaitAtBarrier, 0).worst.partner_rank, Some(2));
}

#[test]
fn gpu_idle_time_is_split_between_the_host_and_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 1);
    let launch = b.region("cudaLaunchKernel", Paradigm::Cuda);
    let sync = b.region("cudaDeviceSynchronize", Paradigm::Cuda);
    let compute = b.region("void compute(float*)", Paradigm::Cuda);
    let nccl = b.region("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Paradigm::Cuda);
    let corr = b.corr;
    let id = |c: u64| [(corr, AttributeValue::U64(c))];
    // Launches (enter, end): 1 at 0-5, 2 at 20-25, 3 at 30-35.
    b.write(b.masters[0], |w| {
        for (c, t) in [(1, 0), (2, 20), (3, 30)] {
            w.attributes(&id(c)).unwrap().enter(t, launch).unwrap();
            w.leave(t + 5, launch).unwrap();
        }
        w.enter(40, sync).unwrap();
        w.leave(100, sync).unwrap();
    });
    // Kernel 1 runs 6-10; kernel 2 starts at 30 (idle 10-30: until its
    // launch ended at 25 the host's, then 5 of dependency); kernel 3 starts
    // at 50 after kernel 2 ended at 40 (launched at 35: 10 of dependency).
    b.write(b.streams[0], |w| {
        for (c, s, e, k) in [(1, 6, 10, compute), (2, 30, 40, compute), (3, 50, 90, nccl)] {
            w.attributes(&id(c)).unwrap().enter(s, k).unwrap();
            w.leave(e, k).unwrap();
        }
    });
    let a = b.analyze();
    let s = &a.streams[0];
    assert_eq!((s.kernels_ns, s.communication_ns, s.span_ns, s.idle_ns), (14, 40, 84, 30), "{s:#?}");
    assert_eq!((s.idle_host_ns, s.idle_dependency_ns, s.idle_unattributed_ns), (15, 15, 0), "{s:#?}");
    assert_eq!(a.gpus[0].idle_ns, 30);
    // Kernels 1 and 2 (4 and 10 ns) ran shorter than their launches (5).
    let options = Options { short_kernel_min: 1, ..Options::default() };
    let again = super::analyze(&dir.path().join("traces.otf2"), &options).unwrap();
    let short: Vec<&Finding> = again.findings.iter().filter(|f| f.pattern == Pattern::ShortKernels).collect();
    assert_eq!(short.len(), 1, "{short:#?}");
    assert_eq!((short[0].instances, short[0].time_lost_ns), (1, 1), "only kernel 1 (4 ns < 5 ns)");
    assert_eq!(short[0].call_path, ["cudaLaunchKernel"]);
    // Gaps of at least 100 ns: none (the longest is 20).
    none(&a, Pattern::GpuGap);
    // The synchronization: one call, below the minimum of 10.
    none(&a, Pattern::SyncApi);
    // Computation: the thread's 100 ns but the 60 in cudaDeviceSynchronize.
    assert_eq!(a.ranks[0].computation_ns, 40);
    assert_eq!((a.ranks[0].gpu_compute_ns, a.ranks[0].communication_ns, a.ranks[0].overlap_ns), (14, 40, 0));
}

#[test]
fn patterns_have_stable_names() {
    let names: Vec<String> =
        Pattern::ALL.iter().map(|p| serde_json::to_value(p).unwrap().as_str().unwrap().to_owned()).collect();
    assert_eq!(
        names,
        [
            "late_sender",
            "late_receiver",
            "wait_at_nxn",
            "wait_at_barrier",
            "late_broadcast",
            "early_reduce",
            "sync_memcpy",
            "sync_memset",
            "pageable_async_memcpy",
            "sync_api",
            "gpu_gap",
            "short_kernels",
            "load_imbalance",
        ]
    );
}

#[test]
fn pageable_memory_in_async_copies_and_gpu_gaps_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 1);
    let (src, bytes) = {
        let d = b.archive.defs();
        (d.attribute("source memory", "", Type::String), d.attribute("bytes", "", Type::U64))
    };
    let async_copy = b.region("cudaMemcpyAsync", Paradigm::Cuda);
    let htod = b.region("[CUDA memcpy HtoD]", Paradigm::Cuda);
    let corr = b.corr;
    b.write(b.masters[0], |w| {
        for (c, t) in [(1u64, 0u64), (2, 1000), (3, 3000)] {
            w.attributes(&[(corr, AttributeValue::U64(c))]).unwrap().enter(t, async_copy).unwrap();
            w.leave(t + 10, async_copy).unwrap();
        }
    });
    // The first copy says its source is pageable, the second repeats it by
    // saying nothing (the merge writes memory kinds when they change), the
    // third is from pinned memory.
    b.write(b.streams[0], |w| {
        let pageable = AttributeValue::String(w.defs().string("pageable"));
        let pinned = AttributeValue::String(w.defs().string("pinned"));
        let id = |c: u64| (corr, AttributeValue::U64(c));
        let size = (bytes, AttributeValue::U64(4096));
        w.attributes(&[id(1), size, (src, pageable)]).unwrap().enter(20, htod).unwrap();
        w.leave(120, htod).unwrap();
        w.attributes(&[id(2), size]).unwrap().enter(1020, htod).unwrap();
        w.leave(1070, htod).unwrap();
        w.attributes(&[id(3), size, (src, pinned)]).unwrap().enter(3020, htod).unwrap();
        w.leave(3040, htod).unwrap();
    });
    let a = b.analyze();
    let f = one(&a, Pattern::PageableAsyncMemcpy, 0);
    assert_eq!((f.instances, f.time_lost_ns, f.bytes), (2, 150, Some(8192)), "{f:#?}");
    assert_eq!(f.call_path, ["cudaMemcpyAsync"]);
    assert_eq!(f.location, "Master thread");
    // Gaps of at least 100 ns on the GPU: 120-1020 and 1070-3020.
    let gaps: Vec<&Finding> = a.findings.iter().filter(|f| f.pattern == Pattern::GpuGap).collect();
    assert_eq!(gaps.len(), 1, "one GPU, one ending copy region: {gaps:#?}");
    assert_eq!((gaps[0].instances, gaps[0].time_lost_ns), (2, 900 + 1950), "{:#?}", gaps[0]);
    assert_eq!(gaps[0].location, "CUDA Device 0");
    assert_eq!(gaps[0].kernel.as_deref(), Some("[CUDA memcpy HtoD]"));
    assert_eq!(gaps[0].worst.time_lost_ns, 1950);
    // The copies were launched at 1000 and 3000 (ending 10 ns later), long
    // after the GPU became idle: the host's time, but the last 10 ns each.
    assert_eq!((a.gpus[0].idle_host_ns, a.gpus[0].idle_dependency_ns), (890 + 1940, 20));
}
mod stopped;
