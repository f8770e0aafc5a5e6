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
    let out = trace(
        &dir,
        &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "300"],
        &[("GPUTRACE_TOTAL_MEMORY", "64k"), KEEP_RAW],
    );
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
    for v in config::VARS {
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

#[test]
fn a_full_disk_is_one_warning_and_the_program_runs_on() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let args = [mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "400"];
    let plain = run(Command::new(args[0]).args(&args[1..]));
    // The disk fills at different moments of the run.
    for kib in [48, 96, 160] {
        let Some(disk) = Tmpfs::mount(kib) else { return };
        let dir = disk.0.join("exp");
        let out = trace(&dir, &args, &[("GPUTRACE_TOTAL_MEMORY", "64k")]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), text(&plain.stdout), "the program's output is unchanged");
        let err = text(&out.stderr);
        let disk_lines = err.lines().filter(|l| l.contains("No space left")).count();
        assert!((1..=2).contains(&disk_lines), "{kib} KiB: one warning per process at most: {err}");
        assert_eq!(dir.join("raw").read_dir().unwrap().count(), 2);
        // Merged where there is room: what could not be written is counted
        // and said, and the ranks that finished are not taken for killed.
        let elsewhere = fresh_dir("full-disk-run");
        copy_dir(&dir.join("raw"), &elsewhere.join("raw"));
        let merged = run(Command::new(gputrace()).arg("merge").arg(&elsewhere));
        let err = text(&merged.stderr);
        assert_eq!(merged.status.code(), Some(0), "{kib} KiB: {err}");
        assert!(err.contains("events could not be written"), "{kib} KiB: the loss is counted: {err}");
        assert!(err.contains("events not written (recording had stopped)"), "{kib} KiB: per rank: {err}");
        assert!(!err.contains("stopped without closing"), "{kib} KiB: the ranks finished: {err}");
        assert!(err.lines().filter(|l| l.contains("ending: rank")).all(|l| l.contains("finished")), "{err}");
    }
}

/// A small traced run of p2p (2 ranks) in a fresh directory, its raw
/// streams kept.
fn small_run(name: &str) -> std::path::PathBuf {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let dir = fresh_dir(name);
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "200"], &[KEEP_RAW]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

#[test]
fn a_fifo_in_raw_never_blocks_the_merge() {
    let dir = small_run("fifo");
    let want = seen(&dir.join("traces.otf2"));
    let raw = dir.join("raw");
    mkfifo(&raw.join("fifo.gtr"));
    std::os::unix::fs::symlink("fifo.gtr", raw.join("link.gtr")).unwrap();
    std::fs::create_dir(raw.join("dir.gtr")).unwrap();
    let mut cmd = Command::new(gputrace());
    let out = run_within(cmd.args(["merge", "--force"]).arg(&dir), std::time::Duration::from_secs(120));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 3, "one warning each: {err}");
    assert!(err.contains("fifo.gtr is a FIFO, not a raw stream; skipped"), "{err}");
    assert!(err.contains("link.gtr is a link to a FIFO, not a raw stream; skipped"), "{err}");
    assert!(err.contains("dir.gtr is a directory, not a raw stream; skipped"), "{err}");
    assert_eq!(seen(&dir.join("traces.otf2")), want);
}

#[test]
fn nothing_to_merge_is_an_error_and_writes_no_archive() {
    // Nothing readable: a FIFO and a file that is no stream.
    let dir = fresh_dir("nothing");
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    mkfifo(&dir.join("raw/only.gtr"));
    std::fs::write(dir.join("raw/junk.gtr"), "not a stream").unwrap();
    let mut cmd = Command::new(gputrace());
    let out = run_within(cmd.arg("merge").arg(&dir), std::time::Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("gputrace: error: nothing to merge in "), "{err}");
    assert_no_archive(&dir);

    // Streams whose processes survive but no location does: each cut
    // right after its header.
    let traced = small_run("nolocation");
    let dir = fresh_dir("nolocation-cut");
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    for e in std::fs::read_dir(traced.join("raw")).unwrap() {
        let e = e.unwrap();
        let bytes = std::fs::read(e.path()).unwrap();
        std::fs::write(dir.join("raw").join(e.file_name()), &bytes[..150]).unwrap();
    }
    let out = merge(&dir, false);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.lines().last().unwrap().contains("nothing to merge in "), "{err}");
    assert!(err.contains("define no location"), "{err}");
    assert_no_archive(&dir);
    // Without an archive (GPUTRACE_ENABLE_TRACING=false) too.
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.args(["--no-trace", "merge"]).arg(&dir));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn a_copied_stream_is_merged_once_with_a_warning() {
    let dir = small_run("copied");
    let want = seen(&dir.join("traces.otf2"));
    let raw = dir.join("raw");
    let mut streams: Vec<_> = std::fs::read_dir(&raw).unwrap().map(|e| e.unwrap().path()).collect();
    streams.sort();
    let bytes = std::fs::read(&streams[0]).unwrap();
    // An identical copy, and one cut short (a copy taken while the run
    // was writing it).
    std::fs::write(raw.join("copy.gtr"), &bytes).unwrap();
    std::fs::write(raw.join("0-early-copy.gtr"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = merge(&dir, true);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let copies: Vec<&str> = err.lines().filter(|l| l.contains("is a copy of")).collect();
    assert_eq!(copies.len(), 2, "{err}");
    assert!(copies.iter().all(|l| l.ends_with("): merged once") && l.contains(&streams[0].display().to_string())));
    assert_eq!(seen(&dir.join("traces.otf2")), want, "the copies add nothing");
}

#[test]
fn a_long_program_name_gets_a_short_directory_name() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let cwd = fresh_dir("longname");
    std::fs::create_dir_all(&cwd).unwrap();
    // The longest usual file name is 255 bytes; 240 is legal anywhere.
    let long = cwd.join("p".repeat(240));
    std::fs::copy(&exe, &long).unwrap();
    let mut cmd = Command::new(gputrace());
    cmd.current_dir(&cwd).args([mpirun, "-np", "2"]).arg(&long).args(["-n", "20"]);
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let made: Vec<String> = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("gputrace-"))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].starts_with(&format!("gputrace-{}-", "p".repeat(64))) && made[0].len() < 100, "{made:?}");
    facts(&cwd.join(&made[0]).join("traces.otf2"));
}

/// A stderr that cannot be written: `/dev/full` (every write fails with
/// ENOSPC), or a pipe nobody reads any more (`2>&1 | head -1`; EPIPE).
fn broken_stderrs() -> Vec<(&'static str, std::process::Stdio)> {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    vec![("/dev/full", full.into()), ("a closed pipe", writer.into())]
}

#[test]
fn a_broken_stderr_never_costs_the_programs_exit_code() {
    let (mpicc, mpirun, _) = openmpi();
    let exit3 = compile(mpicc, "exit3.c");
    for (what, _) in broken_stderrs() {
        let stderr = || broken_stderrs().into_iter().find(|(w, _)| *w == what).unwrap().1;
        // A program that records nothing (a warning is printed).
        let mut cmd = Command::new(gputrace());
        cmd.arg("-o").arg(fresh_dir("stderr-sh")).args(["sh", "-c", "exit 7"]).stderr(stderr());
        assert_eq!(run(&mut cmd).status.code(), Some(7), "{what}");
        // An MPI job whose summary cannot be printed: its exit code, and
        // the archive written all the same.
        let dir = fresh_dir("stderr-mpi");
        let mut cmd = Command::new(gputrace());
        cmd.arg("-o").arg(&dir).arg("--keep-raw");
        cmd.args([mpirun, "-np", "2", exit3.to_str().unwrap(), "-n", "10"]).stderr(stderr());
        let out = run(&mut cmd);
        assert_eq!(out.status.code(), Some(3), "{what}");
        assert!(text(&out.stdout).contains("exit3: 10 messages"), "{what}");
        facts(&dir.join("traces.otf2"));
        // gputrace merge, and bad input: the status, the message lost.
        let mut cmd = Command::new(gputrace());
        cmd.args(["merge", "--force"]).arg(&dir).stderr(stderr());
        assert_eq!(run(&mut cmd).status.code(), Some(0), "{what}");
        let mut cmd = Command::new(gputrace());
        cmd.arg("merge").arg(&dir).stderr(stderr());
        assert_eq!(run(&mut cmd).status.code(), Some(2), "{what}: an existing archive");
        let mut cmd = Command::new(gputrace());
        cmd.args(["-o"]).arg(fresh_dir("stderr-bad")).arg("/bin/true").stderr(stderr());
        cmd.env("GPUTRACE_VERBOSE", "perhaps");
        assert_eq!(run(&mut cmd).status.code(), Some(2), "{what}");
    }
}

#[test]
fn empty_contradictory_and_huge_values_are_refused_with_one_line() {
    let huge = "x".repeat(100_000);
    let cases: Vec<(&str, String, &str)> = vec![
        ("GPUTRACE_MPI_ENABLE_GROUPS", String::new(), "empty (to record nothing, say `none`)"),
        ("GPUTRACE_MPI_ENABLE_GROUPS", ",".into(), "empty (to record nothing, say `none`)"),
        ("GPUTRACE_CUDA_ENABLE", " , ".into(), "empty (to record nothing, say `no`)"),
        ("GPUTRACE_MPI_ENABLE_GROUPS", "none,p2p".into(), "'none' (nothing) contradicts 'p2p'"),
        ("GPUTRACE_MPI_ENABLE_GROUPS", "all,no".into(), "'no' (nothing) contradicts 'all'"),
        ("GPUTRACE_NCCL_ENABLE", "coll,none".into(), "'none' (nothing) contradicts 'coll'"),
        ("GPUTRACE_MPI_ENABLE_GROUPS", huge.clone(), "unknown value;"),
        ("GPUTRACE_TOTAL_MEMORY", huge.clone(), "not a size"),
    ];
    for (var, value, problem) in &cases {
        let dir = fresh_dir("refused");
        let out = trace(&dir, &["/bin/echo", "never"], &[(var, value)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value:.20}: {err:.300}");
        assert!(out.stdout.is_empty(), "the program must not run");
        assert_eq!(err.lines().count(), 1, "{err:.300}");
        assert!(err.contains(problem), "{var}: {err:.300}");
        assert!(err.len() < 400, "{var}: {} bytes", err.len());
        if value.len() > 80 {
            assert!(err.contains(&format!("{var}={}…: ", &value[..80])), "{err:.300}");
            assert_eq!(err.matches(&value[..80]).count(), 1, "shown once: {err:.300}");
        }
        assert!(!dir.exists());
    }
    // The flag says the same.
    let out = trace(&fresh_dir("refused"), &["--mpi-groups", "", "/bin/echo", "never"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("GPUTRACE_MPI_ENABLE_GROUPS=: empty"), "{}", text(&out.stderr));
    // A huge experiment directory: the path shown once, cut.
    let long = format!("/tmp/{}", "d".repeat(5000));
    let out = trace(std::path::Path::new(&long), &["/bin/echo", "never"], &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err:.300}");
    assert_eq!(err.lines().count(), 1, "{err:.300}");
    assert!(err.len() < 400 && err.contains('…'), "{err:.300}");
}

#[test]
fn a_directory_that_cannot_be_used_is_exit_2_everywhere() {
    let run_dir = small_run("exit2");
    let afile = scratch().join("exit2-not-an-archive");
    std::fs::write(&afile, "hello").unwrap();
    let missing = scratch().join("exit2-missing");
    let g = || Command::new(gputrace());
    let mut cases: Vec<(String, Command)> = Vec::new();
    let mut add = |name: &str, mut cmd: Command, f: &dyn Fn(&mut Command)| {
        f(&mut cmd);
        cases.push((name.to_string(), cmd));
    };
    add("merge of a missing directory", g(), &|c| {
        c.arg("merge").arg(&missing);
    });
    add("merge over an existing archive", g(), &|c| {
        c.arg("merge").arg(&run_dir);
    });
    add("stats of a missing directory", g(), &|c| {
        c.arg("stats").arg(&missing);
    });
    add("stats of a file that is no archive", g(), &|c| {
        c.arg("stats").arg(&afile);
    });
    add("export of a missing directory", g(), &|c| {
        c.args(["export", "--format", "chrome", "-o"]).arg(scratch().join("x.json")).arg(&missing);
    });
    add("export into a missing directory", g(), &|c| {
        c.args(["export", "--format", "chrome", "-o"]).arg(missing.join("x.json")).arg(&run_dir);
    });
    add("plot of a file that is no archive", g(), &|c| {
        c.args(["plot", "-o"]).arg(scratch().join("x.png")).arg(&afile);
    });
    add("plot into a missing directory", g(), &|c| {
        c.args(["plot", "-o"]).arg(missing.join("x.png")).arg(&run_dir);
    });
    add("an existing experiment directory", g(), &|c| {
        c.arg("-o").arg(&run_dir).arg("/bin/true");
    });
    add("an experiment directory that cannot be made", g(), &|c| {
        c.arg("-o").arg(afile.join("sub")).arg("/bin/true");
    });
    add("a default directory that cannot be made", g(), &|c| {
        c.current_dir("/proc").arg("/bin/true");
    });
    for (name, mut cmd) in cases {
        let out = run(&mut cmd);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
    }
    // The archive that a merge without --force refused is still there.
    facts(&run_dir.join("traces.otf2"));
}

/// After a run, raw/ goes once the merge read every stream and wrote the
/// archive without a warning; `--keep-raw` keeps it, and `gputrace merge`
/// of a kept directory never removes it; a merge that fails keeps it.
#[test]
fn raw_streams_go_after_a_verified_merge_unless_kept() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "p2p.c");
    let args = [mpirun, "-np", "2", exe.to_str().unwrap(), "-n", "50"];
    let dir = fresh_dir("raw-removed");
    let out = trace(&dir, &args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.join("raw").exists(), "raw/ removed after a clean merge");
    let removed = facts(&dir.join("traces.otf2"));
    let sends = |f: &serde_json::Value| f["sends"].as_array().map_or(0, Vec::len);
    assert!(sends(&removed) > 0, "{removed}");
    let again = merge(&dir, true);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    let err = text(&again.stderr);
    assert!(
        err.contains("the raw streams were removed once the archive was written") && err.contains("--keep-raw"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let kept = fresh_dir("raw-kept");
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.arg("-o").arg(&kept).arg("--keep-raw").args(args));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(kept.join("raw")).unwrap().count(), 2, "two ranks' streams kept");
    assert_eq!(sends(&facts(&kept.join("traces.otf2"))), sends(&removed), "the same messages either way");
    let out = merge(&kept, true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(kept.join("raw").is_dir(), "gputrace merge keeps raw/");
}
