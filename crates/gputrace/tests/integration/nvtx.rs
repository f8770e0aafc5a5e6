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
pub(crate) fn headers() -> Option<PathBuf> {
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
pub(crate) fn build(compiler: &str, source: &str, headers: &Path) -> PathBuf {
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

/// NCCL's ranges (domain "NCCL") go to the NCCL plugin, which records
/// them as NCCL regions, the group holding its calls; with
/// `GPUTRACE_NCCL_ENABLE=no` they are NVTX ranges of domain NCCL.
#[test]
fn nccl_domain_ranges_go_to_the_nccl_plugin() {
    let Some(headers) = headers() else { return };
    if !required("gcc", have("gcc")) {
        return;
    }
    let exe = build("gcc", "nccl_domain.c", &headers).display().to_string();
    let dir = fresh_dir("nvtx-nccl-domain");
    let out = trace(&dir, &[&exe, "3"], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Nothing lost: the exit handler, run after glibc dropped the main
    // thread's state, once counted an event lost.
    assert!(
        !stderr.contains("repaired") && !stderr.contains("[gputrace] warning") && !stderr.contains("lost:"),
        "{stderr}"
    );
    let facts = nvtx_facts(&dir.join("traces.otf2"));
    assert!(facts["regions"].as_object().unwrap().keys().all(|k| !k.starts_with("nccl")), "{}", facts["regions"]);
    let f = crate::util::facts(&dir.join("traces.otf2"));
    assert_well_formed(&f);
    let regions = &f["regions"]["0"];
    for name in ["ncclGroup", "ncclGroupStart", "ncclSend", "ncclGroupEnd", "ncclAllGather"] {
        assert_eq!(regions[name], 3, "{name}: {regions}");
    }
    let mut cmd = Command::new("otf2-print");
    let printed = text(&run(cmd.arg(dir.join("traces.otf2"))).stdout);
    let enters: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("ENTER") || l.starts_with("LEAVE"))
        .filter_map(|l| l.split('"').nth(1))
        .take(10)
        .collect();
    assert_eq!(
        enters,
        [
            "ncclGroup",
            "ncclGroupStart",
            "ncclGroupStart",
            "ncclSend",
            "ncclSend",
            "ncclGroupEnd",
            "ncclGroupEnd",
            "ncclGroup",
            "ncclAllGather",
            "ncclAllGather"
        ]
    );

    let off = fresh_dir("nvtx-nccl-domain-off");
    let out = trace(&off, &[&exe, "3"], &[("GPUTRACE_NCCL_ENABLE", "no")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let facts = nvtx_facts(&off.join("traces.otf2"));
    assert_eq!(facts["regions"]["ncclSend"], serde_json::json!([["NCCL", "PushPop", "USER"]]), "{}", facts["regions"]);
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

// Real GPU runs: the raw streams of tests/gpu/programs/nvtx_cuda.cu and
// torch_nvtx.py traced on an H100 (tests/fixtures/gpu-nvtx), merged here.

/// Copies a fixture's raw streams into `results/exp-<exp>/raw`, writes its
/// expected lines as `results/<exp>.out` (the layout
/// tests/gpu/check_archives.py reads) and merges it.
fn merge_gpu_fixture(fixture: &str, exp: &str) -> PathBuf {
    let from = workspace().join("tests/fixtures/gpu-nvtx").join(fixture);
    let results = fresh_dir(&format!("nvtx-gpu-{fixture}"));
    let dir = results.join(format!("exp-{exp}"));
    copy_dir(&from.join("raw"), &dir.join("raw"));
    std::fs::copy(from.join("expected.txt"), results.join(format!("{exp}.out"))).unwrap();
    let out = merge(&dir, false);
    assert!(out.status.success(), "merge of {fixture}: {}", text(&out.stderr));
    results
}

/// `gputrace stats --report nvtx_kern_sum --format csv`: kernel instances
/// per range.
fn kernels_per_range_csv(dir: &Path) -> BTreeMap<String, u64> {
    let out = run(Command::new(gputrace()).args(["stats", "--report", "nvtx_kern_sum", "--format", "csv"]).arg(dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut csv = csv::Reader::from_reader(out.stdout.as_slice());
    let header = csv.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name}: {header:?}"));
    let (range, instances) = (col("Range"), col("Instances"));
    let mut per_range = BTreeMap::new();
    for row in csv.records() {
        let row = row.unwrap();
        *per_range.entry(row[range].to_owned()).or_insert(0) += row[instances].parse::<u64>().unwrap();
    }
    per_range
}

/// `nvtx_kern_sum` as JSON against the Python reader's kernels per (range,
/// kernel): the same rows, each with the same count, total, min and max;
/// returns the reader's facts.
fn check_nvtx_kern_sum(dir: &Path) -> Value {
    let reader = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/nvtx_kernels.py"))
        .arg(dir.join("traces.otf2"))
        .output()
        .unwrap();
    assert!(reader.status.success(), "{}", text(&reader.stderr));
    let facts: Value = serde_json::from_slice(&reader.stdout).unwrap();
    let out = run(Command::new(gputrace()).args(["stats", "--report", "nvtx_kern_sum", "--format", "json"]).arg(dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen = BTreeMap::new();
    for row in report["nvtx_kern_sum"]["rows"].as_array().unwrap() {
        let key = format!("{}|{}", row["Range"].as_str().unwrap(), row["Kernel Name"].as_str().unwrap());
        seen.insert(key, json!([row["Instances"], row["Total Time (ns)"], row["Min (ns)"], row["Max (ns)"]]));
    }
    let want: BTreeMap<String, Value> =
        facts["rows"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(seen, want, "nvtx_kern_sum rows (count, total, min, max) against the reader's");
    facts
}

#[test]
fn gpu_fixture_cuda_kernels_sum_under_the_ranges_that_launched_them() {
    let results = merge_gpu_fixture("nvtx_cuda", "nvtx");
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   nvtx: range step: 6 vs 6",
            "ok   nvtx: range async copy: 1 vs 1",
            "ok   nvtx: kernel count: 53 vs 53",
            "ok   nvtx: kernels launched inside forward (innermost range, same thread): 18 vs 18",
            "ok   nvtx: kernels launched inside backward (innermost range, same thread): 24 vs 24",
            "ok   nvtx: kernels launched inside grad sync (innermost range, same thread): 6 vs 6",
            "ok   nvtx: kernels launched inside worker kernels (innermost range, same thread): 5 vs 5",
        ],
    );
    let dir = results.join("exp-nvtx");
    let want: BTreeMap<String, u64> = [(":backward", 24), (":forward", 18), (":grad sync", 6), (":worker kernels", 5)]
        .map(|(r, n)| (r.to_owned(), n))
        .into();
    assert_eq!(kernels_per_range_csv(&dir), want, "nvtx_kern_sum: kernels per range");
    let facts = check_nvtx_kern_sum(&dir);
    assert_eq!((facts["kernels"].as_u64(), facts["outside"].as_u64()), (Some(53), Some(0)));
    // The terminal table: base names, every kernel under a range.
    let out = run(Command::new(gputrace()).args(["stats", "--report", "nvtx_kern_sum"]).arg(&dir));
    let table = text(&out.stdout);
    assert!(table.contains("NVTX Range Kernel Summary") && table.contains(" sync_grads"), "{table}");
    assert!(!table.contains("(float*, int)") && !table.contains("outside every"), "{table}");
}

#[test]
fn gpu_fixture_pytorch_kernels_sum_under_their_ranges() {
    let results = merge_gpu_fixture("torch_nvtx", "torch_nvtx");
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   torch_nvtx: range train step: 5 vs 5",
            "ok   torch_nvtx: range forward: 5 vs 5",
            "ok   torch_nvtx: range backward: 5 vs 5",
            "ok   torch_nvtx: range emit_nvtx step: 1 vs 1",
            "ok   torch_nvtx: emit_nvtx recorded aten:: operator ranges",
        ],
    );
    let dir = results.join("exp-torch_nvtx");
    let facts = check_nvtx_kern_sum(&dir);
    let per_range = kernels_per_range_csv(&dir);
    let listed: u64 = per_range.values().sum();
    let (kernels, outside) = (facts["kernels"].as_u64().unwrap(), facts["outside"].as_u64().unwrap());
    assert_eq!(kernels, 125, "the run's kernels");
    assert_eq!(listed + outside, kernels, "{per_range:?}");
    // The forward pass runs on the thread that pushed "forward"; emit_nvtx
    // puts each operator's kernels under its own aten:: range.
    assert!(per_range.get(":forward").is_some_and(|&n| n > 0), "{per_range:?}");
    assert!(per_range.keys().any(|r| r.starts_with(":aten::")), "{per_range:?}");
    // Kernels of PyTorch templates: base names in the terminal.
    let out = run(Command::new(gputrace()).args(["stats", "--report", "nvtx_kern_sum"]).arg(&dir));
    let table = text(&out.stdout);
    assert!(table.contains("at::native::vectorized_elementwise_kernel"), "{table}");
    assert!(!table.contains("CUDAFunctor_add<float>"), "full names only in CSV and JSON: {table}");
    assert!(table.contains(&format!("{outside} kernel(s) launched outside every")), "{table}");
}
