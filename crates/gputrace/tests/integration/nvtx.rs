//! NVTX annotations recorded through NVTX's own injection interface: a C
//! program built with the nvtx3 headers, a Python program using the
//! `nvtx` package, and MPI ranks with ranges around their calls, run
//! under `gputrace`; the archive read back by the Python otf2 reader
//! (tests/scripts/nvtx_facts.py) must hold every range and mark the
//! programs made, nested as they were, on the threads and lanes they
//! belong to, and `gputrace stats --report nvtx_sum` must report the
//! durations that reader measures. `GPUTRACE_NVTX_ENABLE=no` leaves the
//! library out of the process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::util::*;

/// The NVTX v3 headers scripts/setup.sh extracted from NVIDIA's wheel.
fn headers() -> Option<PathBuf> {
    let dir = test_cache().join("nvtx/12.9.79/include");
    let ok = dir.join("nvtx3/nvToolsExt.h").is_file();
    required(&format!("the NVTX headers ({})", dir.display()), ok).then_some(dir)
}

/// The Python of scripts/setup.sh's environment with the `nvtx` package.
fn nvtx_python() -> Option<PathBuf> {
    let python = test_cache().join("nvtx-python/bin/python");
    let ok = Command::new(&python).args(["-c", "import nvtx"]).output().is_ok_and(|o| o.status.success());
    required(&format!("the Python nvtx package ({})", python.display()), ok).then_some(python)
}

static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// Compiles `tests/programs/nvtx/<source>` with `compiler` against the
/// NVTX headers, once.
fn build(compiler: &str, source: &str, headers: &Path) -> PathBuf {
    let key = format!("{compiler}:{source}");
    let mut done = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = done.iter().find(|(k, _)| *k == key) {
        return p.clone();
    }
    let src = workspace().join("tests/programs/nvtx").join(source);
    let exe = scratch().join(format!("nvtx-{}-{}", compiler.replace('.', "_"), source.replace('.', "_")));
    let out = Command::new(compiler)
        .arg("-O1")
        .arg("-I")
        .arg(headers)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(["-pthread", "-ldl"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{compiler} {source}: {}", text(&out.stderr));
    done.push((key, exe.clone()));
    exe
}

fn nvtx_facts(anchor: &Path) -> Value {
    let out = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/nvtx_facts.py"))
        .arg(anchor)
        .output()
        .unwrap();
    assert!(out.status.success(), "Python reader failed on {}: {}", anchor.display(), text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each location's nesting paths and their counts.
fn paths(facts: &Value) -> BTreeMap<String, Value> {
    facts["locations"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v["paths"].clone())).collect()
}

fn expect_paths(facts: &Value, want: &[(&str, Value)]) {
    let want: BTreeMap<String, Value> = want.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    assert_eq!(paths(facts), want, "ranges per location and nesting");
    assert!(facts["unbalanced"].as_array().unwrap().is_empty(), "unbalanced: {}", facts["unbalanced"]);
}

/// `gputrace stats --report nvtx_sum` against the reader's durations: the
/// same ranges, each with the same count, total, minimum and maximum.
fn check_nvtx_sum(dir: &Path, facts: &Value) {
    let out = run(Command::new(gputrace()).args(["stats", "--report", "nvtx_sum", "--format", "json"]).arg(dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["nvtx_sum"]["rows"].as_array().unwrap();
    let mut seen = BTreeMap::new();
    let mut percent = 0.0;
    for row in rows {
        let key = format!("{}|{}", row["Style"].as_str().unwrap(), row["Range"].as_str().unwrap());
        let got = json!([row["Instances"], row["Total Time (ns)"], row["Min (ns)"], row["Max (ns)"]]);
        seen.insert(key, got);
        percent += row["Time (%)"].as_f64().unwrap();
    }
    let want: BTreeMap<String, Value> =
        facts["ranges"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(seen, want, "nvtx_sum rows (count, total, min, max) against the reader's");
    assert!((percent - 100.0).abs() < 0.01, "time shares add up to {percent}");
}

#[test]
fn c_annotations_are_ranges_marks_and_lanes() {
    let Some(headers) = headers() else { return };
    if !required("gcc", have("gcc")) {
        return;
    }
    let exe = build("gcc", "annotations.c", &headers);
    let (iterations, handoffs, tasks) = (5, 3, 7);
    let dir = fresh_dir("nvtx-c");
    let args = [iterations, handoffs, tasks].map(|n| n.to_string());
    let exe = exe.display().to_string();
    let out = trace(&dir, &[&exe, &args[0], &args[1], &args[2]], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "injection mapped: yes\n", "{stderr}");
    assert!(stderr.contains("[gputrace] archive:"), "{stderr}");
    assert!(stderr.contains("NVTX Range Summary"), "the run's summary shows the ranges: {stderr}");

    let facts = nvtx_facts(&dir.join("traces.otf2"));
    expect_paths(
        &facts,
        &[
            (
                "Process 0/driver",
                json!({
                    "iteration": iterations,
                    "iteration > assemble": iterations,
                    "iteration > solve": iterations,
                    "iteration > solve > smooth": iterations,
                    "iteration > iteration done": iterations,
                    "wide \u{2713}": 1,
                    "converged": 1,
                }),
            ),
            ("Process 0/worker", json!({ "worker task": tasks })),
            ("Process 0/resource-named", json!({ "named by resource": 1 })),
            ("Process 0/NVTX ranges", json!({ "handoff": handoffs, "phase A": 1, "domain span": 1 })),
            ("Process 0/NVTX ranges 2", json!({ "phase B": 1 })),
        ],
    );
    let regions = &facts["regions"];
    for (name, domain, style) in [
        ("iteration", "", "PushPop"),
        ("smooth", "solver", "PushPop"),
        ("iteration done", "", "Mark"),
        ("converged", "solver", "Mark"),
        ("handoff", "", "StartEnd"),
        ("domain span", "solver", "StartEnd"),
    ] {
        assert_eq!(regions[name], json!([[domain, style, "USER"]]), "{name}");
    }
    assert_eq!(facts["marks"], json!({ ":iteration done": [iterations, 0], "solver:converged": [1, 0] }));
    let solve = &facts["attributes"]["solve"];
    assert_eq!(solve["NVTX category"], json!(vec!["setup"; iterations]), "a named category");
    assert_eq!(solve["NVTX color"], json!(vec![0xff33_6699u32; iterations]));
    assert_eq!(solve["NVTX payload"], json!((0..iterations).collect::<Vec<_>>()));
    assert_eq!(facts["attributes"]["smooth"]["NVTX category"], json!(vec!["linear algebra"; iterations]));
    let ranges: Vec<&String> = facts["ranges"].as_object().unwrap().keys().collect();
    assert_eq!(
        ranges,
        [
            "PushPop|:assemble",
            "PushPop|:iteration",
            "PushPop|:named by resource",
            "PushPop|:solve",
            "PushPop|:wide \u{2713}",
            "PushPop|:worker task",
            "PushPop|solver:smooth",
            "StartEnd|:handoff",
            "StartEnd|:phase A",
            "StartEnd|:phase B",
            "StartEnd|solver:domain span",
        ]
    );
    check_nvtx_sum(&dir, &facts);

    // The Chrome export shows every range and mark, in the "nvtx" category.
    let json_path = dir.join("trace.json");
    let out = run(Command::new(gputrace()).args(["export", "--format", "chrome", "-o"]).arg(&json_path).arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chrome: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let events = chrome.get("traceEvents").unwrap_or(&chrome).as_array().unwrap();
    let mut slices: BTreeMap<String, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "nvtx") {
        *slices.entry(e["name"].as_str().unwrap().to_string()).or_default() += 1;
    }
    let mut enters: BTreeMap<String, u64> = BTreeMap::new();
    for p in paths(&facts).values() {
        for (path, n) in p.as_object().unwrap() {
            let name = path.rsplit(" > ").next().unwrap().to_string();
            *enters.entry(name).or_default() += n.as_u64().unwrap();
        }
    }
    assert_eq!(slices, enters, "Chrome slices of the nvtx category");
}

#[test]
fn python_annotations_are_ranges_marks_and_lanes() {
    let Some(python) = nvtx_python() else { return };
    let steps = 4;
    let dir = fresh_dir("nvtx-py");
    let program = workspace().join("tests/programs/nvtx/annotations.py").display().to_string();
    let python = python.display().to_string();
    let out = trace(&dir, &[&python, &program, &steps.to_string()], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), "injection mapped: yes\n", "{stderr}");

    let facts = nvtx_facts(&dir.join("traces.otf2"));
    expect_paths(
        &facts,
        &[
            (
                "Process 0/Master thread",
                json!({
                    "train step": steps,
                    "train step > forward": steps,
                    "train step > backward": steps,
                    "train step > step done": steps,
                }),
            ),
            ("Process 0/Pthread 1", json!({ "load batch": steps })),
            ("Process 0/NVTX ranges", json!({ "prefetch": steps, "epoch": 1 })),
        ],
    );
    assert_eq!(facts["regions"]["train step"], json!([["trainer", "PushPop", "USER"]]));
    assert_eq!(facts["regions"]["forward"], json!([["", "PushPop", "USER"]]), "the decorator's registered string");
    assert_eq!(facts["regions"]["epoch"], json!([["trainer", "StartEnd", "USER"]]));
    assert_eq!(facts["marks"], json!({ ":step done": [steps, 0] }));
    let step = &facts["attributes"]["train step"];
    assert_eq!(step["NVTX category"], json!(vec!["compute"; steps]));
    assert_eq!(step["NVTX payload"], json!((0..steps).collect::<Vec<_>>()));
    check_nvtx_sum(&dir, &facts);
}

#[test]
fn mpi_calls_nest_in_the_ranks_ranges() {
    let Some(headers) = headers() else { return };
    let (mpicc, mpirun, _) = openmpi();
    if !required("Open MPI", have(mpicc) && have(mpirun)) {
        return;
    }
    let exe = build(mpicc, "mpi_ranges.c", &headers).display().to_string();
    let dir = fresh_dir("nvtx-mpi");
    let out = trace(&dir, &[mpirun, "-np", "2", &exe, "4"], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("[gputrace] warning"), "{stderr}");
    let facts = nvtx_facts(&dir.join("traces.otf2"));
    let p = paths(&facts);
    for rank in 0..2 {
        let master = &p[&format!("MPI Rank {rank}/Master thread")];
        assert_eq!(master["exchange"], 4, "rank {rank}: {master}");
        assert_eq!(master["exchange > MPI_Sendrecv"], 4, "rank {rank}: {master}");
        assert_eq!(master["reduce > MPI_Allreduce"], 4, "rank {rank}: {master}");
    }
    assert!(facts["unbalanced"].as_array().unwrap().is_empty(), "unbalanced: {}", facts["unbalanced"]);
    let f = crate::util::facts(&dir.join("traces.otf2"));
    assert_well_formed(&f);
}

/// Off is off: the library is not in the process, nothing is recorded.
#[test]
fn nvtx_off_records_nothing_and_loads_nothing() {
    let Some(headers) = headers() else { return };
    if !required("gcc", have("gcc")) {
        return;
    }
    let exe = build("gcc", "annotations.c", &headers).display().to_string();
    for (name, flags, env) in [
        ("nvtx-off-env", &[][..], &[("GPUTRACE_NVTX_ENABLE", "no")][..]),
        ("nvtx-off-flag", &["--no-nvtx"][..], &[][..]),
    ] {
        let dir = fresh_dir(name);
        let mut args: Vec<&str> = flags.to_vec();
        args.extend([exe.as_str(), "2", "1", "1"]);
        let out = trace(&dir, &args, env);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert_eq!(text(&out.stdout), "injection mapped: no\n", "{name}: {stderr}");
        let streams: Vec<String> = std::fs::read_dir(dir.join("raw"))
            .map(|d| d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned())).collect())
            .unwrap_or_default();
        assert!(streams.iter().all(|s| !s.ends_with(".nvtx.gtr")), "{name}: {streams:?}");
    }
}
