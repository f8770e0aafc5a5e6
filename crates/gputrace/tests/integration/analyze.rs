//! `gputrace analyze` on real archives: an MPI program that injects known
//! delays (tests/programs/mpi/delays.c) run under real launchers, whose
//! wait states must come out on the right rank and call as the delay the
//! ranks realized — the late rank's entry into the call minus the waiting
//! rank's, by the program's own clock — within 10 %, and that delay within
//! 10 % of the 20 ms sleeps (less where a loaded machine woke the waiting
//! rank late: it then waited less); and the real CUPTI captures of
//! tests/fixtures (cuda_basic: synchronous copies, memsets and
//! synchronizations; nvtx_cuda: many short kernels in NVTX ranges), whose
//! rule findings must carry the programs' own numbers.
//!
//! The rules on the CUPTI captures are in [`cupti`]; the MPI wait states,
//! the straggler and bad input here.

mod cupti;
mod iterations;
mod links;
mod sampled;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::Value;

use crate::util::*;

/// The delay runs one at a time: ranks of two runs sharing two cores would
/// wake late from their sleeps (the time the program reports, but also
/// the waiting ranks' entries) more than a run alone does.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const ITERATIONS: i64 = 5;

/// `gputrace analyze ARGS DIR`.
fn analyze_out(dir: &Path, args: &[&str]) -> Output {
    run(Command::new(gputrace()).arg("analyze").args(args).arg(dir))
}

/// `gputrace analyze --format json ARGS DIR`.
fn analyze(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let out = analyze_out(dir, &all);
    assert!(out.status.success(), "analyze failed: {}{}", text(&out.stdout), text(&out.stderr));
    let a = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    assert_totals(&a);
    a
}

/// Each pattern's total is the sum of its findings (time lost, instances,
/// rows), its share of the run that over `run_ns`, its worst rank's time
/// the most any process lost to it, its worst instance the longest; and
/// every pattern with a finding has a total.
fn assert_totals(a: &Value) {
    let totals = a["totals"].as_array().unwrap();
    let all = a["findings"].as_array().unwrap();
    let patterns: std::collections::BTreeSet<&str> = all.iter().map(|f| f["pattern"].as_str().unwrap()).collect();
    assert_eq!(totals.len(), patterns.len(), "a total per pattern: {totals:#?}");
    let mut sum = 0;
    for t in totals {
        let mine = findings(a, t["pattern"].as_str().unwrap());
        let lost: i64 = mine.iter().map(|f| int(&f["time_lost_ns"])).sum();
        assert_eq!(int(&t["time_lost_ns"]), lost, "{t:#}");
        assert_eq!(int(&t["instances"]), mine.iter().map(|f| int(&f["instances"])).sum::<i64>(), "{t:#}");
        assert_eq!(int(&t["findings"]), mine.len() as i64, "{t:#}");
        let share = 100.0 * lost as f64 / int(&a["run_ns"]) as f64;
        assert!((t["share_of_run"].as_f64().unwrap() - share).abs() <= 1e-9 * share.max(1.0), "{t:#}");
        let mut per_process = std::collections::BTreeMap::<&str, i64>::new();
        for f in &mine {
            *per_process.entry(f["process"].as_str().unwrap()).or_default() += int(&f["time_lost_ns"]);
        }
        let worst = &t["worst_rank"];
        assert_eq!(int(&worst["time_lost_ns"]), per_process.values().copied().max().unwrap(), "{t:#}");
        assert_eq!(per_process[worst["process"].as_str().unwrap()], int(&worst["time_lost_ns"]), "{t:#}");
        let longest = mine.iter().map(|f| int(&f["worst"]["time_lost_ns"])).max().unwrap();
        assert_eq!(int(&t["worst_instance"]["time_lost_ns"]), longest, "{t:#}");
        sum += lost;
    }
    assert_eq!(sum, all.iter().map(|f| int(&f["time_lost_ns"])).sum::<i64>());
    assert!(totals.windows(2).all(|w| int(&w[0]["time_lost_ns"]) >= int(&w[1]["time_lost_ns"])), "{totals:#?}");
}

/// The findings of one pattern.
fn findings<'a>(a: &'a Value, pattern: &str) -> Vec<&'a Value> {
    a["findings"].as_array().unwrap().iter().filter(|f| f["pattern"] == pattern).collect()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// `got` is `want` within 10 %.
fn assert_near(got: i64, want: i64, what: &str) {
    assert!(want > 0, "{what}: nothing injected");
    let off = (got - want).abs() as f64 / want as f64;
    assert!(off <= 0.10, "{what}: {got} ns found, {want} ns injected ({:.1} % off)", off * 100.0);
}

/// The MPI to run a program with.
#[derive(Clone, Copy)]
enum Mpi {
    Open,
    Mpich,
}

/// A traced run of delays.c: the experiment, the nanoseconds each rank
/// slept, the sum of the times each called the measured function, and
/// gputrace's stderr (with the run summary).
struct Run {
    dir: PathBuf,
    injected: HashMap<u32, i64>,
    enter: HashMap<u32, i64>,
    stderr: String,
}

impl Run {
    /// How much later than `waiting` the rank `late` called the measured
    /// function, over all iterations: the delay as realized, which the
    /// wait states must equal. On a quiet machine it is the sleep `late`
    /// injected; on a loaded one the waiting rank may come late (woken
    /// late from its last call: it waits less) or the late rank leave its
    /// last call late (before its sleep: the others wait more). Within
    /// half the sleep either way, or the run says nothing.
    fn realized(&self, late: u32, waiting: u32) -> i64 {
        let d = self.enter[&late] - self.enter[&waiting];
        let slept = self.injected[&late] - self.injected[&waiting];
        assert!(
            (d - slept).abs() <= slept / 2,
            "rank {waiting} entered {d} ns before rank {late}, which slept {slept} ns more: the machine is too loaded"
        );
        d
    }
}

fn delays(mpi: Mpi, mode: &str, ranks: u32) -> Option<Run> {
    delays_of(mpi, mode, ranks, 20)
}

/// [`delays`] with sleeps of `ms` milliseconds.
fn delays_of(mpi: Mpi, mode: &str, ranks: u32, ms: u32) -> Option<Run> {
    let (exe, launcher) = match mpi {
        Mpi::Open => {
            let (mpicc, mpirun, _) = openmpi();
            (compile(mpicc, "delays.c"), mpirun)
        }
        Mpi::Mpich => {
            if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
                return None;
            }
            (compile("mpicc.mpich", "delays.c"), "mpiexec.mpich")
        }
    };
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fresh_dir(&format!("delays-{mode}"));
    let np = ranks.to_string();
    let n = ITERATIONS.to_string();
    let ms = ms.to_string();
    let out = trace(&dir, &[launcher, "-n", &np, exe.to_str().unwrap(), mode, "-n", &n, "-d", &ms], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{mode}: {stderr}");
    let counters = program_counters(&text(&out.stdout));
    assert_eq!(counters.len(), ranks as usize, "every rank reports: {}", text(&out.stdout));
    let injected = counters.iter().map(|(r, c)| (*r, c["injected_ns"])).collect();
    let enter = counters.iter().map(|(r, c)| (*r, c["enter_ns"])).collect();
    Some(Run { dir, injected, enter, stderr })
}

/// The one finding of `pattern` on `rank`, checked: its call is `call`
/// on MPI_COMM_WORLD, it waited for `partner` in every iteration, and
/// lost `want` ns (within 10 %).
fn assert_wait(a: &Value, pattern: &str, rank: u32, call: &str, partner: u32, want: i64) {
    let mine: Vec<&Value> = findings(a, pattern).into_iter().filter(|f| f["rank"] == rank).collect();
    assert_eq!(mine.len(), 1, "one {pattern} finding on rank {rank}: {:#}", a["findings"]);
    let f = mine[0];
    assert_eq!(f["call_path"].as_array().unwrap().last().unwrap(), call, "{f:#}");
    assert_eq!(f["communicator"], "MPI_COMM_WORLD", "{f:#}");
    assert_eq!(f["location"], "Master thread", "{f:#}");
    assert_eq!(f["process"], format!("rank {rank}"), "{f:#}");
    assert_eq!(f["worst"]["partner_rank"], partner, "{f:#}");
    assert_eq!(int(&f["instances"]), ITERATIONS, "an instance per iteration: {f:#}");
    assert_near(int(&f["time_lost_ns"]), want, &format!("{pattern} on rank {rank}"));
    let w = &f["window"];
    assert!(int(&w["start_ns"]) < int(&w["end_ns"]), "{f:#}");
    assert!(int(&w["end_ns"]) <= int(&a["trace_ns"]), "{f:#}");
}

/// The same figures in `scout.cubex`, which `gputrace analyze` wrote
/// beside the archive, read by pycubexr: the pattern's metric (Scalasca's
/// name) holds each finding's time lost at its call path and thread, and
/// nothing elsewhere; `wait_states` the sum of its patterns.
fn assert_in_cube(dir: &Path, a: &Value, pattern: &str, metric: &str) {
    let Some(python) = crate::profile::pycubexr() else { return };
    let cube = crate::profile::cube_facts(&python, &dir.join("scout.cubex"));
    let stored = &cube["stored"][metric];
    let locations = cube["locations"].as_array().unwrap();
    let mut total = 0.0;
    for f in findings(a, pattern) {
        let path: Vec<&str> = f["call_path"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
        let column = locations
            .iter()
            .position(|l| l["group"] == f["process"] && l["name"] == f["location"])
            .unwrap_or_else(|| panic!("{f:#} in {locations:#?}"));
        let root = cube["cnodes"].as_object().unwrap().iter().find(|(_, c)| c["parent"].is_null()).unwrap().0;
        assert!(root.ends_with("delays_c"), "the root is the program (compiled as ...delays_c): {root}");
        let key = std::iter::once(root.as_str()).chain(path.iter().copied()).collect::<Vec<_>>();
        let got = stored[key.join("/")][column].as_f64().unwrap_or_else(|| panic!("{metric} {path:?}: {stored:#}"));
        let want = int(&f["time_lost_ns"]) as f64 / 1e9;
        assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{metric} at {path:?}: {got} s vs {want} s");
        total += want;
    }
    let all: f64 =
        stored.as_object().unwrap().values().flat_map(|row| row.as_array().unwrap()).map(|v| v.as_f64().unwrap()).sum();
    assert!(total > 0.0 && (all - total).abs() <= 1e-9 * total, "{metric}: {all} s in the cube, {total} s found");
    // The parent holds its patterns' sum, as Cube reads a metric tree (its
    // own share zero); cube_facts.py has checked no share is negative.
    let children: Vec<&str> =
        cube["children"]["wait_states"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(children.contains(&metric), "{metric} under wait_states: {children:?}");
    for (path, row) in cube["stored"]["wait_states"].as_object().unwrap() {
        for (column, v) in row.as_array().unwrap().iter().enumerate() {
            let sum: f64 = children.iter().map(|c| cube["stored"][*c][path][column].as_f64().unwrap()).sum();
            let v = v.as_f64().unwrap();
            assert!(
                (v - sum).abs() <= 1e-9 * sum.max(1.0),
                "wait_states at {path}, location {column}: {v} s, its patterns {sum} s"
            );
        }
    }
}

/// No finding of `pattern` on `rank` (the late rank waits for nobody).
fn assert_none(a: &Value, pattern: &str, rank: u32) {
    let mine: Vec<&Value> = findings(a, pattern).into_iter().filter(|f| f["rank"] == rank).collect();
    assert!(mine.is_empty(), "no {pattern} on rank {rank}: {mine:#?}");
}

#[test]
fn a_late_sender_is_the_receivers_wait_in_mpi_recv() {
    let traced = delays(Mpi::Open, "late-sender", 2).unwrap();
    let a = analyze(&traced.dir, &[]);
    assert_wait(&a, "late_sender", 1, "MPI_Recv", 0, traced.realized(0, 1));
    assert_in_cube(&traced.dir, &a, "late_sender", "mpi_latesender");
    assert_none(&a, "late_sender", 0);
    // The table leads with the totals, then the rows; the communicator
    // with its size and members.
    let out = analyze_out(&traced.dir, &[]);
    let table = text(&out.stdout);
    let (totals, rows) = (table.find("Totals per pattern").unwrap(), table.find("Findings, by time lost").unwrap());
    assert!(totals < rows, "{table}");
    let line = table.lines().find(|l| l.trim_start().starts_with("Late Sender: ")).unwrap();
    assert!(line.contains(" in total, ") && line.contains("% of the run"), "{line}");
    assert!(line.contains("rank 1 lost the most") && line.contains("waiting for rank 0"), "{line}");
    assert!(table.contains("MPI_COMM_WORLD (2 ranks: 0-1)"), "{table}");
    assert!(findings(&a, "late_receiver").is_empty(), "an eager send waits for no receiver: {:#}", a["findings"]);
    // The summary after the run names it too.
    assert!(traced.stderr.contains("[gputrace] analysis: Late Sender: "), "{}", traced.stderr);
    let line = traced.stderr.lines().find(|l| l.contains("analysis: Late Sender")).unwrap();
    assert!(line.contains("rank 1, Master thread in MPI_Recv, waiting for rank 0 (5 instances)"), "{line}");

    // The Chrome export marks each instance on an analysis track of rank
    // 1's process.
    let json = traced.dir.join("trace.json");
    let out =
        run(Command::new(gputrace()).arg("export").args(["--format", "chrome", "-o"]).arg(&json).arg(&traced.dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let slices: Vec<&Value> =
        events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "analysis" && e["name"] == "Late Sender").collect();
    assert_eq!(slices.len(), ITERATIONS as usize, "{slices:#?}");
    let (pid, tid) = (&slices[0]["pid"], &slices[0]["tid"]);
    assert!(slices.iter().all(|s| &s["pid"] == pid && &s["tid"] == tid), "one track: {slices:#?}");
    let meta = |name: &str, tid: Option<&Value>| {
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == name && &e["pid"] == pid && tid.is_none_or(|t| &e["tid"] == t))
    };
    let process = meta("process_name", None).unwrap();
    assert!(process["args"]["name"].as_str().unwrap().starts_with("MPI Rank 1"), "{process}");
    assert_eq!(meta("thread_name", Some(tid)).unwrap()["args"]["name"], "analysis: Master thread");
    let micros: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
    assert_near((micros * 1000.0) as i64, traced.realized(0, 1), "analysis slices");
    for s in &slices {
        assert_eq!(s["name"], "Late Sender", "{s}");
        assert_eq!(s["args"]["waited for"], "rank 0", "{s}");
        assert_eq!(s["args"]["call"], "MPI_Recv", "{s}");
    }
}

#[test]
fn a_late_sender_is_found_in_the_mpi_wait_of_an_irecv() {
    let run = delays(Mpi::Open, "irecv", 2).unwrap();
    let a = analyze(&run.dir, &[]);
    assert_wait(&a, "late_sender", 1, "MPI_Wait", 0, run.realized(0, 1));
}

#[test]
fn a_late_receiver_is_the_synchronous_senders_wait() {
    let run = delays(Mpi::Open, "late-receiver", 2).unwrap();
    let a = analyze(&run.dir, &[]);
    assert_wait(&a, "late_receiver", 0, "MPI_Ssend", 1, run.realized(1, 0));
    assert_in_cube(&run.dir, &a, "late_receiver", "mpi_latereceiver");
    assert!(findings(&a, "late_sender").is_empty(), "{:#}", a["findings"]);
}

#[test]
fn a_rank_late_at_barriers_makes_the_others_wait_at_barrier() {
    let run = delays(Mpi::Open, "barrier", 4).unwrap();
    let a = analyze(&run.dir, &[]);
    for r in 0..3 {
        assert_wait(&a, "wait_at_barrier", r, "MPI_Barrier", 3, run.realized(3, r));
    }
    assert_none(&a, "wait_at_barrier", 3);
    assert_in_cube(&run.dir, &a, "wait_at_barrier", "mpi_barrier_wait");
}

#[test]
fn a_rank_late_at_an_alltoall_makes_the_others_wait_at_nxn() {
    let run = delays(Mpi::Open, "alltoall", 4).unwrap();
    let a = analyze(&run.dir, &[]);
    for r in 0..3 {
        assert_wait(&a, "wait_at_nxn", r, "MPI_Alltoall", 3, run.realized(3, r));
    }
    assert_none(&a, "wait_at_nxn", 3);
    assert_in_cube(&run.dir, &a, "wait_at_nxn", "mpi_wait_nxn");
}

#[test]
fn a_late_root_of_mpi_bcast_is_a_late_broadcast() {
    let run = delays(Mpi::Open, "bcast", 4).unwrap();
    let a = analyze(&run.dir, &[]);
    for r in 1..4 {
        assert_wait(&a, "late_broadcast", r, "MPI_Bcast", 0, run.realized(0, r));
    }
    assert_none(&a, "late_broadcast", 0);
    assert_in_cube(&run.dir, &a, "late_broadcast", "mpi_latebroadcast");
}

/// Scalasca's Early Reduce: the root waits until the *first* sender
/// enters; with one sender, that is the late one.
#[test]
fn a_late_sender_into_mpi_reduce_is_an_early_reduce_on_the_root() {
    let run = delays(Mpi::Open, "reduce", 2).unwrap();
    let a = analyze(&run.dir, &[]);
    assert_wait(&a, "early_reduce", 0, "MPI_Reduce", 1, run.realized(1, 0));
    assert_none(&a, "early_reduce", 1);
    assert_in_cube(&run.dir, &a, "early_reduce", "mpi_earlyreduce");
}

#[test]
fn a_rank_with_twice_the_computation_is_the_load_imbalance() {
    let run = delays(Mpi::Open, "imbalance", 4).unwrap();
    let a = analyze(&run.dir, &[]);
    let inj = &run.injected;
    let mean = inj.values().sum::<i64>() / 4;
    let im = &a["imbalance"];
    assert_eq!(im["slowest_rank"], 1, "{im:#}");
    assert_eq!(im["slowest"], "rank 1", "{im:#}");
    let f = findings(&a, "load_imbalance");
    assert_eq!(f.len(), 1, "{:#}", a["findings"]);
    assert_eq!(f[0]["rank"], 1);
    // Time lost: the slowest rank's computation above the mean.
    assert_near(int(&f[0]["time_lost_ns"]), inj[&1] - mean, "max - mean computation");
    // Rank 1 computed one sleep more per iteration than the others.
    let computation: HashMap<i64, i64> =
        a["ranks"].as_array().unwrap().iter().map(|r| (int(&r["rank"]), int(&r["computation_ns"]))).collect();
    let others = (computation[&0] + computation[&2] + computation[&3]) / 3;
    let injected_others = (inj[&0] + inj[&2] + inj[&3]) / 3;
    assert_near(computation[&1] - others, inj[&1] - injected_others, "rank 1's extra computation");
    assert!((int(&im["max_ns"]) - computation[&1]).abs() <= 1, "{im:#}");
    // And the others wait for it at the barrier.
    for r in [0, 2, 3] {
        assert_wait(&a, "wait_at_barrier", r, "MPI_Barrier", 1, run.realized(1, r));
    }
    // The critical path runs through rank 1's computation: backwards from
    // the end, the barriers' waits lead to rank 1, whose sleeps (outside
    // any region: computation nothing annotated) are on it; it begins
    // after MPI_Init.
    let path = &a["critical_path"];
    assert_eq!(path["processes"][0][0], "rank 1", "{path:#}");
    let top = &path["steps"][0];
    assert_eq!(
        (top["process"].as_str(), top["location"].as_str()),
        (Some("rank 1"), Some("Master thread")),
        "{path:#}"
    );
    assert_eq!(top["activity"], "(outside any region)", "{top:#}");
    assert_near(int(&top["time_ns"]), inj[&1], "rank 1's computation on the critical path");
    // (It may not move at all: when rank 1 also ends last.)
    assert!(path["steps"].as_array().unwrap().iter().all(|s| s["activity"] != "MPI_Init"), "{path:#}");
    let steps: i64 = path["steps"].as_array().unwrap().iter().map(|s| int(&s["time_ns"])).sum();
    assert_eq!(steps, int(&path["length_ns"]), "the steps add up to the path: {path:#}");
    assert!(int(&path["length_ns"]) <= int(&a["trace_ns"]), "{path:#}");
}

/// The what-if projection of the imbalance: had rank 1 computed as the
/// median rank does, the run would be what the same program gives when
/// no rank computes more (`delays balanced`): its critical path's length
/// within 10%. The projection names rank 1 alone. The two runs are
/// compared with each other, not with what they slept: sleeps of 100 ms,
/// so that a busy machine's late wake-ups (a few ms each) stay small
/// beside them (with 20 ms they made the projection 16% off under load).
#[test]
fn the_what_if_of_the_imbalance_is_the_balanced_run() {
    let Some(run) = delays_of(Mpi::Open, "imbalance", 4, 100) else { return };
    let a = analyze(&run.dir, &[]);
    let w = a["what_if"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{:#}", a["what_if"]);
    assert_eq!(w[0]["process"], "rank 1", "{:#}", w[0]);
    let Some(balanced) = delays_of(Mpi::Open, "balanced", 4, 100) else { return };
    let b = analyze(&balanced.dir, &[]);
    // No rank computes more than the others: nothing worth projecting.
    assert_eq!(b["what_if"].as_array().map(Vec::len), Some(0), "{:#}", b["what_if"]);
    assert_near(
        int(&w[0]["projected_ns"]),
        int(&b["critical_path"]["length_ns"]),
        "the projection against the balanced run",
    );
    let text = text(&analyze_out(&run.dir, &[]).stdout);
    assert!(text.contains("What if a process computed as the median process does"), "{text}");
    // scout.cubex holds the path as Scalasca's critical-path profile: the
    // steps at their activity (computation at the root) and thread,
    // adding up to the path's length.
    let Some(python) = crate::profile::pycubexr() else { return };
    let cube = crate::profile::cube_facts(&python, &run.dir.join("scout.cubex"));
    let stored = cube["stored"]["critical_path"].as_object().unwrap_or_else(|| panic!("{:#}", cube["stored"]));
    let total: f64 = stored.values().flat_map(|row| row.as_array().unwrap()).map(|v| v.as_f64().unwrap()).sum();
    let length = int(&a["critical_path"]["length_ns"]) as f64 / 1e9;
    assert!((total - length).abs() <= 1e-6 * length, "critical_path in the cube {total} s, the path {length} s");
    let locations = cube["locations"].as_array().unwrap();
    let rank1 = locations.iter().position(|l| l["group"] == "rank 1").unwrap();
    let root = stored.keys().find(|k| !k.contains('/')).unwrap();
    let top = &a["critical_path"]["steps"][0];
    assert_eq!(top["process"], "rank 1", "{top:#}");
    let at_root = stored[root][rank1].as_f64().unwrap();
    assert!((at_root - int(&top["time_ns"]) as f64 / 1e9).abs() <= 1e-6, "{at_root} s at the root on rank 1: {top:#}");
}

/// Under MPICH (Hydra) the same program gives the same findings.
#[test]
fn mpich_late_sender_and_barrier_waits_are_found_too() {
    let Some(run) = delays(Mpi::Mpich, "late-sender", 2) else { return };
    let a = analyze(&run.dir, &[]);
    assert_wait(&a, "late_sender", 1, "MPI_Recv", 0, run.realized(0, 1));
    let Some(run) = delays(Mpi::Mpich, "barrier", 3) else { return };
    let a = analyze(&run.dir, &[]);
    for r in 0..2 {
        assert_wait(&a, "wait_at_barrier", r, "MPI_Barrier", 2, run.realized(2, r));
    }
}

#[test]
fn bad_input_and_bad_options_are_one_line_and_exit_2() {
    let missing = scratch().join("no-such-dir");
    let out = analyze_out(&missing, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("gputrace: error: cannot read"), "{err}");
    let empty = fresh_dir("analyze-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = analyze_out(&empty, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("holds no OTF2 archive"), "{}", text(&out.stderr));
    let out = analyze_out(&empty, &["--gap-threshold", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--gap-threshold soon: not a duration"), "{err}");
    let out = analyze_out(&empty, &["--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("[possible values: table, json]"), "{}", text(&out.stderr));
}

/// A straggler with a known cause (`straggler.c`, 3 ranks × 6 iterations
/// of 20 ms in the NVTX range "compute", the last rank 40 ms, then
/// MPI_Allreduce): the last rank is named as entering every all-reduce
/// last, by the 20 ms more it computed (within 10 % of what it slept
/// beyond the others, by the program's own clock), the others waited that
/// for it each (within 10 %), the cause is "compute", and the summary and
/// `analyze` say it in one line.
#[test]
fn the_straggler_is_named_with_its_lateness_and_cause() {
    let Some(headers) = crate::nvtx::headers() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (mpicc, mpirun, _) = openmpi();
    let exe = crate::nvtx::build(mpicc, "straggler.c", &headers);
    let dir = fresh_dir("an-straggler");
    let exe = exe.display().to_string();
    let out = trace(&dir, &[mpirun, "--oversubscribe", "-np", "3", &exe, "6", "20"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let slept: HashMap<i64, i64> = stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("straggler rank ")?;
            let (rank, ns) = rest.split_once(": compute_ns=")?;
            Some((rank.parse().ok()?, ns.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(slept.len(), 3, "{stdout}");
    let extra = slept[&2] - (slept[&0] + slept[&1]) / 2;
    let a = analyze(&dir, &[]);
    let rows = a["stragglers"].as_array().unwrap();
    let top = &rows[0];
    assert_eq!((top["rank"].as_i64(), top["paradigm"].as_str()), (Some(2), Some("MPI")), "{rows:#?}");
    // The barrier before the loop and the 6 all-reduces: rank 2 entered
    // every all-reduce last (and maybe the barrier: it starts last).
    assert_eq!(int(&top["operations"]), 7, "{top:#}");
    assert!((6..=7).contains(&int(&top["times_last"])), "{top:#}");
    let near = |got: i64, want: i64| (got - want).abs() * 10 <= want;
    assert!(near(int(&top["lateness_ns"]), extra), "lateness {} vs {extra} slept beyond: {top:#}", top["lateness_ns"]);
    // Two others waited about `extra` each.
    assert!(near(int(&top["wait_caused_ns"]), 2 * extra), "{top:#}");
    assert_eq!(top["cause"].as_str(), Some("compute"), "{top:#}");
    assert!(near(int(&top["cause_excess_ns"]), extra), "{top:#}");
    // No other rank came last with a cause or more than a few ms in all.
    for r in &rows[1..] {
        assert!(int(&r["lateness_ns"]) < extra / 10, "{r:#}");
    }
    let table = text(&analyze_out(&dir, &[]).stdout);
    let line = format!("Straggler: rank 2 entered {} of 7 MPI collectives on MPI_COMM_WORLD", top["times_last"]);
    assert!(table.contains("Stragglers") && table.contains(&line), "{table}");
    assert!(text(&out.stderr).contains(&format!("analysis: {line}")), "{}", text(&out.stderr));
}
