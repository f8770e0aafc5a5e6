//! `gputrace <command>`: validate the settings, make the experiment
//! directory, run the command with the producers injected into its ranks,
//! merge, and report.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use config::Config;
use config::filter::Filter;
use gputrace_summary::RunSummary;
use raw::Producer;
use report::summary::Render;

use crate::UsageError;
use crate::experiment::Experiment;

/// The hang timeout of a flight recorder without one of its own.
const FLIGHT_RECORDER_HANG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
use crate::launch::{self, Launcher, MpiFlavor, Plan, launcher};
use crate::request::AfterRun;
use crate::{libs, merge_worker};

/// The run's settings, checked once: the typed [`Config`] this process
/// acts on, and the `GPUTRACE_*` pairs it came from, which are what
/// crosses a process boundary (the traced ranks, the merge worker and the
/// MPI merge's ranks get them as their environment and parse them there).
#[derive(Debug, Clone)]
pub struct Settings {
    pairs: Vec<(String, String)>,
    config: Config,
}

impl Settings {
    /// Checks every `GPUTRACE_*` setting (and the filter file) before
    /// anything runs; the first problem is a usage error naming variable,
    /// value and what is allowed.
    pub fn validate(pairs: Vec<(String, String)>) -> Result<Settings> {
        let config = Config::from_pairs(&pairs).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            UsageError(lines.join("\ngputrace: error: "))
        })?;
        if let Some(path) = &config.filtering_file {
            Filter::load(path).map_err(|e| UsageError(format!("GPUTRACE_FILTERING_FILE: {e}")))?;
        }
        Ok(Settings { pairs, config })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The pairs, for a child process's environment.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }
}

/// Runs `argv` traced; returns the exit code of the command.
pub fn trace(argv: &[OsString], settings: &Settings) -> Result<i32> {
    let config = settings.config();
    // The timer first: every process started on this host reads the map
    // calibrated here, so they all read one clock.
    gputrace_clock::init_for_launcher();
    let launcher = Launcher::detect(&argv[0]);
    if config.merge_ranks > 0 && !matches!(launcher, Launcher::OpenMpi | Launcher::Hydra | Launcher::Srun) {
        return Err(UsageError(format!(
            "--merge-ranks {} (GPUTRACE_MERGE_RANKS) runs the merge with the program's MPI launcher, and {} is none (mpirun, mpiexec or srun)",
            config.merge_ranks,
            argv[0].to_string_lossy()
        ))
        .into());
    }
    let job_launcher = argv[0].clone();
    let job_options = launcher.merge_job_options(argv);
    let program = launcher.program_name(argv);
    let experiment = match &config.experiment_directory {
        Some(dir) => Experiment::create_requested(dir).map_err(|e| UsageError(format!("{e:#}")))?,
        // A directory that cannot be made is bad input either way (exit 2).
        None => Experiment::create_default(&program).map_err(|e| UsageError(format!("{e:#}")))?,
    };
    let dir = std::path::absolute(&experiment.dir).context("cannot resolve the experiment directory")?;

    let (env, not_traced) = producers_env(argv, settings, launcher, &dir);
    let (argv, env) = launcher.inject(argv, &env);
    tracing::debug!(?argv, ?env, "launching");
    // A flight recorder is for hangs: it watches for one unless told.
    let hang_timeout = match config.hang_timeout.is_zero() && !config.flight_recorder.is_zero() {
        true => FLIGHT_RECORDER_HANG_TIMEOUT,
        false => config.hang_timeout,
    };
    let watch = (!hang_timeout.is_zero()).then(|| {
        let (dir, settings) = (experiment.dir.clone(), settings.clone());
        let taken = std::sync::atomic::AtomicU32::new(0);
        launch::Watch {
            raw_dir: experiment.raw_dir(),
            timeout: hang_timeout,
            keep_running: config.on_hang == "snapshot",
            snapshot: std::sync::Arc::new(move |why: &str| {
                let n = taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                snapshot(&dir, &settings, n, why);
            }),
        }
    });
    let code = launch::run(&Plan { argv, env, watch }).inspect_err(|_| {
        // Nothing ran: leave no empty experiment directory behind.
        let _ = std::fs::remove_dir_all(&experiment.dir);
    })?;
    let program_ended = gputrace_clock::now();

    // A rank may outlive its launcher (mpirun stopped by a signal gives up
    // on its ranks; a rank still writes out its buffers after one): wait
    // for the streams' writers, a bounded time, so their last events are
    // in the archive.
    let alive = merge::writers::wait(&experiment.raw_dir(), WRITER_PATIENCE);
    if !alive.is_empty() {
        say!("[gputrace] warning: {}", merge::writers::describe(&alive));
    }

    // Whatever the merge meets (a full disk, a crash in libotf2), the
    // program's exit code is ours: the merge only adds one line.
    let after_run = AfterRun {
        program_ended: Some(program_ended),
        remove_raw: !config.keep_raw && alive.is_empty(),
        snapshot: false,
    };
    if config.merge_ranks > 0 {
        let job = Job { launcher_path: &job_launcher, launcher, options: &job_options };
        merge_as_job(&job, &experiment, settings, config.merge_ranks, after_run);
        return Ok(code);
    }
    merge_after_run(&experiment, settings, &not_traced, after_run);
    Ok(code)
}

/// A snapshot of a running job (`GPUTRACE_ON_HANG=snapshot`, SIGUSR1):
/// `DIR/snapshot-N/` gets hard links to the raw streams as they are
/// (the merge reads what each has committed; they go on growing in
/// `raw/`), merged there into an archive of its own with its summary; the
/// calls in flight end at this moment. A failure is one line; the job
/// runs on either way.
fn snapshot(dir: &Path, settings: &Settings, n: u32, why: &str) {
    let snap = Experiment::at(&dir.join(format!("snapshot-{n}")));
    let raw = Experiment::at(dir).raw_dir();
    // Streams only: the merge says what of anything else it meets in the
    // run's own raw/.
    let linked = std::fs::create_dir_all(snap.raw_dir()).and_then(|()| {
        // An unreadable raw/ is said as such, not as a trace of nothing.
        std::fs::read_dir(&raw)?;
        for path in raw::stream_files(&raw) {
            let to = snap.raw_dir().join(path.file_name().unwrap_or_default());
            std::fs::hard_link(&path, &to).or_else(|_| std::fs::copy(&path, &to).map(|_| ()))?;
        }
        Ok(())
    });
    if let Err(e) = linked {
        say!("[gputrace] warning: snapshot {n} ({why}) not written: {}: {e}", snap.raw_dir().display());
        return;
    }
    say!("[gputrace] snapshot {n} ({why}): {}", snap.dir.display());
    let after = AfterRun { program_ended: Some(gputrace_clock::now()), remove_raw: true, snapshot: true };
    if let Err(e) = merge_worker::merge(&snap, settings, false, &[], after) {
        say!("[gputrace] warning: snapshot {n} ({why}): {e:#}");
    }
}

/// The environment of the traced processes, and what gputrace knows will
/// not be traced: the settings, the experiment directory, the window's
/// origin and the clock's map, and each enabled producer's library (a
/// missing one said and noted).
fn producers_env(
    argv: &[OsString],
    settings: &Settings,
    launcher: Launcher,
    dir: &Path,
) -> (Vec<(String, OsString)>, Vec<merge::NotTraced>) {
    let config = settings.config();
    let mut env: Vec<(String, OsString)> = settings
        .pairs()
        .iter()
        .filter(|(k, _)| k != "GPUTRACE_EXPERIMENT_DIRECTORY")
        .map(|(k, v)| (k.clone(), OsString::from(v)))
        .collect();
    env.push(("GPUTRACE_EXPERIMENT_DIRECTORY".into(), dir.as_os_str().to_owned()));
    // The moment GPUTRACE_DELAY counts from, the same for every process
    // of the job (docs/window.md).
    let origin = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    env.push((config::WINDOW_ORIGIN_VARIABLE.into(), origin.to_string().into()));
    if let Some(map) = gputrace_clock::calibration_for_children() {
        env.push((gputrace_clock::CALIBRATION_VARIABLE.into(), map.into()));
    }
    // What gputrace knows will not be traced, for the summary (and for
    // the line that says nothing was recorded, which would otherwise
    // blame the program).
    let mut not_traced: Vec<merge::NotTraced> = Vec::new();
    let mut untraced = |what: Producer, why: String| {
        not_traced.push(merge::NotTraced { what, why, processes: 0 });
    };
    if let Some(preload) = mpi_preload(launcher, argv, &mut untraced) {
        env.push(("LD_PRELOAD".into(), preload));
    }
    if config.cuda_enable.is_empty() {
        let value =
            settings.pairs().iter().rev().find(|(k, _)| k == "GPUTRACE_CUDA_ENABLE").map_or("", |(_, v)| v.as_str());
        untraced(Producer::Cuda, format!("GPUTRACE_CUDA_ENABLE={value}"));
    }
    // Each source recorded by a library of its own: the variable that has
    // the program load it (MPI's hooks, chosen per MPI flavour, above).
    // Off, nothing is set: an NVTX without a tool, an NCCL without a
    // plugin cost the program nothing.
    for source in raw::source::SOURCES.iter().filter(|s| config.records(s.stem)) {
        let Some(name) = source.library else { continue };
        match libs::find(name) {
            // A preloaded library joins the list (the MPI hooks first).
            Some(lib) => match env.iter_mut().find(|(k, _)| k == source.loaded_by) {
                Some((_, list)) => {
                    list.push(":");
                    list.push(lib);
                }
                None => {
                    let mut list = lib.into_os_string();
                    // Without the MPI hooks (torchrun, or hooks not found),
                    // the user's own preloads still come after ours.
                    if let Some(existing) = std::env::var_os(source.loaded_by).filter(|v| !v.is_empty())
                        && source.loaded_by == "LD_PRELOAD"
                    {
                        list.push(":");
                        list.push(existing);
                    }
                    env.push((source.loaded_by.into(), list));
                }
            },
            None if source.said_when_missing => {
                say!("[gputrace] warning: {name} not found next to gputrace; {} is not traced", source.name);
                untraced(source.producer, format!("{name} not found next to gputrace"));
            }
            None => tracing::debug!("{name} not found next to gputrace; {} is not traced", source.name),
        }
    }
    if let Some(profiler) = warn_about_other_profilers(launcher, argv, config) {
        untraced(Producer::Cuda, format!("the program ran under {profiler}, which takes CUPTI for itself"));
    }
    (env, not_traced)
}

/// The merge after a run, in its worker process; what it meets is said
/// in one line (the program's exit code stays the command's). Nothing
/// recorded: why, and the empty experiment directory removed.
fn merge_after_run(experiment: &Experiment, settings: &Settings, not_traced: &[merge::NotTraced], after_run: AfterRun) {
    match merge_worker::merge(experiment, settings, false, not_traced, after_run) {
        Ok(()) => {}
        Err(e) if matches!(e.downcast_ref(), Some(merge_worker::Refused::NothingRecorded(_))) => {
            // Nothing recorded, on a disk that takes no new file: the
            // processes could not create their streams (each said so), which
            // is not that the program did nothing.
            match merge_worker::cannot_create_in(&experiment.raw_dir()) {
                Some(why) => say!(
                    "[gputrace] error: the trace could not be written: no raw stream could be created in {}: {why}; \
                     free some room there or trace into another directory (-o)",
                    experiment.raw_dir().display()
                ),
                None => say!("[gputrace] warning: {e}"),
            }
            // An experiment directory with nothing in it helps nobody (the
            // streams that only said why they recorded nothing have been
            // heard).
            merge::inputs::remove_untraced_only(&experiment.raw_dir());
            let _ = std::fs::remove_dir(experiment.raw_dir()).and_then(|()| std::fs::remove_dir(&experiment.dir));
        }
        Err(e) => say!("[gputrace] error: {e:#}"),
    }
}

/// The program's launcher, for the merge as an MPI job.
struct Job<'a> {
    launcher_path: &'a std::ffi::OsStr,
    launcher: Launcher,
    /// Its options the merge's job needs too ([`Launcher::merge_job_options`]).
    options: &'a [OsString],
}

/// The merge after a run as an MPI job of `ranks` ranks, started with the
/// program's own launcher: `mpirun -np K gputrace merge --mpi DIR` (srun:
/// `srun -n K`, with the job's `--mpi` and where it ran). Its ranks print
/// the summary; a failure is one line.
fn merge_as_job(job: &Job<'_>, experiment: &Experiment, settings: &Settings, ranks: u64, after: AfterRun) {
    let Ok(exe) = std::env::current_exe() else {
        say!("[gputrace] error: cannot find the gputrace binary for the MPI merge; the raw streams are kept");
        return;
    };
    let mut cmd = std::process::Command::new(job.launcher_path);
    cmd.args(job.options);
    match job.launcher {
        Launcher::Srun => cmd.arg("-n"),
        _ => cmd.arg("-np"),
    };
    cmd.arg(ranks.to_string()).arg(exe).args(["merge", "--mpi"]);
    cmd.args(after.args());
    cmd.arg(&experiment.dir);
    cmd.env_remove("LD_PRELOAD");
    for (k, v) in settings.pairs() {
        cmd.env(k, v);
    }
    launch::end_with_gputrace(&mut cmd);
    tracing::debug!(?cmd, "merging as an MPI job");
    let retry = format!("`gputrace merge {}` tries again", experiment.dir.display());
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => {
            // A rank that failed ended the job as it was: what it wrote is
            // of no use (the experiment directory is this run's own).
            let _ = merge::remove_archive(&experiment.dir, crate::experiment::ARCHIVE_NAME);
            say!(
                "[gputrace] error: the merge as an MPI job of {ranks} ranks failed ({s}); the raw streams are kept: \
                 {retry}"
            )
        }
        Err(e) => say!(
            "[gputrace] error: cannot start the merge as an MPI job ({}: {e}); the raw streams are kept: {retry}",
            job.launcher_path.to_string_lossy()
        ),
    }
}

/// How long the merge after a run waits for ranks that outlived the
/// launcher: longer than a signalled rank takes to write out its buffers
/// (the runtime's `rescue::PATIENCE`, 2 s).
const WRITER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// `gputrace merge DIR`.
pub fn merge_again(dir: &Path, settings: &Settings, force: bool) -> Result<()> {
    let experiment = Experiment::at(dir);
    if !experiment.raw_dir().is_dir() {
        if dir.join(format!("{}.otf2", crate::experiment::ARCHIVE_NAME)).is_file() {
            return Err(UsageError(format!(
                "{} holds its archive but no raw/: the raw streams were removed once the archive was written \
                 (trace with --keep-raw or GPUTRACE_KEEP_RAW=true to keep them for gputrace merge)",
                dir.display()
            ))
            .into());
        }
        return Err(UsageError(format!("{} is not an experiment directory (it has no raw/)", dir.display())).into());
    }
    let alive = merge::writers::live(&experiment.raw_dir());
    if !alive.is_empty() {
        say!("[gputrace] warning: {}", merge::writers::describe(&alive));
    }
    merge_worker::merge(&experiment, settings, force, &[], AfterRun::default())
}

/// The summary reads the archive back (`gputrace stats`'s short tables,
/// `gputrace analyze`'s top findings) for archives of up to this many
/// events: some 20 ms more on the 2-core development machine. The reading
/// costs about 190 ns per event (0.45 s for 2.4 million), which held the
/// command's return well after the archive was written; larger archives
/// get the merge's own tables and one line naming the two commands.
pub const SUMMARY_READ_MAX_EVENTS: u64 = 100_000;

/// The summary after a merge: the totals, then `gputrace stats`'s short
/// form of the archive (the busiest functions, kernels, copies, matrices)
/// and the analysis's top findings for an archive of up to
/// [`SUMMARY_READ_MAX_EVENTS`] events; otherwise, or without an archive,
/// the summary's own tables from the merge's counters.
pub fn report(experiment: &Experiment, summary: &RunSummary, config: &Config) {
    if !config.enable_profiling {
        if let Some((path, _)) = &summary.archive {
            say!("[gputrace] archive: {}", path.display());
        }
        return;
    }
    let read_back = summary.counts.events <= SUMMARY_READ_MAX_EVENTS;
    let anchor = summary.archive.as_ref().map(|(anchor, _)| anchor);
    let short = anchor.filter(|_| read_back).and_then(|anchor| match report::stats::short_summary(anchor) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::debug!("no short stats: {e:#}");
            None
        }
    });
    let mut text = match short {
        Some(tables) => format!("{}\n{tables}", summary.render(10, false)),
        None => summary.render(10, true),
    };
    if let Some(anchor) = anchor {
        text.push_str(&if read_back {
            analysis_lines(anchor, summary.locations, experiment)
        } else {
            not_read_back(summary.counts.events, experiment)
        });
    }
    // Replaced, never written through: a link at summary.txt may point at
    // any file the user can write.
    if let Err(e) = report::output::replace(&experiment.summary(), text.as_bytes()) {
        say!("[gputrace] warning: cannot write {}: {e}", experiment.summary().display());
    }
    for line in text.lines() {
        say!("[gputrace] {line}");
    }
}

/// The line of a summary that did not read its archive back.
fn not_read_back(events: u64, experiment: &Experiment) -> String {
    let dir = crate::experiment::show_path(&experiment.dir);
    format!(
        "stats and analysis: not read back for {} events (more than {}), so that the command returns with the \
         archive: gputrace stats --short {dir}; gputrace analyze {dir}\n",
        report::numbers::thousands(events),
        report::numbers::thousands(SUMMARY_READ_MAX_EVENTS)
    )
}

/// The top findings of `gputrace analyze` for the summary; an archive of
/// more than report::analyze::SUMMARY_MAX_LOCATIONS locations (its pass
/// holds a chunk per location) is left to the command.
fn analysis_lines(anchor: &std::path::Path, locations: usize, experiment: &Experiment) -> String {
    use report::analyze::SUMMARY_MAX_LOCATIONS;
    let dir = crate::experiment::show_path(&experiment.dir);
    if locations > SUMMARY_MAX_LOCATIONS {
        return format!(
            "analysis: skipped for {} locations (more than {SUMMARY_MAX_LOCATIONS}): gputrace analyze {dir}\n",
            report::numbers::thousands(locations as u64),
        );
    }
    match report::analyze::analyze(anchor, &report::analyze::Options::default()) {
        Ok(a) => report::analyze::summary_block(&a, report::analyze::SUMMARY_FINDINGS, &dir),
        Err(e) => {
            tracing::debug!("no analysis: {e:#}");
            String::new()
        }
    }
}

/// The clock correction's limit of messages between hosts: its default,
/// or a test's (`_GPUTRACE_TEST_CORRECTION_LIMIT`).
pub fn correction_limit() -> u64 {
    std::env::var(config::hooks::CORRECTION_LIMIT.name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(merge::correct::MAX_MESSAGES)
}

/// The LD_PRELOAD value for the ranks: the MPI hooks matching the
/// launcher's MPI, before whatever the user preloads already. `None` when
/// the hooks are missing (MPI then goes untraced, with a warning) or the
/// launcher cannot pass them to its workers only.
fn mpi_preload(launcher: Launcher, argv: &[OsString], untraced: &mut impl FnMut(Producer, String)) -> Option<OsString> {
    let flavor = match launcher {
        Launcher::OpenMpi => MpiFlavor::OpenMpi,
        Launcher::Hydra => MpiFlavor::Mpich,
        Launcher::Torchrun => return None,
        Launcher::Srun | Launcher::None => {
            let program = launcher.program_index(argv).map(|i| PathBuf::from(&argv[i]))?;
            launcher::guess_flavor(&which(&program))
        }
    };
    let name = libs::mpi_hooks_name(flavor);
    let Some(lib) = libs::find(name) else {
        say!("[gputrace] warning: {name} not found next to gputrace; MPI calls are not traced");
        untraced(Producer::Mpi, format!("{name} not found next to gputrace"));
        return None;
    };
    let mut value = lib.into_os_string();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(existing);
    }
    Some(value)
}

/// NVIDIA's profilers take CUPTI and set CUDA's injection themselves, so
/// the program they run never loads the agent: say so once, and return
/// the profiler's name.
fn warn_about_other_profilers(launcher: Launcher, argv: &[OsString], config: &Config) -> Option<String> {
    let i = launcher.program_index(argv)?;
    let name = std::path::Path::new(&argv[i]).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !config.cuda_enable.is_empty() && matches!(name, "nsys" | "ncu" | "nv-nsight-cu-cli" | "nvprof") {
        say!(
            "[gputrace] warning: the program runs under {name}, which takes CUPTI for itself: CUDA is not traced \
             (MPI is)"
        );
        return Some(name.to_string());
    }
    None
}

/// Resolves a bare program name through PATH.
fn which(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()))
        .unwrap_or_else(|| program.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_leaves_large_archives_to_the_commands() {
        let exp = Experiment::at(Path::new("run1"));
        let text = not_read_back(SUMMARY_READ_MAX_EVENTS + 1, &exp);
        assert_eq!(
            text,
            "stats and analysis: not read back for 100,001 events (more than 100,000), so that the command returns \
             with the archive: gputrace stats --short run1; gputrace analyze run1\n"
        );
        // The archive is not opened: it does not even exist.
        let text = analysis_lines(Path::new("/nonexistent/traces.otf2"), 2048, &exp);
        assert_eq!(text, "analysis: skipped for 2,048 locations (more than 256): gputrace analyze run1\n");
        // A small one is analysed; one that cannot be read adds nothing.
        assert_eq!(analysis_lines(Path::new("/nonexistent/traces.otf2"), 2, &exp), "");
    }
}
