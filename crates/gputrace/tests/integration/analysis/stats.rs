//! `gputrace stats` against what the programs did: MPI calls and the
//! message matrix of the p2p and collectives programs, the CUPTI
//! fixture's kernels and copies, two GPUs' NCCL, NVLink and peer copies,
//! Score-P's naming, NVTX ranges in MPI ranks; per rank, the rows add up
//! to the totals.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use super::{archives, cuda_run, gpu_pair, int, p2p_run, rows, stats, traced};
use crate::util::*;

/// `gputrace stats --by-rank --format json` of one report: its rows.
fn by_rank(input: &Path, report: &str) -> Vec<Value> {
    let out = ok(gt(&["stats", "--by-rank", "--format", "json", "--report", report, s(input)]));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    st[report]["rows"].as_array().unwrap().clone()
}

/// The rows of `report` by rank add up to its totals: per name, the
/// instances and total time of every process's row sum to the name's.
fn check_by_rank_sums(input: &Path, report: &str, totals: &BTreeMap<String, Value>, ranks: usize) {
    let per_rank = by_rank(input, report);
    let last = |r: &Value| -> String {
        let keys = ["Name", "Range", "Operation"];
        keys.iter().find_map(|k| r[*k].as_str()).unwrap().to_owned()
    };
    let mut sums: BTreeMap<String, (i64, i64, usize)> = BTreeMap::new();
    for r in &per_rank {
        // A rank, or a Score-P accelerator group without a creator (`CUDA[0]`).
        let process = r["Process"].as_str().unwrap();
        assert!(process.starts_with("rank ") || process.starts_with("CUDA["), "{r}");
        let e = sums.entry(last(r)).or_default();
        e.0 += int(r, "Instances");
        e.1 += int(r, "Total Time (ns)");
        e.2 += 1;
    }
    assert_eq!(sums.keys().collect::<Vec<_>>(), totals.keys().collect::<Vec<_>>(), "{report}");
    for (name, (n, ns, rows)) in sums {
        let t = &totals[&name];
        assert_eq!((n, ns), (int(t, "Instances"), int(t, "Total Time (ns)")), "{report} {name}");
        assert!(rows <= ranks, "{report} {name}: {rows} rows");
    }
}

#[test]
fn stats_of_p2p_equal_what_the_program_sent() {
    let (dir, stdout) = p2p_run();
    let counters = program_counters(stdout);
    let (ranks, iterations) = (4i64, 3i64);
    let st = stats(dir, &[]);
    let mpi = rows(&st, "mpi_sum");
    let n = |name: &str| int(&mpi[name], "Instances");
    let sum = |key: &str| counters.values().map(|c| c[key]).sum::<i64>();
    // Every rank sends once to MPI_PROC_NULL and receives once from it
    // per iteration: calls, not messages.
    let proc_null = ranks * iterations;
    let pairs = n("MPI_Sendrecv") + n("MPI_Sendrecv_replace");
    assert_eq!(n("MPI_Send") - proc_null + n("MPI_Ssend") + n("MPI_Bsend") + pairs, sum("sends"));
    assert_eq!(n("MPI_Recv") - proc_null + pairs, sum("recvs"));
    assert_eq!(n("MPI_Ssend"), ranks * (ranks - 1) * iterations);
    assert_eq!(n("MPI_Init"), ranks);
    // Init and finalize apart: marked, and the steady state's shares sum
    // to 100 without them.
    for name in ["MPI_Init", "MPI_Finalize"] {
        assert_eq!(mpi[name]["Time (%)"], "init/fin", "{name}");
    }
    let steady = || mpi.iter().filter(|(k, _)| !matches!(k.as_str(), "MPI_Init" | "MPI_Finalize")).map(|(_, r)| r);
    let total: i64 = steady().map(|r| int(r, "Total Time (ns)")).sum();
    let pct: f64 = steady().map(|r| r["Time (%)"].as_f64().unwrap()).sum();
    assert!(total > 0 && (pct - 100.0).abs() < 0.01, "{pct}");
    assert!(st["mpi_sum"]["notes"].to_string().contains("steady state"), "{}", st["mpi_sum"]["notes"]);
    check_by_rank_sums(dir, "mpi_sum", &mpi, ranks as usize);
    for r in mpi.values() {
        let (min, max, med) = (int(r, "Min (ns)"), int(r, "Max (ns)"), r["Med (ns)"].as_f64().unwrap());
        assert!(min as f64 <= med && med <= max as f64 && min <= max, "{r}");
    }
    // The matrix: each rank's row is what it sent, its column what it got;
    // each ordered pair exchanges 7 messages of 74,316 bytes per iteration.
    let matrix = st["mpi_matrix"]["rows"].as_array().unwrap();
    assert_eq!(matrix.len() as i64, ranks * (ranks - 1));
    for (rank, c) in &counters {
        let me = format!("rank {rank}");
        let from: Vec<&Value> = matrix.iter().filter(|r| r["Sender"] == me.as_str()).collect();
        let to: Vec<&Value> = matrix.iter().filter(|r| r["Receiver"] == me.as_str()).collect();
        assert_eq!(from.iter().map(|r| int(r, "Messages")).sum::<i64>(), c["sends"], "{me}");
        assert_eq!(from.iter().map(|r| int(r, "Bytes")).sum::<i64>(), c["bytes_sent"], "{me}");
        assert_eq!(to.iter().map(|r| int(r, "Messages")).sum::<i64>(), c["recvs"], "{me}");
        assert_eq!(to.iter().map(|r| int(r, "Bytes")).sum::<i64>(), c["bytes_recv"], "{me}");
    }
    for r in matrix {
        assert_eq!((int(r, "Messages"), int(r, "Bytes")), (7 * iterations, 74_316 * iterations), "{r}");
        assert!(int(r, "Send Time (ns)") > 0, "{r}");
    }
    // Against the Python reader: the same messages per pair.
    let f = facts(&dir.join("traces.otf2"));
    let mut per_pair: HashMap<(i64, i64), i64> = HashMap::new();
    for (sender, receiver, ..) in messages(&f, "sends") {
        *per_pair.entry((sender, receiver)).or_default() += 1;
    }
    for r in matrix {
        let rank = |k: &str| r[k].as_str().unwrap().trim_start_matches("rank ").parse::<i64>().unwrap();
        assert_eq!(per_pair[&(rank("Sender"), rank("Receiver"))], int(r, "Messages"));
    }
    // CSV of one report: a header and one line per row.
    let csv = text(&ok(gt(&["stats", "--report", "mpi_matrix", "--format", "csv", s(dir)])).stdout);
    assert_eq!(csv.lines().next(), Some("Sender,Receiver,Messages,Bytes,Send Time (ns)"));
    assert_eq!(csv.lines().count(), matrix.len() + 1);
    // The terminal form, and the short form printed after a run.
    let table = text(&ok(gt(&["stats", s(dir)])).stdout);
    assert!(table.contains("** MPI Summary (mpi_sum):") && table.contains("SKIPPED"), "{table}");
    let short = text(&ok(gt(&["stats", "--short", s(dir)])).stdout);
    // The steady state heads it: MPI_Init is at the end, out of the first five.
    assert!(short.contains("MPI_Ssend") && short.contains("... and"), "{short}");
    assert!(!short.contains("CUDA API Summary"), "empty reports are left out: {short}");
}

#[test]
fn stats_of_collectives_count_every_call() {
    let (dir, stdout) = traced("an-coll", "collectives.c", 4, "2");
    let counters = program_counters(&stdout);
    let mpi = rows(&stats(&dir, &["mpi_sum"]), "mpi_sum");
    let n = |name: &str| mpi.get(name).map_or(0, |r| int(r, "Instances"));
    let blocking = [
        "MPI_Barrier",
        "MPI_Bcast",
        "MPI_Reduce",
        "MPI_Allreduce",
        "MPI_Gather",
        "MPI_Gatherv",
        "MPI_Scatter",
        "MPI_Scatterv",
        "MPI_Allgather",
        "MPI_Allgatherv",
        "MPI_Alltoall",
        "MPI_Alltoallv",
        "MPI_Reduce_scatter_block",
        "MPI_Reduce_scatter",
        "MPI_Scan",
        "MPI_Exscan",
    ];
    let summary_gathers = counters.len() as i64; // print_summary's MPI_Gather
    let sum = |key: &str| counters.values().map(|c| c[key]).sum::<i64>();
    assert_eq!(blocking.iter().map(|b| n(b)).sum::<i64>() - summary_gathers, sum("blocking"));
    let nonblocking = ["MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce", "MPI_Igather"];
    assert_eq!(nonblocking.iter().map(|b| n(b)).sum::<i64>(), sum("nonblocking"));
}

#[test]
fn stats_of_the_cuda_fixture_equal_its_expected_counts() {
    let (dir, expected) = cuda_run();
    let expect = |key: &str| -> i64 {
        let line = expected.lines().find(|l| l.starts_with(&format!("expect {key} "))).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let st = stats(dir, &["gpu_kern_sum", "gpu_mem_size_sum", "gpu_mem_time_sum", "cuda_api_sum"]);
    let kernels = rows(&st, "gpu_kern_sum");
    assert_eq!(kernels.values().map(|r| int(r, "Instances")).sum::<i64>(), expect("kernels"));
    for k in ["scale", "axpy", "reduce_shared"] {
        let ours = |name: &str| name.contains(&format!(" {k}<")) || name.starts_with(&format!("{k}("));
        let (_, r) = kernels.iter().find(|(name, _)| ours(name)).unwrap();
        assert_eq!(int(r, "Instances"), expect(&format!("kernel {k}")), "{k}");
    }
    let sizes = rows(&st, "gpu_mem_size_sum");
    let times = rows(&st, "gpu_mem_time_sum");
    for kind in ["HtoD", "DtoH", "DtoD", "HtoH"] {
        let r = &sizes[&format!("[CUDA memcpy {kind}]")];
        assert_eq!(int(r, "Count"), expect(&format!("copies {kind}")), "{kind}");
        assert_eq!(int(r, "Total (bytes)"), expect(&format!("bytes {kind}")), "{kind}");
        assert_eq!(int(&times[&format!("[CUDA memcpy {kind}]")], "Instances"), expect(&format!("copies {kind}")));
    }
    assert_eq!(int(&sizes["[CUDA memset]"], "Count"), expect("memsets"));
    assert_eq!(int(&sizes["[CUDA memset]"], "Total (bytes)"), expect("memset_bytes"));
    let api = rows(&st, "cuda_api_sum");
    assert_eq!(int(&api["cudaLaunchKernel"], "Instances"), expect("kernels"));
}

#[test]
fn stats_of_two_gpus_show_nccl_nvlink_and_peer_copies() {
    let g = gpu_pair();
    let st = stats(&g.anchor, &[]);
    let n = g.iterations as i64;
    let nccl = rows(&st, "nccl_sum");
    assert_eq!(nccl.keys().collect::<Vec<_>>(), ["ncclRecv", "ncclSend"]);
    assert_eq!(int(&nccl["ncclSend"], "Instances"), n);
    let nv = rows(&st, "nvlink_sum");
    let (gpu0, gpu1) = (&st["nvlink_sum"]["rows"][0], &st["nvlink_sum"]["rows"][1]);
    assert_eq!((int(gpu0, "Sent (bytes)"), int(gpu1, "Received (bytes)")), (g.nvlink.0 as i64, g.nvlink.1 as i64));
    assert!(nv.values().all(|r| r["Topology"].as_str().unwrap().contains("18 links, NVLink 4")), "{nv:?}");
    let m = st["gpu_matrix"]["rows"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!((m[0]["Source"].as_str(), m[0]["Destination"].as_str()), (Some("CUDA Device 0"), Some("CUDA Device 1")));
    assert_eq!(int(&m[0], "Peer Copy Bytes"), n * g.peer_bytes as i64);
    assert_eq!((int(&m[0], "NCCL Messages"), int(&m[0], "NCCL Bytes")), (n, n * g.nccl_bytes as i64));
    // NCCL messages are not MPI messages.
    let mpi = st["mpi_matrix"]["rows"].as_array().unwrap();
    assert_eq!(mpi.len(), 1);
    assert_eq!((int(&mpi[0], "Messages"), int(&mpi[0], "Bytes")), (n, n * g.mpi_bytes as i64));
    assert_eq!(int(&rows(&st, "gpu_mem_time_sum")["[CUDA memcpy PtoP]"], "Instances"), n);
    let table = text(&ok(gt(&["stats", "--report", "gpu_matrix", s(&g.anchor)])).stdout);
    assert!(table.contains("NVLink CUDA Device 0: 90.0 MiB sent"), "{table}");
}

#[test]
fn stats_read_score_p_naming() {
    let n = 6;
    let anchor = archives::scorep_style(&fresh_dir("an-scorep"), n);
    let st = stats(&anchor, &[]);
    let n = n as i64;
    assert_eq!(int(&rows(&st, "gpu_kern_sum")["saxpy_kernel(int, float, float*, float*)"], "Instances"), 2 * n);
    let api = rows(&st, "cuda_api_sum");
    assert_eq!((int(&api["cudaLaunchKernel"], "Instances"), int(&api["cudaMemcpy"], "Instances")), (2 * n, 2 * n));
    let dtoh = &rows(&st, "gpu_mem_size_sum")["[CUDA memcpy DtoH]"];
    assert_eq!((int(dtoh, "Count"), int(dtoh, "Total (bytes)")), (2 * n, 2 * n * 4096));
    assert_eq!(int(&rows(&st, "gpu_mem_time_sum")["[CUDA memcpy DtoH]"], "Min (ns)"), 2_000);
    let mpi = rows(&st, "mpi_sum");
    assert_eq!((int(&mpi["MPI_Send"], "Instances"), int(&mpi["MPI_Recv"], "Instances")), (n, n));
    let m = &st["mpi_matrix"]["rows"][0];
    assert_eq!((m["Sender"].as_str(), m["Receiver"].as_str(), int(m, "Messages")), (Some("rank 0"), Some("rank 1"), n));
    // Score-P's user and compiler regions: 2 ranks × n iterations each.
    let user = rows(&st, "user_region_sum");
    let it = &user["iteration"];
    assert_eq!(
        (it["Kind"].as_str(), int(it, "Instances"), int(it, "Total Time (ns)")),
        (Some("user"), 2 * n, 2 * n * 50_000)
    );
    let daxpy = &user["daxpy_"];
    assert_eq!(
        (daxpy["Kind"].as_str(), int(daxpy, "Instances"), int(daxpy, "Max (ns)")),
        (Some("compiler"), 2 * n, 400)
    );
    assert_eq!(user.len(), 2, "{user:?}");
    // MPI_Init (8 µs) and MPI_Finalize (5 µs) apart: Send and Recv are the steady state.
    assert_eq!(mpi["MPI_Init"]["Time (%)"], "init/fin");
    assert_eq!(int(&mpi["MPI_Finalize"], "Total Time (ns)"), 2 * 5_000);
    let pct = mpi["MPI_Send"]["Time (%)"].as_f64().unwrap() + mpi["MPI_Recv"]["Time (%)"].as_f64().unwrap();
    assert!((pct - 100.0).abs() < 0.01, "{pct}");
    for report in ["user_region_sum", "mpi_sum", "cuda_api_sum", "gpu_kern_sum"] {
        check_by_rank_sums(&anchor, report, &rows(&st, report), 2);
    }
    let dtoh = by_rank(&anchor, "gpu_mem_size_sum");
    assert_eq!(dtoh.iter().map(|r| int(r, "Count")).collect::<Vec<_>>(), [n, n], "{dtoh:?}");
}

/// NVTX ranges around MPI calls (`mpi_ranges.c`, 2 ranks × 4 iterations):
/// `user_region_sum` and `nvtx_sum` count the ranges the program opened,
/// by rank too; `mpi_sum` the calls, MPI_Init apart.
#[test]
fn stats_of_nvtx_ranges_in_mpi_ranks_count_what_the_program_did() {
    let Some(headers) = crate::nvtx::headers() else { return };
    let (mpicc, mpirun, _) = openmpi();
    let exe = crate::nvtx::build(mpicc, "mpi_ranges.c", &headers);
    let dir = fresh_dir("an-nvtx-mpi");
    let out = trace(&dir, &[mpirun, "-np", "2", s(&exe), "4"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let st = stats(&dir, &["user_region_sum", "nvtx_sum", "mpi_sum"]);
    let user = rows(&st, "user_region_sum");
    assert_eq!(user.keys().collect::<Vec<_>>(), [":exchange", ":reduce"], "{user:?}");
    for r in user.values() {
        assert_eq!((r["Kind"].as_str(), int(r, "Instances")), (Some("NVTX PushPop"), 2 * 4), "{r}");
    }
    let nvtx = rows(&st, "nvtx_sum");
    for (name, r) in &user {
        assert_eq!(int(&nvtx[name], "Total Time (ns)"), int(r, "Total Time (ns)"), "{name}");
    }
    let mpi = rows(&st, "mpi_sum");
    let n = |name: &str| int(&mpi[name], "Instances");
    assert_eq!((n("MPI_Sendrecv"), n("MPI_Allreduce"), n("MPI_Init"), n("MPI_Finalize")), (8, 8, 2, 2));
    assert_eq!(mpi["MPI_Init"]["Time (%)"], "init/fin");
    for (report, totals) in [("user_region_sum", &user), ("nvtx_sum", &nvtx), ("mpi_sum", &mpi)] {
        check_by_rank_sums(&dir, report, totals, 2);
    }
    for r in by_rank(&dir, "user_region_sum") {
        assert_eq!(int(&r, "Instances"), 4, "{r}");
    }
    // The terminal table has the Process column.
    let table = text(&ok(gt(&["stats", "--by-rank", "--report", "user_region_sum", s(&dir)])).stdout);
    assert!(table.contains("Process") && table.contains("rank 1"), "{table}");
}
