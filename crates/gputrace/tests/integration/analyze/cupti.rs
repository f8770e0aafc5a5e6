//! `gputrace analyze`'s rules on the real CUPTI captures of
//! tests/fixtures: cuda_basic's synchronous copies, memsets,
//! synchronizations, short kernels, GPU gaps and idle time; nvtx_cuda's
//! short kernels under their NVTX ranges; each finding with the
//! programs' own numbers.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use super::{analyze, analyze_out, findings, int};
use crate::util::*;

/// The CUPTI capture `name` replayed and merged into a fresh experiment.
fn cupti_fixture(name: &str, pid: u32) -> PathBuf {
    let (captures, _) = crate::cuda::fixture(name);
    let dir = fresh_dir(&format!("analyze-{name}"));
    let all = gputrace_cuda::convert::Enabled::from_set(&config::Config::from_pairs(&[]).unwrap().cuda_enable);
    gputrace_cuda::replay::replay(&captures, &dir, gpu_node_header(pid, name), all).unwrap();
    let out = merge(&dir, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

/// The one finding of `pattern` whose call path ends in `call`.
fn finding<'a>(a: &'a Value, pattern: &str, call: &str) -> &'a Value {
    let f: Vec<&Value> = findings(a, pattern)
        .into_iter()
        .filter(|f| f["call_path"].as_array().unwrap().last().is_some_and(|c| c == call))
        .collect();
    assert_eq!(f.len(), 1, "one {pattern} in {call}: {:#}", a["findings"]);
    f[0]
}

/// tests/gpu/programs/cuda_basic.cu, 20 iterations: cudaMemcpy 4 times
/// (4 MiB HtoD from pageable memory, 4 MiB and 4 bytes DtoH, 8 KiB HtoH),
/// cudaMemset once (4 MiB), an event and a stream synchronization per
/// iteration and one stream synchronization before; its asynchronous
/// copies use pinned or device memory.
#[test]
fn cuda_basic_capture_gives_the_programs_synchronous_copies_memsets_and_syncs() {
    let dir = cupti_fixture("cuda_basic", 468);
    let a = analyze(&dir, &["--gap-threshold", "1ms"]);
    let memcpy = finding(&a, "sync_memcpy", "cudaMemcpy");
    assert_eq!(int(&memcpy["instances"]), 4, "{memcpy:#}");
    assert_eq!(int(&memcpy["bytes"]), 2 * (4 << 20) + 8192 + 4, "{memcpy:#}");
    assert_eq!(memcpy["location"], "Master thread");
    let memset = finding(&a, "sync_memset", "cudaMemset");
    assert_eq!((int(&memset["instances"]), int(&memset["bytes"])), (1, 4 << 20), "{memset:#}");
    assert_eq!(int(&finding(&a, "sync_api", "cudaEventSynchronize")["instances"]), 20);
    assert_eq!(int(&finding(&a, "sync_api", "cudaStreamSynchronize")["instances"]), 21);
    // One cudaDeviceSynchronize: below the default of 10 calls...
    assert!(findings(&a, "sync_api").iter().all(|f| f["call_path"][0] != "cudaDeviceSynchronize"));
    // ... a finding from one call on.
    let all = analyze(&dir, &["--sync-min-calls", "1"]);
    assert_eq!(int(&finding(&all, "sync_api", "cudaDeviceSynchronize")["instances"]), 1);
    assert!(findings(&a, "pageable_async_memcpy").is_empty(), "pinned and device memory only: {:#}", a["findings"]);
    // Time lost: what the calls took, at least what their copies took.
    let lost = int(&memcpy["time_lost_ns"]);
    assert!(lost > 0 && lost <= int(&memcpy["window"]["end_ns"]) - int(&memcpy["window"]["start_ns"]));

    // Kernels ran shorter than their launches: at most the program's 20
    // of each name, each finding on its stream with the kernel named.
    for f in findings(&a, "short_kernels") {
        let k = f["kernel"].as_str().unwrap();
        assert!(["scale", "axpy", "reduce_shared"].iter().any(|n| k.contains(n)), "{f:#}");
        assert!((10..=20).contains(&int(&f["instances"])), "{f:#}");
        assert_eq!(f["call_path"].as_array().unwrap().last().unwrap(), "cudaLaunchKernel", "{f:#}");
    }
    let scale = findings(&a, "short_kernels").into_iter().find(|f| f["kernel"].as_str().unwrap().contains("scale"));
    assert_eq!(int(&scale.expect("scale kernels")["instances"]), 20);

    // GPU gaps of at least the threshold, and only those.
    let gaps = findings(&a, "gpu_gap");
    assert!(!gaps.is_empty(), "{:#}", a["findings"]);
    for g in &gaps {
        assert!(int(&g["worst"]["time_lost_ns"]) >= 1_000_000, "{g:#}");
        assert_eq!(g["location"], "CUDA Device 0");
    }
    let fewer = analyze(&dir, &["--gap-threshold", "1s"]);
    assert!(findings(&fewer, "gpu_gap").is_empty());

    // GPU time per stream against `gputrace stats`' totals (its own pass).
    let stats = run(Command::new(gputrace()).args(["stats", "--format", "json"]).arg(&dir));
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let total = |report: &str, column: &str, pick: &dyn Fn(&str) -> bool| -> i64 {
        stats[report]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| pick(r[column].as_str().unwrap()))
            .map(|r| int(&r["Total Time (ns)"]))
            .sum()
    };
    let streams = a["streams"].as_array().unwrap();
    let sum = |field: &str| streams.iter().map(|s| int(&s[field])).sum::<i64>();
    assert_eq!(sum("kernels_ns"), total("gpu_kern_sum", "Name", &|_| true));
    assert_eq!(sum("copies_ns"), total("gpu_mem_time_sum", "Operation", &|n| n.starts_with("[CUDA memcpy")));
    assert_eq!(sum("memsets_ns"), total("gpu_mem_time_sum", "Operation", &|n| n.starts_with("[CUDA memset")));
    for s in streams.iter().chain(a["gpus"].as_array().unwrap()) {
        let parts = int(&s["idle_host_ns"]) + int(&s["idle_dependency_ns"]) + int(&s["idle_unattributed_ns"]);
        assert!((parts - int(&s["idle_ns"])).abs() <= 1, "idle split adds up: {s:#}");
        assert_eq!(int(&s["idle_ns"]) + int(&s["busy_ns"]), int(&s["span_ns"]), "{s:#}");
        assert_eq!(int(&s["idle_unattributed_ns"]), 0, "every launch is in the capture: {s:#}");
    }
    // The program synchronizes every iteration: the GPU waits for the host.
    let gpu = &a["gpus"][0];
    assert!(int(&gpu["idle_host_ns"]) > int(&gpu["idle_dependency_ns"]), "{gpu:#}");
}

/// tests/gpu/programs/nvtx_cuda.cu `6 3 4 5`: 6 steps of 3 `fwd` kernels in
/// "step > forward" and 4 `bwd` in "step > backward", on 64 Ki floats
/// (about a microsecond each, a launch takes several).
#[test]
fn nvtx_cuda_capture_gives_its_short_kernels_under_their_ranges() {
    let from = workspace().join("tests/fixtures/gpu-nvtx/nvtx_cuda");
    let dir = fresh_dir("analyze-nvtx_cuda");
    copy_dir(&from.join("raw"), &dir.join("raw"));
    let out = merge(&dir, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a = analyze(&dir, &[]);
    let short = findings(&a, "short_kernels");
    let of = |kernel: &str| {
        let f: Vec<&&Value> = short.iter().filter(|f| f["kernel"].as_str().unwrap().starts_with(kernel)).collect();
        assert_eq!(f.len(), 1, "{kernel}: {short:#?}");
        f[0]
    };
    let fwd = of("fwd");
    assert_eq!(int(&fwd["instances"]), 6 * 3, "{fwd:#}");
    assert_eq!(fwd["call_path"], serde_json::json!(["step", "forward", "cudaLaunchKernel"]), "{fwd:#}");
    let bwd = of("bwd");
    assert_eq!(int(&bwd["instances"]), 6 * 4, "{bwd:#}");
    assert_eq!(bwd["call_path"], serde_json::json!(["step", "backward", "cudaLaunchKernel"]), "{bwd:#}");
    // 6 sync_grads and 5 side kernels: fewer than the default minimum.
    assert!(short.iter().all(|f| !f["kernel"].as_str().unwrap().starts_with("side")), "{short:#?}");
    let low = analyze(&dir, &["--short-kernel-min", "1"]);
    let side = findings(&low, "short_kernels").into_iter().find(|f| f["kernel"].as_str().unwrap().starts_with("side"));
    let side = side.expect("the worker's side kernels");
    assert!(int(&side["instances"]) <= 5, "{side:#}");
    assert_eq!(side["call_path"], serde_json::json!(["worker kernels", "cudaLaunchKernel"]), "{side:#}");
    // The terminal table ranks findings by time lost.
    let out = analyze_out(&dir, &[]);
    let table = text(&out.stdout);
    assert!(out.status.success());
    assert!(table.contains("Kernels shorter than their launch"), "{table}");
    assert!(table.contains("fwd <- step > forward > cudaLaunchKernel"), "{table}");
    let lost: Vec<i64> = a["findings"].as_array().unwrap().iter().map(|f| int(&f["time_lost_ns"])).collect();
    assert!(lost.windows(2).all(|w| w[0] >= w[1]), "{lost:?}");
}
