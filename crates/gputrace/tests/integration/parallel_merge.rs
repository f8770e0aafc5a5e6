//! The merge in parallel: on threads (`gputrace merge --jobs N`) and as an
//! MPI job (`mpirun -np K gputrace merge --mpi DIR`, `--merge-ranks K`)
//! gives the archive the serial merge gives: the same facts for the
//! Python reader (tests/scripts/otf2_facts.py), the same events for
//! `otf2-print` (every event, in its order, definitions' numbers aside),
//! the same summary and the same profile.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;

/// An experiment of `ranks` synthetic ring processes (raw streams only).
fn synthetic(name: &str, ranks: u32, iterations: u64) -> PathBuf {
    let dir = fresh_dir(name);
    let raw = dir.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    raw::synthetic::write_ring(&raw, ranks, iterations).unwrap();
    dir
}

/// A synthetic job on `ranks / 8` simulated nodes whose measured clock
/// offsets are wrong by `offset_error` (raw streams only): the merge
/// corrects the clocks by the messages.
fn wrong_clocks(name: &str, ranks: u32, offset_error: (i64, i64)) -> PathBuf {
    synthetic_job(name, ranks, 40, offset_error).0
}

/// examples/mpi_ring.c traced with Open MPI on `ranks` ranks, its raw
/// streams kept.
fn traced_ring(name: &str, ranks: u32) -> PathBuf {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("examples/mpi_ring.c"));
    let dir = fresh_dir(name);
    let n = ranks.to_string();
    let out = trace(&dir, &[mpirun, "-np", &n, exe.to_str().unwrap(), "50"], &[KEEP_RAW]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir
}

/// A copy of the experiment's raw streams in a fresh directory.
pub(crate) fn copy_raw(from: &Path, name: &str) -> PathBuf {
    let dir = fresh_dir(name);
    copy_dir(&from.join("raw"), &dir.join("raw"));
    dir
}

/// `gputrace merge ARGS DIR`.
pub(crate) fn merge_with(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(gputrace());
    cmd.arg("merge").args(args).arg(dir);
    run(&mut cmd)
}

/// Every event `otf2-print` lists, in its order, with the definitions'
/// numbers (`<12>`) left out: strings and attributes met while events are
/// written are numbered in the order the threads meet them.
pub(crate) fn printed_events(anchor: &Path) -> Vec<String> {
    let out = Command::new("otf2-print").arg(anchor).output().unwrap();
    assert!(out.status.success(), "otf2-print failed on {}: {}", anchor.display(), text(&out.stderr));
    text(&out.stdout).lines().map(without_refs).collect()
}

fn without_refs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.find('>') {
            Some(j) if j > 0 && after[..j].bytes().all(|b| b.is_ascii_digit()) => rest = &after[j + 1..],
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The summary's first line (processes, locations, events) and its
/// messages line.
pub(crate) fn summary_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains(" locations, ") || l.starts_with("[gputrace] messages:") || l.starts_with("[gputrace] clocks:")
        })
        .map(|l| l.split(" traced").next().unwrap_or(l).to_string())
        .collect()
}

/// What a merged directory holds, for comparing merges.
pub(crate) struct Merged {
    pub facts: serde_json::Value,
    pub events: Vec<String>,
    pub summary: Vec<String>,
    pub profile: Option<serde_json::Value>,
}

pub(crate) fn merged(dir: &Path, out: &Output, python: Option<&Path>) -> Merged {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the merge failed: {stderr}");
    let anchor = dir.join("traces.otf2");
    let facts = facts(&anchor);
    assert_well_formed(&facts);
    Merged {
        facts,
        events: printed_events(&anchor),
        summary: summary_lines(&stderr),
        profile: python.map(|p| crate::profile::cube_facts(p, &dir.join("profile.cubex"))),
    }
}

pub(crate) fn assert_same(what: &str, a: &Merged, b: &Merged) {
    assert_eq!(a.facts, b.facts, "{what}: the archive's facts differ");
    assert_eq!(a.events.len(), b.events.len(), "{what}: otf2-print lists another number of lines");
    if let Some(i) = (0..a.events.len()).find(|&i| a.events[i] != b.events[i]) {
        panic!("{what}: otf2-print differs at line {i}:\n{}\n{}", a.events[i], b.events[i]);
    }
    assert!(!a.summary.is_empty(), "{what}: no summary");
    assert_eq!(a.summary, b.summary, "{what}: the summaries differ");
    assert_eq!(a.profile, b.profile, "{what}: the profiles differ");
}

/// `--jobs 1`, `--jobs 2` and `--jobs 3` on copies of `source`'s raw
/// streams: the same archive, summary and profile.
pub(crate) fn jobs_agree(source: &Path, name: &str) {
    let python = crate::profile::pycubexr();
    let mut results = Vec::new();
    for jobs in ["1", "2", "3"] {
        let dir = copy_raw(source, &format!("{name}-jobs{jobs}"));
        let out = merge_with(&dir, &["--jobs", jobs]);
        results.push((jobs, merged(&dir, &out, python.as_deref())));
    }
    let (_, serial) = &results[0];
    for (jobs, m) in &results[1..] {
        assert_same(&format!("--jobs {jobs} against --jobs 1"), serial, m);
    }
}

#[test]
fn merge_on_threads_of_a_synthetic_ring_is_the_serial_merge() {
    let source = synthetic("pmerge-synth", 7, 300);
    jobs_agree(&source, "pmerge-synth");
}

/// Two locations of ~294,000 events each: with `--jobs 3` a thread is
/// to spare, and each location is read on it while it is written (the
/// pipelined pass); `--jobs 1` reads and writes on one thread. The same
/// archive (every record, in order), summary and profile.
#[test]
fn a_large_location_read_on_a_spare_thread_is_the_serial_merge() {
    let source = synthetic("pmerge-large", 2, 35_000);
    let python = crate::profile::pycubexr();
    let mut results = Vec::new();
    for jobs in ["1", "3"] {
        let dir = copy_raw(&source, &format!("pmerge-large-jobs{jobs}"));
        let out = merge_with(&dir, &["--jobs", jobs]);
        results.push(merged(&dir, &out, python.as_deref()));
    }
    assert!(results[0].events.len() > 2 * (1 << 18), "{} events printed", results[0].events.len());
    assert_same("--jobs 3 (pipelined) against --jobs 1", &results[0], &results[1]);
}

#[test]
fn merge_on_threads_of_a_traced_ring_is_the_serial_merge() {
    let source = traced_ring("pmerge-ring", 6);
    jobs_agree(&source, "pmerge-ring");
}

#[test]
fn merge_jobs_must_be_a_number() {
    let dir = synthetic("pmerge-badjobs", 2, 10);
    let out = merge_with(&dir, &["--jobs", "many"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = Command::new(gputrace()).args(["merge"]).arg(&dir).env("GPUTRACE_MERGE_JOBS", "lots").output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("GPUTRACE_MERGE_JOBS") && stderr.lines().count() == 1, "{stderr}");
}

/// `LAUNCHER -np K gputrace merge --mpi DIR`, within a minute: a merge
/// job must end, whatever happens.
fn mpi_merge(launcher: &str, ranks: u32, dir: &Path) -> Output {
    mpi_merge_with(launcher, ranks, dir, &[])
}

fn mpi_merge_with(launcher: &str, ranks: u32, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(launcher);
    if launcher.contains("openmpi") {
        cmd.arg("--oversubscribe");
    }
    cmd.arg("-np").arg(ranks.to_string()).arg(gputrace()).args(["merge", "--mpi"]).args(args).arg(dir);
    run_within(&mut cmd, std::time::Duration::from_secs(60))
}

/// The MPI launchers of the tests: Open MPI's and MPICH's.
fn launchers() -> Option<[&'static str; 2]> {
    let both = have("mpirun.openmpi") && have("mpirun.mpich");
    required("mpirun.openmpi and mpirun.mpich", both).then_some(["mpirun.openmpi", "mpirun.mpich"])
}

/// The serial merge of `source`'s raw streams, and `K`-rank MPI merges
/// with both MPIs: the same archive, summary and profile.
pub(crate) fn mpi_agrees(source: &Path, name: &str, ranks: &[u32]) {
    let Some(launchers) = launchers() else { return };
    let python = crate::profile::pycubexr();
    let dir = copy_raw(source, &format!("{name}-serial"));
    let serial = merged(&dir, &merge_with(&dir, &["--jobs", "1"]), python.as_deref());
    for launcher in launchers {
        for &k in ranks {
            let dir = copy_raw(source, &format!("{name}-{k}"));
            let out = mpi_merge(launcher, k, &dir);
            let m = merged(&dir, &out, python.as_deref());
            assert_same(&format!("{launcher} -np {k} gputrace merge --mpi"), &serial, &m);
            // Again over the archive: rank 0 alone replaces it.
            let out = mpi_merge_with(launcher, k, &dir, &["--force"]);
            let m = merged(&dir, &out, python.as_deref());
            assert_same(&format!("{launcher} -np {k} gputrace merge --mpi --force"), &serial, &m);
        }
    }
}

#[test]
fn merge_as_an_mpi_job_of_a_synthetic_ring_is_the_serial_merge() {
    let source = synthetic("pmerge-mpi-synth", 7, 300);
    mpi_agrees(&source, "pmerge-mpi-synth", &[2, 3]);
}

#[test]
fn merge_as_an_mpi_job_of_a_traced_ring_is_the_serial_merge() {
    let source = traced_ring("pmerge-mpi-ring", 5);
    mpi_agrees(&source, "pmerge-mpi-ring", &[2, 3]);
}

/// The message-based clock correction is the same on threads and on
/// every merge rank: host clocks shifted (ClockOffsets), and receives
/// moved (raised timestamps, on whichever merge rank writes the location).
#[test]
fn the_clock_correction_is_the_same_in_every_parallel_merge() {
    for (name, ranks, error, how) in [
        ("pmerge-clock-offsets", 32, (8_000, 8_000), "host clocks shifted"),
        ("pmerge-clock-receives", 16, (8_000, -8_000), "receives moved later"),
    ] {
        let source = wrong_clocks(name, ranks, error);
        let dir = copy_raw(&source, &format!("{name}-check"));
        let out = merge_with(&dir, &[]);
        let err = text(&out.stderr);
        assert!(err.contains(how) && err.contains("; 0 now"), "{err}");
        jobs_agree(&source, name);
        mpi_agrees(&source, name, &[2, 3]);
    }
}

/// `gputrace --merge-ranks 2 mpirun -np 4 ...`: the merge runs as an MPI
/// job after the program, and its archive is the one a serial merge of the
/// same raw streams makes.
#[test]
fn merge_ranks_run_the_merge_with_the_jobs_launcher() {
    if launchers().is_none() {
        return;
    }
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("examples/mpi_ring.c"));
    let dir = fresh_dir("pmerge-ranks");
    let out = trace(
        &dir,
        &["--merge-ranks", "2", mpirun, "--oversubscribe", "-np", "4", exe.to_str().unwrap(), "30"],
        &[KEEP_RAW],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[gputrace] archive:") && stderr.contains("4 processes"), "{stderr}");
    let python = crate::profile::pycubexr();
    let by_ranks = Merged {
        facts: facts(&dir.join("traces.otf2")),
        events: printed_events(&dir.join("traces.otf2")),
        summary: summary_lines(&stderr),
        profile: python.as_deref().map(|p| crate::profile::cube_facts(p, &dir.join("profile.cubex"))),
    };
    let again = copy_raw(&dir, "pmerge-ranks-serial");
    let serial = merged(&again, &merge_with(&again, &["--jobs", "1"]), python.as_deref());
    assert_same("--merge-ranks 2 against the serial merge", &serial, &by_ranks);
    let ranks: Vec<i64> = by_ranks.facts["ranks"].as_array().unwrap().iter().map(|r| r.as_i64().unwrap()).collect();
    assert_eq!(ranks, [0, 1, 2, 3]);
}

#[test]
fn merge_as_an_mpi_job_refuses_clearly() {
    let Some(launchers) = launchers() else { return };
    let dir = synthetic("pmerge-mpi-bad", 2, 10);
    // Not started by a launcher: one line, at once.
    let out =
        run_within(Command::new(gputrace()).args(["merge", "--mpi"]).arg(&dir), std::time::Duration::from_secs(30));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no MPI launcher started it"), "{stderr}");
    // More merge ranks than processes: every rank ends, rank 0 says why.
    for launcher in launchers {
        let out = mpi_merge(launcher, 3, &dir);
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("gputrace: error:")).collect();
        assert_eq!(said, ["gputrace: error: 3 merge ranks for 2 traced processes: run the merge with at most 2 ranks"]);
        assert!(!dir.join("traces.otf2").exists(), "{launcher}: an archive was left");
    }
    // --merge-ranks without an MPI launcher: refused before the program runs.
    let exp = fresh_dir("pmerge-ranks-bad");
    let out = trace(&exp, &["--merge-ranks", "2", "true"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--merge-ranks 2") && stderr.lines().count() == 1, "{stderr}");
    assert!(!exp.exists(), "nothing ran, no experiment directory");
}

/// A merge rank that fails ends the whole job (MPI_Abort) with its one
/// line, under both MPIs: the others, waiting for it in a collective call,
/// do not wait for ever.
#[test]
fn a_failing_merge_rank_ends_the_job() {
    let Some(launchers) = launchers() else { return };
    let dir = synthetic("pmerge-mpi-fail", 3, 10);
    for launcher in launchers {
        let mut cmd = Command::new(launcher);
        if launcher.contains("openmpi") {
            cmd.arg("--oversubscribe");
        }
        cmd.args(["-np", "3"]).arg(gputrace()).args(["merge", "--mpi", "--force"]).arg(&dir);
        cmd.env("_GPUTRACE_TEST_MERGE_RANK_FAILS", "1");
        let out = run_within(&mut cmd, std::time::Duration::from_secs(60));
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{launcher}: {stderr}");
        let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("gputrace: error:")).collect();
        assert_eq!(
            said,
            [format!(
                "gputrace: error: merge rank 1 of 3: the merge ranks could not exchange their results: a test hook \
                 made this rank fail; the merge job is ended (a half-written archive in {} is replaced by `gputrace \
                 merge --force`)",
                dir.display()
            )],
            "{launcher}: {stderr}"
        );
    }
}

/// Without an archive (GPUTRACE_ENABLE_TRACING=false) the merge ranks
/// still count: rank 0's summary.txt and profile are the serial merge's.
#[test]
fn merge_as_an_mpi_job_without_an_archive_counts_as_the_serial_merge() {
    let Some(launchers) = launchers() else { return };
    let python = crate::profile::pycubexr();
    let source = synthetic("pmerge-mpi-notrace", 5, 200);
    let summary = |dir: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
        text.lines().filter(|l| !l.contains("merged in") && !l.contains("profile:")).map(str::to_string).collect()
    };
    let profile = |dir: &Path| python.as_deref().map(|p| crate::profile::cube_facts(p, &dir.join("profile.cubex")));
    let serial = copy_raw(&source, "pmerge-mpi-notrace-serial");
    let mut cmd = Command::new(gputrace());
    cmd.args(["merge", "--jobs", "1"]).arg(&serial).env("GPUTRACE_ENABLE_TRACING", "false");
    let out = run(&mut cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!serial.join("traces.otf2").exists());
    for launcher in launchers {
        let dir = copy_raw(&source, "pmerge-mpi-notrace");
        let mut cmd = Command::new(launcher);
        if launcher.contains("openmpi") {
            cmd.arg("--oversubscribe");
        }
        cmd.args(["-np", "2"]).arg(gputrace()).args(["merge", "--mpi"]).arg(&dir);
        cmd.env("GPUTRACE_ENABLE_TRACING", "false");
        let out = run_within(&mut cmd, std::time::Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{launcher}: {}", text(&out.stderr));
        assert!(!dir.join("traces.otf2").exists(), "{launcher}: an archive");
        assert_eq!(summary(&dir), summary(&serial), "{launcher}: summary.txt");
        assert_eq!(profile(&dir), profile(&serial), "{launcher}: the profile");
    }
}
