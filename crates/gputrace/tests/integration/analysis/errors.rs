//! Bad input to the analysis commands: empty, foreign, truncated and
//! missing archives, directories without one, unknown reports and
//! formats; each one clear line and exit status 2, nothing left behind.

use std::process::Output;

use super::p2p_run;
use crate::util::*;

/// One `gputrace: error:` line, no panic, the given exit status.
fn assert_one_error_line(out: &Output, code: i32) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.starts_with("gputrace: error:") && !err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    let dir = fresh_dir("an-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.otf2");
    std::fs::write(&empty, "").unwrap();
    let textfile = dir.join("notes.otf2");
    std::fs::write(&textfile, "this is not an archive\n").unwrap();
    let truncated = dir.join("cut");
    std::fs::create_dir_all(&truncated).unwrap();
    let (p2p, _) = p2p_run();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(p2p.join(f), truncated.join(f)).unwrap();
    }
    let def = std::fs::read(truncated.join("traces.def")).unwrap();
    std::fs::write(truncated.join("traces.def"), &def[..def.len() / 2]).unwrap();
    // An event file cut short: the definitions read, the events do not.
    let cut_events = dir.join("cut-events");
    std::fs::create_dir_all(cut_events.join("traces")).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(p2p.join(f), cut_events.join(f)).unwrap();
    }
    for e in std::fs::read_dir(p2p.join("traces")).unwrap() {
        let e = e.unwrap().path();
        std::fs::copy(&e, cut_events.join("traces").join(e.file_name().unwrap())).unwrap();
    }
    let evt = cut_events.join("traces/0.evt");
    let len = std::fs::metadata(&evt).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&evt).unwrap().set_len(len / 2).unwrap();
    let json = s(&dir.join("out.json")).to_owned();
    let png = s(&dir.join("out.png")).to_owned();
    for input in [s(&empty), s(&textfile), s(&truncated), s(&cut_events), s(&dir), "/nonexistent/traces.otf2"] {
        for args in [
            vec!["stats", input],
            vec!["export", "--format", "chrome", "-o", &json, input],
            vec!["plot", "-o", &png, input],
        ] {
            // Bad input, whatever is wrong with it: exit 2.
            assert_one_error_line(&gt(&args), 2);
        }
    }
    assert!(text(&gt(&["stats", s(&empty)]).stderr).contains("empty"));
    assert!(!dir.join("out.json").exists(), "no half-written export is left behind");
    // What a directory without an archive holds: raw streams to merge, a
    // profile-only run's profile (Score-P's here), or nothing of ours.
    let scorep = dir.join("scorep-profile-only");
    std::fs::create_dir_all(&scorep).unwrap();
    std::fs::write(scorep.join("profile.cubex"), b"not read").unwrap();
    std::fs::write(scorep.join("scorep.cfg"), b"ENABLE_TRACING=false\n").unwrap();
    let out = gt(&["stats", s(&scorep)]);
    assert_one_error_line(&out, 2);
    let err = text(&out.stderr);
    assert!(err.contains("Score-P profile (profile.cubex)") && err.contains("tracing off"), "{err}");
    assert!(!err.contains("gputrace merge"), "{err}");
    let raw = dir.join("raw-only");
    std::fs::create_dir_all(raw.join("raw")).unwrap();
    assert!(text(&gt(&["stats", s(&raw)]).stderr).contains(&format!("run `gputrace merge {}`", s(&raw))));
    assert!(text(&gt(&["stats", s(&dir)]).stderr).contains("no raw streams to merge"));
    // The ViTE copy never overwrites an archive.
    let before = std::fs::read(p2p.join("traces.def")).unwrap();
    assert_one_error_line(&gt(&["export", "--format", "vite-otf2", "-o", s(p2p), s(p2p)]), 2);
    assert_eq!(std::fs::read(p2p.join("traces.def")).unwrap(), before);
    // A report or format that does not exist: the list, exit 2.
    let out = gt(&["stats", "--report", "gpu_kernel_sum", s(p2p)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("unknown report `gpu_kernel_sum`"), "{err}");
    for (name, _) in [("cuda_api_sum", 0), ("gpu_kern_sum", 0), ("nvlink_sum", 0), ("gpu_matrix", 0)] {
        assert!(err.contains(name), "{err}");
    }
    assert_one_error_line(&gt(&["stats", "--format", "xml", s(p2p)]), 2);
    assert_one_error_line(&gt(&["export", "--format", "pdf", "-o", &json, s(p2p)]), 2);
    assert_one_error_line(&gt(&["export", "--format", "chrome", s(p2p)]), 2);
}
