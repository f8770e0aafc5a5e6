//! A job that hangs on purpose (tests/programs/mpi/hang.c) under
//! `gputrace --hang-timeout`: the watchdog stops it within the timeout
//! and a few seconds, the archive holds what was recorded, the calls in
//! flight are marked (`GPUTRACE::IN_FLIGHT`, read by the Python reader
//! and otf2-print), and the summary and `gputrace analyze` name the ranks,
//! the call and the collective's number.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// The watchdog's timeout in these runs.
const TIMEOUT_S: u64 = 2;

struct Hung {
    dir: std::path::PathBuf,
    stderr: String,
    wall: Duration,
}

/// `gputrace --hang-timeout 2 LAUNCHER -n 4 hang MODE` with Open MPI or
/// MPICH; `None` where MPICH is missing (outside CI).
fn hang(mpich: bool, mode: &str) -> Option<Hung> {
    let (exe, launcher) = if mpich {
        if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
            return None;
        }
        (compile("mpicc.mpich", "hang.c"), "mpiexec.mpich")
    } else {
        let (mpicc, mpirun, _) = openmpi();
        (compile(mpicc, "hang.c"), mpirun)
    };
    let dir = fresh_dir(&format!("hang-{mode}-{}", if mpich { "mpich" } else { "ompi" }));
    let mut cmd = Command::new(gputrace());
    cmd.arg("--hang-timeout").arg(TIMEOUT_S.to_string()).arg("-o").arg(&dir);
    cmd.args([launcher, "-n", "4"]);
    if !mpich {
        cmd.arg("--oversubscribe");
    }
    cmd.arg(&exe).arg(mode);
    let start = Instant::now();
    // Never a hang of the test: the watchdog must have stopped the job.
    let out = run_within(&mut cmd, Duration::from_secs(120));
    let wall = start.elapsed();
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("collectives=5").count(), 4, "every rank got to the hang: {stdout}");
    Some(Hung { dir, stderr: text(&out.stderr), wall })
}

fn analyze(dir: &Path) -> Value {
    let out = run(Command::new(gputrace()).args(["analyze", "--format", "json"]).arg(dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Leave events the Python reader finds marked in flight: (rank, region).
fn marked_in_flight(anchor: &Path) -> Vec<(String, String)> {
    let script = r#"
import sys, otf2
with otf2.reader.open(sys.argv[1]) as t:
    for loc, ev in t.events:
        if isinstance(ev, otf2.events.Leave):
            for a in (ev.attributes or {}):
                if a.name == "GPUTRACE::IN_FLIGHT":
                    print(loc.group.name, "|", ev.region.name)
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(anchor).output().unwrap();
    assert!(out.status.success(), "Python reader: {}", text(&out.stderr));
    let mut v: Vec<(String, String)> = text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(" | ").map(|(a, b)| (a.to_string(), b.to_string())))
        .collect();
    v.sort();
    v
}

fn check_allreduce(h: &Hung) {
    let err = &h.stderr;
    assert!(err.contains("hang: no MPI or NCCL call recorded and no GPU work ended in any process for"), "{err}");
    // Start-up (MPI_Init under load) plus the timeout plus the stop: within
    // the timeout and 10 s of the last call.
    assert!(h.wall < Duration::from_secs(TIMEOUT_S + 30), "took {:?}: {err}", h.wall);
    assert!(
        err.contains(
            "Stuck: ranks 0-2 wait in MPI_Allreduce, collective #6 on MPI MPI_COMM_WORLD (4 ranks: 0-3); rank 3 never entered it"
        ),
        "{err}"
    );
    let anchor = h.dir.join("traces.otf2");
    let want: Vec<(String, String)> = (0..3).map(|r| (format!("MPI Rank {r}"), "MPI_Allreduce".to_string())).collect();
    assert_eq!(marked_in_flight(&anchor), want);
    let counts = otf2_print_counts(&anchor);
    assert!(counts.get("LEAVE").copied().unwrap_or(0) > 0, "{counts:?}");
    let a = analyze(&h.dir);
    let flights = a["in_flight"].as_array().unwrap();
    let mut ranks: Vec<i64> = flights.iter().map(|f| f["rank"].as_i64().unwrap()).collect();
    ranks.sort();
    assert_eq!(ranks, vec![0, 1, 2], "{:#}", a["in_flight"]);
    assert!(flights.iter().all(|f| f["call"] == "MPI_Allreduce"), "{:#}", a["in_flight"]);
    let stuck = &a["stuck"][0];
    assert_eq!((stuck["operation"].as_i64(), stuck["waiting"].as_str()), (Some(6), Some("0-2")), "{stuck:#}");
    assert_eq!(stuck["missing"], "3", "{stuck:#}");
}

#[test]
fn a_rank_that_never_enters_the_allreduce_is_named_with_its_number() {
    let Some(h) = hang(false, "allreduce") else { return };
    check_allreduce(&h);
    // The calls in flight last until the job was stopped (this host's
    // processes): the watchdog's timeout at least.
    let a = analyze(&h.dir);
    let longest = a["in_flight"][0]["for_ns"].as_u64().unwrap();
    assert!(longest >= TIMEOUT_S * 1_000_000_000, "in flight for {longest} ns: {:#}", a["in_flight"]);
    let text_out = text(&run(Command::new(gputrace()).arg("analyze").arg(&h.dir)).stdout);
    assert!(text_out.contains("In flight when the recording ended"), "{text_out}");
}

#[test]
fn mpich_jobs_are_stopped_and_named_too() {
    let Some(h) = hang(true, "allreduce") else { return };
    check_allreduce(&h);
}

#[test]
fn a_receive_that_never_completes_keeps_the_others_in_the_barrier() {
    let Some(h) = hang(false, "recv") else { return };
    let a = analyze(&h.dir);
    let calls: Vec<(i64, String)> = a["in_flight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rank"].as_i64().unwrap(), f["call"].as_str().unwrap().to_string()))
        .collect();
    for r in [0, 2, 3] {
        assert!(calls.contains(&(r, "MPI_Barrier".into())), "{calls:?}");
    }
    assert!(calls.contains(&(1, "MPI_Recv".into())), "{calls:?}");
    let stuck = &a["stuck"][0];
    assert_eq!((stuck["operation"].as_i64(), stuck["missing"].as_str()), (Some(6), Some("1")), "{stuck:#}");
    assert!(h.stderr.contains("rank 1 never entered it (rank 1: MPI_Recv)"), "{}", h.stderr);
}

#[test]
fn a_job_that_finishes_is_not_stopped_and_has_nothing_in_flight() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "delays.c");
    let dir = fresh_dir("hang-none");
    let mut cmd = Command::new(gputrace());
    cmd.args(["--hang-timeout", "5", "-o"]).arg(&dir).args([mpirun, "-n", "2"]).arg(&exe).args(["barrier", "-d", "1"]);
    let out = run_within(&mut cmd, Duration::from_secs(120));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("hang:"), "{}", text(&out.stderr));
    let a = analyze(&dir);
    assert_eq!(a["in_flight"].as_array().map(Vec::len), Some(0), "{:#}", a["in_flight"]);
    assert_eq!(a["stuck"].as_array().map(Vec::len), Some(0));
}

/// Waits (at most 60 s) for `path` to exist.
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no {} after 60 s", path.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_snapshot_lets_the_job_run_on_and_sigusr1_takes_another() {
    use std::process::Stdio;
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "hang.c");
    let dir = fresh_dir("hang-snapshot");
    let mut child = Command::new(gputrace())
        .args(["--hang-timeout", &TIMEOUT_S.to_string(), "--on-hang", "snapshot", "-o"])
        .arg(&dir)
        .args([mpirun, "-n", "4", "--oversubscribe"])
        .arg(&exe)
        .arg("allreduce")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let first = dir.join("snapshot-1");
    // The summary is written after the archive: the snapshot is whole.
    wait_for(&first.join("summary.txt"));
    // The job runs on; SIGUSR1 takes another snapshot, not a signal for it.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill has no memory-safety preconditions; our child's pid.
    unsafe { libc::kill(pid, libc::SIGUSR1) };
    let second = dir.join("snapshot-2");
    wait_for(&second.join("summary.txt"));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = run_within_wait(&mut child);
    let err = text(&out.stderr);
    assert!(err.contains("writing a snapshot, the job runs on"), "{err}");
    assert!(err.contains("snapshot 2 (SIGUSR1)"), "{err}");
    let (a1, a2, end) = (analyze(&first), analyze(&second), analyze(&dir));
    for a in [&a1, &a2, &end] {
        assert_eq!((a["stuck"][0]["operation"].as_i64(), a["stuck"][0]["missing"].as_str()), (Some(6), Some("3")));
    }
    // The calls in flight ran on between the snapshots.
    let longest = |a: &Value| a["in_flight"][0]["for_ns"].as_u64().unwrap();
    assert!(longest(&a2) > longest(&a1) + 400_000_000, "{} then {}", longest(&a1), longest(&a2));
    // A snapshot does not take the running ranks for ended ones.
    let summary = std::fs::read_to_string(first.join("summary.txt")).unwrap();
    assert!(!summary.contains("ending:") && summary.contains("Stuck: ranks 0-2"), "{summary}");
    assert!(dir.join("traces.otf2").exists() && dir.join("raw").read_dir().is_err(), "the run's own archive");
}

/// The output of a child already started, waited for at most 60 s.
fn run_within_wait(child: &mut std::process::Child) -> std::process::Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("gputrace still running 60 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut stderr = Vec::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_end(&mut stderr).unwrap();
    std::process::Output { status: child.wait().unwrap(), stdout: Vec::new(), stderr }
}

/// A kernel that never ended, without a GPU: the cuda_basic CUPTI fixture
/// replayed (every launch of it has its kernel's record), then on this
/// thread what the agent records for a launch naming its kernel
/// (`spin_forever`, whose record never comes) and a cudaDeviceSynchronize
/// still open when the stream ends, as a stopped process leaves them.
/// Through the merge, the launch's Enter carries the `CUDA kernel`
/// attribute and `gputrace analyze` names the kernel.
#[test]
fn a_launch_whose_kernel_never_ended_is_named_through_the_merge() {
    use gputrace_cuda::records::Record;
    use raw::{Event, Paradigm, RegionRole};
    let (captures, _) = crate::cuda::fixture("cuda_basic");
    let records: Vec<Record> = captures.iter().flat_map(|c| gputrace_cuda::replay::decode(c).unwrap()).collect();
    let last = records
        .iter()
        .filter_map(|r| match r {
            Record::Api { end, .. } => Some(*end),
            Record::Kernel { span, .. } | Record::Memcpy { span, .. } => Some(span.end),
            _ => None,
        })
        .max()
        .unwrap();
    let exp = fresh_dir("hang-unfinished-kernel");
    let names = gputrace_cuda::launch_names::LaunchNames::new();
    let header = gpu_node_header(468, "cuda_basic");
    gputrace_cuda::replay::replay_then(&captures, &exp, header, crate::cuda::all(), |rec| {
        let region = |name| rec.region(name, None, Paradigm::Cuda, RegionRole::Wrapper, "CUDA runtime").unwrap();
        let (launch, sync) = (region("cudaLaunchKernel"), region("cudaDeviceSynchronize"));
        // SAFETY: a static NUL-terminated string.
        let (name, value) = unsafe { names.ids(rec, c"_Z12spin_foreverPVi".as_ptr()) }.unwrap();
        rec.record_many(&[
            (last + 1_000, Event::AttributeString { name, value }),
            (last + 1_000, Event::EnterCorrelated { region: launch, correlation: 999_999 }),
            (last + 3_000, Event::Leave { region: launch }),
            (last + 10_000, Event::Enter { region: sync }),
        ]);
    })
    .unwrap();
    ok(gt(&["merge", s(&exp)]));
    let out = ok(gt(&["analyze", "--format", "json", s(&exp)]));
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    let flights: Vec<&str> = a["in_flight"].as_array().unwrap().iter().map(|f| f["call"].as_str().unwrap()).collect();
    assert_eq!(flights, ["cudaDeviceSynchronize"], "{:#}", a["in_flight"]);
    let u = &a["unfinished_kernels"];
    assert_eq!(u.as_array().map(Vec::len), Some(1), "{u:#}");
    assert_eq!(u[0]["count"], 1, "the fixture's launches all have their kernels: {u:#}");
    assert_eq!(u[0]["last"]["kernel"], "spin_forever(int volatile*)", "{u:#}");
    assert_eq!(u[0]["last"]["call"], "cudaLaunchKernel", "{u:#}");
    assert_eq!(u[0]["last"]["before_end_ns"], 9_000, "launched 9 µs before the thread's last event: {u:#}");
    let table = text(&ok(gt(&["analyze", s(&exp)])).stdout);
    assert!(table.contains("kernel spin_forever launched 9.0 us before the end never finished"), "{table}");
}
