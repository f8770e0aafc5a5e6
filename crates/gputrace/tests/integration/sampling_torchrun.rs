//! Sampling under torchrun reaches its workers and only them: a stand-in
//! launcher named `torchrun` (tests/programs/python/torchrun_standin.py:
//! torch is not installed here, and torchrun cannot run without it)
//! starts two workers of tests/programs/python/hot.py with the variables
//! torchrun's agent gives its workers, and spins CPU time of its own. The
//! launcher gets `LD_PRELOAD` with the sampler (it says so), and leaves
//! no stream and no process in the archive; each worker has its samples,
//! with hot.py's Python frames. The real torchrun runs in the GPU tests
//! (tests/gpu/run.sh, part torchsampled).

use std::collections::BTreeSet;
use std::process::Command;

use crate::util::*;

#[test]
fn sampling_reaches_torchruns_workers_and_not_torchrun() {
    let dir = fresh_dir("sampling-torchrun");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let standin = workspace().join("tests/programs/python/torchrun_standin.py");
    std::os::unix::fs::symlink(&standin, bin.join("torchrun")).unwrap();
    let hot = workspace().join("tests/programs/python/hot.py");
    let exp = dir.join("exp");
    let torchrun = bin.join("torchrun");
    let args = ["--sampling", "1ms", s(&torchrun), "--nproc-per-node", "2", s(&hot), "--no-mpi", "0.3"];
    let out = trace(&exp, &args, &[KEEP_RAW]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("standin: the launcher preloads the sampler: True"), "{said}");
    let streams: Vec<_> = std::fs::read_dir(exp.join("raw"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sampling.gtr"))
        .collect();
    assert_eq!(streams.len(), 2, "one sampling stream per worker, none for the launcher: {streams:?}");
    let script = workspace().join("tests/scripts/sampled_paths.py");
    let read =
        Command::new("/usr/bin/python3").arg(script).arg(exp.join("traces.otf2")).arg("--rank").output().unwrap();
    assert!(read.status.success(), "Python reader: {}", text(&read.stderr));
    let paths = text(&read.stdout);
    assert!(!paths.contains("torchrun_standin.py:"), "the launcher was sampled:\n{paths}");
    let mut with_hot = BTreeSet::new();
    for line in paths.lines() {
        let mut parts = line.splitn(3, " | ");
        let (_, group, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if path.contains("hot.py:hot_a") || path.contains("hot.py:hot_b") {
            with_hot.insert(group.to_string());
        }
    }
    assert_eq!(with_hot.len(), 2, "both workers sampled in hot.py's spins: {with_hot:?}\n{paths}");
}
