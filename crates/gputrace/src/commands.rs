//! The subcommands that read an archive and write a report (`stats`,
//! `analyze`, `export`, `plot`), and the check before a traced run: what
//! each does once its arguments are parsed. `main`'s `run` only picks one.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::cli::{self, AnalyzeFormat, ExportFormat, Matrix, WindowArgs};
use crate::{UsageError, experiment, trace};

/// `gputrace stats --short`: the archive's summary in a few lines.
pub fn stats_short(input: &Path) -> anyhow::Result<i32> {
    let anchor = report::anchor_of(input)?;
    let mut out = std::io::stdout().lock();
    out.write_all(report::stats::short_summary(&anchor)?.as_bytes())?;
    out.flush()?;
    Ok(0)
}

/// `gputrace stats`: the tables asked for, to standard output or to files
/// named after `output`.
pub fn stats(input: &Path, request: &report::stats::StatsRequest, output: Option<&Path>) -> anyhow::Result<i32> {
    match output {
        Some(prefix) => {
            let prefix = required_output(Some(prefix), "stats")?;
            for file in report::stats::write_files(input, request, prefix)? {
                say!("gputrace: wrote {}", file.display());
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            report::stats::run(input, request, &mut out)?;
            out.flush()?;
        }
    }
    Ok(0)
}

/// `gputrace analyze`: the analysis as a table or JSON, and the MPI wait
/// states as `scout.cubex` beside the archive.
pub fn analyze(
    input: &Path,
    format: AnalyzeFormat,
    gap_threshold: &str,
    (sync_min_calls, short_kernel_min): (u64, u64),
    iterations: Option<String>,
    output: Option<&Path>,
) -> anyhow::Result<i32> {
    let gap = config::parse_duration(gap_threshold).ok_or_else(|| {
        UsageError(format!(
            "--gap-threshold {gap_threshold}: not a duration (500ms, 2ms, 100us, 50000ns, 1s; a bare number \
             is milliseconds)"
        ))
    })?;
    if iterations.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(UsageError("--iterations: give the name of the region that marks an iteration".into()).into());
    }
    let options = report::analyze::Options {
        gap_threshold_ns: u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX),
        sync_min_calls,
        short_kernel_min,
        iterations,
        ..report::analyze::Options::default()
    };
    let file = output.map(|o| required_output(Some(o), "analyze")).transpose()?;
    let analysis = report::analyze::analyze(input, &options)?;
    let write = |out: &mut dyn Write| match format {
        AnalyzeFormat::Table => report::analyze::write_table(&analysis, out),
        AnalyzeFormat::Json => report::analyze::write_json(&analysis, out),
    };
    match file {
        Some(path) => {
            let shown = experiment::show_path(path);
            let mut out = report::output::OutputFile::create(path).with_context(|| format!("cannot create {shown}"))?;
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
    let anchor = Path::new(&analysis.archive);
    let scout = anchor.parent().unwrap_or(Path::new(".")).join("scout.cubex");
    match report::analyze::cube::write_wait_states(&analysis, &scout) {
        Ok(0) => {}
        Ok(_) => say!("[gputrace] MPI wait states as a Cube profile: {}", scout.display()),
        Err(e) => say!("gputrace: warning: {:#}", anyhow::Error::from(e)),
    }
    Ok(0)
}

/// `gputrace export`: a Chrome/Perfetto trace, or a copy of the archive
/// that ViTE reads.
pub fn export(format: ExportFormat, input: &Path, window: &WindowArgs, output: Option<&Path>) -> anyhow::Result<i32> {
    let output = required_output(output, "export")?;
    let window = window.window();
    match format {
        ExportFormat::Chrome => {
            let n = report::chrome::export(input, output, &window)?;
            say!("gputrace: wrote {} ({} events)", output.display(), n.events);
        }
        ExportFormat::ViteOtf2 if !window.is_everything() => {
            return Err(UsageError(
                "--from, --to and --ranks are for --format chrome: the ViTE copy is of the whole archive".into(),
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
            let anchor = report::vite::export(input, output)?;
            say!("gputrace: wrote {} (open it with `vite {}`)", output.display(), anchor.display());
        }
    }
    Ok(0)
}

/// `gputrace plot`: a timeline, the metrics over time, or a matrix as a
/// heat map, as PNG.
pub fn plot(
    matrix: Option<Matrix>,
    metrics: bool,
    width: u32,
    input: &Path,
    window: &WindowArgs,
    output: Option<&Path>,
) -> anyhow::Result<i32> {
    let output = required_output(output, "plot")?;
    let window = window.window();
    match matrix {
        None if metrics => {
            report::plot::metrics(input, output, width, &window)?;
            say!("gputrace: wrote {}", output.display());
        }
        None => {
            let facts = report::plot::timeline(input, output, width, &window)?;
            say!("gputrace: wrote {} ({})", output.display(), timeline_line(&facts));
        }
        Some(which) => {
            let facts = report::plot::heatmap(input, output, which.name(), &window)?;
            say!("gputrace: wrote {} (colour scale: {})", output.display(), facts.scale.describe());
        }
    }
    Ok(0)
}

/// `gputrace PROGRAM...`: traces the program, unless its first word is a
/// misspelt subcommand followed by an experiment directory.
pub fn run_program(argv: &[OsString], settings: Vec<(String, String)>) -> anyhow::Result<i32> {
    if let Some(name) = argv.first().and_then(|w| cli::did_you_mean(w, argv.get(1).map(|n| n.as_os_str()))) {
        let word = argv[0].to_string_lossy();
        return Err(UsageError(format!(
            "`{word}` is not a gputrace command, and {} is an experiment: did you mean `gputrace {name}`? (to \
             trace a program named {word}, give its path: ./{word})",
            experiment::show_path(Path::new(&argv[1]))
        ))
        .into());
    }
    trace::trace(argv, &trace::Settings::validate(settings)?)
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

/// The `-o` a subcommand writes to. Its directory must exist: an output
/// that cannot be made is bad input (exit 2), as an experiment directory
/// that cannot be made is.
fn required_output<'a>(output: Option<&'a Path>, command: &str) -> anyhow::Result<&'a Path> {
    let output = output.ok_or_else(|| UsageError(format!("gputrace {command} needs -o OUTPUT")))?;
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
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
