//! Python frames in sampled stacks: tests/programs/python/hot.py (hot_a
//! spins 0.4 s of CPU time under step_one and 0.2 s under step_two, hot_b
//! 0.3 s under step_two; step_one calls MPI_Barrier, where rank 0 waits
//! busy for rank 1) run with `--sampling 1ms` under Open MPI with
//! Debian's python3 (3.11) and mpi4py, and without MPI with the other
//! CPython versions found (pyenv's 3.10, 3.12, 3.13). The archive is read
//! by the Python OTF2 reader (tests/scripts/sampled_paths.py) and
//! otf2-print, the profile by pycubexr (tests/scripts/cube_facts.py,
//! which also checks the trees' sums).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::profile::{cube_facts, pycubexr};
use crate::util::*;

fn program() -> String {
    workspace().join("tests/programs/python/hot.py").display().to_string()
}

/// Samples per call path (names outermost first, " > "), as the OTF2
/// Python reader reads the archive.
fn paths(anchor: &Path) -> HashMap<String, u64> {
    let script = workspace().join("tests/scripts/sampled_paths.py");
    let out = Command::new("/usr/bin/python3").arg(script).arg(anchor).output().unwrap();
    assert!(out.status.success(), "Python reader: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (n, path) = l.split_once(" | ")?;
            Some((path.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// A path's functions of hot.py alone, named `hot.py:NAME` in the
/// archive (`<module> > main > step_one > hot_a`).
fn python_part(path: &str) -> String {
    path.split(" > ").filter_map(|f| f.strip_prefix("hot.py:")).collect::<Vec<_>>().join(" > ")
}

/// The spins' shares under their callers: within 5 points of 4/9, 2/9
/// and 3/9.
fn check_shares(paths: &HashMap<String, u64>) -> f64 {
    let mut by: HashMap<String, u64> = HashMap::new();
    for (p, n) in paths {
        *by.entry(python_part(p)).or_default() += n;
    }
    let get = |k: &str| by.get(&format!("<module> > main > {k}")).copied().unwrap_or(0) as f64;
    let (a1, a2, b) = (get("step_one > hot_a"), get("step_two > hot_a"), get("step_two > hot_b"));
    let total = a1 + a2 + b;
    assert!(total > 500.0, "too few samples in the spins ({total}): {by:#?}");
    for (what, got, want) in
        [("step_one > hot_a", a1, 4.0 / 9.0), ("step_two > hot_a", a2, 2.0 / 9.0), ("step_two > hot_b", b, 3.0 / 9.0)]
    {
        let share = got / total;
        assert!((share - want).abs() <= 0.05, "{what}: {share:.3} of the spins' samples, not {want:.3}: {by:#?}");
    }
    total
}

#[test]
fn python_frames_interleave_with_native_ones_under_open_mpi() {
    let ok_mpi4py =
        Command::new("/usr/bin/python3").args(["-c", "import mpi4py"]).output().is_ok_and(|o| o.status.success());
    if !required("Debian's python3-mpi4py", ok_mpi4py) {
        return;
    }
    let (_, mpirun, _) = openmpi();
    let dir = fresh_dir("sampling-python");
    let out = trace(&dir, &["--sampling", "1ms", mpirun, "-np", "2", "/usr/bin/python3", &program()], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let anchor = dir.join("traces.otf2");
    let paths = paths(&anchor);
    check_shares(&paths);
    // The barrier's samples under step_one, its caller, with the native
    // frames of mpi4py and Open MPI inside it. A sample taken just before
    // the thread moved on may carry the frames it moved to (the Python
    // frames are read at the drain, up to 1 ms later: docs/sampling.md).
    let barrier: Vec<(&String, u64)> =
        paths.iter().filter(|(p, _)| p.contains("MPI_Barrier")).map(|(p, n)| (p, *n)).collect();
    let all: u64 = barrier.iter().map(|b| b.1).sum();
    let under: u64 = barrier.iter().filter(|(p, _)| python_part(p) == "<module> > main > step_one").map(|b| b.1).sum();
    assert!(all >= 50, "too few samples in MPI_Barrier: {barrier:#?}");
    assert!(under as f64 >= 0.9 * all as f64, "{under} of {all} barrier samples under step_one: {barrier:#?}");
    // otf2-print reads the contexts, hot.py's lines, and the samples.
    let defs = Command::new("otf2-print").arg("-G").arg(&anchor).output().unwrap();
    let defs = text(&defs.stdout);
    assert!(defs.lines().any(|l| l.starts_with("CALLING_CONTEXT ")), "otf2-print -G shows no CALLING_CONTEXT");
    assert!(defs.contains("hot.py"), "no source file hot.py among the definitions");
    let samples: u64 = paths.values().sum();
    let counts = otf2_print_counts(&anchor);
    assert_eq!(counts.get("CALLING_CONTEXT_SAMPLE").copied().unwrap_or(0) as u64, samples, "{counts:?}");
    check_profile(&dir.join("profile.cubex"), &paths);
}

/// The profile's sampled tree: at every call path of the Python
/// functions, `sampled_time` (inclusive, summed over the locations) is the
/// samples whose path starts with it, times 1 ms; `hits` add up to the
/// samples; cube_facts.py found the sums of both trees valid.
fn check_profile(profile: &Path, paths: &HashMap<String, u64>) {
    let Some(python) = pycubexr() else { return };
    let cube = cube_facts(&python, profile);
    let sampled = cube["inclusive"]["sampled_time"].as_object().expect("a sampled_time metric");
    let hits = cube["stored"]["hits"].as_object().expect("a hits metric");
    let sum = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum::<f64>();
    let total_hits: f64 = hits.values().map(sum).sum();
    assert_eq!(total_hits as u64, paths.values().sum::<u64>(), "hits are the samples");
    let mut checked = 0;
    for (cnode, v) in sampled {
        let Some((_, path)) = cnode.split_once('/') else { continue };
        let leaf = path.rsplit('/').next().unwrap_or_default();
        if !["hot.py:hot_a", "hot.py:hot_b", "hot.py:step_one", "hot.py:step_two"].contains(&leaf) {
            continue;
        }
        let prefix = path.replace('/', " > ");
        let want: u64 =
            paths.iter().filter(|(p, _)| **p == prefix || p.starts_with(&format!("{prefix} > "))).map(|(_, n)| n).sum();
        let got = sum(v);
        assert!((got - want as f64 * 1e-3).abs() < 1e-6, "{cnode}: sampled_time {got}, {want} samples");
        checked += 1;
    }
    assert!(checked >= 4, "the profile has {checked} call paths of hot.py's functions: {:#?}", sampled.keys());
}

/// pyenv's CPython 3.X, if installed.
fn pyenv(minor: u32) -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".pyenv/versions");
    let dir = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&format!("3.{minor}.")))?;
    Some(dir.path().join(format!("bin/python3.{minor}")))
}

#[test]
fn python_frames_are_read_from_cpython_3_10_to_3_13() {
    let mut ran = Vec::new();
    for minor in [10, 11, 12, 13] {
        let python = if minor == 11 { Some(PathBuf::from("/usr/bin/python3")) } else { pyenv(minor) };
        let Some(python) = python.filter(|p| p.exists()) else {
            eprintln!("CPython 3.{minor} not found (pyenv): its frames are not tested");
            continue;
        };
        let dir = fresh_dir(&format!("sampling-python-3{minor}"));
        let out = trace(&dir, &["--sampling", "1ms", s(&python), &program(), "--no-mpi"], &[]);
        assert!(out.status.success(), "3.{minor}: {}", text(&out.stderr));
        let paths = paths(&dir.join("traces.otf2"));
        check_shares(&paths);
        ran.push(minor);
    }
    assert!(ran.contains(&11), "Debian's python3 (3.11) was not run");
}

/// The benchmark's hook (`_GPUTRACE_TEST_SAMPLING_NO_PYTHON`,
/// bench/sampling_python.sh) leaves the Python frames out: the same
/// program's samples keep their native frames only.
#[test]
fn the_no_python_hook_leaves_the_native_frames_only() {
    let dir = fresh_dir("sampling-no-python");
    let hook = (config::hooks::SAMPLING_NO_PYTHON.name, "1");
    let out = trace(&dir, &["--sampling", "1ms", "/usr/bin/python3", &program(), "--no-mpi", "0.3"], &[hook]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paths = paths(&dir.join("traces.otf2"));
    let samples: u64 = paths.values().sum();
    assert!(samples > 100, "too few samples ({samples}): {paths:#?}");
    assert!(paths.keys().all(|p| !p.contains(".py:")), "Python frames with the hook: {paths:#?}");
}
