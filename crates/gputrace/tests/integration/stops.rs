//! Jobs stopped before they finish: `timeout` on gputrace, SIGINT and
//! SIGTERM sent to gputrace, a rank that crashes (Open MPI and MPICH,
//! whose Hydra then SIGKILLs the other ranks), a fatal MPI error, a rank
//! that SIGKILLs itself. The program (`tests/programs/mpi/stopped.c`) is a
//! paced ping-pong whose ranks publish, in counter files that survive
//! SIGKILL, how many sends and receives they completed; the archive must
//! hold every one of them (the call in flight may be there or not), and
//! the summary must say how each rank ended. Loss is a race, so every
//! scenario runs 5 times ([`runs`]) and reports every run before it fails.
//!
//! gputrace itself killed with SIGKILL (under each MPI) must take the job
//! with it: no process of the job (launcher, Hydra's proxy, ranks) left
//! 5 s later, and `gputrace merge` of what the ranks recorded holds every
//! call they published.
//!
//! How the run summary says each rank ended is read in [`summary`].

mod summary;

use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;
use summary::check_endings;

/// Runs of each scenario; `STOPS_RUNS` asks for more (bench/stops.sh).
fn runs() -> usize {
    std::env::var("STOPS_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(5)
}
/// Seconds of ping-pong before the stop, from the first completed call.
const PING_PONG: f64 = 1.0;
/// Round trips per second: about 50,000 events per run, which the Python
/// reader reads in a fraction of a second.
const PACE: u32 = 4000;
/// The limit of one run; a job still running then is a hang.
const HANG: Duration = Duration::from_secs(90);
/// Runs stopped before the ping-pong began that may be made again.
const VOID_RUNS: usize = 3;
/// How long the job may outlive gputrace killed with SIGKILL.
const OUTLIVES: Duration = Duration::from_secs(5);
/// Written by the program once MPI_Init returned ("STOPPED").
const MAGIC: i64 = 0x53544f50504544;

/// One scenario at a time: their timing (and the loss) should not depend
/// on how many ping-pongs share the two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mpi {
    Open,
    Mpich,
}

/// How the job is stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    /// `timeout -s TERM` around gputrace.
    Timeout,
    /// This signal sent to gputrace's pid once the ping-pong ran a while.
    Signal(libc::c_int),
    /// Rank 1 ends itself this way (the program's mode).
    Rank(&'static str),
}

/// The compiler and launcher of `mpi`, or None when it is not installed
/// (which fails the test under `CI=true`).
fn tools(mpi: Mpi) -> Option<(&'static str, &'static str)> {
    let (mpicc, launcher) = match mpi {
        Mpi::Open => {
            let (mpicc, mpirun, _) = openmpi();
            (mpicc, mpirun)
        }
        Mpi::Mpich => ("mpicc.mpich", "mpiexec.mpich"),
    };
    for tool in [mpicc, launcher, "otf2-print", "timeout"] {
        if !required(tool, have(tool)) {
            return None;
        }
    }
    Some((mpicc, launcher))
}

/// What one rank published: sends and receives completed, its pid.
#[derive(Clone, Copy, Debug)]
struct Published {
    sends: i64,
    recvs: i64,
    pid: i64,
}

/// The counter file of `rank` in `dir`: None until the rank wrote it.
fn published(dir: &Path, rank: u32) -> Option<Published> {
    let bytes = std::fs::read(dir.join(format!("rank.{rank}"))).ok()?;
    let word = |i: usize| Some(i64::from_ne_bytes(bytes.get(8 * i..8 * i + 8)?.try_into().ok()?));
    if word(0)? != MAGIC {
        return None;
    }
    Some(Published { sends: word(1)?, recvs: word(2)?, pid: word(3)? })
}

/// gputrace (under `timeout` for that stop) on the ping-pong, in its own
/// process group, its output in files beside the experiment.
fn start(mpi: Mpi, stop: Stop, dir: &Path, counters: &Path) -> Child {
    let (mpicc, launcher) = tools(mpi).expect("checked by the caller");
    let exe = compile(mpicc, "stopped.c");
    let mode = match stop {
        Stop::Rank(mode) => mode,
        _ => "run",
    };
    let mut cmd = match stop {
        // The ping-pong starts well within a second (MPI_Init), then runs
        // about PING_PONG seconds before timeout's SIGTERM.
        Stop::Timeout => {
            let mut c = Command::new("timeout");
            c.args(["-s", "TERM", &format!("{}", PING_PONG + 1.5)]).arg(gputrace());
            c
        }
        _ => Command::new(gputrace()),
    };
    let np = if mpi == Mpi::Open { "-np" } else { "-n" };
    cmd.arg("-o").arg(dir).args([launcher, np, "2"]).arg(&exe).arg("-d").arg(counters);
    cmd.args(["-m", mode, "-t", &PING_PONG.to_string(), "-r", &PACE.to_string()]);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUTRACE_") {
            cmd.env_remove(k);
        }
    }
    let out = File::create(dir.with_extension("stdout")).unwrap();
    let err = File::create(dir.with_extension("stderr")).unwrap();
    cmd.stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
    cmd.spawn().unwrap()
}

/// Waits for `child` until `deadline`; on a hang kills its process group.
fn wait(child: &mut Child, deadline: Instant) -> Result<std::process::ExitStatus, String> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Ok(status);
        }
        if Instant::now() > deadline {
            // What was still there, for the report.
            let ps = Command::new("ps").args(["-eo", "pid,ppid,pgid,stat,etime,wchan:24,args"]).output();
            let ps = ps.map(|o| text(&o.stdout)).unwrap_or_default();
            let left: Vec<&str> = ps
                .lines()
                .filter(|l| {
                    ["gputrace", "mpirun", "mpiexec", "prte", "orted", "hydra", "stopped"].iter().any(|w| l.contains(w))
                })
                .collect();
            // SAFETY: kill has no memory-safety preconditions; the group is
            // the one this test started.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            return Err(format!(
                "the job was still running after {} s: killed; its processes were:\n{}",
                HANG.as_secs(),
                left.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a process that has not ended (a zombie has).
fn alive(pid: libc::pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // "pid (comm) S ...": the state follows the last parenthesis.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

/// One stopped job and what was checked: the counts per rank and every
/// failed requirement.
struct Run {
    /// Per rank: (published sends, archived sends, published receives,
    /// archived receives).
    counts: Vec<(i64, i64, i64, i64)>,
    /// How the summary says each rank ended, as printed.
    endings: Vec<String>,
    failures: Vec<String>,
    /// Why the run proves nothing (stopped before the ping-pong began), so
    /// that another is made in its place.
    void: Option<String>,
    /// Seconds from the start to the job's end, and to the end of the
    /// checks.
    job: f64,
    checked: f64,
}

fn one_run(mpi: Mpi, stop: Stop) -> Run {
    let dir = fresh_dir("stops");
    let counters = fresh_dir("stops-counters");
    std::fs::create_dir(&counters).unwrap();
    let mut run =
        Run { counts: Vec::new(), endings: Vec::new(), failures: Vec::new(), void: None, job: 0.0, checked: 0.0 };
    let begun = Instant::now();
    let mut child = start(mpi, stop, &dir, &counters);
    // The job's processes as they were before a SIGKILL of gputrace.
    let mut job = Vec::new();
    if let Stop::Signal(sig) = stop {
        // Once both ranks completed a call, PING_PONG seconds more.
        let going = loop {
            let both = (0..2).all(|r| published(&counters, r).is_some_and(|p| p.sends > 0));
            if both || begun.elapsed() > HANG || child.try_wait().unwrap().is_some() {
                break both;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if going {
            std::thread::sleep(Duration::from_secs_f64(PING_PONG));
            job = descendants(child.id() as libc::pid_t);
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        } else {
            run.failures.push("the ping-pong never got going".into());
        }
    }
    let status = match wait(&mut child, begun + HANG) {
        Ok(s) => s,
        Err(e) => {
            run.failures.push(e);
            return run;
        }
    };
    run.job = begun.elapsed().as_secs_f64();
    if stop == Stop::Signal(libc::SIGKILL) {
        return killed_gputrace(run, &dir, &counters, &job);
    }
    // gputrace merges once the launcher is gone; a rank still running
    // then (a launcher that died without waiting for its ranks) goes on
    // recording what no archive will hold. The counts are read once every
    // rank has ended.
    std::thread::sleep(Duration::from_millis(200));
    let running: Vec<(u32, libc::pid_t)> = (0..2)
        .filter_map(|r| published(&counters, r).map(|p| (r, p.pid as libc::pid_t)))
        .filter(|&(_, pid)| alive(pid))
        .collect();
    let seen = Instant::now();
    for &(rank, pid) in &running {
        while alive(pid) && seen.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive(pid) {
            // SAFETY: kill has no memory-safety preconditions; the pid is
            // the test program's, still running.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        run.failures.push(format!(
            "rank {rank} (pid {pid}) was still running 0.2 s after gputrace exited (it ended {:.1} s later): \
             the merge did not wait for it",
            seen.elapsed().as_secs_f64()
        ));
    }
    // A job stopped before both ranks completed a call (MPI_Init is slow on
    // a loaded machine) has nothing to lose.
    if let Some(r) = (0..2).find(|&r| published(&counters, r).is_none_or(|p| p.sends == 0)) {
        run.void = Some(format!("stopped before rank {r} completed a call"));
        return run;
    }
    let stderr = std::fs::read_to_string(dir.with_extension("stderr")).unwrap_or_default();
    if status.success() || status.code() == Some(101) {
        run.failures.push(format!("gputrace ended with {status}"));
    }
    if !stderr.contains("[gputrace] archive:") {
        run.failures.push(format!("no archive written: {}", last_lines(&stderr, 8)));
        return run;
    }
    let anchor = dir.join("traces.otf2");
    // The readers' own assertions (a reader that fails) become failures
    // of this run, so that the other runs are still reported.
    let read = std::panic::catch_unwind(|| (facts(&anchor), otf2_print_counts(&anchor)));
    let Ok((facts, printed)) = read else {
        run.failures.push("an archive reader failed (its message is above)".into());
        return run;
    };
    check_counts(&facts, &printed, &counters, &mut run);
    check_well_formed(&facts, &mut run);
    check_endings(&stderr, stop, mpi, &mut run);
    run.checked = begun.elapsed().as_secs_f64();
    run
}

/// The processes below `root` (its children, theirs, ...), from /proc.
fn descendants(root: libc::pid_t) -> Vec<(libc::pid_t, String)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<libc::pid_t>().ok()).unwrap_or(0);
        let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
        all.push((pid, ppid, comm));
    }
    let mut found: Vec<(libc::pid_t, String)> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, ppid, comm) in &all {
            if *ppid == parent && !found.iter().any(|(p, _)| p == pid) {
                found.push((*pid, comm.clone()));
                parents.push(*pid);
            }
        }
    }
    found
}

/// After gputrace was killed with SIGKILL: no process of the job (`job`,
/// seen just before the kill, and the ranks) is left after [`OUTLIVES`],
/// and `gputrace merge` keeps every call the ranks published.
fn killed_gputrace(mut run: Run, dir: &Path, counters: &Path, job: &[(libc::pid_t, String)]) -> Run {
    let killed = Instant::now();
    let mut watched: Vec<(libc::pid_t, String)> = job.to_vec();
    for rank in 0..2 {
        if let Some(p) = published(counters, rank) {
            let pid = p.pid as libc::pid_t;
            if !watched.iter().any(|&(w, _)| w == pid) {
                run.failures.push(format!("rank {rank} (pid {pid}) is not among gputrace's descendants: {job:?}"));
                watched.push((pid, format!("rank {rank}")));
            }
        }
    }
    while watched.iter().any(|&(pid, _)| alive(pid)) && killed.elapsed() < OUTLIVES {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&(libc::pid_t, String)> = watched.iter().filter(|&&(pid, _)| alive(pid)).collect();
    if !left.is_empty() {
        run.failures.push(format!("{} s after gputrace was killed, the job still runs: {left:?}", OUTLIVES.as_secs()));
        for &&(pid, _) in &left {
            // SAFETY: kill has no memory-safety preconditions; a process
            // of the job this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    run.job = killed.elapsed().as_secs_f64();
    if let Some(r) = (0..2).find(|&r| published(counters, r).is_none_or(|p| p.sends == 0)) {
        run.void = Some(format!("stopped before rank {r} completed a call"));
        return run;
    }
    let out = merge(dir, false);
    let stderr = text(&out.stderr);
    if !out.status.success() || !stderr.contains("[gputrace] archive:") {
        run.failures.push(format!("gputrace merge failed ({}): {}", out.status, last_lines(&stderr, 8)));
        return run;
    }
    let anchor = dir.join("traces.otf2");
    let read = std::panic::catch_unwind(|| (facts(&anchor), otf2_print_counts(&anchor)));
    let Ok((facts, printed)) = read else {
        run.failures.push("an archive reader failed (its message is above)".into());
        return run;
    };
    check_counts(&facts, &printed, counters, &mut run);
    check_well_formed(&facts, &mut run);
    check_endings(&stderr, Stop::Signal(libc::SIGKILL), Mpi::Open, &mut run);
    run.checked = run.job;
    run
}

/// Every call a rank published is in the archive; at most the one in
/// flight is there unpublished.
fn check_counts(facts: &Value, printed: &std::collections::HashMap<String, usize>, counters: &Path, run: &mut Run) {
    let mut all_sends = 0;
    for rank in 0..2u32 {
        let Some(p) = published(counters, rank) else {
            run.failures.push(format!("rank {rank} published nothing: it never got past MPI_Init"));
            continue;
        };
        let sends = count(facts, rank, "MpiSend");
        let recvs = count(facts, rank, "MpiRecv");
        all_sends += sends;
        run.counts.push((p.sends, sends, p.recvs, recvs));
        for (what, done, archived) in [("MPI_Send", p.sends, sends), ("MPI_Recv", p.recvs, recvs)] {
            if archived < done {
                run.failures.push(format!(
                    "rank {rank}: {} of its {done} completed {what} calls are missing from the archive ({archived})",
                    done - archived
                ));
            } else if archived > done + 1 {
                run.failures.push(format!("rank {rank}: {archived} {what} events for {done} completed calls"));
            }
        }
    }
    let printed_sends = printed.get("MPI_SEND").copied().unwrap_or(0) as i64;
    if printed_sends != all_sends {
        run.failures.push(format!("otf2-print sees {printed_sends} sends, the Python reader {all_sends}"));
    }
}

fn check_well_formed(facts: &Value, run: &mut Run) {
    for (loc, info) in facts["locations"].as_object().unwrap() {
        if info["monotonic"] != true {
            run.failures.push(format!("timestamps go back on location {loc}"));
        }
    }
    if !facts["unbalanced"].as_array().unwrap().is_empty() {
        run.failures.push(format!("unbalanced regions: {}", facts["unbalanced"]));
    }
    if facts["ranks"] != serde_json::json!([0, 1]) {
        run.failures.push(format!("ranks in the archive: {}", facts["ranks"]));
    }
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs the scenario [`runs`] times (a void run replaced by another, up to
/// VOID_RUNS of them), prints a line per run, and fails with every failed
/// requirement of every run.
fn scenario(name: &str, mpi: Mpi, stop: Stop) {
    if tools(mpi).is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut report = String::new();
    let (mut failed, mut done, mut void) = (0, 0, 0);
    let runs = runs();
    while done < runs {
        let run = one_run(mpi, stop);
        if let Some(why) = &run.void {
            void += 1;
            let _ = writeln!(report, "{name}: a run not counted ({why}, job {:.1} s)", run.job);
            assert!(void <= VOID_RUNS, "{void} runs were stopped before the ping-pong began:\n{report}");
            continue;
        }
        done += 1;
        let i = done;
        let counts: Vec<String> = run
            .counts
            .iter()
            .enumerate()
            .map(|(r, (ps, s, pr, rv))| {
                format!("rank {r}: sends {s}/{ps} (missing {}), recvs {rv}/{pr} (missing {})", ps - s, pr - rv)
            })
            .collect();
        let _ = writeln!(
            report,
            "{name} run {i} (job {:.1} s, checked at {:.1} s): {}; endings {:?}",
            run.job,
            run.checked,
            counts.join("; "),
            run.endings
        );
        for f in &run.failures {
            let _ = writeln!(report, "    FAIL {f}");
        }
        failed += usize::from(!run.failures.is_empty());
    }
    if failed == 0 {
        println!("{report}");
    }
    assert_eq!(failed, 0, "{failed} of {runs} runs failed:\n{report}");
}

#[test]
fn timeout_on_gputrace_loses_no_completed_call() {
    scenario("timeout", Mpi::Open, Stop::Timeout);
}

#[test]
fn sigint_to_gputrace_loses_no_completed_call() {
    scenario("sigint", Mpi::Open, Stop::Signal(libc::SIGINT));
}

#[test]
fn sigterm_to_gputrace_loses_no_completed_call() {
    scenario("sigterm", Mpi::Open, Stop::Signal(libc::SIGTERM));
}

/// `kill -9` of gputrace (or the OOM killer) ends the job: the launcher
/// gets its parent-death signal.
#[test]
fn sigkill_to_gputrace_ends_the_open_mpi_job_and_merge_keeps_every_call() {
    scenario("sigkill-openmpi", Mpi::Open, Stop::Signal(libc::SIGKILL));
}

#[test]
fn sigkill_to_gputrace_ends_the_mpich_job_and_merge_keeps_every_call() {
    scenario("sigkill-mpich", Mpi::Mpich, Stop::Signal(libc::SIGKILL));
}

#[test]
fn a_rank_crashing_under_open_mpi_loses_no_completed_call() {
    scenario("crash-openmpi", Mpi::Open, Stop::Rank("crash"));
}

/// Hydra SIGKILLs the whole process group when a rank crashes.
#[test]
fn a_rank_crashing_under_mpich_loses_no_completed_call() {
    scenario("crash-mpich", Mpi::Mpich, Stop::Rank("crash"));
}

#[test]
fn a_fatal_mpi_error_under_open_mpi_loses_no_completed_call() {
    scenario("fatal-openmpi", Mpi::Open, Stop::Rank("fatal"));
}

#[test]
fn a_fatal_mpi_error_under_mpich_loses_no_completed_call() {
    scenario("fatal-mpich", Mpi::Mpich, Stop::Rank("fatal"));
}

#[test]
fn a_rank_killing_itself_loses_no_completed_call() {
    scenario("killself-openmpi", Mpi::Open, Stop::Rank("kill"));
}
