//! The critical path across GPU work on hand-built archives: a delayed
//! kernel, a host gap before a launch, an NCCL kernel that started last.

use std::path::Path;

use otf2::{AttributeValue, Paradigm};

use super::Builder;
use crate::analyze::{Analysis, GpuWhatIf, PathStep};

const ITERATIONS: u64 = 5;
const KERNEL: &str = "void work(float*)";

/// One rank, [`ITERATIONS`] times: four launches (5 µs each, 1 µs
/// apart), then a cudaStreamSynchronize until 2 µs after the last kernel
/// ended, then 3 µs of computation. The kernels (1 µs) start 0.5 µs after
/// their launch returned, or 0.2 µs after the kernel before them ended.
/// The second kernel of each iteration runs `delay` longer; the host is
/// idle `gap` before the third launch.
fn gpu_job(dir: &Path, delay: u64, gap: u64) -> Analysis {
    let mut b = Builder::new(dir, 1);
    let launch = b.region("cudaLaunchKernel", Paradigm::Cuda);
    let sync = b.region("cudaStreamSynchronize", Paradigm::Cuda);
    let kernel = b.region(KERNEL, Paradigm::Cuda);
    let corr = b.corr;
    let mut host = Vec::new();
    let mut gpu = Vec::new();
    let (mut t, mut prev_end, mut c) = (1_000u64, 0u64, 1u64);
    for _ in 0..ITERATIONS {
        for k in 0..4 {
            if k == 2 {
                t += gap;
            }
            host.push((c, t, t + 5_000, launch));
            let start = (t + 5_500).max(prev_end + 200);
            let end = start + 1_000 + if k == 1 { delay } else { 0 };
            gpu.push((c, start, end));
            prev_end = end;
            c += 1;
            t += 6_000;
        }
        host.push((0, t, prev_end + 2_000, sync));
        t = prev_end + 5_000;
    }
    b.write(b.masters[0], |w| {
        for &(c, enter, leave, region) in &host {
            if c > 0 {
                w.attributes(&[(corr, AttributeValue::U64(c))]).unwrap();
            }
            w.enter(enter, region).unwrap();
            w.leave(leave, region).unwrap();
        }
    });
    b.write(b.streams[0], |w| {
        for &(c, start, end) in &gpu {
            w.attributes(&[(corr, AttributeValue::U64(c))]).unwrap().enter(start, kernel).unwrap();
            w.leave(end, kernel).unwrap();
        }
    });
    b.analyze()
}

fn steps(a: &Analysis) -> &[PathStep] {
    &a.critical_path.as_ref().expect("a critical path").steps
}

fn length(a: &Analysis) -> u64 {
    a.critical_path.as_ref().expect("a critical path").length_ns
}

fn near(got: u64, want: u64, what: &str) {
    let off = (got as f64 - want as f64).abs() / want as f64;
    assert!(off <= 0.10, "{what}: {got} against {want} ({:.1}% off)", off * 100.0);
}

fn row<'a>(a: &'a Analysis, kind: &str) -> &'a GpuWhatIf {
    a.what_if_gpu.iter().find(|w| w.kind == kind).unwrap_or_else(|| panic!("no {kind}: {:#?}", a.what_if_gpu))
}

/// The steps add up to the path's length.
fn adds_up(a: &Analysis) {
    let sum: u64 = steps(a).iter().map(|s| s.time_ns).sum();
    assert_eq!(sum, length(a), "{:#?}", a.critical_path);
}

#[test]
fn a_delayed_kernel_is_the_top_of_the_path_and_its_what_if_is_the_run_without_it() {
    let delay = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let a = gpu_job(dir.path(), delay, 0);
    adds_up(&a);
    let top = &steps(&a)[0];
    assert_eq!((top.activity.as_str(), top.location.as_str(), top.on_gpu), (KERNEL, "CUDA[0:7]", true), "{top:#?}");
    near(top.time_ns, ITERATIONS * delay, "the delayed kernel on the path");
    let w = row(&a, "kernel_at_median");
    assert_eq!((w.activity.as_deref(), w.reference_ns), (Some(KERNEL), 1_000), "{w:#?}");
    let plain = tempfile::tempdir().unwrap();
    let b = gpu_job(plain.path(), 0, 0);
    adds_up(&b);
    near(w.projected_ns, length(&b), "the projection against the run without the delay");
    assert!(b.what_if_gpu.iter().all(|w| w.kind != "kernel_at_median"), "{:#?}", b.what_if_gpu);
    // Stream idle time is on the path only where the GPU waited.
    assert!(a.critical_path.as_ref().unwrap().jumps >= 2 * ITERATIONS, "{:#?}", a.critical_path);
}

#[test]
fn a_host_gap_before_a_launch_is_on_the_path_and_its_what_if_is_the_run_without_it() {
    let gap = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let a = gpu_job(dir.path(), 0, gap);
    adds_up(&a);
    let top = &steps(&a)[0];
    assert_eq!(
        (top.activity.as_str(), top.location.as_str(), top.on_gpu),
        ("(outside any region)", "Master thread", false),
        "{top:#?}"
    );
    near(top.time_ns, ITERATIONS * gap, "the host's gap on the path");
    let w = row(&a, "host_gap_at_median");
    assert_eq!(w.location.as_deref(), Some("Master thread"), "{w:#?}");
    let plain = tempfile::tempdir().unwrap();
    let b = gpu_job(plain.path(), 0, 0);
    near(w.projected_ns, length(&b), "the projection against the run without the gap");
    // Without the gap the stretches differ by the 2 µs of computation
    // after each synchronization, no more.
    let rest: u64 = b.what_if_gpu.iter().filter(|w| w.kind == "host_gap_at_median").map(|w| w.saved_ns).sum();
    assert!(rest <= ITERATIONS * 2_000, "{:#?}", b.what_if_gpu);
}

/// Two ranks each launch an NCCL all-reduce kernel and synchronize; rank
/// 1 launches it 50 µs later than rank 0 (computing before): both kernels
/// end together at 80 µs; rank `r`'s synchronization returns at
/// `sync_ends[r]`.
fn nccl_pair(dir: &Path, sync_ends: [u64; 2]) -> Analysis {
    let mut b = Builder::new(dir, 2);
    let launch = b.region("cudaLaunchKernel", Paradigm::Cuda);
    let sync = b.region("cudaStreamSynchronize", Paradigm::Cuda);
    let nccl = b.region("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Paradigm::Cuda);
    let corr = b.corr;
    // (rank, launch at, kernel start).
    for (r, at, start) in [(0usize, 1_000u64, 7_000u64), (1, 51_000, 57_000)] {
        b.write(b.masters[r], |w| {
            w.attributes(&[(corr, AttributeValue::U64(1))]).unwrap().enter(at, launch).unwrap();
            w.leave(at + 5_000, launch).unwrap();
            w.enter(at + 6_000, sync).unwrap();
            w.leave(sync_ends[r], sync).unwrap();
        });
        b.write(b.streams[r], |w| {
            w.attributes(&[(corr, AttributeValue::U64(1))]).unwrap().enter(start, nccl).unwrap();
            w.leave(80_000, nccl).unwrap();
        });
    }
    b.analyze()
}

/// Time on the path of `process` at `location`.
fn on(a: &Analysis, process: &str, location: &str) -> u64 {
    steps(a).iter().filter(|s| s.process == process && s.location == location).map(|s| s.time_ns).sum()
}

/// The path goes from the synchronization that ended last through its
/// kernel to the NCCL kernel that started last, to that rank's launch and
/// computation.
#[test]
fn an_nccl_kernel_that_started_last_takes_the_path_to_its_rank() {
    let dir = tempfile::tempdir().unwrap();
    let a = nccl_pair(dir.path(), [82_000, 82_001]);
    adds_up(&a);
    let p = a.critical_path.as_ref().unwrap();
    // Rank 1 ends last (82_001): its synchronization waited for its own
    // kernel, which started last: rank 0 is not on the path at all.
    assert_eq!(on(&a, "rank 0", "Master thread") + on(&a, "rank 0", "CUDA[0:7]"), 0, "{p:#?}");
    assert_eq!(on(&a, "rank 1", "CUDA[0:8]"), 80_000 - 57_000 + 1_000, "kernel and launch latency: {p:#?}");
    // Now rank 0 ends last: its kernel waited for rank 1's from 7_000 to
    // 57_000, off the path; the path moves to rank 1's kernel at its start.
    let dir = tempfile::tempdir().unwrap();
    let a = nccl_pair(dir.path(), [90_000, 81_000]);
    adds_up(&a);
    let p = a.critical_path.as_ref().unwrap();
    assert_eq!(on(&a, "rank 0", "CUDA[0:7]"), 80_000 - 57_000, "its kernel from rank 1's start on: {p:#?}");
    assert_eq!(on(&a, "rank 0", "Master thread"), 10_000, "its synchronization after the kernel: {p:#?}");
    assert_eq!(on(&a, "rank 1", "CUDA[0:8]"), 1_000, "launch latency: {p:#?}");
    // Rank 1's launch call and its computation before it (its first
    // event, at 51_000, is where the path begins).
    assert_eq!(on(&a, "rank 1", "Master thread"), 5_000, "{p:#?}");
    assert_eq!(p.length_ns, 90_000 - 51_000);
}

/// One rank: a compute kernel (30 µs) and then an NCCL kernel (20 µs) on
/// one stream, launched back to back and waited for: both are on the
/// path, and overlapping the communication with the compute would take
/// the smaller of the two, the NCCL kernel's 20 µs, off it.
#[test]
fn communication_on_the_path_is_projected_overlapped_with_the_compute() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new(dir.path(), 1);
    let launch = b.region("cudaLaunchKernel", Paradigm::Cuda);
    let sync = b.region("cudaStreamSynchronize", Paradigm::Cuda);
    let kernel = b.region(KERNEL, Paradigm::Cuda);
    let nccl = b.region("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Paradigm::Cuda);
    let corr = b.corr;
    b.write(b.masters[0], |w| {
        for (c, at) in [(1u64, 1_000u64), (2, 3_000)] {
            w.attributes(&[(corr, AttributeValue::U64(c))]).unwrap().enter(at, launch).unwrap();
            w.leave(at + 1_000, launch).unwrap();
        }
        w.enter(5_000, sync).unwrap();
        w.leave(55_000, sync).unwrap();
    });
    b.write(b.streams[0], |w| {
        w.attributes(&[(corr, AttributeValue::U64(1))]).unwrap().enter(2_500, kernel).unwrap();
        w.leave(32_500, kernel).unwrap();
        w.attributes(&[(corr, AttributeValue::U64(2))]).unwrap().enter(32_800, nccl).unwrap();
        w.leave(52_800, nccl).unwrap();
    });
    let a = b.analyze();
    adds_up(&a);
    let w = row(&a, "communication_overlapped");
    assert_eq!((w.on_path_ns, w.reference_ns), (20_000, 30_000), "{w:#?}");
    assert_eq!(w.saved_ns, 20_000, "{w:#?}");
    assert_eq!(w.projected_ns, length(&a) - 20_000, "{w:#?}");
}
