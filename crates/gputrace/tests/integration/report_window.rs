//! `--from/--to/--ranks` of `stats`, `export` and `plot`, the per-event
//! `*_trace` reports and `stats -o`: on a trace of tests/programs/mpi/cg.c
//! (halo exchanges and allreduces), each window's counts checked against
//! what the Python OTF2 reader computes from the whole archive
//! (tests/scripts/window_facts.py).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// cg.c on 4 ranks, 30 iterations of 2 ms: (dir, trace length in ns).
fn cg_run() -> &'static (PathBuf, u64) {
    static RUN: OnceLock<(PathBuf, u64)> = OnceLock::new();
    RUN.get_or_init(|| {
        let (mpicc, mpirun, _) = openmpi();
        let exe = compile(mpicc, "cg.c");
        let dir = fresh_dir("window-cg");
        let out = trace(&dir, &[mpirun, "-np", "4", s(&exe), "30", "2000"], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let length = window_facts(&dir, 0, 0, "all")["length_ns"].as_u64().unwrap();
        (dir, length)
    })
}

/// What the Python reader finds in a window of the whole archive.
fn window_facts(dir: &Path, from: u64, to: u64, ranks: &str) -> Value {
    let out = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/window_facts.py"))
        .arg(dir.join("traces.otf2"))
        .args([from.to_string(), to.to_string(), ranks.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn int(v: &Value, column: &str) -> i64 {
    v[column].as_i64().unwrap_or_else(|| panic!("{column} in {v}"))
}

/// `stats --format json` of `report` with `extra` options.
fn stats(dir: &Path, report: &str, extra: &[&str]) -> Value {
    let mut args = vec!["stats", "--format", "json", "--report", report];
    args.extend(extra);
    args.push(s(dir));
    let all: Value = serde_json::from_slice(&ok(gt(&args)).stdout).unwrap();
    all[report].clone()
}

#[test]
fn a_window_keeps_exactly_what_the_python_reader_finds_in_it() {
    let (dir, length) = cg_run();
    let (a, b) = (length * 3 / 10, length * 6 / 10);
    let (from, to) = (format!("{a}ns"), format!("{b}ns"));
    // (options, python's from and to, python's ranks)
    let windows: [(Vec<&str>, u64, u64, &str); 4] = [
        (vec!["--from", &from, "--to", &to], a, b, "all"),
        (vec!["--from", &from, "--to", &to, "--ranks", "1,3"], a, b, "1,3"),
        (vec!["--to", &to, "--ranks", "0-2"], 0, b, "0,1,2"),
        (vec!["--from", &from], a, u64::MAX / 4, "all"),
    ];
    for (options, from_ns, to_ns, ranks) in &windows {
        let want = window_facts(dir, *from_ns, *to_ns, ranks);
        let regions = want["regions"].as_object().unwrap();
        // mpi_sum: instances and time in the window, per name.
        let got = stats(dir, "mpi_sum", options);
        let mut rows: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for r in got["rows"].as_array().unwrap() {
            rows.insert(r["Name"].as_str().unwrap().into(), (int(r, "Instances"), int(r, "Total Time (ns)")));
        }
        let expected: BTreeMap<String, (i64, i64)> = regions
            .iter()
            .filter(|(name, _)| name.starts_with("MPI_"))
            .map(|(name, v)| (name.clone(), (v[0].as_i64().unwrap(), v[1].as_i64().unwrap())))
            .collect();
        assert_eq!(rows, expected, "{options:?}");
        assert!(rows.contains_key("MPI_Allreduce"), "{options:?}: {rows:?}");
        // Per rank: exactly the ranks asked for.
        let got = stats(dir, "mpi_sum", &[options.as_slice(), &["--by-rank"]].concat());
        let mut per_rank: BTreeMap<(String, String), i64> = BTreeMap::new();
        for r in got["rows"].as_array().unwrap() {
            let rank = r["Process"].as_str().unwrap().trim_start_matches("rank ").to_owned();
            per_rank.insert((rank, r["Name"].as_str().unwrap().into()), int(r, "Instances"));
        }
        let mut expected = BTreeMap::new();
        for (rank, names) in want["per_rank"].as_object().unwrap() {
            for (name, n) in names.as_object().unwrap() {
                expected.insert((rank.clone(), name.clone()), n.as_i64().unwrap());
            }
        }
        assert_eq!(per_rank, expected, "{options:?}");
    }
    // The whole window is the whole archive.
    assert_eq!(stats(dir, "mpi_sum", &["--from", "0", "--to", "1000s"]), stats(dir, "mpi_sum", &[]));
}

#[test]
fn an_exported_window_is_clipped_balanced_and_of_the_ranks_asked() {
    let (dir, length) = cg_run();
    let (a, b) = (length * 4 / 10, length * 5 / 10);
    let json = scratch().join("window-cg.json");
    let (from, to) = (format!("{a}ns"), format!("{b}ns"));
    let out = ok(gt(&[
        "export",
        "--format",
        "chrome",
        "-o",
        s(&json),
        "--from",
        &from,
        "--to",
        &to,
        "--ranks",
        "2-3",
        s(dir),
    ]));
    assert!(text(&out.stderr).contains("wrote"), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let want = window_facts(dir, a, b, "2,3");
    let (lo, hi) = (a as f64 / 1000.0, b as f64 / 1000.0);
    let mut slices = 0;
    let mut pids = std::collections::BTreeSet::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        pids.insert(e["pid"].as_u64().unwrap());
        let ts = e["ts"].as_f64().unwrap_or(lo);
        match ph {
            "X" if e["cat"] == "analysis" => {}
            "X" => {
                slices += 1;
                let end = ts + e["dur"].as_f64().unwrap();
                assert!(ts >= lo - 1e-3 && end <= hi + 1e-3, "outside [{lo}, {hi}]: {e}");
            }
            "s" | "f" => assert!(ts >= lo - 1e-3 && ts <= hi + 1e-3, "a flow outside the window: {e}"),
            _ => {}
        }
    }
    assert_eq!(slices, want["slices"].as_u64().unwrap(), "slices: one per region instance in the window");
    // Processes (pid = process + 1) of ranks 2 and 3 only.
    assert_eq!(pids.into_iter().collect::<Vec<_>>(), [3, 4]);
}

#[test]
fn a_plot_of_a_window_says_its_lanes_span_colours_and_scale() {
    let (dir, length) = cg_run();
    let (a, b) = (length / 4, length / 2);
    let png = scratch().join("window-cg.png");
    let (from, to) = (format!("{a}ns"), format!("{b}ns"));
    let out = ok(gt(&["plot", "-o", s(&png), "--from", &from, "--to", &to, "--ranks", "0,2", s(dir)]));
    let line = text(&out.stderr);
    assert!(line.contains(&format!("2 lanes, {:.6} s to {:.6} s", a as f64 / 1e9, b as f64 / 1e9)), "{line}");
    // Colours by time, longest first: as mpi_sum's order in that window
    // (MPI calls of cg.c do not nest, so innermost time is their time).
    let sum = stats(dir, "mpi_sum", &["--from", &from, "--to", &to, "--ranks", "0,2"]);
    let mut by_time: Vec<(i64, String)> = sum["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (-int(r, "Total Time (ns)"), r["Name"].as_str().unwrap().to_owned()))
        .collect();
    by_time.sort();
    let colours = line.split("colours by time: ").nth(1).unwrap();
    let named: Vec<&str> = colours.split(", ").map(|c| c.split(' ').next().unwrap()).collect();
    let expected: Vec<&str> = by_time.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(named, expected, "{line}");
    assert!(!line.contains("grey"), "no grey class when every function has a colour: {line}");
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);

    // The heatmap of the whole run: ring neighbours exchange the same
    // bytes, so a linear scale from 0 to that one value.
    let png = scratch().join("window-cg-matrix.png");
    let out = ok(gt(&["plot", "--matrix", "mpi", "-o", s(&png), s(dir)]));
    let matrix = stats(dir, "mpi_matrix", &[]);
    let max = matrix["rows"].as_array().unwrap().iter().map(|r| int(r, "Bytes")).max().unwrap();
    assert_eq!(max, 30 * 64 * 8, "30 iterations, a halo of 64 doubles to each neighbour");
    assert!(text(&out.stderr).contains("colour scale: linear, 0 B to 15.0 KiB"), "{}", text(&out.stderr));
}

#[test]
fn bad_windows_are_one_line_and_exit_2() {
    let (dir, _) = cg_run();
    let d = s(dir);
    let png = scratch().join("never.png");
    let vite = scratch().join("never-vite");
    let cases: [(Vec<&str>, &str); 9] = [
        (vec!["stats", "--from", "5", d], "has no unit"),
        (vec!["stats", "--to", "3h", d], "unknown unit `h`"),
        (vec!["stats", "--from=-1s", d], "not a time"),
        (vec!["stats", "--from", "2s", "--to", "1s", d], "is not before --to"),
        (vec!["stats", "--from", "1000s", d], "after the trace's end"),
        (vec!["plot", "-o", s(&png), "--ranks", "3-1", d], "runs backwards"),
        (vec!["plot", "-o", s(&png), "--ranks", "0,x", d], "not a rank"),
        (
            vec!["export", "--format", "chrome", "-o", s(&png), "--ranks", "2,7-9", d],
            "no rank 7, 8, 9 (its ranks: 0-3)",
        ),
        (vec!["export", "--format", "vite", "-o", s(&vite), "--ranks", "1", d], "are for --format chrome"),
    ];
    for (args, says) in cases {
        let out = gt(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!png.exists() && !vite.exists(), "nothing written for a refused window");
}

#[test]
fn per_event_reports_list_the_longest_calls_as_nsys_names_them() {
    let (dir, _) = cg_run();
    let d = s(dir);
    // nsys's name and ours, the same table.
    let trace = stats(dir, "mpi_trace", &["--longest", "4"]);
    let out = ok(gt(&["stats", "--format", "json", "--report", "mpi_event_trace", "--longest", "4", d]));
    let nsys: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(nsys["mpi_trace"], trace);
    let rows = trace["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let durations: Vec<i64> = rows.iter().map(|r| int(r, "Duration (ns)")).collect();
    assert!(durations.windows(2).all(|w| w[0] >= w[1]), "{durations:?}");
    // The longest is the longest call of mpi_sum, at a time inside the trace.
    let sum = stats(dir, "mpi_sum", &[]);
    let max = sum["rows"].as_array().unwrap().iter().map(|r| int(r, "Max (ns)")).max().unwrap();
    assert_eq!(durations[0], max);
    for r in rows {
        assert!(r["Process"].as_str().unwrap().starts_with("rank "), "{r}");
        assert_eq!(r["Thread"], "Master thread", "{r}");
        assert!(int(r, "Start (ns)") >= 0);
    }
    // Inside a window, the longest are clipped to it.
    let windowed = stats(dir, "mpi_trace", &["--longest", "1", "--from", "0", "--to", "1ms"]);
    assert!(int(&windowed["rows"][0], "Duration (ns)") <= 1_000_000, "{windowed}");
    // A program without CUDA: the CUDA trace reports are empty, not errors.
    assert!(stats(dir, "cuda_gpu_trace", &[])["rows"].as_array().unwrap().is_empty());
    // Not in the default set.
    let all: Value = serde_json::from_slice(&ok(gt(&["stats", "--format", "json", d])).stdout).unwrap();
    assert!(all.get("mpi_trace").is_none() && all.get("mpi_sum").is_some(), "{all}");

    // -o: one CSV file per report with the prefix, as nsys; a JSON file
    // named .json is that file.
    let prefix = scratch().join("window-stats");
    let out = ok(gt(&["stats", "--format", "csv", "--report", "mpi_sum,mpi_trace", "-o", s(&prefix), d]));
    for report in ["mpi_sum", "mpi_trace"] {
        let file = PathBuf::from(format!("{}_{report}.csv", prefix.display()));
        let csv = std::fs::read_to_string(&file).unwrap();
        assert!(csv.lines().count() > 1, "{report}: {csv}");
        assert!(text(&out.stderr).contains(&file.display().to_string()));
    }
    let json = scratch().join("window-stats.json");
    let _ = std::fs::remove_file(&json);
    ok(gt(&["stats", "--format", "json", "--report", "mpi_trace", "-o", s(&json), d]));
    let written: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(written.get("mpi_trace").is_some(), "{written}");
    assert!(!scratch().join("window-stats.json.json").exists());
}
