//! Sampled call stacks (`--sampling`): a program with known hot functions
//! (tests/programs/mpi/hot.c, built `-O2 -fomit-frame-pointer -g`: hot_a
//! spins 0.6 s of CPU time, hot_b 0.3 s, main 0.1 s, hot_a and hot_b each
//! calling MPI_Barrier), traced under Open MPI and MPICH, by perf events
//! and by the timer-signal fallback. The archive is read by the Python
//! OTF2 reader (calling contexts and their samples) and otf2-print, the
//! shares by `gputrace stats`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

const PERF: &str = "a perf event";
const TIMER: &str = "a timer signal";

/// The program, built once per compiler with the flags the issue names.
fn hot(compiler: &str) -> PathBuf {
    compile_without_frame_pointers(compiler, "hot.c")
}

/// Samples per call path (`main > hot_a > spin`, outermost first, from
/// `main` on), read by the Python OTF2 reader.
fn paths(anchor: &Path) -> HashMap<String, u64> {
    crate::unwinding::paths(anchor, "CallingContextSample")
}

/// Traces hot.c with `launcher` and checks the shares, the callers, the
/// archive's definitions and `stats`; `how` is the sampling mechanism the
/// sampler must say it used. A timer on a thread's CPU clock fires at the
/// kernel's tick at most (4 ms at HZ=250): the timer's run spins
/// `scale` times longer for as many samples.
fn sample_and_check(name: &str, exe: &Path, launcher: &str, env: &[(&str, &str)], how: &str) {
    let scale = if how == TIMER { "4" } else { "1" };
    let dir = fresh_dir(name);
    let mut all = vec![("GPUTRACE_VERBOSE", "true")];
    all.extend_from_slice(env);
    let out = trace(&dir, &["--sampling", "1ms", launcher, "-np", "2", s(exe), scale], &all);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("by {how}")), "the sampler did not use {how}:\n{stderr}");
    let anchor = dir.join("traces.otf2");
    let paths = paths(&anchor);
    let under = |prefix: &str| -> u64 { paths.iter().filter(|(p, _)| p.starts_with(prefix)).map(|(_, n)| n).sum() };
    // Samples in the three spins: hot_a's, hot_b's, main's own loop
    // (whose clock reads, inlined into main, are its own too).
    let a = under("main > hot_a > spin") as f64;
    let b = under("main > hot_b > spin") as f64;
    let m = (paths.get("main").copied().unwrap_or(0) + under("main > cpu_now")) as f64;
    let total = a + b + m;
    assert!(total > 1000.0, "too few samples ({total}) for 2 x {scale} s: {paths:#?}");
    for (what, got, want) in [("hot_a", a, 0.6), ("hot_b", b, 0.3), ("main", m, 0.1)] {
        let share = got / total;
        assert!((share - want).abs() <= 0.05, "{what}: {share:.3} of the spins' samples, not {want}: {paths:#?}");
    }
    // Every sample in MPI_Barrier sits under the function that called it.
    let barrier: Vec<_> = paths.keys().filter(|p| p.contains("MPI_Barrier")).collect();
    assert!(!barrier.is_empty(), "no sample in MPI_Barrier: {paths:#?}");
    for p in barrier {
        assert!(p.starts_with("main > hot_a > MPI_Barrier") || p.starts_with("main > hot_b > MPI_Barrier"), "{p}");
    }
    // otf2-print reads the definitions and the samples.
    let defs = Command::new("otf2-print").arg("-G").arg(&anchor).output().unwrap();
    let defs = text(&defs.stdout);
    for record in ["CALLING_CONTEXT ", "INTERRUPT_GENERATOR", "SOURCE_CODE_LOCATION "] {
        assert!(defs.lines().any(|l| l.starts_with(record)), "otf2-print -G shows no {record}");
    }
    assert!(defs.contains("hot.c"), "no source file of hot.c among the definitions");
    let counts = otf2_print_counts(&anchor);
    assert!(counts.get("CALLING_CONTEXT_SAMPLE").copied().unwrap_or(0) as f64 >= total, "{counts:?}");
    // stats: spin's self share, hot_a's inclusive one above hot_b's.
    let out = ok(gt(&["stats", "--report", "sampled_sum", "--format", "csv", s(&dir)]));
    let table = text(&out.stdout);
    let fields = |f: &str| -> Vec<&str> {
        let line = table.lines().find(|l| l.split(',').nth(4) == Some(f)).unwrap_or_else(|| panic!("{f}: {table}"));
        line.split(',').collect()
    };
    let row = |f: &str| -> Vec<f64> { fields(f).iter().take(2).map(|x| x.parse().unwrap()).collect() };
    assert!(row("spin")[0] > 50.0, "{table}");
    // The line most of spin's samples were at: in its loop.
    assert!(fields("spin")[5].starts_with("hot.c:"), "{table}");
    assert!(row("hot_a")[1] > row("hot_b")[1] && row("hot_b")[1] > 20.0, "{table}");
}

#[test]
fn sampled_shares_follow_known_cpu_times_with_open_mpi_and_perf_events() {
    let (mpicc, mpirun, _) = openmpi();
    if !required("perf events (perf_event_paranoid <= 2)", perf_allowed()) {
        return;
    }
    sample_and_check("sampling-openmpi", &hot(mpicc), mpirun, &[], PERF);
}

#[test]
fn sampled_shares_follow_known_cpu_times_with_the_timer_fallback() {
    let (mpicc, mpirun, _) = openmpi();
    let hook = (config::hooks::SAMPLING_TIMER.name, "1");
    sample_and_check("sampling-timer", &hot(mpicc), mpirun, &[hook], TIMER);
}

#[test]
fn sampled_shares_follow_known_cpu_times_with_mpich() {
    if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
        return;
    }
    let how = if perf_allowed() { PERF } else { TIMER };
    sample_and_check("sampling-mpich", &hot("mpicc.mpich"), "mpiexec.mpich", &[], how);
}

#[test]
fn a_bad_sampling_period_is_one_line_and_exit_2() {
    for (flag, value) in [("--sampling", "often"), ("--sampling", "10us"), ("--sampling-stack", "1M")] {
        let out = gt(&[flag, value, "/bin/true"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("GPUTRACE_SAMPLING"), "{stderr}");
    }
}

/// Whether this machine lets a process sample its own threads' user space
/// with perf events.
fn perf_allowed() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .is_some_and(|p| p <= 2)
}
