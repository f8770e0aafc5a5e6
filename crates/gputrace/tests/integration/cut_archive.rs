//! An archive whose last event file was cut short (a copy interrupted, a
//! disk that filled elsewhere): libotf2 3.0.2 reads such a file for ever
//! (`otf2-print` too; see `otf2::reader::chunks`), so every reader of
//! gputrace checks the event files' last chunks first. Wherever the cut,
//! each command is one line naming the file and exit 2, in well under a
//! second, in little memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::*;

/// OTF2's event chunk size, gputrace's archives' (the default).
const CHUNK: u64 = 1 << 20;

/// An archive of the bundled example on 2 ranks whose event files span
/// several chunks.
fn ring_archive() -> PathBuf {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("examples/mpi_ring.c"));
    let dir = fresh_dir("cutring");
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "30000"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

/// A copy of the archive in `from` (not its profile or summary).
fn copy_archive(from: &Path, name: &str) -> PathBuf {
    let to = fresh_dir(name);
    std::fs::create_dir_all(&to).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    copy_dir(&from.join("traces"), &to.join("traces"));
    to
}

#[test]
fn a_cut_event_file_is_one_line_in_seconds_and_little_memory() {
    let whole = ring_archive();
    // The last location's event file.
    let last = (0..).take_while(|l| whole.join(format!("traces/{l}.evt")).exists()).last().unwrap();
    let evt = format!("traces/{last}.evt");
    let size = std::fs::metadata(whole.join(&evt)).unwrap().len();
    assert!(size > 4 * CHUNK, "the event file spans several chunks: {size}");
    let limit = Duration::from_secs(10);
    // The reports read the whole archive without complaint.
    assert!(run_measured(Command::new(gputrace()).arg("stats").arg(&whole), limit).out.status.success());

    // Cut at these per mille of the file, and at the end of a chunk.
    let cuts: Vec<(String, u64)> = [250, 500, 750, 900, 990, 999]
        .iter()
        .map(|&pm| (format!("{:.1}%", pm as f64 / 10.0), size * pm / 1000))
        .chain([("chunk end".to_owned(), size / 2 / CHUNK * CHUNK)])
        .collect();
    let mut worst = (Duration::ZERO, 0);
    for (label, at) in &cuts {
        let dir = copy_archive(&whole, "cut");
        std::fs::OpenOptions::new().write(true).open(dir.join(&evt)).unwrap().set_len(*at).unwrap();
        let in_chunk = if at % CHUNK == 0 { CHUNK } else { at % CHUNK };
        let want = format!("{evt} is cut short at byte {in_chunk} of its last chunk");
        let json = dir.join("out.json");
        let png = dir.join("out.png");
        let d = dir.to_str().unwrap();
        for args in [
            vec!["stats", d],
            vec!["export", "--format", "chrome", "-o", json.to_str().unwrap(), d],
            vec!["analyze", d],
            vec!["plot", "-o", png.to_str().unwrap(), d],
        ] {
            let m = run_measured(Command::new(gputrace()).args(&args), limit);
            let err = text(&m.out.stderr);
            assert_eq!(m.out.status.code(), Some(2), "{label} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{label} {args:?}: {err}");
            assert!(err.starts_with("gputrace: error: ") && err.contains(&want), "{label} {args:?}: {err}");
            eprintln!(
                "cut at {label:>9} (byte {in_chunk:>7} of chunk {}): {:<7} {:>5} ms, peak RSS {:>6} KiB",
                at.div_ceil(CHUNK).max(1),
                args[0],
                m.wall.as_millis(),
                m.peak_kib
            );
            worst = (worst.0.max(m.wall), worst.1.max(m.peak_kib));
        }
        assert!(!json.exists() && !png.exists(), "{label}: nothing written");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // One chunk is read per location, not the trace: bounded whatever the
    // file (the debug build's own footprint is most of it).
    assert!(worst.1 < 100 << 10, "peak RSS {} KiB", worst.1);
    eprintln!("worst: {} ms, {} KiB", worst.0.as_millis(), worst.1);
}
