//! The Cube profile (`profile.cubex`) every merge writes, read back with
//! pycubexr (tests/scripts/cube_facts.py, in the virtual environment
//! scripts/setup.sh makes): the bundled MPI example under `mpirun` gives
//! visits equal to its calls (as the program makes them and as the archive
//! counts them), times that nest (the root's inclusive time is its
//! children's plus its own) and add up to `gputrace stats`' per function,
//! and bytes equal to the MPI matrix and the archive's collectives; the
//! CUDA fixture gives each kernel's time and visits as `gputrace stats`
//! reads them in the archive. Profile-only runs (`GPUTRACE_ENABLE_TRACING=
//! false`) write no archive and the same numbers; a profile that cannot
//! be written is one error line and leaves the archive whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// The Python of scripts/setup.sh's environment with pycubexr.
pub(crate) fn pycubexr() -> Option<PathBuf> {
    let python = test_cache().join("pycubexr/bin/python");
    let ok = Command::new(&python).args(["-c", "import pycubexr"]).output().is_ok_and(|o| o.status.success());
    required(&format!("pycubexr ({})", python.display()), ok).then_some(python)
}

/// What pycubexr reads in a profile.
pub(crate) fn cube_facts(python: &Path, profile: &Path) -> Value {
    let out = Command::new(python).arg(workspace().join("tests/scripts/cube_facts.py")).arg(profile).output().unwrap();
    assert!(out.status.success(), "pycubexr failed on {}: {}", profile.display(), text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `gputrace stats --report NAME --format json DIR`: the report's rows.
fn stats(dir: &Path, report: &str) -> Vec<Value> {
    let out = run(Command::new(gputrace()).args(["stats", "--report", report, "--format", "json"]).arg(dir));
    assert!(out.status.success(), "stats {report}: {}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v[report]["rows"].as_array().cloned().unwrap_or_default()
}

const STEPS: i64 = 40;
const RANKS: usize = 4;

/// examples/mpi_ring.c, built once with Open MPI's compiler.
fn ring() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let (mpicc, _, _) = openmpi();
            let exe = scratch().join("profile-mpi_ring");
            let out = Command::new(mpicc)
                .arg("-O1")
                .arg("-o")
                .arg(&exe)
                .arg(workspace().join("examples/mpi_ring.c"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            exe
        })
        .clone()
}

/// The ring traced into a fresh directory with `env`; returns it.
fn traced_ring(name: &str, env: &[(&str, &str)]) -> PathBuf {
    let (_, mpirun, _) = openmpi();
    let exe = ring();
    let dir = fresh_dir(name);
    let steps = STEPS.to_string();
    let n = RANKS.to_string();
    let out = trace(&dir, &[mpirun, "-np", &n, exe.to_str().unwrap(), &steps], env);
    assert_eq!(out.status.code(), Some(0), "gputrace failed: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("ring: {RANKS} ranks, {STEPS} steps")), "{}", text(&out.stdout));
    dir
}

/// Per location (by column), its group's rank.
fn ranks(cube: &Value) -> Vec<u32> {
    cube["locations"].as_array().unwrap().iter().map(|l| l["rank"].as_u64().unwrap() as u32).collect()
}

/// The stored values of `metric` at call path `path`, per location.
fn row<'a>(cube: &'a Value, metric: &str, path: &str) -> &'a Vec<Value> {
    cube["stored"][metric][path].as_array().unwrap_or_else(|| panic!("no {metric} at {path}"))
}

/// Sum of `metric` at call paths whose region is `region` (any depth), per
/// location.
fn by_region(cube: &Value, metric: &str, region: &str) -> Vec<f64> {
    let n = cube["locations"].as_array().unwrap().len();
    let mut sum = vec![0.0; n];
    for (path, c) in cube["cnodes"].as_object().unwrap() {
        if c["region"] == region {
            for (i, v) in row(cube, metric, path).iter().enumerate() {
                sum[i] += v.as_f64().unwrap();
            }
        }
    }
    sum
}

/// The call paths directly under the root, by region name.
fn top_level(cube: &Value) -> (String, Vec<String>) {
    let (root, info) = cube["cnodes"].as_object().unwrap().iter().find(|(_, c)| c["parent"].is_null()).unwrap();
    (root.clone(), info["children"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect())
}

/// Visits and bytes per (rank, call path): what a rerun of the same
/// program must give again.
fn counts(cube: &Value) -> BTreeMap<(u32, String, String), u64> {
    let ranks = ranks(cube);
    let mut out = BTreeMap::new();
    for metric in ["visits", "bytes_sent", "bytes_received"] {
        for (path, values) in cube["stored"][metric].as_object().unwrap() {
            for (i, v) in values.as_array().unwrap().iter().enumerate() {
                out.insert((ranks[i], metric.to_string(), path.clone()), v.as_u64().unwrap());
            }
        }
    }
    out
}

#[test]
fn the_profile_of_the_mpi_example_holds_its_calls_times_and_bytes() {
    let Some(python) = pycubexr() else { return };
    let dir = traced_ring("profile-ring", &[]);
    let cube = cube_facts(&python, &dir.join("profile.cubex"));
    let archive = facts(&dir.join("traces.otf2"));

    // Score-P's metric kinds: time inclusive, counts exclusive.
    assert_eq!(cube["metrics"]["time"], serde_json::json!(["INCLUSIVE", "DOUBLE", "sec"]));
    assert_eq!(cube["metrics"]["visits"], serde_json::json!(["EXCLUSIVE", "UINT64", "occ"]));
    assert_eq!(cube["metrics"]["bytes_sent"], serde_json::json!(["EXCLUSIVE", "UINT64", "bytes"]));
    // The archive's system tree: one thread per rank.
    let ranks = ranks(&cube);
    assert_eq!(ranks, (0..RANKS as u32).collect::<Vec<_>>());
    for l in cube["locations"].as_array().unwrap() {
        assert_eq!((l["type"].as_str(), l["group_type"].as_str()), (Some("thread"), Some("process")));
        assert_eq!(l["group"], format!("MPI Rank {}", l["rank"]));
    }

    // Visits: the program's calls, and the archive's Enter events, per rank.
    let (root, top) = top_level(&cube);
    assert_eq!(root, "profile-mpi_ring", "the root is the program");
    let calls: BTreeMap<&str, i64> = [
        ("MPI_Init", 1),
        ("MPI_Comm_rank", 1),
        ("MPI_Comm_size", 1),
        ("MPI_Irecv", 2 * STEPS),
        ("MPI_Isend", 2 * STEPS),
        ("MPI_Waitall", STEPS),
        ("MPI_Send", STEPS),
        ("MPI_Recv", STEPS),
        ("MPI_Allreduce", STEPS / 10),
        ("MPI_Bcast", 1),
        ("MPI_Finalize", 1),
    ]
    .into();
    let names: Vec<&str> = top.iter().map(|p| p.rsplit('/').next().unwrap()).collect();
    assert_eq!(names.iter().copied().collect::<std::collections::BTreeSet<_>>(), calls.keys().copied().collect());
    for (i, &rank) in ranks.iter().enumerate() {
        assert_eq!(row(&cube, "visits", &root)[i], 1, "the root is visited once");
        let archive_regions = archive["regions"][rank.to_string()].as_object().unwrap();
        let mut seen = BTreeMap::new();
        for path in &top {
            let name = path.rsplit('/').next().unwrap();
            let visits = row(&cube, "visits", path)[i].as_i64().unwrap();
            assert_eq!(visits, calls[name], "rank {rank}: {name} calls");
            seen.insert(name.to_string(), Value::from(visits));
        }
        assert_eq!(&seen.into_iter().collect::<serde_json::Map<_, _>>(), archive_regions, "rank {rank}: Enters");
        // The inclusive visits at the root: every visit of the rank.
        let all: i64 = calls.values().sum::<i64>() + 1;
        assert_eq!(cube["inclusive"]["visits"][&root][i], all);
    }

    // Time nests: at every call path and location the exclusive time is
    // not negative, and the root's inclusive time is its children's plus
    // its own.
    for (path, c) in cube["cnodes"].as_object().unwrap() {
        for (i, excl) in cube["exclusive"]["time"][path].as_array().unwrap().iter().enumerate() {
            assert!(excl.as_f64().unwrap() >= -1e-12, "{path} on location {i}: exclusive time {excl}");
        }
        let _ = c;
    }
    for i in 0..RANKS {
        let incl = row(&cube, "time", &root)[i].as_f64().unwrap();
        let own = cube["exclusive"]["time"][&root][i].as_f64().unwrap();
        let children: f64 = top.iter().map(|p| row(&cube, "time", p)[i].as_f64().unwrap()).sum();
        assert!(incl > 0.0 && own >= 0.0, "location {i}: {incl} {own}");
        assert!((incl - (children + own)).abs() < 1e-9, "location {i}: {incl} != {children} + {own}");
    }
    // ... and per function it is what `gputrace stats` reads in the archive.
    for r in stats(&dir, "mpi_sum") {
        let name = r["Name"].as_str().unwrap();
        let total = by_region(&cube, "time", name).iter().sum::<f64>();
        let want = r["Total Time (ns)"].as_f64().unwrap() / 1e9;
        assert!((total - want).abs() < 1e-6, "{name}: profile {total} s, stats {want} s");
        let visits = by_region(&cube, "visits", name).iter().sum::<f64>();
        assert_eq!(visits, r["Instances"].as_f64().unwrap(), "{name} instances");
    }

    // Bytes: point-to-point as the MPI matrix has them, collectives as the
    // archive's CollectiveEnd events; and as the program sends them.
    let mut sent = [0i64; RANKS];
    let mut received = [0i64; RANKS];
    for r in stats(&dir, "mpi_matrix") {
        let rank = |k: &str| r[k].as_str().unwrap().trim_start_matches("rank ").parse::<usize>().unwrap();
        sent[rank("Sender")] += r["Bytes"].as_i64().unwrap();
        received[rank("Receiver")] += r["Bytes"].as_i64().unwrap();
    }
    let mut coll_sent = [0i64; RANKS];
    let mut coll_received = [0i64; RANKS];
    for c in archive["collectives"].as_array().unwrap() {
        let r = c[0].as_u64().unwrap() as usize;
        coll_sent[r] += c[4].as_i64().unwrap();
        coll_received[r] += c[5].as_i64().unwrap();
    }
    let at = |metric: &str, names: &[&str], i: usize| -> i64 {
        names.iter().map(|n| by_region(&cube, metric, n)[i] as i64).sum()
    };
    for (i, &rank) in ranks.iter().enumerate() {
        let r = rank as usize;
        assert_eq!(at("bytes_sent", &["MPI_Isend", "MPI_Send"], i), sent[r], "rank {rank}: p2p bytes sent");
        // Non-blocking receives complete, with their bytes, in MPI_Waitall.
        assert_eq!(at("bytes_received", &["MPI_Waitall", "MPI_Recv"], i), received[r], "rank {rank}: p2p received");
        assert_eq!(at("bytes_sent", &["MPI_Allreduce", "MPI_Bcast"], i), coll_sent[r], "rank {rank}: coll sent");
        let coll = at("bytes_received", &["MPI_Allreduce", "MPI_Bcast"], i);
        assert_eq!(coll, coll_received[r], "rank {rank}: collective bytes received");
        let total: i64 = names.iter().map(|n| by_region(&cube, "bytes_sent", n)[i] as i64).sum();
        assert_eq!(total, sent[r] + coll_sent[r], "rank {rank}: every byte sent is at a call path");
        // The halos: two sends of 256 doubles a step; the token: one long.
        assert_eq!(at("bytes_sent", &["MPI_Isend"], i), STEPS * 2 * 256 * 8, "rank {rank}: halo bytes");
        assert_eq!(at("bytes_sent", &["MPI_Send"], i), STEPS * 8, "rank {rank}: token bytes");
    }
    assert!(sent.iter().all(|&b| b > 0) && coll_sent.iter().any(|&b| b > 0));

    // The summary names the profile.
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    assert!(summary.contains(&format!("profile: {} (", dir.join("profile.cubex").display())), "{summary}");
}

#[test]
fn profile_only_writes_no_archive_and_the_same_counts() {
    let Some(python) = pycubexr() else { return };
    let full = traced_ring("profile-full", &[]);
    let only = traced_ring("profile-only", &[("GPUTRACE_ENABLE_TRACING", "false")]);
    assert!(!only.join("traces.otf2").exists() && !only.join("traces").exists(), "an archive was written");
    let summary = std::fs::read_to_string(only.join("summary.txt")).unwrap();
    assert!(summary.contains("no archive written (GPUTRACE_ENABLE_TRACING=false)"), "{summary}");
    assert!(summary.contains("profile: "), "{summary}");
    let a = cube_facts(&python, &full.join("profile.cubex"));
    let b = cube_facts(&python, &only.join("profile.cubex"));
    // The program is deterministic: the same calls, the same bytes.
    assert_eq!(counts(&a), counts(&b));
    assert_eq!(a["metrics"], b["metrics"]);
}

#[test]
fn without_profiling_only_the_archive_is_written() {
    let dir = traced_ring("profile-off", &[("GPUTRACE_ENABLE_PROFILING", "false")]);
    assert!(dir.join("traces.otf2").is_file());
    assert!(!dir.join("profile.cubex").exists() && !dir.join("summary.txt").exists());
    // The flag says the same.
    let (_, mpirun, _) = openmpi();
    let flagged = fresh_dir("profile-flag");
    let out = trace(&flagged, &["--no-profile", mpirun, "-np", "2", ring().to_str().unwrap(), "10"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(flagged.join("traces.otf2").is_file() && !flagged.join("profile.cubex").exists());
}

#[test]
fn a_profile_that_cannot_be_written_is_one_error_and_the_archive_stays_whole() {
    let dir = traced_ring("profile-blocked", &[KEEP_RAW, ("GPUTRACE_ENABLE_PROFILING", "false")]);
    let before = facts(&dir.join("traces.otf2"));
    // Where the profile goes, a directory with something in it.
    let blocked = dir.join("profile.cubex");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("keep"), b"mine").unwrap();
    let out = merge(&dir, true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let want = format!("gputrace: error: the profile could not be written: cannot write {}: ", blocked.display());
    assert!(errors[0].starts_with(&want), "{stderr}");
    assert!(errors[0].ends_with(&format!("the archive {} is complete", dir.join("traces.otf2").display())), "{stderr}");
    // The archive is whole and the same; what was in the way is untouched;
    // nothing half-written is left; the raw streams are kept.
    let after = facts(&dir.join("traces.otf2"));
    assert_well_formed(&after);
    assert_eq!(after["regions"], before["regions"]);
    assert_eq!(std::fs::read(blocked.join("keep")).unwrap(), b"mine");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(dir.join("raw").is_dir());
}

#[test]
fn the_profile_of_the_cuda_fixture_gives_each_kernels_time_and_visits() {
    let Some(python) = pycubexr() else { return };
    let results = fresh_dir("profile-cuda");
    std::fs::create_dir_all(&results).unwrap();
    crate::cuda::replay_and_merge(&results, "basic", crate::cuda::all());
    let exp = results.join("exp-basic");
    let cube = cube_facts(&python, &exp.join("profile.cubex"));
    let streams: Vec<usize> = cube["locations"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "accelerator stream")
        .map(|(i, _)| i)
        .collect();
    assert!(!streams.is_empty(), "no GPU stream in {}", cube["locations"]);
    let (root, top) = top_level(&cube);
    let kernels = stats(&exp, "gpu_kern_sum");
    assert!(!kernels.is_empty());
    let mut all_kernels = 0.0;
    for k in &kernels {
        let name = k["Name"].as_str().unwrap();
        // A kernel is a call path right under its stream's root.
        let path = format!("{root}/{name}");
        assert!(top.contains(&path), "{path} not under the root: {top:?}");
        let visits: f64 = by_region(&cube, "visits", name).iter().sum();
        assert_eq!(visits, k["Instances"].as_f64().unwrap(), "{name} launches");
        let time: f64 = by_region(&cube, "kernel_time", name).iter().sum();
        let want = k["Total Time (ns)"].as_f64().unwrap() / 1e9;
        assert!((time - want).abs() < 1e-9, "{name}: kernel time {time} s, stats {want} s");
        // Kernel time is kernel's time, and only at kernels and roots.
        assert_eq!(time, by_region(&cube, "time", name).iter().sum::<f64>());
        all_kernels += want;
    }
    // Inclusive at the streams' root: all their kernels.
    let at_root: f64 = streams.iter().map(|&i| row(&cube, "kernel_time", &root)[i].as_f64().unwrap()).sum();
    assert!((at_root - all_kernels).abs() < 1e-9, "{at_root} vs {all_kernels}");
    // Copies and memsets: their bytes, by kind (their region), as stats has them.
    let mut checked = 0;
    for op in stats(&exp, "gpu_mem_size_sum") {
        let name = op["Operation"].as_str().unwrap();
        let metric = if name.contains("memset") { "memset_bytes" } else { "copy_bytes" };
        let bytes: f64 = by_region(&cube, metric, name).iter().sum();
        assert_eq!(bytes, op["Total (bytes)"].as_f64().unwrap(), "{name} bytes");
        assert_eq!(by_region(&cube, "visits", name).iter().sum::<f64>(), op["Count"].as_f64().unwrap(), "{name}");
        checked += 1;
    }
    assert!(checked > 0);
    // Host threads hold the API calls; no kernel time there.
    let host: Vec<usize> = (0..ranks(&cube).len()).filter(|i| !streams.contains(i)).collect();
    for &i in &host {
        assert_eq!(row(&cube, "kernel_time", &root)[i], 0.0);
    }
}

/// The cube crate's own output, read by pycubexr: rows land at the call
/// paths and locations they were set for, whatever the metric's kind (the
/// enumerations of exclusive and inclusive metrics differ on this tree).
#[test]
fn pycubexr_reads_what_the_cube_writer_wrote() {
    use cube::{Cube, DataType, GroupType, LocationType, Metric, MetricKind, Region};
    let Some(python) = pycubexr() else { return };
    let mut c = Cube::new();
    let visits =
        c.metric(Metric::new("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ"), None).unwrap();
    let time = c.metric(Metric::new("time", "Time", DataType::Double, MetricKind::Inclusive, "sec"), None).unwrap();
    let main = c.region(Region::new("main", "user", "function"));
    let a = c.region(Region::new("a", "user", "function"));
    let b = c.region(Region::new("b <&>", "mpi", "point2point"));
    let n_main = c.cnode(main, None).unwrap();
    let n_a = c.cnode(a, Some(n_main)).unwrap();
    let n_b = c.cnode(b, Some(n_main)).unwrap();
    let n_ab = c.cnode(b, Some(n_a)).unwrap();
    let machine = c.system_tree_node("machine", "machine", None).unwrap();
    let host = c.system_tree_node("host", "node", Some(machine)).unwrap();
    let gpu = c.system_tree_node("GPU", "GPU", Some(host)).unwrap();
    let ctx = c.location_group("context", 0, GroupType::Accelerator, gpu).unwrap();
    let stream = c.location("stream", 0, LocationType::AcceleratorStream, ctx).unwrap();
    let p0 = c.location_group("MPI Rank 0", 0, GroupType::Process, host).unwrap();
    let t0 = c.location("Master thread", 0, LocationType::Thread, p0).unwrap();
    for (n, v) in [(n_main, 1u64), (n_a, 2), (n_b, 3), (n_ab, 4)] {
        c.set(visits, n, t0, v).unwrap();
        c.set(visits, n, stream, 10 * v).unwrap();
    }
    for (n, v) in [(n_main, 10.0), (n_a, 6.0), (n_b, 3.0), (n_ab, 4.0)] {
        c.set(time, n, t0, v).unwrap();
    }
    let dir = fresh_dir("cube-writer");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("test.cubex");
    c.write_to(&path).unwrap();
    let facts = cube_facts(&python, &path);
    let names: Vec<&str> = facts["locations"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Master thread", "stream"], "a node's groups come before its child nodes");
    let stored = |m: &str, p: &str| facts["stored"][m][p].clone();
    assert_eq!(stored("visits", "main"), serde_json::json!([1, 10]));
    assert_eq!(stored("visits", "main/a"), serde_json::json!([2, 20]));
    assert_eq!(stored("visits", "main/b <&>"), serde_json::json!([3, 30]));
    assert_eq!(stored("visits", "main/a/b <&>"), serde_json::json!([4, 40]));
    assert_eq!(stored("time", "main/a"), serde_json::json!([6.0, 0.0]));
    assert_eq!(stored("time", "main/b <&>"), serde_json::json!([3.0, 0.0]));
    assert_eq!(stored("time", "main/a/b <&>"), serde_json::json!([4.0, 0.0]));
    assert_eq!(facts["exclusive"]["time"]["main"], serde_json::json!([1.0, 0.0]));
    assert_eq!(facts["inclusive"]["visits"]["main"], serde_json::json!([10, 100]));
}
