//! Call paths of MPI calls (`--unwinding`, `GPUTRACE_UNWINDING`) and
//! sampling of Fortran: tests/programs/mpi/hot.c and hot.f90, built
//! `-O2 -fomit-frame-pointer -g` (two callers of MPI_Barrier, hot_a and
//! hot_b, each spinning known CPU times), traced under Open MPI and
//! MPICH. Every MPI_Barrier's CallingContextEnter must sit under its real
//! caller, read by the Python OTF2 reader and otf2-print; `stats` still
//! counts the calls; the Cube profile has each MPI_Barrier under its
//! caller's functions; the Fortran program's sampled shares follow its
//! known times (hot_a 0.6, hot_b 0.3, the main program 0.1).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

/// Counts per call path (outermost first, from `main` on) of the
/// archive's records of Python class `record`.
pub(crate) fn paths(anchor: &Path, record: &str) -> HashMap<String, u64> {
    let script = r#"
import sys, collections, otf2, otf2.events
kind = getattr(otf2.events, sys.argv[2])
counts = collections.Counter()
with otf2.reader.open(sys.argv[1]) as t:
    for loc, ev in t.events:
        if isinstance(ev, kind):
            names, c = [], ev.calling_context
            while c is not None:
                names.append(c.region.name)
                c = c.parent
            counts[" > ".join(reversed(names))] += 1
for path, n in counts.items():
    print(n, "|", path)
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(anchor).arg(record).output().unwrap();
    assert!(out.status.success(), "Python reader: {}", text(&out.stderr));
    let mut all = HashMap::new();
    for l in text(&out.stdout).lines() {
        let Some((n, path)) = l.split_once(" | ") else { continue };
        let frames: Vec<&str> = path.split(" > ").collect();
        let main = frames.iter().position(|f| *f == "main").unwrap_or(0);
        *all.entry(frames[main..].join(" > ")).or_default() += n.parse::<u64>().unwrap();
    }
    all
}

/// The user function that called the MPI function at the path's leaf:
/// the frame before it, past MPICH's Fortran binding (`mpi_barrier__`).
fn caller(path: &str) -> &str {
    let frames: Vec<&str> = path.split(" > ").collect();
    let mut i = frames.len().saturating_sub(2);
    while i > 0 && frames[i].to_lowercase().starts_with("mpi_") {
        i -= 1;
    }
    frames[i]
}

/// Traces `exe` (with `--sampling 1ms` too when `sampled`) and checks
/// that each MPI_Barrier is under `a` or `b`, 20 each per rank.
fn trace_and_check(name: &str, exe: &Path, launcher: &str, callers: [&str; 2], sampled: bool) -> PathBuf {
    let dir = fresh_dir(name);
    let mut args = vec!["--unwinding"];
    if sampled {
        args.extend(["--sampling", "1ms"]);
    }
    args.extend([launcher, "-np", "2", s(exe), if sampled { "1" } else { "0.2" }]);
    let out = trace(&dir, &args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let anchor = dir.join("traces.otf2");
    let enters = paths(&anchor, "CallingContextEnter");
    let mut by_caller: HashMap<&str, u64> = HashMap::new();
    for (p, n) in &enters {
        if p.ends_with("> MPI_Barrier") {
            *by_caller.entry(caller(p)).or_default() += n;
        }
    }
    let want: HashMap<&str, u64> = callers.iter().map(|c| (*c, 40)).collect();
    assert_eq!(by_caller, want, "MPI_Barrier's callers: {enters:#?}");
    assert!(enters.keys().any(|p| p.ends_with("> MPI_Init")), "{enters:#?}");
    // otf2-print shows the same records; every Enter is a calling-context one.
    let counts = otf2_print_counts(&anchor);
    assert_eq!(counts.get("CALLING_CONTEXT_ENTER"), counts.get("CALLING_CONTEXT_LEAVE"), "{counts:?}");
    assert!(counts.get("CALLING_CONTEXT_ENTER").copied().unwrap_or(0) >= 84, "{counts:?}");
    assert_eq!(counts.get("ENTER"), None, "{counts:?}");
    // gputrace's own reader takes them as the calls' Enter and Leave.
    let out = ok(gt(&["stats", "--report", "mpi_sum", "--format", "csv", s(&dir)]));
    let table = text(&out.stdout);
    assert!(table.lines().any(|l| l.contains(",80,") && l.ends_with(",MPI_Barrier")), "{table}");
    profile_under_callers(&dir, callers);
    dir
}

/// The Cube profile, read by pycubexr: each MPI_Barrier call path under
/// its caller's functions, 40 visits under each caller, none at the top;
/// the functions' time their calls' (the trees' sums valid: cube_facts.py
/// checks them).
fn profile_under_callers(dir: &Path, callers: [&str; 2]) {
    let Some(python) = crate::profile::pycubexr() else { return };
    let cube = crate::profile::cube_facts(&python, &dir.join("profile.cubex"));
    let visits = |path: &str| -> u64 {
        cube["stored"]["visits"][path].as_array().map_or(0, |v| v.iter().filter_map(|x| x.as_u64()).sum())
    };
    let mut by_caller: HashMap<String, u64> = HashMap::new();
    // The calls' call paths (a sample whose stack was cut inside the call
    // has a path of its own, with hits and no visits).
    for (path, c) in cube["cnodes"].as_object().unwrap() {
        if c["region"] == "MPI_Barrier" && visits(path) > 0 {
            assert!(c["parent"].as_str().is_some_and(|p| p.contains('/')), "MPI_Barrier at the top: {path}");
            *by_caller.entry(caller(&path.replace('/', " > ")).to_string()).or_default() += visits(path);
        }
    }
    let want: HashMap<String, u64> = callers.iter().map(|c| (c.to_string(), 40)).collect();
    assert_eq!(by_caller, want, "the profile's MPI_Barrier call paths");
}

#[test]
fn each_mpi_call_is_under_its_caller_with_open_mpi() {
    let (mpicc, mpirun, mpif90) = openmpi();
    trace_and_check(
        "unwinding-openmpi-c",
        &compile_without_frame_pointers(mpicc, "hot.c"),
        mpirun,
        ["hot_a", "hot_b"],
        false,
    );
    if required(mpif90, have(mpif90)) {
        let exe = compile_without_frame_pointers(mpif90, "hot.f90");
        let dir = trace_and_check("unwinding-openmpi-f", &exe, mpirun, ["__hot_mod_MOD_hot_a", "hot_b_"], true);
        fortran_shares(&dir);
    }
}

#[test]
fn each_mpi_call_is_under_its_caller_with_mpich() {
    if !required("MPICH (mpicc.mpich, mpiexec.mpich)", have("mpicc.mpich") && have("mpiexec.mpich")) {
        return;
    }
    trace_and_check(
        "unwinding-mpich-c",
        &compile_without_frame_pointers("mpicc.mpich", "hot.c"),
        "mpiexec.mpich",
        ["hot_a", "hot_b"],
        false,
    );
    if required("mpif90.mpich", have("mpif90.mpich")) {
        let exe = compile_without_frame_pointers("mpif90.mpich", "hot.f90");
        let dir = trace_and_check("unwinding-mpich-f", &exe, "mpiexec.mpich", ["__hot_mod_MOD_hot_a", "hot_b_"], true);
        fortran_shares(&dir);
    }
}

/// hot.f90's sampled shares: the samples in spin (inlined into hot_a and
/// hot_b by gfortran -O2, a frame of its own in the DWARF), under each
/// caller. gfortran names the main program `hot` in the DWARF (`MAIN__`
/// in the symbol table), a module procedure `__hot_mod_MOD_hot_a`, an
/// external subroutine `hot_b_`.
fn fortran_shares(dir: &Path) {
    let samples = paths(&dir.join("traces.otf2"), "CallingContextSample");
    let under = |prefix: &str| -> f64 {
        samples.iter().filter(|(p, _)| p.starts_with(prefix)).map(|(_, n)| *n).sum::<u64>() as f64
    };
    let a = under("main > hot > __hot_mod_MOD_hot_a > __hot_mod_MOD_spin");
    let b = under("main > hot > hot_b_ > __hot_mod_MOD_spin");
    let m = under("main > hot > __hot_mod_MOD_spin");
    let total = a + b + m;
    assert!(total > 1000.0, "too few samples ({total}): {samples:#?}");
    for (what, got, want) in [("hot_a", a, 0.6), ("hot_b", b, 0.3), ("main", m, 0.1)] {
        let share = got / total;
        assert!((share - want).abs() <= 0.05, "{what}: {share:.3} of the spins' samples, not {want}: {samples:#?}");
    }
}
