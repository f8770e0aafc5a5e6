//! The floor plan holds: every workspace crate depends only on the crates
//! its stage may use (`docs/architecture.md`, "Crates and arrows"), read
//! from `cargo metadata`. Dev-dependencies are not arrows: tests may drive
//! a producer to make their input.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::util::*;

/// Each workspace package and the workspace packages it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("cupti-sys", &[]),
    ("nvml-sys", &[]),
    ("otf2-sys", &[]),
    ("mpirt-sys", &[]),
    ("raw", &[]),
    ("config", &[]),
    ("runtime", &["raw", "config"]),
    ("gputrace-cuda", &["runtime", "raw", "config", "cupti-sys", "nvml-sys"]),
    ("gputrace-mpi-core", &["runtime", "raw", "config"]),
    ("gputrace-mpi", &["gputrace-mpi-core", "runtime", "raw", "config"]),
    ("gputrace-mpi-mpich", &["gputrace-mpi-core", "runtime", "raw", "config"]),
    ("gputrace-nccl", &["runtime", "raw", "config"]),
    ("gputrace-nvtx", &["runtime", "raw", "config"]),
    ("otf2", &["otf2-sys"]),
    ("gputrace-summary", &[]),
    ("merge", &["raw", "otf2", "config", "gputrace-summary"]),
    ("cube", &[]),
    ("profile", &["merge", "cube", "otf2", "raw"]),
    ("report", &["otf2", "cube", "gputrace-summary"]),
    ("gputrace", &["config", "merge", "profile", "report", "otf2", "mpirt-sys", "gputrace-summary"]),
];

/// Arrows that must never appear, whatever the table above says: the
/// rules of the design, kept even if the table is edited carelessly.
const NEVER: &[(&str, &str)] = &[
    ("gputrace", "runtime"),
    ("gputrace", "gputrace-cuda"),
    ("gputrace", "gputrace-mpi-core"),
    ("gputrace", "gputrace-nccl"),
    ("gputrace", "gputrace-nvtx"),
    ("gputrace", "gputrace-mpi"),
    ("gputrace", "gputrace-mpi-mpich"),
    ("report", "raw"),
    ("report", "merge"),
    ("merge", "runtime"),
    ("merge", "report"),
    ("merge", "profile"),
    ("merge", "cube"),
    // The Cube writer knows nothing of traces: an analysis adds its
    // metrics through it as the profile does.
    ("cube", "merge"),
    ("cube", "otf2"),
    ("cube", "raw"),
    ("profile", "report"),
    // The run summary holds plain values, under the merge and the reports
    // alike.
    ("gputrace-summary", "merge"),
    ("gputrace-summary", "report"),
    ("gputrace-summary", "raw"),
    ("gputrace-summary", "otf2"),
    ("otf2", "raw"),
    ("otf2", "config"),
    ("raw", "runtime"),
    ("config", "runtime"),
    ("runtime", "otf2"),
    // The MPI merge's library is the command's alone.
    ("merge", "mpirt-sys"),
    ("otf2", "mpirt-sys"),
    ("runtime", "mpirt-sys"),
    ("runtime", "otf2-sys"),
    ("gputrace-cuda", "otf2"),
    ("gputrace-mpi-core", "otf2"),
    ("gputrace-nccl", "otf2"),
    ("gputrace-nvtx", "otf2"),
    ("gputrace-mpi", "otf2"),
    ("gputrace-mpi-mpich", "otf2"),
];

/// The workspace's packages and their normal and build dependencies on
/// other workspace packages, from `cargo metadata`.
fn arrows() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = run(Command::new(cargo).current_dir(workspace()).args([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]));
    assert!(out.status.success(), "cargo metadata failed: {}", text(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| names.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// What is wrong with `arrows`: one line per forbidden or unknown arrow.
fn violations(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (pkg, deps) in arrows {
        let Some(may) = allowed.get(pkg.as_str()) else {
            wrong.push(format!("{pkg} is not in the floor plan (add it to docs/architecture.md and this test)"));
            continue;
        };
        for d in deps {
            if !may.contains(&d.as_str()) {
                wrong.push(format!("{pkg} → {d} is not an allowed arrow"));
            }
            if NEVER.contains(&(pkg.as_str(), d.as_str())) {
                wrong.push(format!("{pkg} → {d} is forbidden"));
            }
        }
    }
    for (pkg, _) in ALLOWED {
        if !arrows.contains_key(*pkg) {
            wrong.push(format!("{pkg} is in the floor plan but not in the workspace"));
        }
    }
    wrong
}

#[test]
fn the_crate_graph_follows_the_floor_plan() {
    let arrows = arrows();
    let graph: Vec<String> =
        arrows.iter().map(|(p, d)| format!("{p} → {}", d.iter().cloned().collect::<Vec<_>>().join(", "))).collect();
    eprintln!("crate graph (cargo metadata):\n  {}", graph.join("\n  "));
    let wrong = violations(&arrows);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_forbidden_arrow_is_caught() {
    let mut arrows = arrows();
    arrows.get_mut("gputrace").unwrap().insert("runtime".into());
    arrows.get_mut("otf2").unwrap().insert("raw".into());
    arrows.get_mut("report").unwrap().insert("raw".into());
    arrows.get_mut("merge").unwrap().insert("runtime".into());
    let wrong = violations(&arrows);
    assert!(wrong.iter().any(|w| w == "report → raw is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "merge → runtime is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "gputrace → runtime is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "otf2 → raw is forbidden"), "{wrong:?}");
}
