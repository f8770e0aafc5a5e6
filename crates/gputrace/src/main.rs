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
mod experiment;
mod info;
mod isolate;
mod launch;
mod libs;
mod mpi_merge;
mod progress;
mod request;
mod trace;

use std::io::Write;

use anyhow::Context;
use std::process::ExitCode;

use clap::Parser;

use cli::{AnalyzeFormat, Cli, Command, ExportFormat, Info};

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
        || e.is::<isolate::Refused>()
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
            let mut settings = settings;
            if let Some(n) = jobs {
                settings.retain(|(k, _)| k != "GPUTRACE_MERGE_JOBS");
                settings.push(("GPUTRACE_MERGE_JOBS".to_string(), n.to_string()));
            }
            let config = trace::validate(&settings)?;
            trace::merge_again(&dir, &settings, &config, force)?;
            Ok(0)
        }
        Some(Command::Merge { dir, force, jobs, mpi: true, program_ended, remove_raw, .. }) => {
            let mut settings = settings;
            if let Some(n) = jobs {
                settings.retain(|(k, _)| k != "GPUTRACE_MERGE_JOBS");
                settings.push(("GPUTRACE_MERGE_JOBS".to_string(), n.to_string()));
            }
            mpi_merge::run(&dir, &settings, force, request::AfterRun { program_ended, remove_raw })
        }
        Some(Command::MergeWorker { dir, force, messages_fd, not_traced, program_ended, remove_raw }) => {
            let after_run = request::AfterRun { program_ended, remove_raw };
            Ok(isolate::worker(&dir, force, messages_fd, &not_traced, after_run))
        }
        Some(Command::Stats { input, short: true, .. }) => {
            let anchor = report::anchor_of(&input)?;
            let mut out = std::io::stdout().lock();
            out.write_all(report::stats::short_summary(&anchor)?.as_bytes())?;
            out.flush()?;
            Ok(0)
        }
        Some(Command::Stats { input, reports, format, by_rank, window, longest, .. }) => {
            let window = window.window();
            let format = format.table_format();
            let request = report::stats::StatsRequest { reports, format, by_rank, window, longest };
            match output {
                Some(prefix) => {
                    let prefix = required_output(Some(&prefix), "stats")?;
                    for file in report::stats::write_files(&input, &request, prefix)? {
                        say!("gputrace: wrote {}", file.display());
                    }
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    report::stats::run(&input, &request, &mut out)?;
                    out.flush()?;
                }
            }
            Ok(0)
        }
        Some(Command::Analyze { input, format, gap_threshold, sync_min_calls, short_kernel_min, .. }) => {
            let gap = config::parse_duration(&gap_threshold).ok_or_else(|| {
                UsageError(format!(
                    "--gap-threshold {gap_threshold}: not a duration (500ms, 2ms, 100us, 50000ns, 1s; a bare number \
                     is milliseconds)"
                ))
            })?;
            let options = report::analyze::Options {
                gap_threshold_ns: u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX),
                sync_min_calls,
                short_kernel_min,
                ..report::analyze::Options::default()
            };
            let file = output.as_deref().map(|o| required_output(Some(o), "analyze")).transpose()?;
            let analysis = report::analyze::analyze(&input, &options)?;
            let write = |out: &mut dyn Write| match format {
                AnalyzeFormat::Table => report::analyze::write_table(&analysis, out),
                AnalyzeFormat::Json => report::analyze::write_json(&analysis, out),
            };
            match file {
                Some(path) => {
                    let shown = experiment::show_path(path);
                    let mut out =
                        report::output::OutputFile::create(path).with_context(|| format!("cannot create {shown}"))?;
                    write(&mut out).and_then(|()| out.commit()).with_context(|| format!("writing {shown}"))?;
                    say!("gputrace: wrote {}", path.display());
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    write(&mut out)?;
                    out.flush()?;
                }
            }
            // The wait states as a Cube file beside the archive, as
            // Scalasca's scout.cubex; not writable there: said, no more.
            let anchor = std::path::Path::new(&analysis.archive);
            let scout = anchor.parent().unwrap_or(std::path::Path::new(".")).join("scout.cubex");
            match report::analyze::cube::write_wait_states(&analysis, &scout) {
                Ok(0) => {}
                Ok(_) => say!("[gputrace] MPI wait states as a Cube profile: {}", scout.display()),
                Err(e) => say!("gputrace: warning: {:#}", anyhow::Error::from(e)),
            }
            Ok(0)
        }
        Some(Command::Export { format, input, window, .. }) => {
            let output = required_output(output.as_deref(), "export")?;
            let window = window.window();
            match format {
                ExportFormat::Chrome => {
                    let n = report::chrome::export(&input, output, &window)?;
                    say!("gputrace: wrote {} ({} events)", output.display(), n.events);
                }
                ExportFormat::ViteOtf2 if !window.is_everything() => {
                    return Err(UsageError(
                        "--from, --to and --ranks are for --format chrome: the ViTE copy is of the whole archive"
                            .into(),
                    )
                    .into());
                }
                ExportFormat::ViteOtf2 => {
                    // The copy goes into a directory, never over an archive.
                    let taken = if output.exists() && !output.is_dir() {
                        Some("is not a directory")
                    } else if output.join("traces.otf2").symlink_metadata().is_ok() {
                        Some("already holds an archive (traces.otf2)")
                    } else {
                        None
                    };
                    if let Some(why) = taken {
                        return Err(UsageError(format!(
                            "cannot write the ViTE copy to {}: it {why}",
                            experiment::show_path(output)
                        ))
                        .into());
                    }
                    let anchor = report::vite::export(&input, output)?;
                    say!("gputrace: wrote {} (open it with `vite {}`)", output.display(), anchor.display());
                }
            }
            Ok(0)
        }
        Some(Command::Plot { matrix, metrics, width, input, window, .. }) => {
            let output = required_output(output.as_deref(), "plot")?;
            let window = window.window();
            match matrix {
                None if metrics => {
                    report::plot::metrics(&input, output, width, &window)?;
                    say!("gputrace: wrote {}", output.display());
                }
                None => {
                    let facts = report::plot::timeline(&input, output, width, &window)?;
                    say!("gputrace: wrote {} ({})", output.display(), timeline_line(&facts));
                }
                Some(which) => {
                    let facts = report::plot::heatmap(&input, output, which.name(), &window)?;
                    say!("gputrace: wrote {} (colour scale: {})", output.display(), facts.scale.describe());
                }
            }
            Ok(0)
        }
        Some(Command::Run(argv)) => {
            if let Some(name) = argv.first().and_then(|w| cli::did_you_mean(w, argv.get(1).map(|n| n.as_os_str()))) {
                let word = argv[0].to_string_lossy();
                return Err(UsageError(format!(
                    "`{word}` is not a gputrace command, and {} is an experiment: did you mean `gputrace {name}`? (to \
                     trace a program named {word}, give its path: ./{word})",
                    experiment::show_path(std::path::Path::new(&argv[1]))
                ))
                .into());
            }
            trace::trace(&argv, &settings)
        }
    }
}

/// What a timeline shows, in a line: its lanes, its span and its colours
/// (`16 lanes, 0.000 s to 1.234 s; colours: MPI_Recv 41.2 % (MPI), ...`).
fn timeline_line(facts: &report::plot::TimelineFacts) -> String {
    let total: f64 = facts.classes.iter().map(|c| c.seconds).sum();
    let colours: Vec<String> = facts
        .classes
        .iter()
        .map(|c| {
            let share = if total > 0.0 { c.seconds * 100.0 / total } else { 0.0 };
            let kind = if c.kind.is_empty() { "grey".to_owned() } else { c.kind.to_owned() };
            format!("{} {share:.1} % ({kind})", c.name)
        })
        .collect();
    format!(
        "{} lanes, {:.6} s to {:.6} s; colours by time: {}",
        facts.lanes,
        facts.start_ns as f64 / 1e9,
        facts.end_ns as f64 / 1e9,
        colours.join(", ")
    )
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

/// The `-o` a subcommand writes to. Its directory must exist: an output
/// that cannot be made is bad input (exit 2), as an experiment directory
/// that cannot be made is.
fn required_output<'a>(output: Option<&'a std::path::Path>, command: &str) -> anyhow::Result<&'a std::path::Path> {
    let output = output.ok_or_else(|| UsageError(format!("gputrace {command} needs -o OUTPUT")))?;
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if !parent.is_dir() {
        return Err(UsageError(format!(
            "cannot write {}: {} is not an existing directory",
            experiment::show_path(output),
            experiment::show_path(parent)
        ))
        .into());
    }
    Ok(output)
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
