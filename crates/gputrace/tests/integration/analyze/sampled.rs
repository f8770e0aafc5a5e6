//! Where an imbalance's computation went, from sampled call stacks
//! (tests/programs/mpi/hot_imbalance.c, built `-O2 -fomit-frame-pointer
//! -g`, traced with `--sampling 1ms`: every rank spins 0.1 s of CPU time
//! per round in common_work, rank 1 as much again in extra_work, both
//! through the same function busy): `analyze` shows per rank the call
//! paths its computation's samples fell in — rank 1's split evenly
//! between `main > common_work > busy` and `main > extra_work > busy`
//! (within 20 % of each other), rank 0's without extra_work — and the
//! load imbalance finding names rank 1's.

use std::process::Command;

use super::{ONE_AT_A_TIME, analyze, analyze_out};
use crate::util::*;

#[test]
fn the_imbalance_s_computation_is_named_by_its_sampled_call_paths() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_without_frame_pointers(mpicc, "hot_imbalance.c");
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fresh_dir("an-sampled");
    let exe = exe.display().to_string();
    let out = trace(&dir, &["--sampling", "1ms", mpirun, "--oversubscribe", "-np", "2", &exe, "5"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a = analyze(&dir, &[]);
    let hot = a["hot_functions"].as_array().unwrap();
    let share = |rank: i64, path: &str| {
        hot.iter()
            .filter(|h| h["rank"].as_i64() == Some(rank) && h["call_path"].as_str() == Some(path))
            .map(|h| h["share"].as_f64().unwrap())
            .sum::<f64>()
    };
    let (common, extra) = (share(1, "main > common_work > busy"), share(1, "main > extra_work > busy"));
    assert!(common > 30.0 && extra > 30.0, "rank 1: common {common}%, extra {extra}%: {hot:#?}");
    assert!((extra / common - 1.0).abs() <= 0.2, "rank 1: common {common}% vs extra {extra}%");
    assert!(share(0, "main > common_work > busy") > 60.0, "{hot:#?}");
    assert_eq!(share(0, "main > extra_work > busy"), 0.0, "{hot:#?}");
    assert!(hot.iter().all(|h| h["source"].as_str().is_none_or(|s| !s.is_empty())));
    let busy = hot.iter().find(|h| h["function"].as_str() == Some("busy")).unwrap();
    assert!(busy["source"].as_str().unwrap().starts_with("hot_imbalance.c:"), "{busy:#}");
    let imbalance = a["findings"].as_array().unwrap().iter().find(|f| f["pattern"] == "load_imbalance").unwrap();
    let detail = imbalance["detail"].as_str().unwrap();
    assert_eq!(imbalance["rank"].as_i64(), Some(1), "{imbalance:#}");
    assert!(detail.contains("its computation's samples: ") && detail.contains("main > extra_work > busy"), "{detail}");
    let table = text(&analyze_out(&dir, &[]).stdout);
    assert!(table.contains("Where the computation went"), "{table}");

    // The Chrome export: an instant per sample on its thread, with its
    // call path and line; as many as the Python reader counts.
    let json = dir.join("samples.json");
    let out = run(Command::new(gputrace()).args(["export", "--format", "chrome", "-o"]).arg(&json).arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples: Vec<&serde_json::Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "sample").collect();
    let script = "import sys, otf2\nfrom otf2.events import CallingContextSample\n\
                  with otf2.reader.open(sys.argv[1]) as t:\n    \
                  print(sum(isinstance(e, CallingContextSample) for _, e in t.events))";
    let py = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(dir.join("traces.otf2")).output().unwrap();
    assert!(py.status.success(), "{}", text(&py.stderr));
    assert_eq!(samples.len().to_string(), text(&py.stdout).trim());
    let extra =
        samples.iter().find(|e| e["args"]["stack"].as_str().unwrap().ends_with("main > extra_work > busy")).unwrap();
    assert_eq!(
        (extra["ph"].as_str(), extra["name"].as_str(), extra["s"].as_str()),
        (Some("i"), Some("busy"), Some("t"))
    );
    assert!(extra["args"]["source"].as_str().unwrap().starts_with("hot_imbalance.c:"), "{extra}");
}
