//! A stopped job on hand-built archives: kernel launches whose GPU work
//! never came, and NCCL collectives some ranks returned from and others
//! never entered ([`crate::analyze::unfinished`], [`crate::analyze::stuck`]).

use super::*;

/// Marks a Leave the way the merge marks a call still open at the end.
struct Marks {
    in_flight: otf2::AttributeRef,
    kernel: otf2::AttributeRef,
    sequence: otf2::AttributeRef,
}

impl Marks {
    fn new(b: &mut Builder) -> Marks {
        let d = b.archive.defs();
        Marks {
            in_flight: d.attribute("GPUTRACE::IN_FLIGHT", "", Type::U64),
            kernel: d.attribute("CUDA kernel", "", Type::String),
            sequence: d.attribute("sequence", "", Type::U64),
        }
    }
}

/// Rank 0 launches `compute` (its record comes), then `spin_forever`
/// (none), and waits in cudaDeviceSynchronize until stopped at 1000;
/// rank 1's launch with the same correlation id as the spinning one ran.
fn spinning(stopped: bool) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 2);
    let m = Marks::new(&mut b);
    let (launch, sync, barrier) = (
        b.region("cudaLaunchKernel", Paradigm::Cuda),
        b.region("cudaDeviceSynchronize", Paradigm::Cuda),
        b.region("MPI_Barrier", Paradigm::Mpi),
    );
    let compute = b.region("compute(float*)", Paradigm::Cuda);
    let (corr, spin) = (b.corr, b.archive.defs().string("spin_forever(int volatile*)"));
    let end = |w: &mut EventWriter<'_>, region| {
        if stopped {
            w.attribute(m.in_flight, AttributeValue::U64(1)).unwrap();
        }
        w.leave(1000, region).unwrap();
    };
    b.write(b.masters[0], |w| {
        w.attribute(corr, AttributeValue::U64(1)).unwrap().enter(10, launch).unwrap();
        w.leave(12, launch).unwrap();
        w.attribute(corr, AttributeValue::U64(2)).unwrap();
        w.attribute(m.kernel, AttributeValue::String(spin)).unwrap().enter(100, launch).unwrap();
        w.leave(102, launch).unwrap();
        w.enter(110, sync).unwrap();
        end(w, sync);
    });
    b.write(b.streams[0], |w| {
        w.attribute(corr, AttributeValue::U64(1)).unwrap().enter(20, compute).unwrap();
        w.leave(30, compute).unwrap();
    });
    b.write(b.masters[1], |w| {
        w.attribute(corr, AttributeValue::U64(2)).unwrap().enter(40, launch).unwrap();
        w.leave(42, launch).unwrap();
        w.enter(200, barrier).unwrap();
        end(w, barrier);
    });
    b.write(b.streams[1], |w| {
        w.attribute(corr, AttributeValue::U64(2)).unwrap().enter(50, compute).unwrap();
        w.leave(60, compute).unwrap();
    });
    b.analyze()
}

#[test]
fn a_kernel_launched_that_never_finished_is_named_with_its_launch() {
    let a = spinning(true);
    assert_eq!(a.in_flight.len(), 2, "{:#?}", a.in_flight);
    assert_eq!(a.unfinished_kernels.len(), 1, "{:#?}", a.unfinished_kernels);
    let u = &a.unfinished_kernels[0];
    assert_eq!((u.rank, u.count, u.gpu.as_deref(), u.nccl.as_ref()), (Some(0), 1, Some("CUDA Device 0"), None));
    let last = u.last.as_ref().unwrap();
    assert_eq!(last.kernel.as_deref(), Some("spin_forever(int volatile*)"));
    assert_eq!((last.call.as_str(), last.path.as_str()), ("cudaLaunchKernel", "cudaLaunchKernel"));
    assert_eq!(last.launched_ns + last.before_end_ns, a.trace_ns, "{last:#?}");
    assert_eq!(a.trace_ns - last.launched_ns, 900, "launched at 100, the recording ended at 1000");
    assert_eq!(u.first, u.last);
    assert!(super::super::replay::launches_a_kernel("cuLaunchKernelEx"));
    assert!(!super::super::replay::launches_a_kernel("cudaLaunchHostFunc"));
    let lines = super::super::unfinished::lines(&a);
    assert_eq!(
        lines,
        ["Unfinished: CUDA Device 0 (rank 0): kernel spin_forever launched 900 ns before the end never finished \
          (cudaLaunchKernel)"]
    );
    // The table and the run summary say it too.
    let mut table = Vec::new();
    super::super::write_table(&a, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("GPU work launched that never finished"), "{table}");
    assert!(table.contains(&lines[0]), "{table}");
    assert!(super::super::summary_block(&a, 5, "dir").contains(&format!("analysis: {}", lines[0])));
    let json = serde_json::to_value(&a).unwrap();
    assert_eq!(json["unfinished_kernels"][0]["last"]["kernel"], "spin_forever(int volatile*)");
    // The same job ended by itself: nothing is said.
    assert!(spinning(false).unfinished_kernels.is_empty());
}

/// Three ranks on an NCCL communicator (and MPI_COMM_WORLD): each makes
/// `calls[r]` ncclAllReduce calls (NCCL's sequence numbers from 0), the
/// kernels of the first `kernels[r]` run, then each waits in
/// cudaStreamSynchronize (rank 2, which made fewer, in MPI_Barrier) until
/// stopped at 10000.
fn nccl_hang(calls: [u64; 3], kernels: [u64; 3]) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 3);
    let m = Marks::new(&mut b);
    let (allreduce, sync, barrier) = (
        b.region("ncclAllReduce", Paradigm::Cuda),
        b.region("cudaStreamSynchronize", Paradigm::Cuda),
        b.region("MPI_Barrier", Paradigm::Mpi),
    );
    let kernel = b.region("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Paradigm::Cuda);
    let d = b.archive.defs();
    let ids: Vec<u64> = b.masters.iter().map(|l| l.id()).collect();
    d.group("NCCL locations", GroupType::CommLocations, Paradigm::Cuda, GroupFlags::NONE, &ids);
    let group = d.group("", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &[0, 1, 2]);
    let comm = d.comm("ncclComm 1", group, None, CommFlags::NONE);
    let c = Collective { op: CollectiveOp::Allreduce, comm, root: None, bytes_sent: 8, bytes_received: 8 };
    for r in 0..3 {
        let (master, stream) = (b.masters[r], b.streams[r]);
        b.write(master, |w| {
            for i in 0..calls[r] {
                w.attribute(m.sequence, AttributeValue::U64(i)).unwrap();
                collective(w, allreduce, 100 * i + 10, 100 * i + 20, &c);
            }
            let wait = if r == 2 { barrier } else { sync };
            w.enter(5000, wait).unwrap();
            w.attribute(m.in_flight, AttributeValue::U64(1)).unwrap().leave(10000, wait).unwrap();
        });
        b.write(stream, |w| {
            for i in 0..kernels[r] {
                w.enter(100 * i + 30, kernel).unwrap();
                w.leave(100 * i + 60, kernel).unwrap();
            }
        });
    }
    b.analyze()
}

#[test]
fn on_nccl_the_ranks_that_returned_from_the_stuck_collective_and_its_kernels_are_named() {
    // Ranks 0 and 1 made 6 all-reduces, whose 6th kernel never finished;
    // rank 2 made 5.
    let a = nccl_hang([6, 6, 5], [5, 5, 5]);
    let s = a.stuck.iter().find(|s| s.paradigm == "NCCL").expect("stuck on NCCL");
    assert_eq!((s.operation, s.sequence, s.returned), (6, Some(5), true), "{s:#?}");
    assert_eq!((s.waiting.as_str(), s.missing.as_str()), ("0-1", "2"), "{s:#?}");
    assert_eq!(s.calls, ["ncclAllReduce"]);
    assert_eq!(s.waiting_doing, ["rank 0: cudaStreamSynchronize", "rank 1: cudaStreamSynchronize"]);
    assert_eq!(s.missing_doing, ["rank 2: MPI_Barrier"]);
    let line = super::super::unfinished::stuck_lines(&a).into_iter().find(|l| l.contains("NCCL")).unwrap();
    assert!(
        line.starts_with("Stuck: ranks 0-1 entered ncclAllReduce, collective #6 (NCCL sequence number 5) on NCCL"),
        "{line}"
    );
    assert!(line.ends_with("; rank 2 never entered it (rank 2: MPI_Barrier)"), "{line}");
    // On MPI_COMM_WORLD, rank 2 waits in the barrier the others never
    // entered; NCCL's calls are not MPI's collectives.
    let world = a.stuck.iter().find(|s| s.paradigm == "MPI").expect("stuck on MPI");
    assert_eq!((world.operation, world.waiting.as_str(), world.missing.as_str()), (1, "2", "0-1"), "{world:#?}");
    // The NCCL kernels of ranks 0 and 1's 6th call never finished; rank
    // 2's last ran.
    let nccl: Vec<(Option<u32>, u64, Option<u64>)> = a
        .unfinished_kernels
        .iter()
        .filter_map(|u| u.nccl.as_ref().map(|n| (u.rank, n.operation, n.sequence)))
        .collect();
    assert_eq!(nccl, [(Some(0), 6, Some(5)), (Some(1), 6, Some(5))], "{:#?}", a.unfinished_kernels);
    // The 6th call at 510, 500 ns after the trace's start (its first event).
    assert_eq!(a.unfinished_kernels[0].nccl.as_ref().unwrap().launched_ns, 500);
    // Everyone made 6 and every kernel ran: nothing stuck on NCCL, nothing
    // unfinished.
    let done = nccl_hang([6, 6, 6], [6, 6, 6]);
    assert!(done.stuck.iter().all(|s| s.paradigm != "NCCL"), "{:#?}", done.stuck);
    assert!(done.unfinished_kernels.is_empty(), "{:#?}", done.unfinished_kernels);
}
