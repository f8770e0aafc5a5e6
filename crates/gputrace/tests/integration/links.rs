//! What gputrace writes into a directory that exists — the merge's
//! `summary.txt` and `profile.cubex`, the outputs of `export` and `plot`,
//! `analyze`'s `scout.cubex` — replaces a symbolic link found there and
//! never writes through it (the link may point at any file the user can
//! write); a FIFO there never blocks the merge; a stream the user names
//! (`-o /dev/null`) is written to, not replaced.

use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util::*;

const PRECIOUS: &str = "a file the user can write, not gputrace's\n";

/// A file outside the experiment, and a link to it at `link`.
fn link_to_precious(link: &Path) -> std::path::PathBuf {
    let target = fresh_dir("precious");
    std::fs::write(&target, PRECIOUS).unwrap();
    symlink(&target, link).unwrap();
    target
}

fn assert_replaced(link: &Path, target: &Path) {
    let kept = std::fs::read_to_string(target).unwrap();
    assert!(kept == PRECIOUS, "{} written through: {:.200}", link.display(), kept);
    let meta = std::fs::symlink_metadata(link).unwrap();
    assert!(meta.is_file() && meta.len() > 0, "{} is not a new file: {meta:?}", link.display());
}

fn gt(args: &[&str]) -> std::process::Output {
    run_within(Command::new(gputrace()).args(args), Duration::from_secs(60))
}

#[test]
fn the_merge_replaces_a_linked_summary_and_profile() {
    let (dir, _) = synthetic_job("links-merge", 4, 200, (0, 0));
    let summary = link_to_precious(&dir.join("summary.txt"));
    let profile = link_to_precious(&dir.join("profile.cubex"));
    let out = run_within(Command::new(gputrace()).arg("merge").arg(&dir), Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_replaced(&dir.join("summary.txt"), &summary);
    assert!(std::fs::read_to_string(dir.join("summary.txt")).unwrap().contains("events"));
    assert_replaced(&dir.join("profile.cubex"), &profile);

    // A FIFO at summary.txt is replaced too, never opened (which would
    // wait for a reader for ever).
    let (dir, _) = synthetic_job("links-fifo", 2, 50, (0, 0));
    let fifo = std::ffi::CString::new(dir.join("summary.txt").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let out = run_within(Command::new(gputrace()).arg("merge").arg(&dir), Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(dir.join("summary.txt")).unwrap().is_file());
}

#[test]
fn export_plot_and_analyze_replace_a_linked_output() {
    let (dir, _) = synthetic_job("links-reports", 4, 200, (0, 0));
    assert!(merge(&dir, false).status.success());
    let d = dir.to_str().unwrap();
    let outputs = fresh_dir("links-out");
    std::fs::create_dir_all(&outputs).unwrap();
    for (name, args) in [
        ("out.json", vec!["export", "--format", "chrome", "-o"]),
        ("out.json.gz", vec!["export", "--format", "chrome", "-o"]),
        ("timeline.png", vec!["plot", "-o"]),
        ("matrix.png", vec!["plot", "--matrix", "mpi", "-o"]),
    ] {
        let link = outputs.join(name);
        let target = link_to_precious(&link);
        let mut args = args.clone();
        args.extend([link.to_str().unwrap(), d]);
        let out = gt(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_replaced(&link, &target);
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(outputs.join("out.json")).unwrap()).unwrap();
    assert!(json["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    // Nothing else is left beside them (no temporary files).
    let mut names: Vec<String> =
        std::fs::read_dir(&outputs).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["matrix.png", "out.json", "out.json.gz", "timeline.png"]);

    // analyze writes scout.cubex beside the archive.
    let scout = link_to_precious(&dir.join("scout.cubex"));
    let out = gt(&["analyze", d]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&scout).unwrap() == PRECIOUS, "scout.cubex written through");
    assert!(!std::fs::symlink_metadata(dir.join("scout.cubex")).is_ok_and(|m| m.file_type().is_symlink()));

    // A stream the user names is written to as it is.
    for args in [vec!["export", "--format", "chrome", "-o", "/dev/null", d], vec!["plot", "-o", "/dev/null", d]] {
        let out = gt(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    }
}
