//! The analysis commands on real archives: `gputrace stats`, `export`
//! and `plot` on traces of the MPI test programs (under mpirun), of the
//! replayed CUPTI fixture, and on hand-built archives for what this
//! machine cannot record (two GPUs with NVLink, peer copies and NCCL;
//! Score-P's naming); checked against what the programs say they did, the
//! Python reader and decoded PNGs; ViTE renders the ViTE copy.
//!
//! This module holds the runs the tests share (each traced once) and the
//! reading of `stats`' JSON; the tests are in its submodules, by command.

mod archives;
mod errors;
mod export;
mod plots;
mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// `gputrace stats --format json` of some reports.
fn stats(input: &Path, reports: &[&str]) -> Value {
    let mut args = vec!["stats", "--format", "json", s(input)];
    for r in reports {
        args.extend(["--report", r]);
    }
    serde_json::from_slice(&ok(gt(&args)).stdout).unwrap()
}

/// A report's rows by their name column (the last one).
fn rows(stats: &Value, report: &str) -> BTreeMap<String, Value> {
    let t = &stats[report];
    let last = t["columns"].as_array().unwrap().last().unwrap().as_str().unwrap().to_owned();
    t["rows"].as_array().unwrap().iter().map(|r| (r[&last].as_str().unwrap().to_owned(), r.clone())).collect()
}

fn int(v: &Value, column: &str) -> i64 {
    v[column].as_i64().unwrap_or_else(|| panic!("{column} in {v}"))
}

/// An MPI test program traced under mpirun: (dir, program stdout).
fn traced(name: &str, program: &str, ranks: u32, iterations: &str) -> (PathBuf, String) {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, program);
    let dir = fresh_dir(name);
    let np = ranks.to_string();
    let out = trace(&dir, &[mpirun, "-np", &np, s(&exe), "-n", iterations], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (dir, text(&out.stdout))
}

fn p2p_run() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| traced("an-p2p", "p2p.c", 4, "3"))
}

/// The CUPTI fixture replayed into an experiment and merged.
fn cuda_run() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        use gputrace_cuda::capture::Capture;
        let fixture = workspace().join("tests/fixtures/cupti/cuda_basic");
        let mut files: Vec<_> = std::fs::read_dir(&fixture).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let captures: Vec<Capture> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == "cupti"))
            .map(|p| Capture::load(p).unwrap())
            .collect();
        let header = raw::StreamHeader {
            producer: raw::Producer::Cuda,
            host: "gpu-node".into(),
            pid: 468,
            process_start: 1,
            clock_domain: 7,
            monotonic_ns: 1,
            realtime_ns: 1_700_000_000_000_000_000,
            rank_hint: None,
            command: vec!["cuda_basic".into()],
        };
        let all = config::Config::from_pairs(&[]).unwrap().cuda_enable;
        let dir = fresh_dir("an-cuda");
        gputrace_cuda::replay::replay(&captures, &dir, header, gputrace_cuda::convert::Enabled::from_set(&all))
            .unwrap();
        ok(gt(&["merge", s(&dir)]));
        (dir, std::fs::read_to_string(fixture.join("expected.txt")).unwrap())
    })
}

fn gpu_pair() -> &'static archives::GpuPair {
    static ARCHIVE: OnceLock<archives::GpuPair> = OnceLock::new();
    ARCHIVE.get_or_init(|| archives::gpu_pair(&fresh_dir("an-gpus"), 10))
}
