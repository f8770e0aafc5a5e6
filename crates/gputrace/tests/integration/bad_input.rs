//! Bad input: bad variables, existing directories, damaged raw streams.

use std::process::Command;

use crate::util::*;

#[test]
fn a_bad_value_stops_gputrace_before_launch_with_one_line() {
    let dir = fresh_dir("bad");
    let out = trace(&dir, &["/bin/echo", "never"], &[("GPUTRACE_MPI_ENABLE_GROUPS", "p2p,bogus")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "the program must not run");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("GPUTRACE_MPI_ENABLE_GROUPS=p2p,bogus") && err.contains("unknown value 'bogus'"), "{err}");
    assert!(err.contains("allowed: cg, coll"), "{err}");
    assert!(!dir.exists(), "nothing is created for a refused run");

    for (var, value) in [
        ("GPUTRACE_CUDA_ENABLE", "kernels"),
        ("GPUTRACE_TOTAL_MEMORY", "lots"),
        ("GPUTRACE_ENABLE_TRACING", "maybe"),
        ("GPUTRACE_NVLINK_INTERVAL", "often"),
        ("GPUTRACE_TRACING", "1"),
    ] {
        let out = trace(&fresh_dir("bad"), &["/bin/echo", "never"], &[(var, value)]);
        assert_eq!(out.status.code(), Some(2), "{var}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(var), "{err}");
    }
}

#[test]
fn a_bad_filter_file_is_refused() {
    let filter = scratch().join("bad.filter");
    std::fs::write(&filter, "SCOREP_REGION_NAMES_BEGIN\n  MPI_Send\n").unwrap();
    let out = trace(&fresh_dir("badfilter"), &["/bin/true"], &[("GPUTRACE_FILTERING_FILE", filter.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("line 2"), "{}", text(&out.stderr));
}

#[test]
fn an_existing_experiment_directory_is_never_overwritten() {
    let dir = fresh_dir("exists");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("precious"), "keep").unwrap();
    let out = trace(&dir, &["/bin/true"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("never overwrites"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("precious")).unwrap(), "keep");
}

#[test]
fn damaged_raw_streams_are_salvaged_with_a_warning() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let dir = fresh_dir("salvage");
    let out =
        trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "300"], &[("GPUTRACE_TOTAL_MEMORY", "64k")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = facts(&dir.join("traces.otf2"));
    let total = |f: &serde_json::Value| -> i64 {
        f["locations"].as_object().unwrap().values().map(|l| l["events"].as_i64().unwrap()).sum()
    };
    // Cut one stream in the middle and flip a byte of the other.
    let mut raws: Vec<_> = std::fs::read_dir(dir.join("raw")).unwrap().map(|e| e.unwrap().path()).collect();
    raws.sort();
    let len = std::fs::metadata(&raws[0]).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&raws[0]).unwrap();
    f.set_len(len * 2 / 3).unwrap();
    let mut bytes = std::fs::read(&raws[1]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&raws[1], bytes).unwrap();

    let mut cmd = Command::new(gputrace());
    let out = run(cmd.args(["merge", "--force"]).arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("warning:") && (err.contains("cut short") || err.contains("damaged")), "{err}");
    let after = facts(&dir.join("traces.otf2"));
    assert_well_formed(&after);
    assert!(total(&after) < total(&before) && total(&after) > 0, "{} of {}", total(&after), total(&before));
}

#[test]
fn merging_a_directory_without_raw_streams_says_so() {
    let dir = fresh_dir("notanexperiment");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.arg("merge").arg(&dir));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not an experiment directory"), "{}", text(&out.stderr));
}

#[test]
fn config_vars_lists_every_variable() {
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.args(["info", "config-vars", "--full"]));
    assert!(out.status.success());
    let t = text(&out.stdout);
    for v in tracer::config::VARS {
        assert!(t.contains(v.name), "{} missing", v.name);
    }
}

#[test]
fn a_program_that_does_not_exist_is_one_line_and_exit_127() {
    let dir = fresh_dir("missing");
    let out = trace(&dir, &["/nonexistent/program"], &[]);
    assert_eq!(out.status.code(), Some(127));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot start /nonexistent/program"), "{err}");
    assert!(!dir.exists(), "no experiment directory is left behind");
}

/// A tmpfs of `kib` KiB, unmounted on drop; `None` where mounting is not
/// allowed (not root, no tmpfs).
struct TinyDisk(std::path::PathBuf);

impl TinyDisk {
    fn mount(kib: u32) -> Option<TinyDisk> {
        let dir = fresh_dir("tinydisk");
        std::fs::create_dir_all(&dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(TinyDisk(dir))
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

#[test]
fn a_full_disk_is_one_warning_and_the_program_runs_on() {
    let Some(disk) = TinyDisk::mount(64) else {
        eprintln!("note: cannot mount a tmpfs here; full-disk test skipped");
        return;
    };
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let args = [mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "400"];
    let plain = run(Command::new(args[0]).args(&args[1..]));
    let dir = disk.0.join("exp");
    let out = trace(&dir, &args, &[("GPUTRACE_TOTAL_MEMORY", "64k")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&plain.stdout), "the program's output is unchanged");
    let err = text(&out.stderr);
    let disk_lines = err.lines().filter(|l| l.contains("No space left")).count();
    assert!((1..=2).contains(&disk_lines), "one warning per process at most: {err}");
    // What was written before the disk filled is merged, or, if not even
    // the archive fits, the raw streams are kept and the merge says so.
    let merged = dir.join("traces.otf2").exists();
    assert!(merged || err.contains("the raw streams are kept"), "{err}");
    assert!(dir.join("raw").read_dir().unwrap().count() == 2);
}
