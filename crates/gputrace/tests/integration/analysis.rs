//! The analysis commands on real archives: `gputrace stats`, `export`
//! and `plot` on traces of the MPI test programs (under mpirun), of the
//! replayed CUPTI fixture, and on hand-built archives for what this
//! machine cannot record (two GPUs with NVLink, peer copies and NCCL;
//! Score-P's naming); checked against what the programs say they did, the
//! Python reader and decoded PNGs; ViTE renders the ViTE copy.

mod archives;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// `gputrace stats --format json` of some reports.
fn stats(input: &Path, reports: &[&str]) -> Value {
    let mut args = vec!["stats", "--format", "json", s(input)];
    for r in reports {
        args.extend(["--report", r]);
    }
    serde_json::from_slice(&ok(gt(&args)).stdout).unwrap()
}

/// A report's rows by their name column (the last one).
fn rows(stats: &Value, report: &str) -> BTreeMap<String, Value> {
    let t = &stats[report];
    let last = t["columns"].as_array().unwrap().last().unwrap().as_str().unwrap().to_owned();
    t["rows"].as_array().unwrap().iter().map(|r| (r[&last].as_str().unwrap().to_owned(), r.clone())).collect()
}

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

fn int(v: &Value, column: &str) -> i64 {
    v[column].as_i64().unwrap_or_else(|| panic!("{column} in {v}"))
}

/// An MPI test program traced under mpirun: (dir, program stdout).
fn traced(name: &str, program: &str, ranks: u32, iterations: &str) -> (PathBuf, String) {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, program);
    let dir = fresh_dir(name);
    let np = ranks.to_string();
    let out = trace(&dir, &[mpirun, "-np", &np, s(&exe), "-n", iterations], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (dir, text(&out.stdout))
}

fn p2p_run() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| traced("an-p2p", "p2p.c", 4, "3"))
}

/// The CUPTI fixture replayed into an experiment and merged.
fn cuda_run() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        use gputrace_cuda::capture::Capture;
        let fixture = workspace().join("tests/fixtures/cupti/cuda_basic");
        let mut files: Vec<_> = std::fs::read_dir(&fixture).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let captures: Vec<Capture> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == "cupti"))
            .map(|p| Capture::load(p).unwrap())
            .collect();
        let header = raw::StreamHeader {
            producer: raw::Producer::Cuda,
            host: "gpu-node".into(),
            pid: 468,
            process_start: 1,
            clock_domain: 7,
            monotonic_ns: 1,
            realtime_ns: 1_700_000_000_000_000_000,
            rank_hint: None,
            command: vec!["cuda_basic".into()],
        };
        let all = config::Config::from_pairs(&[]).unwrap().cuda_enable;
        let dir = fresh_dir("an-cuda");
        gputrace_cuda::replay::replay(&captures, &dir, header, gputrace_cuda::convert::Enabled::from_set(&all))
            .unwrap();
        ok(gt(&["merge", s(&dir)]));
        (dir, std::fs::read_to_string(fixture.join("expected.txt")).unwrap())
    })
}

fn gpu_pair() -> &'static archives::GpuPair {
    static ARCHIVE: OnceLock<archives::GpuPair> = OnceLock::new();
    ARCHIVE.get_or_init(|| archives::gpu_pair(&fresh_dir("an-gpus"), 10))
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

/// Reads a Chrome JSON export (gzipped or not).
fn chrome(input: &Path, output: &Path) -> Vec<Value> {
    ok(gt(&["export", "--format", "chrome", "-o", s(output), s(input)]));
    let bytes = std::fs::read(output).unwrap();
    let json: Value = if output.extension().is_some_and(|e| e == "gz") {
        serde_json::from_reader(flate2::read::GzDecoder::new(&bytes[..])).unwrap()
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    json["traceEvents"].as_array().unwrap().clone()
}

fn phases(events: &[Value], ph: &str) -> Vec<Value> {
    events.iter().filter(|e| e["ph"] == ph).cloned().collect()
}

/// Every flow start has one end with its id, and the other way round.
fn assert_flows_pair_up(events: &[Value]) -> usize {
    let ids = |ph: &str| -> Vec<u64> { phases(events, ph).iter().map(|e| e["id"].as_u64().unwrap()).collect() };
    let (starts, ends) = (ids("s"), ids("f"));
    let set: HashSet<u64> = starts.iter().copied().collect();
    assert_eq!(set.len(), starts.len(), "flow ids are unique");
    assert_eq!(set, ends.iter().copied().collect::<HashSet<u64>>());
    assert!(phases(events, "f").iter().all(|e| e["bp"] == "e"));
    starts.len()
}

/// A multi-threaded ping-pong (`mt_pingpong.c`: two threads per rank,
/// on a tag each, then on one tag together): every message the export,
/// the analysis and the matrix pair is paired with the send its receive
/// got, so no arrow ends before it starts. Paired per thread as the
/// locations were read, the second thread's receives got the sends of
/// the first thread's later messages (4,000 of 16,000 backward by up to
/// 4 ms at `-n 2000`).
#[test]
fn multi_threaded_ping_pong_has_no_message_backward_in_time() {
    let n = 300i64;
    let (dir, stdout) = traced("an-mt-pingpong", "mt_pingpong.c", 2, &n.to_string());
    let counters = program_counters(&stdout);
    let sends: i64 = counters.values().map(|c| c["sends"]).sum();
    assert_eq!(sends, 2 * 2 * 2 * n, "{stdout}");
    // The export: a flow per message, none ending before it starts.
    let events = chrome(&dir, &scratch().join("mt-pingpong.json"));
    assert_eq!(assert_flows_pair_up(&events) as i64, sends);
    let at = |ph: &str| -> HashMap<u64, f64> {
        phases(&events, ph)
            .iter()
            .filter(|e| e["cat"] == "mpi")
            .map(|e| (e["id"].as_u64().unwrap(), e["ts"].as_f64().unwrap()))
            .collect()
    };
    let (starts, ends) = (at("s"), at("f"));
    let backward: Vec<f64> = starts.iter().map(|(id, t)| ends[id] - t).filter(|d| *d < 0.0).collect();
    assert!(backward.is_empty(), "{} of {} flows end before they start: {backward:?}", backward.len(), starts.len());
    // The analysis pairs the same way, and says so.
    let out = ok(gt(&["analyze", "--format", "json", s(&dir)]));
    let analysis: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analysis["messages"]["matched"].as_i64(), Some(sends), "{}", analysis["messages"]);
    assert_eq!(analysis["messages"]["received_before_sent"].as_i64(), Some(0), "{}", analysis["notes"]);
    // The matrix counts sends (it pairs nothing): what each rank sent.
    let st = stats(&dir, &["mpi_matrix"]);
    for (rank, c) in &counters {
        let me = format!("rank {rank}");
        let row = st["mpi_matrix"]["rows"].as_array().unwrap().iter().find(|r| r["Sender"] == me.as_str()).cloned();
        assert_eq!(row.map(|r| int(&r, "Messages")), Some(c["sends"]), "{me}");
    }
}

#[test]
fn chrome_export_of_p2p_has_every_region_and_message() {
    let (dir, _) = p2p_run();
    let events = chrome(dir, &scratch().join("p2p.json.gz"));
    let f = facts(&dir.join("traces.otf2"));
    let enters: i64 = f["regions"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|r| r.as_object().unwrap().values())
        .map(|v| v.as_i64().unwrap())
        .sum();
    // Every region a slice; the analysis tracks' slices apart.
    let slices = phases(&events, "X");
    assert_eq!(slices.iter().filter(|e| e["cat"] != "analysis").count() as i64, enters);
    assert_eq!(assert_flows_pair_up(&events), messages(&f, "sends").len());
    let names = phases(&events, "M");
    assert_eq!(names.iter().filter(|e| e["name"] == "process_name").count(), 4);
    assert!(names.iter().any(|e| e["name"] == "thread_name" && e["args"]["name"] == "Master thread"));
    // Timestamps agree with the Python reader's: the first enters of rank 2.
    let script = r#"
import otf2, sys
from otf2.events import Enter
with otf2.reader.open(sys.argv[1]) as t:
    origin = t.definitions.clock_properties.global_offset
    n = 0
    for loc, ev in t.events:
        if loc.group.name == "MPI Rank 2" and isinstance(ev, Enter) and n < 5:
            print(ev.region.name, ev.time - origin)
            n += 1
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(dir.join("traces.otf2")).output().unwrap();
    let lines = text(&out.stdout);
    assert_eq!(lines.lines().count(), 5, "{}", text(&out.stderr));
    for line in lines.lines() {
        let (region, ns) = line.rsplit_once(' ').unwrap();
        let ns: u64 = ns.parse().unwrap();
        let found = phases(&events, "X").iter().any(|e| {
            e["pid"] == 3 && e["name"] == region && (e["ts"].as_f64().unwrap() * 1000.0 - ns as f64).abs() < 0.5
        });
        assert!(found, "no slice {region} at {ns} ns on rank 2");
    }
}

#[test]
fn chrome_export_of_cuda_joins_launches_to_kernels() {
    let (dir, expected) = cuda_run();
    let events = chrome(dir, &scratch().join("cuda.json"));
    let expect = |key: &str| -> usize {
        expected
            .lines()
            .find(|l| l.starts_with(&format!("expect {key} ")))
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let gpu_work = expect("kernels")
        + ["HtoD", "DtoH", "DtoD", "HtoH"].iter().map(|k| expect(&format!("copies {k}"))).sum::<usize>()
        + expect("memsets");
    assert_eq!(assert_flows_pair_up(&events), gpu_work);
    // Each flow ends on a stream track at the start of a kernel or copy,
    // and starts inside a CUDA API slice of the host thread.
    let x = phases(&events, "X");
    for f in phases(&events, "f") {
        let slice = x.iter().find(|e| e["tid"] == f["tid"] && e["ts"] == f["ts"]).unwrap();
        assert!(["kernel", "memcpy", "memset"].contains(&slice["cat"].as_str().unwrap()), "{slice}");
        assert!(slice["args"]["CUDA correlation id"].is_u64());
    }
    for st in phases(&events, "s") {
        let (ts, tid) = (st["ts"].as_f64().unwrap(), &st["tid"]);
        assert!(x.iter().any(|e| &e["tid"] == tid && e["cat"] == "cuda_api" && e["ts"].as_f64().unwrap() <= ts));
    }
    let kernels = x.iter().filter(|e| e["cat"] == "kernel").count();
    assert_eq!(kernels, expect("kernels"));
    let k = x.iter().find(|e| e["cat"] == "kernel").unwrap();
    assert!(k["args"]["grid x"].is_u64() && k["dur"].as_f64().unwrap() > 0.0, "{k}");
}

#[test]
fn chrome_export_of_two_gpus_has_counters_and_both_kinds_of_flows() {
    let g = gpu_pair();
    let events = chrome(&g.anchor, &scratch().join("gpus.json"));
    let n = g.iterations as usize;
    // Flows: 2 kernels + 1 peer copy, 1 MPI and 1 NCCL message per iteration.
    assert_eq!(assert_flows_pair_up(&events), 5 * n);
    let counters = phases(&events, "C");
    assert_eq!(counters.len(), 4 * n);
    let last_sent = counters
        .iter()
        .filter(|c| c["name"] == "NVLink sent (NVLink GPU 0)")
        .map(|c| c["args"]["value"].as_u64().unwrap())
        .max();
    assert_eq!(last_sent, Some(g.nvlink.0));
}

/// Names with quotes, backslashes, control characters and non-ASCII come
/// back from the Chrome JSON as they were, read by Python's json module
/// and by serde_json.
#[test]
fn chrome_export_carries_odd_names_exactly() {
    let anchor = archives::odd_names(&fresh_dir("an-odd"), 3);
    let odd = |what: &str| format!("{} {what}", archives::ODD_NAME);
    let json = scratch().join("odd.json");
    let events = chrome(&anchor, &json);
    let slices = phases(&events, "X");
    let named = |name: &str| slices.iter().filter(|e| e["name"] == name).count();
    assert_eq!((named(&odd("region")), named(&odd("kernel"))), (3, 3), "{slices:?}");
    let kernel = slices.iter().find(|e| e["name"] == odd("kernel").as_str()).unwrap();
    assert_eq!(kernel["args"][odd("attribute")], odd("value"), "{kernel}");
    let meta: Vec<Value> = phases(&events, "M").iter().map(|e| e["args"]["name"].clone()).collect();
    assert!(meta.contains(&Value::from(odd("thread"))), "{meta:?}");
    assert!(meta.contains(&Value::from(format!("MPI Rank 0 ({})", odd("host")))), "{meta:?}");
    // Python's reader: the same names, every event a dict with a phase.
    let script = r#"
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
events = doc["traceEvents"]
assert all(isinstance(e, dict) and "ph" in e for e in events)
names = sorted({e["name"] for e in events if e["ph"] == "X"})
args = sorted({k for e in events if e["ph"] == "X" for k in e.get("args", {})})
meta = sorted({e["args"]["name"] for e in events if e["ph"] == "M" and "name" in e["args"]})
print(json.dumps({"names": names, "args": args, "meta": meta}))
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["names"], serde_json::json!([odd("kernel"), odd("region")]));
    assert_eq!(seen["args"], serde_json::json!([odd("attribute")]));
    assert!(seen["meta"].as_array().unwrap().contains(&Value::from(odd("thread"))), "{seen}");
}

/// The same names through `stats --format csv`, read by Python's csv
/// module: each a single field, as it was.
#[test]
fn stats_csv_carries_odd_names_exactly() {
    let anchor = archives::odd_names(&fresh_dir("an-odd-csv"), 3);
    let odd = |what: &str| format!("{} {what}", archives::ODD_NAME);
    let csv = ok(gt(&["stats", "--format", "csv", "--report", "gpu_kern_sum", s(&anchor)])).stdout;
    let script = r#"
import csv, io, json, sys
rows = list(csv.reader(io.StringIO(sys.stdin.read(), newline="")))
print(json.dumps(rows))
"#;
    let mut child = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &csv).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let rows: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2, "a header and the kernel: {rows:?}");
    assert_eq!(rows[0].len(), rows[1].len(), "{rows:?}");
    assert_eq!(rows[1].last(), Some(&odd("kernel")), "{rows:?}");
    let instances = rows[0].iter().position(|c| c == "Instances").unwrap();
    assert_eq!(rows[1][instances], "3");
}

/// Decodes a PNG: (width, height, distinct colours).
fn decode_png(path: &Path) -> (u32, u32, HashSet<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let colors = buf[..info.buffer_size()].chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
    (info.width, info.height, colors)
}

/// The timeline's colours, in the order of the functions' time
/// (`report::plot::timeline::PALETTE`), and the grey of the rest.
const PALETTE: [[u8; 3]; 12] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [188, 189, 34],
    [23, 190, 207],
    [174, 199, 232],
    [255, 187, 120],
    [152, 223, 138],
];
const OTHER_GREY: [u8; 3] = [150, 150, 150];

#[test]
fn timeline_pngs_have_a_lane_per_location_and_a_colour_per_function() {
    // (input, lanes, kinds the legend must name)
    let cases: [(&Path, usize, &[&str]); 3] = [
        (&p2p_run().0, 4, &["MPI"]),
        (&cuda_run().0, 4, &["kernel", "GPU memory", "CUDA API"]),
        (&gpu_pair().anchor, 4, &["kernel", "GPU memory", "MPI", "NCCL", "CUDA API"]),
    ];
    for (i, (input, lanes, kinds)) in cases.into_iter().enumerate() {
        let png = scratch().join(format!("timeline{i}.png"));
        let out = ok(gt(&["plot", "-o", s(&png), s(input)]));
        // `... colours by time: NAME SHARE % (KIND), ...`: what the legend lists.
        let line = text(&out.stderr);
        let legend = line.trim_end().trim_end_matches(')').split("colours by time: ").nth(1).unwrap().to_owned();
        let classes: Vec<&str> = legend.split("), ").collect();
        for kind in kinds {
            assert!(classes.iter().any(|c| c.ends_with(&format!("({kind}"))), "{kind}: {line}");
        }
        let grey = classes.last().is_some_and(|c| c.ends_with("(grey"));
        assert_eq!(grey, classes.len() > 12, "a grey class only beyond 12 functions: {line}");
        let (w, h, seen) = decode_png(&png);
        let rows = classes.len().div_ceil(3) as u32;
        assert_eq!((w, h), (1600, 48 + 20 * lanes as u32 + 40 + 20 * rows + 12), "{}", input.display());
        // Each listed function's colour is in the picture (in the legend
        // at least), in order of time; no colour of an absent class.
        let coloured = classes.len().min(12) - usize::from(grey && classes.len() <= 12);
        for (k, c) in PALETTE.iter().enumerate() {
            assert_eq!(seen.contains(c), k < coloured, "{}: colour {k} {c:?}: {line}", input.display());
        }
        // (The grey is also among the shades of anti-aliased text.)
        assert!(!grey || seen.contains(&OTHER_GREY), "{line}");
    }
}

#[test]
fn heatmaps_show_who_sent_to_whom() {
    for (input, which) in [(&p2p_run().0, "mpi"), (&gpu_pair().anchor, "gpu"), (&gpu_pair().anchor, "mpi")] {
        let png = scratch().join(format!("heat-{which}.png"));
        ok(gt(&["plot", "--matrix", which, "-o", s(&png), s(input)]));
        let (w, h, seen) = decode_png(&png);
        assert!(w >= 640 && h >= 300, "{w}x{h}");
        assert!(seen.len() > 20, "{} colours", seen.len());
        assert!(seen.contains(&[255, 255, 255]), "empty cells are white");
    }
    // An archive without the traffic: a clear error, no picture.
    let out = gt(&["plot", "--matrix", "gpu", "-o", s(&scratch().join("none.png")), s(&p2p_run().0)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no GPU traffic"), "{}", text(&out.stderr));
}

/// One `gputrace: error:` line, no panic, the given exit status.
fn assert_one_error_line(out: &Output, code: i32) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.starts_with("gputrace: error:") && !err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    let dir = fresh_dir("an-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.otf2");
    std::fs::write(&empty, "").unwrap();
    let textfile = dir.join("notes.otf2");
    std::fs::write(&textfile, "this is not an archive\n").unwrap();
    let truncated = dir.join("cut");
    std::fs::create_dir_all(&truncated).unwrap();
    let (p2p, _) = p2p_run();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(p2p.join(f), truncated.join(f)).unwrap();
    }
    let def = std::fs::read(truncated.join("traces.def")).unwrap();
    std::fs::write(truncated.join("traces.def"), &def[..def.len() / 2]).unwrap();
    // An event file cut short: the definitions read, the events do not.
    let cut_events = dir.join("cut-events");
    std::fs::create_dir_all(cut_events.join("traces")).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(p2p.join(f), cut_events.join(f)).unwrap();
    }
    for e in std::fs::read_dir(p2p.join("traces")).unwrap() {
        let e = e.unwrap().path();
        std::fs::copy(&e, cut_events.join("traces").join(e.file_name().unwrap())).unwrap();
    }
    let evt = cut_events.join("traces/0.evt");
    let len = std::fs::metadata(&evt).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&evt).unwrap().set_len(len / 2).unwrap();
    let json = s(&dir.join("out.json")).to_owned();
    let png = s(&dir.join("out.png")).to_owned();
    for input in [s(&empty), s(&textfile), s(&truncated), s(&cut_events), s(&dir), "/nonexistent/traces.otf2"] {
        for args in [
            vec!["stats", input],
            vec!["export", "--format", "chrome", "-o", &json, input],
            vec!["plot", "-o", &png, input],
        ] {
            // Bad input, whatever is wrong with it: exit 2.
            assert_one_error_line(&gt(&args), 2);
        }
    }
    assert!(text(&gt(&["stats", s(&empty)]).stderr).contains("empty"));
    assert!(!dir.join("out.json").exists(), "no half-written export is left behind");
    // What a directory without an archive holds: raw streams to merge, a
    // profile-only run's profile (Score-P's here), or nothing of ours.
    let scorep = dir.join("scorep-profile-only");
    std::fs::create_dir_all(&scorep).unwrap();
    std::fs::write(scorep.join("profile.cubex"), b"not read").unwrap();
    std::fs::write(scorep.join("scorep.cfg"), b"ENABLE_TRACING=false\n").unwrap();
    let out = gt(&["stats", s(&scorep)]);
    assert_one_error_line(&out, 2);
    let err = text(&out.stderr);
    assert!(err.contains("Score-P profile (profile.cubex)") && err.contains("tracing off"), "{err}");
    assert!(!err.contains("gputrace merge"), "{err}");
    let raw = dir.join("raw-only");
    std::fs::create_dir_all(raw.join("raw")).unwrap();
    assert!(text(&gt(&["stats", s(&raw)]).stderr).contains(&format!("run `gputrace merge {}`", s(&raw))));
    assert!(text(&gt(&["stats", s(&dir)]).stderr).contains("no raw streams to merge"));
    // The ViTE copy never overwrites an archive.
    let before = std::fs::read(p2p.join("traces.def")).unwrap();
    assert_one_error_line(&gt(&["export", "--format", "vite-otf2", "-o", s(p2p), s(p2p)]), 2);
    assert_eq!(std::fs::read(p2p.join("traces.def")).unwrap(), before);
    // A report or format that does not exist: the list, exit 2.
    let out = gt(&["stats", "--report", "gpu_kernel_sum", s(p2p)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("unknown report `gpu_kernel_sum`"), "{err}");
    for (name, _) in [("cuda_api_sum", 0), ("gpu_kern_sum", 0), ("nvlink_sum", 0), ("gpu_matrix", 0)] {
        assert!(err.contains(name), "{err}");
    }
    assert_one_error_line(&gt(&["stats", "--format", "xml", s(p2p)]), 2);
    assert_one_error_line(&gt(&["export", "--format", "pdf", "-o", &json, s(p2p)]), 2);
    assert_one_error_line(&gt(&["export", "--format", "chrome", s(p2p)]), 2);
}

/// ViTE draws the ViTE copy: an SVG with states and, for MPI, messages.
fn vite_svg(anchor: &Path, name: &str) -> Option<String> {
    if !required("ViTE (Debian package vite)", have("vite")) {
        return None;
    }
    let svg = scratch().join(format!("{name}.svg"));
    let out = Command::new("timeout")
        .args(["120", "vite"])
        .arg(anchor)
        .arg("-e")
        .arg(&svg)
        .env("QT_QPA_PLATFORM", "offscreen")
        .env("XDG_RUNTIME_DIR", scratch())
        .output()
        .unwrap();
    assert!(out.status.success(), "vite on {}: {:?}\n{}", anchor.display(), out.status, text(&out.stdout));
    Some(std::fs::read_to_string(&svg).unwrap())
}

#[test]
fn vite_renders_the_vite_copy() {
    let cases = [
        (p2p_run().0.join("traces.otf2"), "p2p", true),
        (cuda_run().0.join("traces.otf2"), "cuda", false),
        (gpu_pair().anchor.clone(), "gpus", true),
    ];
    for (anchor, name, has_messages) in cases {
        let copy = fresh_dir(&format!("an-vite-{name}"));
        let out = ok(gt(&["export", "--format", "vite-otf2", "-o", s(&copy), s(&anchor)]));
        assert!(text(&out.stderr).contains("traces.otf2"));
        // The copy is a valid archive for OTF2's own reader: the same
        // regions, messages and metrics as the original, no RMA.
        let (a, b) = (otf2_print_counts(&anchor), otf2_print_counts(&copy.join("traces.otf2")));
        for kind in ["ENTER", "LEAVE", "MPI_SEND", "MPI_RECV", "METRIC"] {
            assert_eq!(a.get(kind), b.get(kind), "{name}: {kind}");
        }
        assert!(!b.contains_key("RMA_PUT") && !b.contains_key("RMA_GET"), "{name}: {b:?}");
        let Some(svg) = vite_svg(&copy.join("traces.otf2"), name) else { return };
        // States are the rectangles inside the clipped drawing area.
        let states =
            svg.split("clip-path=\"url(#stateArea)\"").skip(1).map(|g| g.matches("<rect").count()).sum::<usize>();
        assert!(states >= 20, "{name}: {states} states drawn");
        if has_messages {
            assert!(svg.matches("<line").count() >= 10, "{name}: no message arrows");
        }
        if name == "gpus" {
            // The NVLink counters, drawn as step lines on their containers.
            assert!(svg.contains("NVLink GPU 0"), "{name}");
            assert!(svg.matches("<line").count() >= 60, "{name}: no metric lines");
        }
    }
    // The original is untouched by the export.
    assert!(!p2p_run().0.join("traces.otf2.vite").exists());
}
