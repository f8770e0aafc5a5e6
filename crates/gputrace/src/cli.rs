//! The command line, and its translation into the `GPUTRACE_*` settings the
//! rest of gputrace reads. Flags are shorthands for variables: both end up
//! in one list of (name, value) pairs that is validated before anything
//! runs.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Trace MPI programs (and, with the CUDA agent, their GPU work) into one
/// OTF2 archive that Vampir opens, with a summary in the terminal.
#[derive(Debug, Parser)]
#[command(
    name = "gputrace",
    version,
    about,
    long_about = None,
    allow_external_subcommands = true,
    subcommand_value_name = "COMMAND",
    subcommand_help_heading = "Commands (anything else is the program to trace)",
    after_help = "Examples:\n  gputrace mpirun -np 4 ./app\n  gputrace -o run1 mpiexec -n 8 ./solver input.dat\n  \
                  gputrace merge gputrace-app-20261123_101500\n  gputrace info config-vars --full\n\n\
                  Every option is also a GPUTRACE_* variable; `gputrace info config-vars` lists them."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Experiment directory (GPUTRACE_EXPERIMENT_DIRECTORY); must not exist.
    /// For export and plot: the file (or directory) to write.
    #[arg(short = 'o', long = "output", value_name = "DIR", global = true)]
    pub output: Option<PathBuf>,

    /// MPI function groups to record (GPUTRACE_MPI_ENABLE_GROUPS), e.g. p2p,coll.
    #[arg(long, value_name = "GROUPS")]
    pub mpi_groups: Option<String>,

    /// Score-P filter file (GPUTRACE_FILTERING_FILE).
    #[arg(long, value_name = "FILE")]
    pub filter: Option<PathBuf>,

    /// Event buffer memory per process (GPUTRACE_TOTAL_MEMORY), e.g. 64M.
    #[arg(long, value_name = "SIZE")]
    pub total_memory: Option<String>,

    /// Only the summary, no OTF2 archive (GPUTRACE_ENABLE_TRACING=false).
    #[arg(long)]
    pub no_trace: bool,

    /// Print gputrace's own diagnostics (GPUTRACE_VERBOSE=true).
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Merge the raw streams of an experiment directory into its OTF2
    /// archive again (the archive must not exist yet, or is rebuilt with
    /// --force).
    Merge {
        /// The experiment directory (holds raw/).
        dir: PathBuf,
        /// Replace an existing archive in that directory.
        #[arg(long)]
        force: bool,
    },
    /// Summary tables of an archive, as `nsys stats` prints them: CUDA
    /// API, kernels, memory operations, MPI, NCCL, NVLink, and the MPI and
    /// GPU communication matrices.
    Stats {
        /// An experiment directory or its traces.otf2 (Score-P's archives too).
        input: PathBuf,
        /// A report to print (repeatable; default: all that apply). An
        /// unknown name lists them.
        #[arg(long = "report", value_name = "NAME")]
        reports: Vec<String>,
        /// table, csv or json.
        #[arg(long, value_name = "FORMAT", default_value = "table")]
        format: String,
        /// The short form printed after a traced run: the top 5 rows of
        /// each non-empty report.
        #[arg(long, conflicts_with_all = ["reports", "format"])]
        short: bool,
    },
    /// Convert an archive: `--format chrome` writes Chrome trace-event
    /// JSON (Perfetto, chrome://tracing) to -o FILE (.json or .json.gz);
    /// `--format vite-otf2` writes to -o DIR a copy of the archive that
    /// ViTE can display.
    Export {
        /// chrome or vite-otf2.
        #[arg(long, value_name = "FORMAT")]
        format: String,
        /// An experiment directory or its traces.otf2.
        input: PathBuf,
    },
    /// Draw an archive as a PNG (-o FILE): a timeline with a lane per
    /// thread and stream, or with --matrix a heatmap of the MPI (rank x
    /// rank) or GPU (GPU x GPU) communication matrix.
    Plot {
        /// mpi or gpu: a communication heatmap instead of the timeline.
        #[arg(long, value_name = "WHICH")]
        matrix: Option<String>,
        /// Image width in pixels.
        #[arg(long, default_value_t = 1600)]
        width: u32,
        /// An experiment directory or its traces.otf2.
        input: PathBuf,
    },
    /// Information about gputrace.
    Info {
        #[command(subcommand)]
        what: Info,
    },
    /// The merge's worker process, started by gputrace itself (see
    /// isolate.rs); not for users.
    #[command(name = "__merge-worker", hide = true)]
    MergeWorker {
        dir: PathBuf,
        #[arg(long)]
        force: bool,
        /// Where the worker's messages go (a copy of gputrace's stderr).
        #[arg(long, allow_negative_numbers = true)]
        messages_fd: i32,
    },
    /// The program to trace, with its arguments (a launcher such as mpirun,
    /// mpiexec, srun or torchrun, or a plain program).
    #[command(external_subcommand)]
    Run(Vec<OsString>),
}

#[derive(Debug, Subcommand)]
pub enum Info {
    /// List every GPUTRACE_* variable with its type, default and help.
    ConfigVars {
        /// Also print the long help and the allowed values of sets.
        #[arg(long)]
        full: bool,
    },
}

impl Cli {
    /// The settings: `GPUTRACE_*` variables of the environment, overridden
    /// by flags.
    pub fn settings(&self) -> Vec<(String, String)> {
        let mut out = env_settings();
        let mut set = |k: &str, v: String| {
            out.retain(|(name, _)| name != k);
            out.push((k.to_string(), v));
        };
        if let Some(o) = &self.output {
            set("GPUTRACE_EXPERIMENT_DIRECTORY", o.display().to_string());
        }
        if let Some(g) = &self.mpi_groups {
            set("GPUTRACE_MPI_ENABLE_GROUPS", g.clone());
        }
        if let Some(f) = &self.filter {
            set("GPUTRACE_FILTERING_FILE", f.display().to_string());
        }
        if let Some(m) = &self.total_memory {
            set("GPUTRACE_TOTAL_MEMORY", m.clone());
        }
        if self.no_trace {
            set("GPUTRACE_ENABLE_TRACING", "false".into());
        }
        if self.verbose {
            set("GPUTRACE_VERBOSE", "true".into());
        }
        out
    }
}

/// The `GPUTRACE_*` variables of the environment.
pub fn env_settings() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| k.starts_with("GPUTRACE_"))
        .collect()
}
