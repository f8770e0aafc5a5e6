//! The flight recorder (`--flight-recorder`): a job that makes many
//! all-reduces and then hangs (tests/programs/mpi/hang.c) keeps only the
//! last window of each thread — on disk, the older slots are holes — and
//! the archive of that window, written when the watchdog stops the job,
//! still names the collective the ranks wait in by its number since the
//! start, reads balanced in the independent readers, and counts what was
//! given back.

use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// All-reduces before the hang.
const N: u64 = 60_000;
const TIMEOUT_S: u64 = 2;

/// Per rank, with the Python reader: the Enters and Leaves of each
/// location balance (every Leave has its Enter), the number of
/// MPI_Allreduce Leaves, and the last collective number.
fn per_rank(anchor: &std::path::Path, call: &str) -> Vec<(String, i64, i64, i64)> {
    let script = r#"
import sys, otf2
depth, unmatched, calls, last = {}, {}, {}, {}
with otf2.reader.open(sys.argv[1]) as t:
    for loc, ev in t.events:
        g = loc.group.name
        if isinstance(ev, otf2.events.Enter):
            depth[loc] = depth.get(loc, 0) + 1
        elif isinstance(ev, otf2.events.Leave):
            if depth.get(loc, 0) == 0:
                unmatched[g] = unmatched.get(g, 0) + 1
            else:
                depth[loc] -= 1
            if ev.region.name == sys.argv[2]:
                calls[g] = calls.get(g, 0) + 1
        elif isinstance(ev, otf2.events.MpiCollectiveEnd):
            for a, v in (ev.attributes or {}).items():
                if a.name == "GPUTRACE::COLLECTIVE_NUMBER":
                    last[g] = max(last.get(g, -1), v)
for g in sorted(calls):
    print(g, "|", unmatched.get(g, 0), calls[g], last.get(g, -1))
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(anchor).arg(call).output().unwrap();
    assert!(out.status.success(), "Python reader: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (g, rest) = l.split_once(" | ")?;
            let n: Vec<i64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
            Some((g.to_string(), n[0], n[1], n[2]))
        })
        .collect()
}

#[test]
fn a_flight_recorder_keeps_the_last_window_and_names_the_collective_of_the_hang() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "hang.c");
    let dir = fresh_dir("flight-allreduce");
    let mut cmd = Command::new(gputrace());
    // Slots of at most 64 KiB a thread (about 3,000 all-reduces), and a
    // window of 20 ms: the 60,000 all-reduces take 0.3 s in a release build
    // on the 2-core machine (a window of 0.2 s kept most of them), more in
    // a debug build or under load.
    cmd.env("GPUTRACE_TOTAL_MEMORY", "256K");
    cmd.args(["--flight-recorder", "0.02", "--hang-timeout", &TIMEOUT_S.to_string(), "--keep-raw", "-o"]).arg(&dir);
    cmd.args([mpirun, "-n", "4", "--oversubscribe"]).arg(&exe).args(["allreduce", "-n", &N.to_string()]);
    let (stdout, err, after_hang) = run_to_the_hang(&mut cmd);
    assert_eq!(stdout.matches(&format!("collectives={N}")).count(), 4, "{stdout}");
    assert!(err.contains("hang: no MPI or NCCL call recorded and no GPU work ended in any process for"), "{err}");
    // The archive (and the analysis) within the timeout and 10 s of the hang.
    assert!(after_hang < Duration::from_secs(TIMEOUT_S + 10), "took {after_hang:?} after the hang: {err}");
    let given_back: u64 = err
        .lines()
        .find_map(|l| l.split_once("last window; ")?.1.split_once(" older events")?.0.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no flight-recorder line: {err}"));
    assert!(given_back > 0, "{err}");

    // On disk: the raw streams are mostly holes.
    for e in std::fs::read_dir(dir.join("raw")).unwrap() {
        let m = e.unwrap().metadata().unwrap();
        assert!(m.blocks() * 512 < m.len() / 3, "{} of {} bytes on disk", m.blocks() * 512, m.len());
    }

    // The archive: balanced, a part of the calls, numbered from the start.
    let ranks = per_rank(&dir.join("traces.otf2"), "MPI_Allreduce");
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    for (rank, unmatched, calls, last) in &ranks {
        assert_eq!(*unmatched, 0, "{rank}: every Leave has its Enter (calls open at the cut start there)");
        assert!(*calls > 0 && (*calls as u64) < N / 2, "{rank}: {calls} of {N} all-reduces kept");
        assert_eq!(*last, N as i64 - 1, "{rank}: the last all-reduce ended is numbered from the first");
    }
    let counts = otf2_print_counts(&dir.join("traces.otf2"));
    assert!(counts.get("MPI_COLLECTIVE_END").copied().unwrap_or(0) > 0, "{counts:?}");

    let out = run(Command::new(gputrace()).args(["analyze", "--format", "json"]).arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &a["stuck"][0];
    assert_eq!((s["operation"].as_u64(), s["waiting"].as_str()), (Some(N + 1), Some("0-2")), "{s:#}");
    assert_eq!(s["missing"], "3", "{s:#}");
}

/// A rank that crashes (tests/programs/mpi/crash.c: rank 1 writes through
/// a null pointer after 200,000 receives; mpirun then ends rank 0) under a
/// flight recorder: the archive of the last window is written at the
/// rank's death, names the signal, and holds its last receives.
#[test]
fn a_flight_recorder_writes_the_last_window_when_a_rank_dies() {
    const N: u64 = 200_000;
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "crash.c");
    let dir = fresh_dir("flight-crash");
    let mut cmd = Command::new(gputrace());
    cmd.env("GPUTRACE_TOTAL_MEMORY", "256K");
    // A 5 ms window: a release build makes the 200,000 receives in about
    // 80 ms (a 20 ms window kept up to half of them).
    cmd.args(["--flight-recorder", "0.005", "--keep-raw", "-o"]).arg(&dir);
    cmd.args([mpirun, "-np", "2"]).arg(&exe).args(["-n", &N.to_string()]);
    let out = run_within(&mut cmd, Duration::from_secs(120));
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("flight recorder: the archive holds each thread's last window;"), "{err}");
    assert!(err.contains("SIGSEGV"), "the summary names the crash: {err}");
    let ranks = per_rank(&dir.join("traces.otf2"), "MPI_Recv");
    let rank1 = ranks.iter().find(|r| r.0 == "MPI Rank 1").unwrap_or_else(|| panic!("{ranks:?}"));
    assert_eq!(rank1.1, 0, "every Leave has its Enter: {ranks:?}");
    assert!(rank1.2 > 0 && (rank1.2 as u64) < N / 2, "rank 1 keeps its last receives, not all {N}: {ranks:?}");
    for e in std::fs::read_dir(dir.join("raw")).unwrap() {
        let m = e.unwrap().metadata().unwrap();
        assert!(m.blocks() * 512 < m.len() / 3, "{} of {} bytes on disk", m.blocks() * 512, m.len());
    }
}

/// Runs the job (at most 5 minutes): its stdout, its stderr, and the time
/// from the hang (the last rank's "collectives=" line, printed right
/// before it) to gputrace's return.
fn run_to_the_hang(cmd: &mut Command) -> (String, String, Duration) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env_remove("LD_PRELOAD");
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        let (mut all, mut hung, mut seen) = (String::new(), None, 0);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("collectives=") {
                seen += 1;
                if seen == 4 {
                    hung = Some(Instant::now());
                }
            }
            all.push_str(&line);
            all.push('\n');
        }
        (all, hung)
    });
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("still running after 5 minutes: {}", errors.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let end = Instant::now();
    let (out, hung) = lines.join().unwrap();
    let err = errors.join().unwrap();
    let hung = hung.unwrap_or_else(|| panic!("no rank got to the hang: {out}{err}"));
    (out, err, end - hung)
}
