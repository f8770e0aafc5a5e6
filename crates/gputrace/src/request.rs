//! One merge request, set up once for both ways of carrying it out: the
//! merge worker (`gputrace __merge-worker`, [`crate::merge_worker`]) and each
//! rank of a merge run as an MPI job (`gputrace merge --mpi`,
//! [`crate::mpi_merge`]). A [`Request`] makes the merge's options and the
//! Cube profile from the settings, and after the merge writes the profile,
//! prints the summary and removes the raw streams once the archive is
//! verified.

use std::path::PathBuf;

use config::{Config, MpiGroup};
use gputrace_summary::RunSummary;

use crate::experiment::{ARCHIVE_NAME, Experiment};

/// What the merge after a run does besides merging.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AfterRun {
    /// When the program ended ([`merge::now`]'s clock, as gputrace saw its
    /// launcher exit): the summary's time "after the program ended" runs
    /// from here to the archive.
    pub program_ended: Option<u64>,
    /// Remove raw/ once the archive is verified (GPUTRACE_KEEP_RAW unset).
    pub remove_raw: bool,
    /// A snapshot of a job still running (`merge::Options::running`).
    pub snapshot: bool,
}

impl AfterRun {
    /// The hidden options that hand it to the worker or to the merge
    /// ranks (`--program-ended T`, `--remove-raw`).
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(t) = self.program_ended {
            args.extend(["--program-ended".to_string(), t.to_string()]);
        }
        if self.remove_raw {
            args.push("--remove-raw".to_string());
        }
        if self.snapshot {
            args.push("--snapshot".to_string());
        }
        args
    }
}

/// A merge of one experiment directory, as the command asked for it.
pub struct Request<'a> {
    pub experiment: Experiment,
    pub config: &'a Config,
    /// Replace an archive already there.
    pub force: bool,
    /// What the command knows was not traced, and why.
    pub not_traced: Vec<merge::NotTraced>,
    pub after_run: AfterRun,
    raw_dir: PathBuf,
}

impl<'a> Request<'a> {
    pub fn new(experiment: Experiment, config: &'a Config, force: bool, after_run: AfterRun) -> Self {
        let raw_dir = experiment.raw_dir();
        Request { experiment, config, force, not_traced: Vec::new(), after_run, raw_dir }
    }

    /// The merge's options: the archive when tracing is on, the settings'
    /// merge threads and MPI groups, the clock correction's limit.
    pub fn options(&self) -> merge::Options<'_> {
        let config = self.config;
        let target = merge::Target { dir: &self.experiment.dir, name: ARCHIVE_NAME, force: self.force };
        merge::Options {
            raw_dir: &self.raw_dir,
            archive: config.enable_tracing.then_some(target),
            not_traced: &self.not_traced,
            program_ended: self.after_run.program_ended,
            running: self.after_run.snapshot,
            mpi_complete: [MpiGroup::P2p, MpiGroup::Coll, MpiGroup::Xnonblock]
                .into_iter()
                .all(|g| config.mpi_groups.contains(g)),
            max_correction_messages: crate::trace::correction_limit(),
            jobs: match config.merge_jobs {
                0 => merge::jobs(),
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
        }
    }

    /// The Cube profile the merge's pass builds, when profiling is on.
    pub fn profile(&self) -> Option<profile::Profile> {
        self.config.enable_profiling.then(profile::Profile::new)
    }

    /// Writes the merge's profile (when one was built) as `profile.cubex`;
    /// the summary names it. The error when it could not be written.
    pub fn write_profile(
        &self,
        summary: &mut RunSummary,
        profile: Option<&mut profile::Profile>,
    ) -> Option<profile::Error> {
        let path = self.experiment.profile();
        match profile.map(|p| p.write_to(&path).map(|size| (path.clone(), size, p.call_paths()))) {
            Some(Ok(written)) => {
                summary.profile = Some(written);
                None
            }
            Some(Err(e)) => Some(e),
            None => None,
        }
    }

    /// Prints the summary (and writes summary.txt), then removes raw/
    /// when asked to and the archive is verified: every stream read to
    /// its end, the archive written, nothing lost and, by `clean`, nothing
    /// warned about and nothing else failed. Anything less keeps raw/ for
    /// a look.
    pub fn report(&self, summary: &RunSummary, clean: bool) {
        crate::trace::report(&self.experiment, summary, self.config);
        let verified = summary.archive.is_some() && summary.dropped == 0 && clean;
        if self.after_run.remove_raw
            && verified
            && let Err(e) = std::fs::remove_dir_all(&self.raw_dir)
        {
            say!("[gputrace] warning: cannot remove {}: {e}", self.raw_dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_run_travels_as_hidden_options() {
        assert!(AfterRun::default().args().is_empty());
        let after = AfterRun { program_ended: Some(42), remove_raw: true, snapshot: false };
        assert_eq!(after.args(), ["--program-ended", "42", "--remove-raw"]);
    }

    #[test]
    fn the_options_follow_the_settings() {
        let dir = std::path::Path::new("/nonexistent/exp");
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let config = Config::from_pairs(&pairs(&[("GPUTRACE_MERGE_JOBS", "3")])).unwrap();
        let after = AfterRun { program_ended: Some(7), remove_raw: false, snapshot: false };
        let request = Request::new(Experiment::at(dir), &config, true, after);
        let options = request.options();
        assert_eq!(options.raw_dir, dir.join("raw"));
        assert_eq!(options.jobs, 3);
        assert_eq!(options.program_ended, Some(7));
        let target = options.archive.expect("tracing is on by default");
        assert!(target.force);
        assert_eq!(target.dir, dir);
        let config = Config::from_pairs(&pairs(&[("GPUTRACE_ENABLE_TRACING", "false")])).unwrap();
        assert!(Request::new(Experiment::at(dir), &config, false, after).options().archive.is_none());
    }
}
