//! Python MPI programs: mpi4py loads its MPI library with `RTLD_LOCAL`,
//! out of the reach of `dlsym(RTLD_NEXT)` and `dlsym(RTLD_DEFAULT)`, and
//! the hooks must find it all the same. Debian's python3-mpi4py (built
//! against Open MPI) under `mpirun` and without a launcher, mpi4py built
//! against MPICH (by scripts/setup.sh, in its cache) under
//! `mpiexec.mpich`, and mpi4py's own test suite traced and untraced.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mpi::assert_sends_match_receives;
use crate::util::*;

/// Debian's Python, whose mpi4py is built against Open MPI; `None` (or a
/// failure under CI=true) when python3-mpi4py is not installed.
fn debian_mpi4py() -> Option<PathBuf> {
    let python = PathBuf::from("/usr/bin/python3");
    let ok = Command::new(&python).args(["-c", "import mpi4py"]).output().is_ok_and(|o| o.status.success());
    required("Debian's python3-mpi4py", ok).then_some(python)
}

/// The Python of scripts/setup.sh's virtual environment with mpi4py
/// built against MPICH.
fn mpich_mpi4py() -> Option<PathBuf> {
    let python = test_cache().join("mpi4py-mpich/bin/python");
    let ok = have("mpiexec.mpich")
        && Command::new(&python).args(["-c", "import mpi4py"]).output().is_ok_and(|o| o.status.success());
    required(&format!("MPICH and mpi4py built against it ({})", python.display()), ok).then_some(python)
}

fn program() -> String {
    workspace().join("tests/programs/mpi/mpi4py_p2p.py").display().to_string()
}

/// Runs `argv` untraced and under gputrace; checks that both exit with
/// `code`, print the same, that gputrace warns about nothing, and that the
/// archive holds every rank once with the messages mpi4py_p2p.py counted.
fn check(name: &str, argv: &[&str], ranks: u32, code: i32) {
    let plain = run(Command::new(argv[0]).args(&argv[1..]));
    assert_eq!(plain.status.code(), Some(code), "untraced: {}", text(&plain.stderr));
    let dir = fresh_dir(name);
    let traced = trace(&dir, argv, &[]);
    let stderr = text(&traced.stderr);
    assert_eq!(traced.status.code(), Some(code), "traced: {stderr}");
    assert_eq!(text(&traced.stdout), text(&plain.stdout), "the traced program's stdout changed");
    assert!(!stderr.contains("[gputrace] warning"), "{stderr}");
    assert!(stderr.contains("[gputrace] archive:"), "{stderr}");

    let out = text(&traced.stdout);
    let truth = program_counters(&out);
    assert_eq!(truth.len(), ranks as usize, "{out}");
    let facts = facts(&dir.join("traces.otf2"));
    let seen: Vec<i64> = facts["ranks"].as_array().unwrap().iter().map(|r| r.as_i64().unwrap()).collect();
    assert_eq!(seen, (0..i64::from(ranks)).collect::<Vec<_>>(), "every rank once");
    assert_well_formed(&facts);
    let sends = messages(&facts, "sends");
    for r in 0..ranks {
        let t = &truth[&r];
        assert_eq!(t["errors"], 0, "{out}");
        assert!(t["sends"] > 0);
        assert_eq!(count(&facts, r, "MpiSend") + count(&facts, r, "MpiIsend"), t["sends"], "rank {r} sends");
        assert_eq!(count(&facts, r, "MpiRecv") + count(&facts, r, "MpiIrecv"), t["recvs"], "rank {r} receives");
        let bytes: i64 = sends.iter().filter(|m| m.0 == i64::from(r) && [1, 3, 4].contains(&m.3)).map(|m| m.4).sum();
        assert_eq!(bytes, t["buffer_bytes"], "rank {r} bytes of buffer messages");
        assert!(count(&facts, r, "MpiCollectiveEnd") >= 3, "allreduce, barrier, gather on rank {r}");
    }
    assert_sends_match_receives(&facts);
}

#[test]
fn mpi4py_programs_are_traced_under_open_mpi() {
    let Some(python) = debian_mpi4py() else { return };
    let (_, mpirun, _) = openmpi();
    let (python, program) = (python.display().to_string(), program());
    check("mpi4py-ompi", &[mpirun, "-np", "2", &python, &program, "-n", "3"], 2, 0);
}

#[test]
fn mpi4py_programs_are_traced_under_mpich() {
    let Some(python) = mpich_mpi4py() else { return };
    let (python, program) = (python.display().to_string(), program());
    check("mpi4py-mpich", &["mpiexec.mpich", "-n", "2", &python, &program, "-n", "3"], 2, 0);
}

/// `gputrace python3 x.py`: a singleton MPI process, and the program's
/// exit code passed on.
#[test]
fn mpi4py_programs_are_traced_without_a_launcher() {
    let Some(python) = debian_mpi4py() else { return };
    let (python, program) = (python.display().to_string(), program());
    check("mpi4py-singleton", &[&python, &program, "-n", "2", "--exit", "5"], 1, 5);
}

/// mpi4py's own test suite (from the source distribution of the version
/// installed) on 2 ranks, untraced and traced: every test ends the same
/// way on every rank. test_spawn is left out: its spawned jobs hang under
/// Open MPI on this kind of machine whether traced or not.
#[test]
fn mpi4py_test_suite_gives_the_same_results_traced_under_open_mpi() {
    let Some(python) = debian_mpi4py() else { return };
    let (_, mpirun, _) = openmpi();
    suite("open-mpi", &python, &[mpirun, "-np", "2"], "OMPI_COMM_WORLD_RANK");
}

#[test]
fn mpi4py_test_suite_gives_the_same_results_traced_under_mpich() {
    let Some(python) = mpich_mpi4py() else { return };
    suite("mpich", &python, &["mpiexec.mpich", "-n", "2"], "PMI_RANK");
}

/// Runs the suite with `python` on 2 ranks started by `launcher` (whose
/// ranks find their rank in `$rank_var`), untraced and traced, and
/// compares the results of every test on every rank.
fn suite(name: &str, python: &Path, launcher: &[&str], rank_var: &str) {
    let version = Command::new(python).args(["-c", "import mpi4py; print(mpi4py.__version__)"]).output().unwrap();
    let source = test_cache().join(format!("mpi4py-{}", text(&version.stdout).trim()));
    if !required(&format!("mpi4py's test suite ({})", source.join("test").display()), source.join("test").is_dir()) {
        return;
    }
    let run_suite = |logs: &Path, traced: Option<&Path>| {
        std::fs::create_dir_all(logs).unwrap();
        let script = format!(
            "cd '{}' && exec '{}' test/runtests.py --no-builddir -v -e test_spawn > '{}'/rank${rank_var}.log 2>&1",
            source.display(),
            python.display(),
            logs.display()
        );
        let mut argv = launcher.to_vec();
        argv.extend(["sh", "-c", &script]);
        let out = match traced {
            None => run(Command::new(argv[0]).args(&argv[1..])),
            Some(dir) => trace(dir, &argv, &[]),
        };
        assert_eq!(out.status.code(), Some(0), "the suite failed ({traced:?}): {}", text(&out.stderr));
        if traced.is_some() {
            let stderr = text(&out.stderr);
            assert!(stderr.contains("(2 MPI ranks)") && !stderr.contains("[gputrace] warning"), "{stderr}");
        }
        (0..2).map(|r| results(&logs.join(format!("rank{r}.log")))).collect::<Vec<_>>()
    };
    let plain = run_suite(&scratch().join(format!("mpi4py-suite-{name}-plain")), None);
    let dir = fresh_dir(&format!("mpi4py-suite-{name}"));
    let traced = run_suite(&scratch().join(format!("mpi4py-suite-{name}-traced")), Some(&dir));
    for r in 0..2 {
        let (tests, summary) = &plain[r];
        assert!(tests.len() > 1000, "rank {r} ran only {} tests", tests.len());
        assert!(summary.iter().any(|l| l.starts_with("OK")), "untraced rank {r}: {summary:?}");
        let (traced_tests, traced_summary) = &traced[r];
        assert_eq!(traced_summary, summary, "rank {r}");
        let differ: Vec<_> = tests.iter().filter(|(t, res)| traced_tests.get(*t) != Some(res)).collect();
        assert!(differ.is_empty(), "rank {r}: tests that end differently when traced: {differ:?}");
        assert_eq!(traced_tests.len(), tests.len());
        eprintln!("{name} rank {r}: {} tests, the same results traced and untraced ({summary:?})", tests.len());
    }
    assert!(dir.join("traces.otf2").exists(), "no archive");
}

/// Per test (`name (module.Class.name)`), how it ended, from unittest's
/// verbose log; and the log's closing "Ran N tests" and "OK"/"FAILED" lines
/// without the time.
fn results(log: &Path) -> (BTreeMap<String, String>, Vec<String>) {
    let log = std::fs::read_to_string(log).unwrap();
    let mut tests = BTreeMap::new();
    for line in log.lines() {
        if let Some((test, result)) = line.split_once(" ... ") {
            tests.insert(test.to_string(), result.to_string());
        }
    }
    let summary = log
        .lines()
        .filter(|l| l.starts_with("Ran ") || l.starts_with("OK") || l.starts_with("FAILED"))
        .map(|l| l.split(" in ").next().unwrap_or(l).to_string())
        .collect();
    (tests, summary)
}
