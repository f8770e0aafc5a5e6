//! The recording window (docs/window.md): `--delay`/`--duration`, an NVTX
//! capture range and `--capture-range pcontrol`, on MPI programs whose
//! iterations happen at known times or between known calls. Each archive
//! must hold exactly the calls of the iterations inside the window (the
//! Python OTF2 reader counts them per rank), nest and balance with no
//! repair by the merge, show each window as a `gputrace capture` region,
//! and be read by `otf2-print`.

use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// The calls of one iteration of tests/programs/mpi/window.c, each once.
const CALLS: [&str; 5] = ["MPI_Sendrecv", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce"];

/// "window rank R: t0 t1 ..." lines: per rank, when each iteration began
/// (ms after the job's start).
fn began(stdout: &str) -> Vec<Vec<f64>> {
    let mut ranks: Vec<(usize, Vec<f64>)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("window rank "))
        .map(|l| {
            let (rank, times) = l.split_once(':').unwrap();
            (rank.parse().unwrap(), times.split_whitespace().map(|t| t.parse().unwrap()).collect())
        })
        .collect();
    ranks.sort_by_key(|(r, _)| *r);
    ranks.into_iter().map(|(_, t)| t).collect()
}

/// The archive and the summary: read by both readers, balanced, and
/// merged without a repair; the Python reader's facts.
fn checked(dir: &Path, stderr: &str) -> Value {
    assert!(!stderr.contains("repaired"), "{stderr}");
    // Every rank reached MPI_Finalize, inside the window or not.
    assert!(!stderr.contains("without MPI_Finalize"), "{stderr}");
    assert!(!stderr.contains("[gputrace] warning"), "{stderr}");
    let anchor = dir.join("traces.otf2");
    let facts = facts(&anchor);
    assert_well_formed(&facts);
    let printed = otf2_print_counts(&anchor);
    assert!(printed.get("ENTER").copied().unwrap_or(0) > 0, "{printed:?}");
    facts
}

/// Each rank holds `want[rank]` iterations: every call of them once, and
/// their sends (one of MPI_Sendrecv, one MPI_Isend).
fn assert_iterations(facts: &Value, want: &[i64]) {
    for (rank, &n) in want.iter().enumerate() {
        let regions = &facts["regions"][rank.to_string()];
        for call in CALLS {
            assert_eq!(regions[call].as_i64().unwrap_or(0), n, "rank {rank} {call}: {regions}");
        }
        let sends = count(facts, rank as u32, "MpiSend") + count(facts, rank as u32, "MpiIsend");
        assert_eq!(sends, 2 * n, "rank {rank}: sends");
        let recvs = count(facts, rank as u32, "MpiRecv") + count(facts, rank as u32, "MpiIrecv");
        assert_eq!(recvs, 2 * n, "rank {rank}: receives");
    }
}

/// How many `gputrace capture` regions (windows) each rank shows.
fn windows(facts: &Value, rank: u32) -> i64 {
    facts["regions"][rank.to_string()]["gputrace capture"].as_i64().unwrap_or(0)
}

/// `--delay 3.6 --duration 1.0` on iterations every 250 ms from 3 s after
/// the start: the iterations that began in [3.6 s, 4.6 s), counted from
/// what each rank printed, are the ones recorded, every call of them.
#[test]
fn delay_and_duration_keep_exactly_the_iterations_of_the_window() {
    let (mpicc, mpirun, _) = openmpi();
    if !required("Open MPI", have(mpicc) && have(mpirun)) {
        return;
    }
    let exe = compile(mpicc, "window.c").display().to_string();
    let dir = fresh_dir("window-time");
    let out = trace(&dir, &["--delay", "3.6", "--duration", "1", mpirun, "-np", "2", &exe, "12", "250", "3000"], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = text(&out.stdout);
    let began = began(&stdout);
    assert_eq!(began.len(), 2, "{stdout}");
    let (open, close) = (3600.0, 4600.0);
    let mut want = Vec::new();
    for (rank, times) in began.iter().enumerate() {
        // A loaded machine can start a rank late: its iterations then run
        // at once, and one too near an edge says nothing either way.
        for t in times {
            assert!(
                (t - open).abs() > 40.0 && (t - close).abs() > 40.0,
                "rank {rank}: an iteration began {t} ms after the start, too near the window's edge: {stdout}"
            );
        }
        want.push(times.iter().filter(|&&t| t >= open && t < close).count() as i64);
    }
    assert!(want.iter().all(|&n| n > 0 && n < 12), "{want:?}: {stdout}");
    let facts = checked(&dir, &stderr);
    assert_iterations(&facts, &want);
    for rank in 0..2 {
        assert_eq!(windows(&facts, rank), 1, "rank {rank}");
    }
}

/// `--capture-range pcontrol`: MPI_Pcontrol(0) before iteration 3 and
/// MPI_Pcontrol(1) before iteration 7 of 10 leave out iterations 3 to 6;
/// without the option MPI_Pcontrol is not obeyed.
#[test]
fn pcontrol_keeps_exactly_the_enabled_iterations() {
    let (mpicc, mpirun, _) = openmpi();
    if !required("Open MPI", have(mpicc) && have(mpirun)) {
        return;
    }
    let exe = compile(mpicc, "window.c").display().to_string();
    let dir = fresh_dir("window-pcontrol");
    let args = [mpirun, "-np", "2", &exe, "10", "0", "0", "3", "7"];
    let out = trace(&dir, &[&["--capture-range", "pcontrol"][..], &args].concat(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let facts = checked(&dir, &stderr);
    assert_iterations(&facts, &[6, 6]);
    for rank in 0..2 {
        assert_eq!(windows(&facts, rank), 2, "rank {rank}");
    }
    let dir = fresh_dir("window-pcontrol-ignored");
    let out = trace(&dir, &args, &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let facts = checked(&dir, &stderr);
    assert_iterations(&facts, &[10, 10]);
    assert_eq!(windows(&facts, 0), 0);
}

/// `--capture-range nvtx:exchange@2-3`: of 4 iterations, the ranges
/// `exchange` 2 and 3 and the MPI_Sendrecv in them, nothing else (the
/// `reduce` ranges and their MPI_Allreduce lie between and after).
#[test]
fn an_nvtx_capture_range_keeps_exactly_its_occurrences() {
    let Some(headers) = crate::nvtx::headers() else { return };
    let (mpicc, mpirun, _) = openmpi();
    if !required("Open MPI", have(mpicc) && have(mpirun)) {
        return;
    }
    let exe = crate::nvtx::build(mpicc, "mpi_ranges.c", &headers).display().to_string();
    let dir = fresh_dir("window-nvtx");
    let out = trace(&dir, &["--capture-range", "nvtx:exchange@2-3", mpirun, "-np", "2", &exe, "4"], &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let facts = checked(&dir, &stderr);
    for rank in 0..2u32 {
        let regions = &facts["regions"][rank.to_string()];
        assert_eq!(regions["exchange"], 2, "rank {rank}: {regions}");
        assert_eq!(regions["MPI_Sendrecv"], 2, "rank {rank}: {regions}");
        assert_eq!(regions["reduce"].as_i64().unwrap_or(0), 0, "rank {rank}: {regions}");
        assert_eq!(regions["MPI_Allreduce"].as_i64().unwrap_or(0), 0, "rank {rank}: {regions}");
        assert_eq!(count(&facts, rank, "MpiSend"), 2, "rank {rank}");
        assert_eq!(windows(&facts, rank), 2, "rank {rank}");
    }
}

/// A bad capture range is one line and exit status 2, before anything runs.
#[test]
fn a_bad_capture_range_is_refused() {
    let dir = fresh_dir("window-bad");
    let out = trace(&dir, &["--capture-range", "nvtx:step@0", "true"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("GPUTRACE_CAPTURE_RANGE") && stderr.lines().count() == 1, "{stderr}");
    let out = trace(&dir, &["--delay", "soon", "true"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
