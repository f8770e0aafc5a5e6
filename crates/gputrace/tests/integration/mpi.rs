//! Real MPI programs launched with `mpirun` under `gputrace`, their archives
//! read back with `otf2-print` and the Python `otf2` module.

use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Runs `program` with `ranks` ranks traced and untraced; checks that the
/// output is the same, the exit code 0, and the archive well formed with
/// every rank once. Returns (facts, program output).
fn traced_run(name: &str, program: &str, ranks: u32, args: &[&str]) -> (Value, String) {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, program);
    let n = ranks.to_string();
    let mut argv = vec![mpirun, "-np", &n, exe.to_str().unwrap()];
    argv.extend_from_slice(args);
    let plain = run(Command::new(argv[0]).args(&argv[1..]));
    assert!(plain.status.success(), "{program} failed untraced: {}", text(&plain.stderr));
    let dir = fresh_dir(name);
    let traced = trace(&dir, &argv, &[]);
    assert_eq!(traced.status.code(), Some(0), "gputrace failed: {}", text(&traced.stderr));
    assert_eq!(text(&traced.stdout), text(&plain.stdout), "the traced program's stdout changed");
    let stderr = text(&traced.stderr);
    assert!(stderr.contains("[gputrace] archive:"), "no summary: {stderr}");
    let anchor = dir.join("traces.otf2");
    let facts = facts(&anchor);
    let ranks_seen: Vec<i64> = facts["ranks"].as_array().unwrap().iter().map(|r| r.as_i64().unwrap()).collect();
    assert_eq!(ranks_seen, (0..i64::from(ranks)).collect::<Vec<_>>(), "every rank once");
    assert_well_formed(&facts);
    // The second, independent reader sees the same number of events.
    let printed = otf2_print_counts(&anchor);
    let python_sends: i64 = (0..ranks).map(|r| count(&facts, r, "MpiSend")).sum();
    assert_eq!(printed.get("MPI_SEND").copied().unwrap_or(0) as i64, python_sends, "otf2-print and Python disagree");
    // The summary's event count is the archive's.
    let read: u64 = facts["locations"].as_object().unwrap().values().map(|l| l["events"].as_u64().unwrap()).sum();
    let said = stderr.split(" locations, ").nth(1).and_then(|r| r.split(" events").next()).unwrap_or_default();
    assert_eq!(said.replace(',', ""), read.to_string(), "the summary's event count\n{stderr}");
    (facts, text(&traced.stdout))
}

/// Every send has exactly one receive with the same sender, receiver,
/// communicator, tag and size.
pub(crate) fn assert_sends_match_receives(facts: &Value) {
    let sends = messages(facts, "sends");
    let recvs = messages(facts, "recvs");
    assert!(!sends.is_empty());
    assert_eq!(sends, recvs, "sends and receives do not pair up");
}

fn p2p(ranks: u32) {
    let (facts, out) = traced_run("p2p", "p2p.c", ranks, &["-n", "3"]);
    let truth = program_counters(&out);
    assert_eq!(truth.len(), ranks as usize, "{out}");
    for r in 0..ranks {
        let t = &truth[&r];
        assert_eq!(t["errors"], 0);
        let sends = count(&facts, r, "MpiSend") + count(&facts, r, "MpiIsend");
        let recvs = count(&facts, r, "MpiRecv") + count(&facts, r, "MpiIrecv");
        assert_eq!(sends, t["sends"], "rank {r} sends");
        assert_eq!(recvs, t["recvs"], "rank {r} receives");
        let bytes: i64 = messages(&facts, "sends").iter().filter(|m| m.0 == i64::from(r)).map(|m| m.4).sum();
        assert_eq!(bytes, t["bytes_sent"], "rank {r} bytes sent");
    }
    // ANY_SOURCE receives carry the true sender: with the program's
    // receives all matched to sends, none names a wrong or unknown rank.
    assert!(facts["recvs"].as_array().unwrap().iter().all(|m| m[1].as_i64().is_some_and(|s| s >= 0)));
    assert_sends_match_receives(&facts);
}

#[test]
fn p2p_on_2_ranks() {
    p2p(2);
}

#[test]
fn p2p_on_4_ranks() {
    p2p(4);
}

fn nonblocking(ranks: u32) {
    let (facts, out) = traced_run("nonblocking", "nonblocking.c", ranks, &["-n", "3"]);
    let truth = program_counters(&out);
    for r in 0..ranks {
        let t = &truth[&r];
        // Every MPI_Start of a persistent request is a send or receive too.
        let isends = t["isends"] + t["persistent_sends"];
        let irecvs = t["irecvs"] + t["persistent_recvs"];
        assert_eq!(count(&facts, r, "MpiIsend"), isends, "rank {r} isends");
        assert_eq!(count(&facts, r, "MpiIrecv"), irecvs, "rank {r} irecvs");
        assert_eq!(count(&facts, r, "MpiIsendComplete"), isends, "every isend completes");
    }
    assert_sends_match_receives(&facts);
}

#[test]
fn nonblocking_on_2_ranks() {
    nonblocking(2);
}

#[test]
fn nonblocking_on_4_ranks() {
    nonblocking(4);
}

fn collectives(ranks: u32) {
    let (facts, out) = traced_run("collectives", "collectives.c", ranks, &["-n", "2"]);
    let truth = program_counters(&out);
    let colls = facts["collectives"].as_array().unwrap();
    for r in 0..ranks {
        let t = &truth[&r];
        let mine = colls.iter().filter(|c| c[0].as_i64() == Some(i64::from(r))).count() as i64;
        // ... and the MPI_Gather that prints the summary.
        assert_eq!(mine, t["blocking"] + t["nonblocking"] + 1, "rank {r} collectives");
    }
    let rooted = ["BCAST", "REDUCE", "GATHER", "GATHERV", "SCATTER", "SCATTERV"];
    for c in colls {
        let op = c[1].as_str().unwrap();
        let root = &c[3];
        if rooted.contains(&op) {
            let root = root.as_i64().unwrap_or_else(|| panic!("{op} without root: {c}"));
            assert!((0..i64::from(ranks)).contains(&root), "{c}");
        } else {
            assert!(root.is_null(), "{op} has a root: {c}");
        }
    }
    // What ranks send in a collective, ranks receive: per communicator
    // and operation, bytes sent and received add up to the same.
    let mut sums: std::collections::BTreeMap<(String, String), (i64, i64)> = Default::default();
    for c in colls {
        let e = sums.entry((c[2].as_str().unwrap().into(), c[1].as_str().unwrap().into())).or_default();
        e.0 += c[4].as_i64().unwrap();
        e.1 += c[5].as_i64().unwrap();
    }
    let bcast = sums.iter().find(|((comm, op), _)| comm == "MPI_COMM_WORLD" && op == "BCAST").unwrap();
    assert!(bcast.1.0 > 0 && bcast.1.0 == bcast.1.1, "bcast bytes: {bcast:?}");
    for ((comm, op), (sent, received)) in &sums {
        if matches!(op.as_str(), "BCAST" | "REDUCE" | "GATHER" | "SCATTER" | "ALLGATHER" | "ALLTOALL" | "BARRIER") {
            assert_eq!(sent, received, "{op} on {comm}: sent {sent}, received {received}");
        }
    }
}

#[test]
fn collectives_on_4_ranks() {
    collectives(4);
}

#[test]
fn collectives_on_2_ranks() {
    collectives(2);
}

#[test]
fn threads_are_locations_of_their_rank() {
    let (facts, _) = traced_run("threads", "threads.c", 2, &["-n", "3"]);
    for r in 0..2 {
        let locs = facts["locations"].as_object().unwrap().values().filter(|l| l["rank"].as_i64() == Some(r)).count();
        assert!(locs >= 5, "rank {r} has {locs} locations; the main thread and 4 workers call MPI");
    }
    assert_sends_match_receives(&facts);
}

#[test]
fn fortran_programs_are_traced() {
    let (_, _, mpif90) = openmpi();
    if !required(mpif90, have(mpif90)) {
        return;
    }
    for source in ["fortran.f90", "fortran_usempi.f90"] {
        let exe = compile(mpif90, source);
        let dir = fresh_dir("fortran");
        let out = trace(&dir, &[openmpi().1, "-np", "2", exe.to_str().unwrap()], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let facts = facts(&dir.join("traces.otf2"));
        assert_well_formed(&facts);
        let regions = &facts["regions"]["0"];
        assert!(
            regions["MPI_Send"].as_i64().unwrap_or(0) > 0 || regions["MPI_Sendrecv"].as_i64().unwrap_or(0) > 0,
            "{source}: {regions}"
        );
        assert!(regions["MPI_Allreduce"].as_i64().unwrap_or(0) > 0, "{source}: {regions}");
        assert_sends_match_receives(&facts);
    }
}

#[test]
fn mpich_programs_are_traced_through_hydra() {
    if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
        return;
    }
    let exe = compile("mpicc.mpich", "p2p.c");
    let dir = fresh_dir("mpich");
    let out = trace(&dir, &["mpiexec.mpich", "-n", "2", exe.to_str().unwrap(), "-n", "2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let truth = program_counters(&text(&out.stdout));
    let facts = facts(&dir.join("traces.otf2"));
    assert_well_formed(&facts);
    for r in 0..2 {
        let sends = count(&facts, r, "MpiSend") + count(&facts, r, "MpiIsend");
        assert_eq!(sends, truth[&r]["sends"]);
    }
    assert_sends_match_receives(&facts);
}

#[test]
fn communicators_carry_the_names_the_program_gave_them() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "comms.c");
    let dir = fresh_dir("comms");
    let out = trace(&dir, &[mpirun, "-np", "4", exe.to_str().unwrap(), "-n", "3"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let facts = facts_of(&dir);
    assert_well_formed(&facts);
    assert_sends_match_receives(&facts);
    let comms: Vec<&str> = facts["comms"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
    for name in ["MPI_COMM_WORLD", "MPI_COMM_SELF", "ring", "even ranks", "odd ranks"] {
        assert!(comms.contains(&name), "{name} missing from {comms:?}");
    }
    // The ring on the named duplicate: one message to the right neighbour
    // per iteration and rank.
    let ring = messages(&facts, "sends").into_iter().filter(|m| m.2 == "ring").count();
    assert_eq!(ring, 4 * 3);
}

#[test]
fn a_rank_exiting_with_3_makes_gputrace_exit_3_after_merging() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "exit3.c");
    let dir = fresh_dir("exit3");
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "4"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let facts = facts(&dir.join("traces.otf2"));
    assert_eq!(facts["ranks"], serde_json::json!([0, 1]));
    assert_eq!(count(&facts, 1, "MpiRecv"), 4, "rank 1's messages before it exited are kept");
    // Rank 0 is stopped by mpirun (SIGTERM) as soon as rank 1 exits, while
    // its last events are still in its buffer: they are written before it
    // dies, and the summary says what ended it.
    assert_eq!(count(&facts, 0, "MpiSend"), 4, "rank 0's buffered events survive its SIGTERM");
    assert_eq!(facts["regions"]["0"]["MPI_Barrier"], 1, "rank 0 left its barrier before it was stopped");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("ending: rank 0") && stderr.contains("ended by SIGTERM"), "{stderr}");
    assert_well_formed(&facts);
}

#[test]
fn a_killed_rank_leaves_the_others_and_its_written_chunks() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "killself.c");
    let dir = fresh_dir("killself");
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "5"], &[]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("ending: rank 1 (pid") && stderr.contains("stopped without closing its trace"), "{stderr}");
    let facts = facts(&dir.join("traces.otf2"));
    assert_eq!(facts["ranks"], serde_json::json!([0, 1]));
    // Rank 1's events are in the file the moment they are recorded: all 6
    // receives it completed survive its SIGKILL, the last one included.
    assert_eq!(count(&facts, 1, "MpiRecv"), 6, "rank 1's recorded events survive");
    assert_eq!(count(&facts, 0, "MpiSend"), 6, "rank 0's trace is complete");
    assert_well_formed(&facts);
}

#[test]
fn a_crashing_rank_keeps_what_it_recorded() {
    // Open MPI and UCX (under MPICH) install crash handlers that print a
    // backtrace; the tracer's last flush runs in front of them, and they
    // still run.
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "crash.c");
    let dir = fresh_dir("crash");
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "7"], &[]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Segmentation fault"), "Open MPI's own crash report is still printed: {stderr}");
    assert!(stderr.contains("SIGSEGV") && stderr.contains("SIGTERM"), "{stderr}");
    let facts = facts_of(&dir);
    assert_eq!(count(&facts, 1, "MpiRecv"), 7, "rank 1's receives, still buffered at the crash, survive");
    assert_eq!(count(&facts, 0, "MpiSend"), 7, "rank 0, stopped by mpirun, keeps its sends");
    assert_well_formed(&facts);

    if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
        return;
    }
    let exe = compile("mpicc.mpich", "crash.c");
    let dir = fresh_dir("crash-mpich");
    let out = trace(&dir, &["mpiexec.mpich", "-n", "2", exe.to_str().unwrap(), "-n", "7"], &[]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("SIGSEGV"), "{stderr}");
    let mpich = facts_of(&dir);
    // Hydra ends rank 0 with SIGKILL, which nothing survives; rank 1's
    // events are what this part checks.
    assert_eq!(count(&mpich, 1, "MpiRecv"), 7, "rank 1's receives survive its crash under MPICH");
    assert_well_formed(&mpich);
}

fn facts_of(dir: &std::path::Path) -> serde_json::Value {
    facts(&dir.join("traces.otf2"))
}

/// The 8-rank halo exchange of the 8-GPU test (tests/gpu/programs/halo.cpp),
/// built without CUDA: one archive with 8 ranks and every halo message.
#[test]
fn eight_ranks_exchange_halos() {
    let mpicxx = if have("mpicxx.openmpi") { "mpicxx.openmpi" } else { "mpicxx" };
    let exe = scratch().join("halo-cpu");
    let src = workspace().join("tests/gpu/programs/halo.cpp");
    let built = Command::new(mpicxx).arg("-O2").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
    let dir = fresh_dir("halo8");
    let out = trace(&dir, &[openmpi().1, "-np", "8", exe.to_str().unwrap(), "10"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let facts = facts(&dir.join("traces.otf2"));
    assert_eq!(facts["ranks"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    assert_well_formed(&facts);
    let stdout = text(&out.stdout);
    for r in 0..8u32 {
        let expect = format!("expect rank {r} messages 20");
        assert!(stdout.contains(&expect), "{stdout}");
        assert_eq!(count(&facts, r, "MpiIsend"), 20, "rank {r}");
        assert_eq!(count(&facts, r, "MpiIrecv"), 20, "rank {r}");
    }
    assert_sends_match_receives(&facts);
}

/// The bundled MPI example's archive follows Score-P's conventions, or
/// docs/otf2-mapping.md says why not (tests/scripts/scorep_conventions.py
/// with the Python reader); a new difference fails here.
#[test]
fn archives_follow_score_p_conventions() {
    let (mpicc, mpirun, _) = openmpi();
    let dir = fresh_dir("scorep-conventions");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("mpi_ring");
    let src = workspace().join("examples/mpi_ring.c");
    let built = Command::new(mpicc).arg("-O1").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
    let exp = dir.join("exp");
    let out = trace(&exp, &[mpirun, "-np", "3", exe.to_str().unwrap(), "7"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let check = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/scorep_conventions.py"))
        .arg(exp.join("traces.otf2"))
        .arg(workspace().join("docs/otf2-mapping.md"))
        .output()
        .unwrap();
    let report = text(&check.stdout);
    assert!(check.status.success() && !report.contains("FAIL"), "{report}{}", text(&check.stderr));
    for id in ["machine-root", "location-ids", "mpi-regions", "program-begin-end", "trace-properties"] {
        assert!(report.contains(&format!("ok   {id}: as Score-P")), "{id}\n{report}");
    }
    assert!(report.contains("ok   process-x-threads: differs, documented"), "{report}");
}

/// Ranks as if on separate nodes (tests/scripts/as_node.sh: Linux UTS,
/// mount and time namespaces): 4 nodes x 2 ranks, each node with its own
/// host name, boot id and a CLOCK_MONOTONIC 7 s x node ahead. After the
/// merge every process names its own host, every message is paired, the
/// seconds between the clocks are gone, and no receive comes before its
/// send by more than the clock measurement's error (half the best round
/// trip at each end: microseconds here when the machine is quiet, up to
/// about a millisecond when the whole suite runs beside it).
///
/// Where the TSC is usable, the processes of a node read it through the
/// node's own map, calibrated inside the node's time namespace by its
/// first process and published in the experiment directory: one map file
/// per node, and both ranks of a node with the identical map.
#[test]
fn simulated_nodes_share_one_clock() {
    let can = Command::new("unshare")
        .args(["--uts", "--mount", "--time", "--fork", "--monotonic", "1", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !required("unshare with time namespaces (root, Linux 5.6+)", can) {
        return;
    }
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let dir = fresh_dir("simulated-nodes");
    std::fs::create_dir_all(&dir).unwrap();
    let node = workspace().join("tests/scripts/as_node.sh");
    let exp = dir.join("exp");
    let out = trace(
        &exp,
        &[mpirun, "-np", "8", node.to_str().unwrap(), exe.to_str().unwrap(), "-n", "2"],
        &[("NODE_DIR", dir.to_str().unwrap()), ("RANKS_PER_NODE", "2"), ("NODE_SECONDS", "7"), KEEP_RAW],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("8 processes (8 MPI ranks) on 4 hosts"), "{err}");
    assert!(!err.contains("TSC map"), "no map file was refused: {err}");
    if tsc_usable() {
        assert_eq!(timer_property(&exp.join("traces.otf2")), "tsc", "the nodes' processes read the TSC");
        let raw_dir = exp.join("raw");
        // One map per node: tagged with the node's clock domain.
        let mut map_hz = std::collections::BTreeSet::new();
        let mut domains = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&raw_dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".gtr") {
                continue;
            }
            assert!(name.starts_with("timer-") && name.ends_with(".tsc"), "{name} in raw/");
            let line = std::fs::read_to_string(raw_dir.join(&name)).unwrap();
            let words: Vec<&str> = line.trim_end().split(' ').collect();
            assert_eq!((words.len(), words[0], words[1]), (6, "gputrace-tsc-map", "1"), "{name}: {line}");
            assert_eq!(format!("timer-{}.tsc", words[2]), name, "the file is named by its domain");
            domains.insert(words[2].to_string());
            let mult: u128 = words[5].parse().unwrap();
            map_hz.insert(((1u128 << 32) * 1_000_000_000 / mult) as u64);
        }
        assert_eq!(domains.len(), 4, "a map per node: {domains:?}");
        // Each rank read its node's map: the same frequency for both ranks
        // of a node, and one of the published maps'.
        let mut hz_of_host: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
        for entry in std::fs::read_dir(&raw_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "gtr") {
                continue;
            }
            let stream = raw::RawFile::open(&path).unwrap();
            let timer = stream.definitions.iter().find_map(|d| match d {
                raw::Definition::Timer(t) => Some(*t),
                _ => None,
            });
            let Some(gputrace_clock::Timer::Tsc { hz, source: gputrace_clock::MapSource::HostFile }) = timer else {
                panic!("{}: {timer:?}, not the node's map", path.display());
            };
            assert!(map_hz.contains(&hz), "{}: {hz} Hz is no published map's ({map_hz:?})", path.display());
            hz_of_host.entry(stream.header.host.clone()).or_default().push(hz);
        }
        assert_eq!(hz_of_host.len(), 4, "{hz_of_host:?}");
        for (host, hz) in &hz_of_host {
            assert!(hz.len() == 2 && hz[0] == hz[1], "{host}: its ranks read different maps: {hz:?}");
        }
    }
    let check = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/message_order.py"))
        .arg(exp.join("traces.otf2"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
    let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    for r in 0..8 {
        assert_eq!(v["hosts"][r.to_string()], format!("simnode{}", r / 2), "rank {r}: {v}");
    }
    assert!(v["pairs"].as_u64().unwrap() > 0 && v["unpaired"] == 0, "{v}");
    // 21 s between the first and the last node's clocks, gone.
    assert!(v["length_ns"].as_u64().unwrap() < 5_000_000_000, "{v}");
    // No receive before its send by more than the two ends' clock errors
    // (half the best round trip each, as the archive's ClockOffsets say):
    // under load the round trips, and so the errors, grow.
    let reader = otf2::reader::TraceReader::open(&exp.join("traces.otf2")).unwrap();
    let offsets = &reader.defs().clock_offsets;
    assert!(!offsets.is_empty(), "the other nodes' clocks were measured");
    let error = offsets.values().flatten().map(|o| o.standard_deviation).fold(0.0, f64::max);
    let worst = v["worst_ns"].as_i64().unwrap();
    assert!(
        (worst as f64) <= 2.0 * error + 1000.0,
        "a receive {worst} ns before its send, clock error {error} ns: {v}"
    );
    // And after the merge's message-based correction (docs/mpi.md, "Clock
    // synchronization"), no receive before its send at all.
    assert_eq!(v["backwards"], serde_json::json!([]), "a receive before its send: {v}");
    assert!(worst <= 0, "a receive {worst} ns before its send: {v}");
    let clocks = err.lines().find(|l| l.contains("clocks: 4 hosts; ")).unwrap_or_else(|| panic!("{err}"));
    eprintln!("simulated nodes: {clocks}");
    assert!(clocks.ends_with("on the measured clocks") || clocks.ends_with("; 0 now"), "{clocks}");
    // The program's own checks passed on every rank.
    for (r, c) in program_counters(&text(&out.stdout)) {
        assert_eq!(c["errors"], 0, "rank {r}");
    }
}

/// Whether the TSC can stand in for CLOCK_MONOTONIC here (x86-64, an
/// invariant TSC the kernel keeps as a clock source), read as the tests'
/// own check of what gputrace_clock decides.
fn tsc_usable() -> bool {
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let sources = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/available_clocksource")
        .unwrap_or_default();
    cfg!(target_arch = "x86_64")
        && flags.split_whitespace().any(|f| f == "constant_tsc")
        && flags.split_whitespace().any(|f| f == "nonstop_tsc")
        && sources.split_whitespace().any(|c| c == "tsc")
}

/// The archive's `GPUTRACE::TIMER` property, as `otf2-print` shows it.
fn timer_property(anchor: &std::path::Path) -> String {
    let out = Command::new("otf2-print").arg("--show-info").arg(anchor).output().unwrap();
    assert!(out.status.success(), "otf2-print failed: {}", text(&out.stderr));
    let info = text(&out.stdout);
    let mut lines = info.lines().skip_while(|l| !(l.starts_with("Property name") && l.ends_with("GPUTRACE::TIMER")));
    lines.nth(1).and_then(|l| l.strip_prefix("Property value")).map(|v| v.trim().to_string()).unwrap_or_default()
}

#[test]
fn the_timer_is_chosen_and_named_in_the_archive() {
    // Where the TSC can stand in for CLOCK_MONOTONIC (x86-64, invariant
    // TSC the kernel keeps as a clock source) it is the default; every
    // rank reads the map gputrace calibrated, so messages stay in order
    // on one host without any correction.
    let usable = tsc_usable();
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    for (option, want) in
        [(None, if usable { "tsc" } else { "clock_gettime" }), (Some("clock_gettime"), "clock_gettime")]
    {
        let dir = fresh_dir(&format!("timer-{}", option.unwrap_or("default")));
        let mut args = Vec::new();
        if let Some(t) = option {
            args.extend(["--timer", t]);
        }
        args.extend([mpirun, "-np", "4", exe.to_str().unwrap(), "-n", "20"]);
        let out = trace(&dir, &args, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let anchor = dir.join("traces.otf2");
        assert_eq!(timer_property(&anchor), want, "{option:?}");
        let check = Command::new("/usr/bin/python3")
            .arg(workspace().join("tests/scripts/message_order.py"))
            .arg(&anchor)
            .output()
            .unwrap();
        assert!(check.status.success(), "{}", text(&check.stderr));
        let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        assert!(v["pairs"].as_u64().unwrap() > 0 && v["unpaired"] == 0, "{v}");
        assert_eq!(v["backwards"].as_array().map(Vec::len), Some(0), "a receive before its send ({want}): {v}");
    }
    // A timer that does not exist: one line, nothing run.
    let dir = fresh_dir("timer-bad");
    let out = trace(&dir, &["--timer", "hpet", "true"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("GPUTRACE_TIMER=hpet") && err.contains("tsc"), "{err}");
    assert!(!dir.exists(), "an experiment directory for a refused run");
}

/// A trace of more than the summary reads back (100,000 events): the
/// summary comes from the merge's counters alone, its figures the
/// archive's as the Python reader counts them, and one line names the
/// commands that read the archive.
#[test]
fn a_large_trace_is_summarized_from_the_merge_alone() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("bench/programs/self_sendrecv.c"));
    let dir = fresh_dir("summary-large");
    // 1,000 warm-up iterations and 20,000 timed: 42,000 calls, 3 events each.
    let traced = trace(&dir, &[mpirun, "-np", "1", exe.to_str().unwrap(), "-n", "20000"], &[]);
    assert_eq!(traced.status.code(), Some(0), "{}", text(&traced.stderr));
    let stderr = text(&traced.stderr);
    let facts = facts(&dir.join("traces.otf2"));
    let events: u64 = facts["locations"].as_object().unwrap().values().map(|l| l["events"].as_u64().unwrap()).sum();
    assert!(events > 100_000, "{events} events");
    let thousands = |n: u64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    assert!(stderr.contains(&format!("1 locations, {} events", thousands(events))), "{stderr}");
    let line =
        stderr.lines().find(|l| l.contains("stats and analysis: not read back")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains(&format!("for {} events (more than 100,000)", thousands(events))), "{line}");
    assert!(line.contains("gputrace stats --short ") && line.contains("gputrace analyze "), "{line}");
    assert!(!stderr.contains("** MPI Summary (mpi_sum)"), "the archive was read back: {stderr}");
    // The merge's table: calls per function, as the archive has them.
    for name in ["MPI_Send", "MPI_Recv"] {
        let calls = facts["regions"]["0"][name].as_u64().unwrap();
        assert_eq!(calls, 21_000, "{name}");
        let row = stderr.lines().find(|l| l.trim_start_matches("[gputrace]").trim_start().starts_with(name)).unwrap();
        let said: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(said[2], thousands(calls), "{row}");
    }
    let sends = count(&facts, 0, "MpiSend") as u64;
    assert!(stderr.contains(&format!("messages: {} point-to-point", thousands(sends))), "{stderr}");
    // summary.txt holds what was printed.
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    let printed: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("[gputrace] ")).collect();
    for l in summary.lines().filter(|l| !l.is_empty()) {
        assert!(printed.contains(&l), "{l} not printed");
    }
}
