//! `gputrace`: run a program (usually through an MPI launcher) with
//! gputrace's producers injected into its ranks, then merge what they
//! recorded into one OTF2 archive and print a summary.
//!
//! The command depends on `config`, `merge` and `report` only: never on
//! the runtime or a producer (it finds their libraries next to itself and
//! injects them into the ranks), nor on `raw` or `otf2` directly.

#![deny(unsafe_op_in_unsafe_fn)]

#[macro_use]
mod say;

mod cli;
mod commands;
mod experiment;
mod info;
mod launch;
mod libs;
mod merge_worker;
mod mpi_merge;
mod progress;
mod request;
mod trace;

use std::io::Write;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, Info};

/// An error in what the user asked for: exit status 2, as for bad usage.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version, as clap prints them.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            say!("gputrace: error: {}", cli::one_line(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            say!("gputrace: error: {e:#}");
            ExitCode::from(exit_code_of(&e))
        }
    }
}

/// The exit status for an error: 2 for bad input (usage, settings, a
/// directory that cannot be used, one that holds nothing to merge), 127
/// for a program that cannot start, 1 for everything else (a full disk, a
/// failing library).
fn exit_code_of(e: &anyhow::Error) -> u8 {
    let bad_merge_input = e.downcast_ref::<merge::Error>().is_some_and(merge::Error::is_bad_input);
    if e.is::<UsageError>()
        || e.downcast_ref::<report::Error>().is_some_and(report::Error::is_bad_input)
        || e.is::<merge_worker::Refused>()
        || bad_merge_input
    {
        2
    } else if e.is::<launch::CannotStart>() {
        127
    } else {
        1
    }
}

fn run(mut cli: Cli) -> anyhow::Result<i32> {
    let settings = cli.settings();
    let output = where_output_goes(&mut cli)?;
    let output = output.as_deref();
    if !matches!(cli.command, Some(Command::Run(_))) {
        // A tool, not a traced run (which calibrates the map it hands
        // on): it reads its host's map file never, and so never writes
        // one into the experiment it merges.
        gputrace_clock::init_for_tool();
    }
    match cli.command {
        None => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            cmd.print_help()?;
            Ok(2)
        }
        Some(Command::Info { what: Info::ConfigVars { full, .. } }) => {
            let mut out = std::io::stdout().lock();
            info::config_vars(&mut out, full)?;
            out.flush()?;
            Ok(0)
        }
        Some(Command::Merge { dir, force, jobs, mpi: false, .. }) => {
            let settings = trace::Settings::validate(with_merge_jobs(settings, jobs))?;
            trace::merge_again(&dir, &settings, force)?;
            Ok(0)
        }
        Some(Command::Merge { dir, force, jobs, mpi: true, program_ended, remove_raw, .. }) => {
            let settings = trace::Settings::validate(with_merge_jobs(settings, jobs))?;
            mpi_merge::run(&dir, &settings, force, request::AfterRun { program_ended, remove_raw, snapshot: false })
        }
        Some(Command::MergeWorker { dir, force, messages_fd, not_traced, program_ended, remove_raw, snapshot }) => {
            let after_run = request::AfterRun { program_ended, remove_raw, snapshot };
            Ok(merge_worker::worker(&dir, force, messages_fd, &not_traced, after_run))
        }
        Some(Command::Stats { input, short: true, .. }) => commands::stats_short(&input),
        Some(Command::Stats { input, reports, format, by_rank, window, longest, .. }) => {
            let window = window.window();
            let format = format.table_format();
            let request = report::stats::StatsRequest { reports, format, by_rank, window, longest };
            commands::stats(&input, &request, output)
        }
        Some(Command::Analyze {
            input, format, gap_threshold, sync_min_calls, short_kernel_min, iterations, ..
        }) => {
            let limits = (sync_min_calls, short_kernel_min);
            commands::analyze(&input, format, &gap_threshold, limits, iterations, output)
        }
        Some(Command::Export { format, input, window, .. }) => commands::export(format, &input, &window, output),
        Some(Command::Plot { matrix, metrics, width, input, window, .. }) => {
            commands::plot(matrix, metrics, width, &input, &window, output)
        }
        Some(Command::Run(argv)) => commands::run_program(&argv, settings),
    }
}

/// The settings of a merge, with `--jobs` (when given) as
/// `GPUTRACE_MERGE_JOBS` over what the environment says.
fn with_merge_jobs(mut settings: Vec<(String, String)>, jobs: Option<usize>) -> Vec<(String, String)> {
    if let Some(n) = jobs {
        settings.retain(|(k, _)| k != "GPUTRACE_MERGE_JOBS");
        settings.push(("GPUTRACE_MERGE_JOBS".to_string(), n.to_string()));
    }
    settings
}

/// The `-o` of the subcommand, taken out of `cli`: given after the
/// subcommand's name (where its --help describes it) or before it (as
/// `gputrace -o DIR` names a traced run's experiment directory). A
/// subcommand that writes no file it could name refuses it, in one line,
/// rather than ignoring it.
fn where_output_goes(cli: &mut Cli) -> anyhow::Result<Option<std::path::PathBuf>> {
    let before = cli.output.clone();
    let (after, name, refused) = match &mut cli.command {
        None | Some(Command::Run(_)) => return Ok(before),
        Some(Command::Stats { output, .. }) => (output.take(), "stats", None),
        Some(Command::Analyze { output, .. }) => (output.take(), "analyze", None),
        Some(Command::Export { output, .. }) => (output.take(), "export", None),
        Some(Command::Plot { output, .. }) => (output.take(), "plot", None),
        Some(Command::Merge { output, .. }) => {
            (output.take(), "merge", Some("it writes the archive into the experiment directory it is given"))
        }
        Some(Command::Info { what: Info::ConfigVars { output, .. } }) => {
            (output.take(), "info config-vars", Some("it prints to standard output"))
        }
        Some(Command::MergeWorker { .. }) => (None, "__merge-worker", Some("it merges into its directory")),
    };
    if let Some(why) = refused.filter(|_| before.is_some() || after.is_some()) {
        return Err(UsageError(format!("gputrace {name} takes no -o: {why}")).into());
    }
    match (before, after) {
        (Some(_), Some(_)) => {
            Err(UsageError(format!("-o given twice, before and after `{name}`: give it once")).into())
        }
        (before, after) => Ok(after.or(before)),
    }
}

/// Whether the output was a pipe its reader closed (`| head -1`): a
/// success, said nothing of. A report's `io::Error` is not in the chain
/// (its variant is transparent), so the report error is asked too.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<report::Error>().is_some_and(report::Error::is_broken_pipe)
    })
}
