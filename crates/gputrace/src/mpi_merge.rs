//! `gputrace merge --mpi DIR`, one rank of a merge run as an MPI job
//! (`mpirun -np K gputrace merge --mpi DIR`, `srun -n K ...`, or
//! `gputrace --merge-ranks K mpirun ...` after the program): the K ranks
//! write one archive together (merge::merge_collective), OTF2's
//! collective callbacks and the ranks' exchanges going through the job's
//! MPI library, loaded at run time (merge-mpi-sys): the binary links no MPI.
//!
//! Every rank reads the same inputs, so an error in them (nothing to
//! merge, an archive in the way, more ranks than processes) is the same
//! on every rank: rank 0 says it, all finalize MPI and exit 2. Any other
//! failure is one rank's: it says it and ends the job (MPI_Abort), so that
//! no rank waits forever in a collective operation for it; the
//! half-written archive is left for `--force` (after a run, gputrace
//! removes it).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use merge_mpi_sys::{Flavor, Mpi};

use crate::UsageError;
use crate::experiment::Experiment;
use crate::request::{AfterRun, Request};

/// The job's MPI as OTF2's collective operations.
struct Comm(Mpi);

impl otf2::Collectives for Comm {
    fn rank(&self) -> u32 {
        self.0.rank()
    }
    fn size(&self) -> u32 {
        self.0.size()
    }
    fn barrier(&self) -> bool {
        self.0.barrier()
    }
    fn bcast(&self, data: &mut [u8], root: u32) -> bool {
        self.0.bcast(data, root)
    }
    fn gather(&self, input: &[u8], output: &mut [u8], root: u32) -> bool {
        self.0.gather(input, output, root)
    }
    fn gatherv(&self, input: &[u8], output: &mut [u8], counts: &[usize], root: u32) -> bool {
        self.0.gatherv(input, output, counts, root)
    }
    fn scatter(&self, input: &[u8], output: &mut [u8], root: u32) -> bool {
        self.0.scatter(input, output, root)
    }
    fn scatterv(&self, input: &[u8], counts: &[usize], output: &mut [u8], root: u32) -> bool {
        self.0.scatterv(input, counts, output, root)
    }
}

/// The observer of ranks other than 0: their warnings, named by rank; no
/// progress bar.
struct Rank(u32);

impl merge::Observer for Rank {
    fn warning(&self, text: &str) {
        say!("[gputrace] merge rank {}: warning: {text}", self.0);
    }
}

/// Runs this process's rank of the merge; returns the exit status.
pub fn run(dir: &Path, settings: &crate::trace::Settings, force: bool, after_run: AfterRun) -> Result<i32> {
    let Some(flavor) = Flavor::from_env() else {
        return Err(UsageError(
            "gputrace merge --mpi is one rank of a merge run as an MPI job, and no MPI launcher started it: \
             run `mpirun -np K gputrace merge --mpi DIR` (or srun -n K ...), or `gputrace merge DIR` to use \
             this machine's cores"
                .to_string(),
        )
        .into());
    };
    // Checked (by the caller) before MPI starts: the same on every rank.
    let config = settings.config();
    crate::say::init_tracing(config.verbose);
    let experiment = Experiment::at(dir);
    if !experiment.raw_dir().is_dir() {
        return Err(UsageError(format!("{} is not an experiment directory (it has no raw/)", dir.display())).into());
    }
    let mpi = Mpi::init(flavor).map_err(|e| anyhow!("gputrace merge --mpi cannot start MPI: {e}"))?;
    let comm = Arc::new(Comm(mpi));
    let rank = comm.0.rank();
    let request = Request::new(experiment, config, force, after_run);
    let experiment = &request.experiment;
    let options = request.options();
    let shown = crate::progress::Shown::default();
    let quiet = Rank(rank);
    let observer: &dyn merge::Observer = if rank == 0 { &shown } else { &quiet };
    let mut profile = request.profile();
    let shared: Arc<dyn otf2::Collectives> = Arc::clone(&comm) as Arc<dyn otf2::Collectives>;
    let hook = std::env::var(config::hooks::MERGE_RANK_FAILS.name).ok().and_then(|v| v.parse::<u32>().ok());
    let merged = match profile.as_mut() {
        _ if hook == Some(rank) => Err(merge::Error::Exchange { why: "a test hook made this rank fail".into() }),
        Some(p) => merge::merge_collective(&options, observer, p, shared),
        None => merge::merge_collective(&options, observer, &mut (), shared),
    };
    let summary = match merged {
        Ok(summary) => summary,
        Err(e) if e.is_bad_input() => {
            if rank == 0 {
                say!("gputrace: error: {:#}", anyhow::Error::from(e));
            }
            finalize(comm);
            return Ok(2);
        }
        Err(e) => {
            // No clean-up first: the others go on writing until the abort
            // reaches them, and removing their files under them would only
            // add their failures to this one.
            let e = anyhow::Error::from(e);
            say!(
                "gputrace: error: merge rank {rank} of {}: {e:#}; the merge job is ended (a half-written archive \
                 in {} is replaced by `gputrace merge --force`)",
                comm.0.size(),
                experiment.dir.display()
            );
            // MPICH's launcher forwards a rank's stderr through its proxy
            // and drops what it had not forwarded when the abort kills the
            // job: the line first (1 run in 4 lost it under load).
            std::thread::sleep(std::time::Duration::from_millis(200));
            comm.0.abort(1);
        }
    };
    let mut status = 0;
    if let Some(mut summary) = summary {
        if let Some(e) = request.write_profile(&mut summary, profile.as_mut()) {
            say!("gputrace: error: the profile could not be written: {e}");
            status = 1;
        }
        request.report(&summary, !shown.warned() && status == 0);
    }
    finalize(comm);
    Ok(status)
}

fn finalize(comm: Arc<Comm>) {
    match Arc::try_unwrap(comm) {
        Ok(Comm(mpi)) => {
            if let Err(e) = mpi.finalize() {
                tracing::debug!("MPI_Finalize: {e}");
            }
        }
        Err(_) => tracing::debug!("the communicator is still shared at the end; MPI is not finalized"),
    }
}
