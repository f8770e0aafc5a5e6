//! Many ranks: a synthetic job of 1,024 ranks on 128 simulated nodes, a
//! merge of 512 streams under an open-file limit of 256, and real runs of
//! 128 ranks oversubscribed on this machine with Open MPI and MPICH.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::mpi::assert_sends_match_receives;
use crate::util::*;

/// The two Python readers' facts and `otf2-print`'s counts of an archive,
/// read side by side (each reads every event).
fn read_three_ways(anchor: &Path) -> (Value, Value, std::collections::HashMap<String, usize>) {
    std::thread::scope(|s| {
        let f = s.spawn(|| facts(anchor));
        let order = s.spawn(|| message_order(anchor));
        let printed = s.spawn(|| otf2_print_counts(anchor));
        (f.join().unwrap(), order.join().unwrap(), printed.join().unwrap())
    })
}

/// tests/scripts/message_order.py: sends paired with receives, on the
/// archive's one clock.
fn message_order(anchor: &Path) -> Value {
    let out = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/message_order.py"))
        .arg(anchor)
        .output()
        .unwrap();
    assert!(out.status.success(), "message_order.py: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Messages per (sender, receiver) of a ring where each rank sends `right`
/// messages to its right neighbour and `left` to its left one.
fn ring_pairs(ranks: u32, right: i64, left: i64) -> BTreeMap<(i64, i64), i64> {
    let n = i64::from(ranks);
    let mut pairs = BTreeMap::new();
    for r in 0..n {
        *pairs.entry((r, (r + 1) % n)).or_default() += right;
        *pairs.entry((r, (r + n - 1) % n)).or_default() += left;
    }
    pairs.retain(|_, v| *v > 0);
    pairs
}

/// Every rank once, every location's timestamps in order, every message
/// paired, no receive before its send; the messages per (sender,
/// receiver) as `want`.
fn assert_ring_job(facts: &Value, order: &Value, ranks: u32, want: &BTreeMap<(i64, i64), i64>) {
    let seen: Vec<i64> = facts["ranks"].as_array().unwrap().iter().map(|r| r.as_i64().unwrap()).collect();
    assert_eq!(seen, (0..i64::from(ranks)).collect::<Vec<_>>(), "every rank is a location group");
    assert_well_formed(facts);
    assert_sends_match_receives(facts);
    let mut per_pair: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for m in messages(facts, "sends") {
        *per_pair.entry((m.0, m.1)).or_default() += 1;
    }
    assert_eq!(&per_pair, want, "messages per sender and receiver");
    assert_eq!(order["pairs"].as_i64(), Some(want.values().sum()), "{order}");
    assert_eq!(order["unpaired"], 0, "{order}");
    assert_eq!(order["backwards"], serde_json::json!([]), "receives before their sends: {order}");
}

/// 1,024 ranks, 8 to a node, each node's CLOCK_MONOTONIC seconds to hours
/// from rank 0's and drifting, their CLOCK_REALTIME 20 ms apart: only the
/// clock synchronization the MPI streams recorded at MPI_Init and
/// MPI_Finalize puts every receive after its send (by 5 µs in the job).
#[test]
fn a_synthetic_job_of_1024_ranks_merges_on_one_clock() {
    let steps = 10;
    let (dir, written) = synthetic_job("scale-1024", 1024, steps, (0, 0));
    assert_eq!(written.streams, 2048);
    let started = std::time::Instant::now();
    let out = merge(&dir, false);
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1024 processes (1024 MPI ranks) on 128 hosts, 2048 locations"), "{err}");
    // The offsets were right: the messages' check moved nothing.
    assert!(
        err.contains(
            "clocks: 128 hosts; each of 1,280 messages between them received after its send on the measured clocks"
        ),
        "{err}"
    );
    eprintln!("merge of 1,024 ranks ({} raw events): {took:.2?}", written.events);
    let anchor = dir.join("traces.otf2");
    let (facts, order, printed) = read_three_ways(&anchor);
    assert_ring_job(&facts, &order, 1024, &ring_pairs(1024, steps as i64, 0));
    // No receive less than 3 µs after its send (the job leaves 5 µs; the
    // clock correction rounds to the nanosecond).
    assert!(order["worst_ns"].as_i64().unwrap() < -3000, "{order}");
    for r in 0..1024u32 {
        assert_eq!(order["hosts"][r.to_string()], format!("node{:04}", r / 8), "rank {r}");
        assert_eq!(count(&facts, r, "MpiCollectiveEnd"), 2, "rank {r}: the MPI_Bcast and one MPI_Allreduce");
        assert_eq!(facts["regions"][r.to_string()]["cudaLaunchKernel"], steps, "rank {r}");
    }
    // Each rank's GPU stream is a location of its own CUDA context.
    let mut gpu_groups: Vec<String> = facts["locations"]
        .as_object()
        .unwrap()
        .values()
        .filter(|l| l["rank"].is_null())
        .map(|l| l["group"].as_str().unwrap().to_string())
        .collect();
    gpu_groups.sort();
    let mut want: Vec<String> = (0..1024).map(|r| format!("CUDA Context 1 of rank {r}")).collect();
    want.sort();
    assert_eq!(gpu_groups, want);
    let kernels = &facts["regions"]["None"]["saxpy(int, float, float const*, float*)"];
    assert_eq!(kernels.as_u64(), Some(1024 * steps), "every kernel");
    // Hours between the nodes' clocks, gone: the trace is the job's 110 ms.
    assert!(order["length_ns"].as_u64().unwrap() < 1_000_000_000, "{order}");
    // The OTF2 library's own tool reads the same messages.
    assert_eq!(printed.get("MPI_SEND").copied(), Some(10_240));
    assert_eq!(printed.get("MPI_RECV").copied(), Some(10_240));
}

/// A job whose measured clock offsets are wrong by 8 µs (odd nodes ahead,
/// even ones behind), more than its messages' 5 µs latency: on the
/// measured clocks receives come before their sends. The merge shifts
/// each node's offsets by a constant (written as ClockOffsets, the local
/// timestamps untouched), the least that puts every receive after its
/// send; the shifts stay within the measurements' error.
#[test]
fn wrong_clock_offsets_are_corrected_by_the_messages() {
    let error = 8_000;
    let steps = 50;
    let (dir, _) = synthetic_job("clock-error-offsets", 64, steps, (error, error));
    let raw_dir = dir.join("raw");
    let out = merge(&dir, false);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let line = err.lines().find_map(|l| l.split_once("clocks: ").map(|x| x.1)).unwrap_or_else(|| panic!("{err}"));
    let (before, shift) = clocks_line(line);
    // From odd nodes to even ones 7 ± 2 µs became 7 ± 2 − 16 µs (from node
    // 7 to rank 0's node 7 ± 2 − 8 µs): at least three crossings of four
    // each step went backwards.
    assert!(before >= 3 * steps, "{line}");
    assert!(line.contains("host clocks shifted by up to") && line.ends_with("; 0 now"), "{line}");
    // Within the two ends' errors (and the job's 2 µs jitter).
    assert!(shift > 0 && shift <= 2 * error as u64 + 2_000, "{line}");
    let anchor = dir.join("traces.otf2");
    let (facts, order, _) = read_three_ways(&anchor);
    assert_ring_job(&facts, &order, 64, &ring_pairs(64, steps as i64, 0));
    assert!(order["worst_ns"].as_i64().unwrap() < 0, "{order}");
    // Each rank's offsets, as measured, moved by its node's constant (the
    // measured drift kept), rank 0's node not at all.
    let reader = otf2::reader::TraceReader::open(&anchor).unwrap();
    let offsets = &reader.defs().clock_offsets;
    let mut shifts = vec![None; 8];
    for rank in 0..64u32 {
        let host = format!("node{:04}", rank / 8);
        let path = raw_dir.join(raw::stream_file_name(&host, 4000 + 13 * (rank % 8), raw::Producer::Mpi));
        let stream = raw::RawFile::open(&path).unwrap();
        let measured: Vec<i64> = stream
            .definitions
            .iter()
            .filter_map(|d| if let raw::Definition::ClockSync { offset, .. } = d { Some(*offset) } else { None })
            .collect();
        let written: Vec<i64> = offsets
            .iter()
            .find(|(l, _)| l.id() == u64::from(rank))
            .map(|(_, o)| o.iter().map(|o| o.offset).collect())
            .unwrap_or_else(|| panic!("rank {rank} has no ClockOffsets"));
        assert_eq!(measured.len(), 2, "rank {rank}");
        assert_eq!(written.len(), 2, "rank {rank}");
        let shift = written[0] - measured[0];
        assert_eq!(written[1] - measured[1], shift, "rank {rank}: one constant");
        let node = &mut shifts[(rank / 8) as usize];
        assert_eq!(*node.get_or_insert(shift), shift, "rank {rank}: its node's constant");
    }
    assert_eq!(shifts[0], Some(0), "rank 0's node is the reference");
    // (The summary rounds to 0.1 µs.)
    assert!(shifts.iter().flatten().all(|s| s.unsigned_abs() <= shift + 50), "{shifts:?} {line}");
}

/// The measured offsets wrong by 8 µs one way at MPI_Init and the other
/// way at MPI_Finalize, on two nodes: no constant per node orders every
/// message (the constraints have a positive cycle), so the merge moves the
/// receives instead, each to just after its send, and raises what follows
/// on its location; timestamps still never go back.
#[test]
fn offsets_no_constant_can_fix_move_the_receives() {
    let error = 8_000;
    let steps = 50;
    let (dir, _) = synthetic_job("clock-error-receives", 16, steps, (error, -error));
    let out = merge(&dir, false);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let line = err.lines().find_map(|l| l.split_once("clocks: ").map(|x| x.1)).unwrap_or_else(|| panic!("{err}"));
    let (before, shift) = clocks_line(line);
    assert!(before > 0, "{line}");
    assert!(line.contains("no constant per host orders them") && line.ends_with("; 0 now"), "{line}");
    assert!(shift > 0 && shift <= 2 * error as u64 + 2_000, "{line}");
    let (facts, order, _) = read_three_ways(&dir.join("traces.otf2"));
    assert_ring_job(&facts, &order, 16, &ring_pairs(16, steps as i64, 0));
    assert!(order["worst_ns"].as_i64().unwrap() < 0, "{order}");
}

/// The receives before their send on the measured clocks and the largest
/// shift (ns), from the summary's `clocks:` line.
fn clocks_line(line: &str) -> (u64, u64) {
    let number = |s: &str| -> u64 { s.replace(',', "").parse().unwrap_or_else(|_| panic!("{s:?} in {line}")) };
    let before = line.split("; ").nth(1).and_then(|p| p.split(" of ").next()).map(number).unwrap();
    let up_to = line.split("by up to ").nth(1).and_then(|p| p.split(';').next()).unwrap();
    (before, human_ns(up_to))
}

/// ns of a duration as the summary writes it: `812 ns`, `4.2 µs`, `1.5 ms`.
fn human_ns(s: &str) -> u64 {
    let (n, unit) = s.trim().split_once(' ').unwrap_or_else(|| panic!("{s:?}"));
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("{s:?}"));
    let scale = match unit {
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("{s:?}"),
    };
    (n * scale).round() as u64
}

/// 512 raw streams (256 ranks, an MPI and a CUDA stream each) merged with
/// at most 256 open files: the merge opens a stream's file only while it
/// reads it once more are indexed than a quarter of the limit.
#[test]
fn a_merge_of_512_streams_keeps_under_an_open_file_limit_of_256() {
    let steps = 20;
    let (dir, written) = synthetic_job("nofile", 256, steps, (0, 0));
    assert_eq!(written.streams, 512);
    let script = "ulimit -n 256 && ulimit -n && exec \"$0\" merge \"$1\"";
    let out = run(Command::new("bash").arg("-c").arg(script).arg(gputrace()).arg(&dir));
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(stdout.lines().next(), Some("256"), "the limit was set: {stdout}");
    assert!(out.status.success(), "{err}");
    assert!(err.contains("256 processes (256 MPI ranks) on 32 hosts, 512 locations"), "{err}");
    let (facts, order, _) = read_three_ways(&dir.join("traces.otf2"));
    assert_ring_job(&facts, &order, 256, &ring_pairs(256, steps as i64, 0));
}

/// tests/programs/mpi/neighbours.c with 128 ranks on this machine's
/// cores, traced: every rank, every message, no receive before its send.
fn real_ring(name: &str, mpicc: &str, launcher: &[&str]) {
    let exe = compile(mpicc, "neighbours.c");
    let steps = 10;
    let exp = fresh_dir(name);
    let mut argv = launcher.to_vec();
    let (exe, n) = (exe.to_str().unwrap().to_string(), steps.to_string());
    argv.extend([exe.as_str(), n.as_str()]);
    let mut cmd = Command::new(gputrace());
    cmd.arg("-o").arg(&exp).args(&argv);
    for (k, v) in [
        ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
    ] {
        cmd.env(k, v);
    }
    let started = std::time::Instant::now();
    let out = run_within(&mut cmd, std::time::Duration::from_secs(240));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    eprintln!("{name}: traced run of 128 ranks, merge included: {:.1?}", started.elapsed());
    assert!(err.contains("128 processes (128 MPI ranks) on 1 host"), "{err}");
    let (facts, order, printed) = read_three_ways(&exp.join("traces.otf2"));
    assert_ring_job(&facts, &order, 128, &ring_pairs(128, steps, steps));
    for (r, c) in program_counters(&text(&out.stdout)) {
        assert_eq!(c["errors"], 0, "rank {r}");
        assert_eq!(count(&facts, r, "MpiIsend"), c["sends"], "rank {r}");
        assert_eq!(count(&facts, r, "MpiIrecv"), c["recvs"], "rank {r}");
    }
    assert_eq!(printed.get("MPI_ISEND").copied(), Some(2 * 128 * steps as usize));
}

#[test]
fn open_mpi_128_ranks_oversubscribed() {
    let (mpicc, mpirun, _) = openmpi();
    real_ring("ompi-128", mpicc, &[mpirun, "-np", "128"]);
}

#[test]
fn mpich_128_ranks_oversubscribed() {
    if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
        return;
    }
    real_ring("mpich-128", "mpicc.mpich", &["mpiexec.mpich", "-n", "128"]);
}

/// The same wrong offsets, with the correction's limit of messages
/// between hosts (2 Mi sends and receives by default) lowered to 100 by
/// the test hook: the merge reads no more than that, says that it did not
/// correct, and leaves the measured offsets, so receives stay before
/// their sends.
#[test]
fn beyond_its_limit_the_correction_says_so_and_leaves_the_offsets() {
    let steps = 50;
    let (dir, _) = synthetic_job("clock-error-limit", 64, steps, (8_000, 8_000));
    let out = run(Command::new(gputrace()).env("_GPUTRACE_TEST_CORRECTION_LIMIT", "100").arg("merge").arg(&dir));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "clocks: 8 hosts; more than 100 sends and receives between them: not corrected by the messages, \
             the offsets measured at MPI_Init and MPI_Finalize stand"
        ),
        "{err}"
    );
    let (facts, order, _) = read_three_ways(&dir.join("traces.otf2"));
    assert_sends_match_receives(&facts);
    let want: i64 = ring_pairs(64, steps as i64, 0).values().sum();
    assert_eq!((order["pairs"].as_i64(), order["unpaired"].as_i64()), (Some(want), Some(0)), "{order}");
    assert!(order["worst_ns"].as_i64().unwrap() > 0, "receives before their sends stay: {order}");
}
