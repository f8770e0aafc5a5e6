//! The floor plan holds: every workspace crate depends only on the crates
//! its stage may use (`docs/architecture.md`, "Crates and arrows"), read
//! from `cargo metadata`. Dev-dependencies are not arrows: tests may drive
//! a producer to make their input. A `pub use` of another workspace crate
//! counts as the arrows it opens: a crate that depends on the re-exporter
//! must name the re-exported crate in its own Cargo.toml.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::util::*;

/// Each workspace package and the workspace packages it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("cupti-sys", &[]),
    ("nvml-sys", &[]),
    ("otf2-sys", &[]),
    ("merge-mpi-sys", &[]),
    ("gputrace-clock", &[]),
    ("gputrace-raw", &["gputrace-clock"]),
    ("gputrace-config", &[]),
    ("gputrace-recorder", &["gputrace-clock", "gputrace-raw", "gputrace-config", "gputrace-unwind"]),
    ("gputrace-unwind", &["gputrace-raw"]),
    (
        "gputrace-cuda",
        &["gputrace-recorder", "gputrace-clock", "gputrace-raw", "gputrace-config", "cupti-sys", "nvml-sys"],
    ),
    ("gputrace-mpi-core", &["gputrace-recorder", "gputrace-clock", "gputrace-raw", "gputrace-config"]),
    ("gputrace-mpi", &["gputrace-mpi-core", "gputrace-recorder", "gputrace-raw", "gputrace-config"]),
    ("gputrace-mpi-mpich", &["gputrace-mpi-core", "gputrace-recorder", "gputrace-raw", "gputrace-config"]),
    ("gputrace-nccl", &["gputrace-recorder", "gputrace-clock", "gputrace-raw", "gputrace-config"]),
    ("gputrace-nvtx", &["gputrace-recorder", "gputrace-clock", "gputrace-raw", "gputrace-config"]),
    ("gputrace-sampling", &["gputrace-recorder", "gputrace-raw", "gputrace-config", "gputrace-unwind"]),
    ("otf2", &["otf2-sys"]),
    ("gputrace-summary", &[]),
    ("gputrace-merge", &["gputrace-clock", "gputrace-raw", "otf2", "gputrace-config", "gputrace-summary"]),
    ("gputrace-cube", &[]),
    ("gputrace-profile", &["gputrace-merge", "gputrace-cube", "otf2", "gputrace-raw"]),
    ("gputrace-report", &["otf2", "gputrace-cube", "gputrace-summary"]),
    (
        "gputrace",
        &[
            "gputrace-config",
            "gputrace-clock",
            "gputrace-raw",
            "gputrace-merge",
            "gputrace-profile",
            "gputrace-report",
            "otf2",
            "merge-mpi-sys",
            "gputrace-summary",
        ],
    ),
];

/// Arrows that must never appear, whatever the table above says: the
/// rules of the design, kept even if the table is edited carelessly.
const NEVER: &[(&str, &str)] = &[
    ("gputrace", "gputrace-recorder"),
    ("gputrace", "gputrace-cuda"),
    ("gputrace", "gputrace-mpi-core"),
    ("gputrace", "gputrace-nccl"),
    ("gputrace", "gputrace-nvtx"),
    ("gputrace", "gputrace-sampling"),
    ("gputrace", "gputrace-unwind"),
    ("gputrace", "gputrace-mpi"),
    ("gputrace", "gputrace-mpi-mpich"),
    ("gputrace-report", "gputrace-raw"),
    ("gputrace-report", "gputrace-merge"),
    ("gputrace-merge", "gputrace-recorder"),
    ("gputrace-merge", "gputrace-report"),
    ("gputrace-merge", "gputrace-profile"),
    ("gputrace-merge", "gputrace-cube"),
    // The Cube writer knows nothing of traces: an analysis adds its
    // metrics through it as the profile does.
    ("gputrace-cube", "gputrace-merge"),
    ("gputrace-cube", "otf2"),
    ("gputrace-cube", "gputrace-raw"),
    ("gputrace-profile", "gputrace-report"),
    // The run summary holds plain values, under the merge and the reports
    // alike.
    ("gputrace-summary", "gputrace-merge"),
    ("gputrace-summary", "gputrace-report"),
    ("gputrace-summary", "gputrace-raw"),
    ("gputrace-summary", "otf2"),
    ("otf2", "gputrace-raw"),
    ("otf2", "gputrace-config"),
    ("otf2", "gputrace-clock"),
    ("gputrace-report", "gputrace-clock"),
    ("gputrace-cube", "gputrace-clock"),
    // The clock is the bottom of the recording side: it reads no stream.
    ("gputrace-clock", "gputrace-raw"),
    ("gputrace-clock", "gputrace-config"),
    ("gputrace-raw", "gputrace-recorder"),
    ("gputrace-config", "gputrace-recorder"),
    ("gputrace-recorder", "otf2"),
    // The MPI merge's library is the command's alone.
    ("gputrace-merge", "merge-mpi-sys"),
    ("otf2", "merge-mpi-sys"),
    ("gputrace-recorder", "merge-mpi-sys"),
    ("gputrace-recorder", "otf2-sys"),
    ("gputrace-cuda", "otf2"),
    ("gputrace-mpi-core", "otf2"),
    ("gputrace-nccl", "otf2"),
    ("gputrace-nvtx", "otf2"),
    ("gputrace-sampling", "otf2"),
    ("gputrace-unwind", "otf2"),
    ("gputrace-merge", "gputrace-unwind"),
    ("gputrace-mpi", "otf2"),
    ("gputrace-mpi-mpich", "otf2"),
];

/// `cargo metadata` of the workspace (its packages only).
fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = run(Command::new(cargo).current_dir(workspace()).args([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]));
    assert!(out.status.success(), "cargo metadata failed: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The normal and build dependencies of `package` on workspace packages
/// (`names`).
fn workspace_deps<'a>(package: &'a serde_json::Value, names: &BTreeSet<String>) -> Vec<&'a serde_json::Value> {
    package["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].as_str() != Some("dev"))
        .filter(|d| names.contains(d["name"].as_str().unwrap()))
        .collect()
}

/// The workspace's packages and their normal and build dependencies on
/// other workspace packages, from `cargo metadata`.
fn arrows() -> BTreeMap<String, BTreeSet<String>> {
    arrows_of(&metadata())
}

fn arrows_of(meta: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = workspace_deps(p, &names).iter().map(|d| d["name"].as_str().unwrap().to_string()).collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// A `pub use` in package `from` of something of package `to`: every
/// package that depends on `from` can reach `to` through it.
#[derive(Debug, Clone)]
struct Tunnel {
    from: String,
    to: String,
    /// Where: `path:line: the line`.
    at: String,
}

/// The name a crate's code calls a workspace package by: its library's
/// name (or the dependency's rename).
fn crate_names(meta: &serde_json::Value) -> BTreeMap<String, String> {
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let lib = p["targets"].as_array().unwrap().iter().find(|t| {
                t["kind"].as_array().unwrap().iter().any(|k| matches!(k.as_str(), Some("lib" | "rlib" | "cdylib")))
            })?;
            Some((p["name"].as_str().unwrap().to_string(), lib["name"].as_str().unwrap().replace('-', "_")))
        })
        .collect()
}

/// Every `pub use` of another workspace crate in the library sources of
/// the workspace's packages.
fn tunnels_of(meta: &serde_json::Value) -> Vec<Tunnel> {
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    let crates = crate_names(meta);
    let root = workspace();
    let mut tunnels = Vec::new();
    for p in packages {
        let from = p["name"].as_str().unwrap();
        // What this package's code calls each workspace dependency.
        let local: BTreeMap<String, String> = workspace_deps(p, &names)
            .iter()
            .filter_map(|d| {
                let pkg = d["name"].as_str().unwrap();
                let name = d["rename"].as_str().map(str::to_string).or_else(|| crates.get(pkg).cloned())?;
                Some((name, pkg.to_string()))
            })
            .collect();
        let manifest = Path::new(p["manifest_path"].as_str().unwrap());
        let mut files = Vec::new();
        rust_files(&manifest.parent().unwrap().join("src"), &mut files);
        for file in files {
            let body = std::fs::read_to_string(&file).unwrap();
            for (n, line) in body.lines().enumerate() {
                let Some(rest) = line.trim_start().strip_prefix("pub use ") else { continue };
                let rest = rest.trim_start_matches("::");
                // `pub use a::b;`, `pub use a as b;`, `pub use {a::b, c};`
                let roots: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split(['}', ',']).map(str::trim).collect(),
                    None => vec![rest],
                };
                for r in roots {
                    let first = r.trim_start_matches("::").split([':', ';', ' ', ',', '{']).next().unwrap_or("");
                    if let Some(to) = local.get(first) {
                        let path = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
                        tunnels.push(Tunnel {
                            from: from.into(),
                            to: to.clone(),
                            at: format!("{path}:{}: {}", n + 1, line.trim()),
                        });
                    }
                }
            }
        }
    }
    tunnels
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The tunnels that let a package reach a crate it does not depend on:
/// one line per (package, crate reached), naming the `pub use`. A
/// re-export of a re-export is followed (`a` re-exports `b`, which
/// re-exports `c`: whoever depends on `a` reaches `c`).
fn tunnel_violations(arrows: &BTreeMap<String, BTreeSet<String>>, tunnels: &[Tunnel]) -> Vec<String> {
    // What each package lets its dependents reach, and through which line.
    let mut reach: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for t in tunnels {
        reach.entry(&t.from).or_default().entry(&t.to).or_insert(&t.at);
    }
    loop {
        let mut grew = false;
        for t in tunnels {
            let further: Vec<(&str, &str)> =
                reach.get(t.to.as_str()).map(|r| r.keys().map(|k| (*k, t.at.as_str())).collect()).unwrap_or_default();
            let mine = reach.entry(&t.from).or_default();
            for (k, at) in further {
                if k != t.from && !mine.contains_key(k) {
                    mine.insert(k, at);
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut wrong = Vec::new();
    for (pkg, deps) in arrows {
        for d in deps {
            for (to, at) in reach.get(d.as_str()).into_iter().flatten() {
                if *to != pkg.as_str() && !deps.contains(*to) {
                    wrong.push(format!(
                        "{pkg} reaches {to} through a re-export in {d} ({at}) without an arrow {pkg} → {to} in its Cargo.toml"
                    ));
                }
            }
        }
    }
    wrong
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
    let meta = metadata();
    let arrows = arrows_of(&meta);
    let graph: Vec<String> =
        arrows.iter().map(|(p, d)| format!("{p} → {}", d.iter().cloned().collect::<Vec<_>>().join(", "))).collect();
    eprintln!("crate graph (cargo metadata):\n  {}", graph.join("\n  "));
    let mut wrong = violations(&arrows);
    wrong.extend(tunnel_violations(&arrows, &tunnels_of(&meta)));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_forbidden_arrow_is_caught() {
    let mut arrows = arrows();
    arrows.get_mut("gputrace").unwrap().insert("gputrace-recorder".into());
    arrows.get_mut("otf2").unwrap().insert("gputrace-raw".into());
    arrows.get_mut("gputrace-report").unwrap().insert("gputrace-raw".into());
    arrows.get_mut("gputrace-merge").unwrap().insert("gputrace-recorder".into());
    let wrong = violations(&arrows);
    assert!(wrong.iter().any(|w| w == "gputrace-report → gputrace-raw is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "gputrace-merge → gputrace-recorder is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "gputrace → gputrace-recorder is forbidden"), "{wrong:?}");
    assert!(wrong.iter().any(|w| w == "otf2 → gputrace-raw is forbidden"), "{wrong:?}");
}

#[test]
fn a_re_export_tunnel_is_caught() {
    let meta = metadata();
    let arrows = arrows_of(&meta);
    let mut tunnels = tunnels_of(&meta);
    // The merge handing the command the clock, and the MPI core handing
    // its wrappers a crate they do not name, through a chain.
    tunnels.push(Tunnel {
        from: "gputrace-merge".into(),
        to: "gputrace-recorder".into(),
        at: "merge/src/lib.rs:1: pub use recorder;".into(),
    });
    tunnels.push(Tunnel {
        from: "gputrace-recorder".into(),
        to: "gputrace-clock".into(),
        at: "runtime/src/lib.rs:1: pub use gputrace_clock;".into(),
    });
    tunnels.push(Tunnel {
        from: "gputrace-mpi-core".into(),
        to: "gputrace-clock".into(),
        at: "mpi/src/lib.rs:1: pub use gputrace_clock::now;".into(),
    });
    let wrong = tunnel_violations(&arrows, &tunnels);
    let has = |s: &str| wrong.iter().any(|w| w.starts_with(s));
    assert!(has("gputrace reaches gputrace-recorder through a re-export in gputrace-merge"), "{wrong:?}");
    assert!(has("gputrace-profile reaches gputrace-clock through a re-export in gputrace-merge"), "{wrong:?}");
    assert!(has("gputrace-mpi reaches gputrace-clock through a re-export in gputrace-mpi-core"), "{wrong:?}");
    assert!(!wrong.iter().any(|w| w.starts_with("gputrace reaches gputrace-clock")), "{wrong:?}");
}

/// The crate map of `docs/architecture.md` ("Crates and arrows"), read as
/// package → its workspace dependencies: a line names a crate's folder
/// (`crates/raw`, `…/mpi/openmpi`, `crates/sys/{a,b}`) and, after its last
/// `→`, the packages it depends on (`(nothing)`, or none for a line with
/// no arrow; parenthesized remarks are not packages).
fn documented_arrows(meta: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let section = &doc[doc.find("## Crates and arrows").expect("the section")..];
    let block = section.split("```").nth(1).expect("the crate map");
    let root = workspace();
    let folders: Vec<(String, String)> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let dir = Path::new(p["manifest_path"].as_str().unwrap()).parent().unwrap();
            (dir.strip_prefix(&root).unwrap().display().to_string(), p["name"].as_str().unwrap().to_string())
        })
        .collect();
    let mut map = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let first = line.split_whitespace().next().unwrap();
        let folders_named: Vec<String> = match (first.find('{'), first.find('}')) {
            (Some(a), Some(b)) => first[a + 1..b].split(',').map(|m| format!("{}{m}", &first[..a])).collect(),
            _ => vec![first.to_string()],
        };
        let deps: BTreeSet<String> = match line.rfind('→') {
            None => BTreeSet::new(),
            Some(i) => {
                let mut right = line[i + '→'.len_utf8()..].to_string();
                while let (Some(a), Some(b)) = (right.find('('), right.find(')')) {
                    right.replace_range(a..=b.max(a), "");
                }
                right.split(',').map(str::trim).filter(|d| !d.is_empty()).map(str::to_string).collect()
            }
        };
        for f in folders_named {
            let tail = f.trim_start_matches('…');
            let matching: Vec<&(String, String)> =
                folders.iter().filter(|(dir, _)| *dir == f || (tail != f && dir.ends_with(tail))).collect();
            assert_eq!(matching.len(), 1, "the map's line {line:?} names no one crate folder ({f})");
            map.insert(matching[0].1.clone(), deps.clone());
        }
    }
    map
}

#[test]
fn the_documented_map_is_the_crate_graph() {
    let meta = metadata();
    let arrows = arrows_of(&meta);
    let documented = documented_arrows(&meta);
    let mut wrong = Vec::new();
    for (pkg, deps) in &arrows {
        match documented.get(pkg) {
            None => wrong.push(format!("{pkg} is not in docs/architecture.md's crate map")),
            Some(doc) if doc != deps => wrong.push(format!(
                "{pkg}: docs/architecture.md says → {}, cargo metadata says → {}",
                doc.iter().cloned().collect::<Vec<_>>().join(", "),
                deps.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
