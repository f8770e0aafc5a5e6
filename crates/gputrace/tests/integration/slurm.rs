//! gputrace under Slurm: `gputrace srun ...` traces, `srun -n K gputrace
//! merge --mpi DIR` merges as an MPI job, and `--merge-ranks K` starts that
//! merge with the program's srun options, with Open MPI (`--mpi=pmix`) and
//! MPICH (`--mpi=pmi2`), on a one-node Slurm of this machine
//! (scripts/slurm.sh starts it; Debian's slurmctld, slurmd and munge).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use crate::mpi::assert_sends_match_receives;
use crate::parallel_merge::{Merged, assert_same, copy_raw, merge_with, merged, printed_events, summary_lines};
use crate::util::*;

/// Whether Slurm answers here: scripts/slurm.sh starts it where it is
/// installed (once per test binary; well under a second when it runs
/// already). Missing under CI=true fails the test.
fn slurm() -> bool {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        if !have("srun") {
            return Err("srun is not installed".into());
        }
        let out = Command::new(workspace().join("scripts/slurm.sh")).output().map_err(|e| e.to_string())?;
        if out.status.success() { Ok(()) } else { Err(text(&out.stderr)) }
    });
    if let Err(why) = ready {
        eprintln!("note: scripts/slurm.sh: {why}");
    }
    required("a one-node Slurm (scripts/setup.sh installs it, scripts/slurm.sh starts it)", ready.is_ok())
}

/// The MPIs of the tests, with the PMI srun must give each: Open MPI's
/// ranks abort in MPI_Init without PMIx, MPICH's wait without PMI-2.
const MPIS: [(&str, &str); 2] = [("mpicc.openmpi", "--mpi=pmix"), ("mpicc.mpich", "--mpi=pmi2")];

/// Runs within a minute: a job under srun must end, whatever happens.
fn within_a_minute(cmd: &mut Command) -> Output {
    run_within(cmd, Duration::from_secs(60))
}

/// `gputrace -o DIR ARGS`, within a minute.
fn trace_within(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(gputrace());
    cmd.arg("-o").arg(dir).args(args);
    let out = within_a_minute(cmd.envs(env.iter().copied()));
    assert_eq!(out.status.code(), Some(0), "gputrace {args:?}: {}", text(&out.stderr));
    out
}

fn ring(mpicc: &str) -> PathBuf {
    compile_file(mpicc, &workspace().join("examples/mpi_ring.c"))
}

/// `srun PMI -n K gputrace merge --mpi ARGS DIR`.
fn srun_merge(pmi: &str, ranks: u32, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("srun");
    cmd.arg(pmi).arg("-n").arg(ranks.to_string()).arg(gputrace()).args(["merge", "--mpi"]).args(args).arg(dir);
    within_a_minute(cmd.envs(env.iter().copied()))
}

/// `gputrace srun --mpi=... -n 3 ./ring`: every rank traced, every message
/// matched; then the kept raw streams merged by `srun -n 2 gputrace merge
/// --mpi` give the serial merge's archive, summary and profile, and the
/// merge job has the two ranks srun gave it.
#[test]
fn srun_traces_and_merges_as_an_mpi_job() {
    if !slurm() {
        return;
    }
    let python = crate::profile::pycubexr();
    for (mpicc, pmi) in MPIS {
        let exe = ring(mpicc);
        let dir = fresh_dir("slurm-ring");
        let out = trace_within(&dir, &["srun", pmi, "-n", "3", exe.to_str().unwrap(), "20"], &[KEEP_RAW]);
        let stderr = text(&out.stderr);
        assert!(text(&out.stdout).contains("ring: 3 ranks, 20 steps"), "{pmi}: {}", text(&out.stdout));
        assert!(stderr.contains("3 processes (3 MPI ranks) on 1 host"), "{pmi}: {stderr}");
        let facts = facts(&dir.join("traces.otf2"));
        assert_eq!(facts["ranks"], serde_json::json!([0, 1, 2]), "{pmi}");
        assert_well_formed(&facts);
        assert_sends_match_receives(&facts);

        let serial = copy_raw(&dir, "slurm-serial");
        let serial = merged(&serial, &merge_with(&serial, &["--jobs", "1"]), python.as_deref());
        let copy = copy_raw(&dir, "slurm-merge");
        let by_srun = merged(&copy, &srun_merge(pmi, 2, &copy, &[], &[]), python.as_deref());
        assert_same(&format!("srun {pmi} -n 2 gputrace merge --mpi"), &serial, &by_srun);
        // Two merge ranks, not two merges alone: the second's failure ends
        // the job with its "rank 1 of 2" line.
        let out = srun_merge(pmi, 2, &copy, &["--force"], &[("_GPUTRACE_TEST_MERGE_RANK_FAILS", "1")]);
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{pmi}: {stderr}");
        assert!(stderr.contains("gputrace: error: merge rank 1 of 2:"), "{pmi}: {stderr}");
    }
}

/// `gputrace --merge-ranks 2 srun --mpi=... -n 3 ./ring`: the merge after
/// the program is an srun job with the program's `--mpi` (without it Open
/// MPI's merge ranks abort), and its archive is the serial merge's.
#[test]
fn merge_ranks_under_srun_take_the_programs_pmi() {
    if !slurm() {
        return;
    }
    let python = crate::profile::pycubexr();
    for (mpicc, pmi) in MPIS {
        let exe = ring(mpicc);
        let dir = fresh_dir("slurm-merge-ranks");
        let out = trace_within(
            &dir,
            &["--merge-ranks", "2", "srun", pmi, "-n", "3", exe.to_str().unwrap(), "20"],
            &[KEEP_RAW],
        );
        let stderr = text(&out.stderr);
        assert!(stderr.contains("[gputrace] archive:") && stderr.contains("3 processes"), "{pmi}: {stderr}");
        assert!(!stderr.contains("error"), "{pmi}: {stderr}");
        let anchor = dir.join("traces.otf2");
        let by_ranks = Merged {
            facts: facts(&anchor),
            events: printed_events(&anchor),
            summary: summary_lines(&stderr),
            profile: python.as_deref().map(|p| crate::profile::cube_facts(p, &dir.join("profile.cubex"))),
        };
        let again = copy_raw(&dir, "slurm-merge-ranks-serial");
        let serial = merged(&again, &merge_with(&again, &["--jobs", "1"]), python.as_deref());
        assert_same(&format!("--merge-ranks 2 srun {pmi}"), &serial, &by_ranks);
    }
}
