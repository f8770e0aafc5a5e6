//! Per-iteration analysis on a real run (tests/programs/nvtx/iterations.c:
//! 3 ranks × 6 iterations in the NVTX range "iteration", 20 ms of
//! "compute" each, then MPI_Allreduce; rank 1 computes 40 ms in iteration
//! 4): that iteration, and only it, has rank 1's compute at the top of
//! its critical path (its 40 ms within 10 % of what rank 1 slept), rank 1
//! as its straggler late by the 20 ms more it slept (within 10 %) because
//! of "compute", and a what-if projection of rank 1 at the median within
//! 10 % of the other iterations' median length (the run without the
//! delay).

use std::collections::HashMap;

use super::{ONE_AT_A_TIME, analyze, analyze_out, int};
use crate::util::*;

#[test]
fn each_iteration_has_its_critical_path_straggler_and_what_if() {
    let Some(headers) = crate::nvtx::headers() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (mpicc, mpirun, _) = openmpi();
    let exe = crate::nvtx::build(mpicc, "iterations.c", &headers);
    let dir = fresh_dir("an-iterations");
    let exe = exe.display().to_string();
    let out = trace(&dir, &[mpirun, "--oversubscribe", "-np", "3", &exe, "6", "20", "4", "1"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let slept: HashMap<i64, i64> = stdout
        .lines()
        .filter_map(|l| {
            let (rank, ns) = l.strip_prefix("iterations rank ")?.split_once(": slow_ns=")?;
            Some((rank.parse().ok()?, ns.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(slept.len(), 3, "{stdout}");
    let extra = slept[&1] - (slept[&0] + slept[&2]) / 2;
    let near = |got: i64, want: i64| (got - want).abs() * 10 <= want;

    let a = analyze(&dir, &["--iterations", "iteration"]);
    let it = &a["iterations"];
    assert_eq!((it["region"].as_str(), int(&it["count"])), (Some("iteration"), 6), "{it:#}");
    let items = it["items"].as_array().unwrap();
    assert_eq!(items.len(), 6);
    let numbers: Vec<i64> = items.iter().map(|i| int(&i["number"])).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    // The slow one: rank 1's compute on top of its path.
    let slow = &items[3];
    let top = &slow["critical_path"]["steps"][0];
    assert_eq!((top["process"].as_str(), top["activity"].as_str()), (Some("rank 1"), Some("compute")), "{slow:#}");
    assert!(near(int(&top["time_ns"]), slept[&1]), "{} on the path vs {} slept: {slow:#}", top["time_ns"], slept[&1]);
    let s = &slow["straggler"];
    assert_eq!(
        (s["rank"].as_i64(), s["cause"].as_str(), int(&s["times_last"])),
        (Some(1), Some("compute"), 1),
        "{s:#}"
    );
    assert!(near(int(&s["lateness_ns"]), extra), "lateness {} vs {extra}: {s:#}", s["lateness_ns"]);
    // Removing the delay: the iteration as long as the others.
    let mut others: Vec<i64> =
        items.iter().enumerate().filter(|(k, _)| *k != 3).map(|(_, i)| int(&i["length_ns"])).collect();
    others.sort_unstable();
    let without = others[others.len() / 2];
    let w = &slow["what_if"][0];
    assert_eq!(w["process"].as_str(), Some("rank 1"), "{slow:#}");
    assert!(
        near(int(&w["projected_ns"]), without),
        "projected {} vs {without} without the delay: {w:#}",
        w["projected_ns"]
    );
    assert!(int(&slow["length_ns"]) > without + extra / 2, "{slow:#}");
    // The others: no rank's compute twice the rest, no straggler late by
    // more than a tenth of the delay.
    for (k, i) in items.iter().enumerate().filter(|(k, _)| *k != 3) {
        let late = i["straggler"].get("lateness_ns").map_or(0, int);
        assert!(late < extra / 10, "iteration {}: {i:#}", k + 1);
        assert!(i["what_if"].as_array().unwrap().iter().all(|w| int(&w["saved_ns"]) < extra / 10), "{i:#}");
    }
    // The table and the line say it.
    let table = text(&analyze_out(&dir, &["--iterations", "iteration"]).stdout);
    assert!(table.contains("Iterations (iteration)"), "{table}");
    assert!(table.contains("Longest iteration: 4 of 6 (iteration)") && table.contains("straggler rank 1"), "{table}");
    // A name no region has: a note, no iterations.
    let none = analyze(&dir, &["--iterations", "epoch"]);
    assert!(none["iterations"].is_null());
    assert!(none["notes"].to_string().contains("no region named epoch"), "{}", none["notes"]);
}
