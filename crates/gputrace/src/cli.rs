//! The command line, and its translation into the `GPUTRACE_*` settings the
//! rest of gputrace reads. Every variable of the table (`config::VARS`,
//! `config::DEVELOPER_VARS`) has a flag, named there: flags are shorthands
//! for variables, both end up in one list of (name, value) pairs that is
//! validated before anything runs and passed to the traced program. A
//! flag's value is passed on as written, so that the variable's parser
//! (and its messages) is the only one.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

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
                  Every option is also a GPUTRACE_* variable, and every variable an option: the option \
                  sets the variable for the traced program (and wins over the environment); \
                  `gputrace info config-vars` lists them."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Experiment directory (GPUTRACE_EXPERIMENT_DIRECTORY); must not exist.
    /// The subcommands that write files take their own -o (see their --help).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// MPI function groups to record (GPUTRACE_MPI_ENABLE_GROUPS), e.g. p2p,coll.
    #[arg(long, value_name = "SET")]
    pub mpi_groups: Option<OsString>,

    /// What the CUDA agent records (GPUTRACE_CUDA_ENABLE), e.g. kernel,memcpy; no: nothing.
    #[arg(long, value_name = "SET")]
    pub cuda: Option<OsString>,

    /// What the NCCL plugin records (GPUTRACE_NCCL_ENABLE), e.g. coll,p2p; no: nothing.
    #[arg(long, value_name = "SET")]
    pub nccl: Option<OsString>,

    /// Score-P filter file (GPUTRACE_FILTERING_FILE).
    #[arg(long, value_name = "FILE")]
    pub filter: Option<OsString>,

    /// Event buffer memory per process (GPUTRACE_TOTAL_MEMORY), e.g. 64M.
    #[arg(long, value_name = "SIZE")]
    pub total_memory: Option<OsString>,

    /// Size of each CUPTI activity buffer (GPUTRACE_CUDA_BUFFER), e.g. 8M.
    #[arg(long, value_name = "SIZE")]
    pub cuda_buffer: Option<OsString>,

    /// The clock of host timestamps (GPUTRACE_TIMER): auto, tsc or
    /// clock_gettime.
    #[arg(long, value_name = "TIMER")]
    pub timer: Option<OsString>,

    /// How often NVLink traffic is sampled (GPUTRACE_NVLINK_INTERVAL), e.g. 5ms.
    #[arg(long, value_name = "DURATION")]
    pub nvlink_interval: Option<OsString>,

    /// How often GPU utilization, memory, clock, power and temperature are
    /// sampled (GPUTRACE_GPU_METRICS_INTERVAL), e.g. 100ms; `no`: never.
    #[arg(long, value_name = "DURATION")]
    pub gpu_metrics_interval: Option<OsString>,

    /// The CUPTI library to use instead of searching (GPUTRACE_CUPTI_LIB).
    #[arg(long, value_name = "FILE")]
    pub cupti_lib: Option<OsString>,

    /// Only the Cube profile and the summary, no OTF2 archive
    /// (GPUTRACE_ENABLE_TRACING=false).
    #[arg(long)]
    pub no_trace: bool,

    /// Only the archive, no Cube profile and no summary
    /// (GPUTRACE_ENABLE_PROFILING=false).
    #[arg(long, alias = "no-summary")]
    pub no_profile: bool,

    /// Leave NVTX annotations unrecorded: the NVTX library is not
    /// injected (GPUTRACE_NVTX_ENABLE=false).
    #[arg(long)]
    pub no_nvtx: bool,

    /// Sample every thread's call stack each PERIOD of its CPU time
    /// (GPUTRACE_SAMPLING), e.g. 1ms or 10ms: unwound without frame
    /// pointers, the sampled functions in the archive and in `stats`.
    #[arg(long, value_name = "PERIOD")]
    pub sampling: Option<OsString>,

    /// Bytes of stack copied per sample for unwinding
    /// (GPUTRACE_SAMPLING_STACK; 1k to 60k, default 16k).
    #[arg(long, value_name = "SIZE")]
    pub sampling_stack: Option<OsString>,

    /// Record the call path of every MPI, CUDA runtime and NCCL call at its
    /// Enter (GPUTRACE_UNWINDING=true): each call under the user functions
    /// that called it, unwound without frame pointers.
    #[arg(long)]
    pub unwinding: bool,

    /// Keep the raw streams (raw/) after the archive is written, for
    /// `gputrace merge DIR` (GPUTRACE_KEEP_RAW=true).
    #[arg(long)]
    pub keep_raw: bool,

    /// Threads of the merge after the run (GPUTRACE_MERGE_JOBS); 0: one
    /// per available core.
    #[arg(long, value_name = "N")]
    pub merge_jobs: Option<OsString>,

    /// Merge as an MPI job of K ranks, started with the program's launcher
    /// (GPUTRACE_MERGE_RANKS): `mpirun -np K gputrace merge --mpi DIR`.
    #[arg(long, value_name = "K")]
    pub merge_ranks: Option<OsString>,

    /// Start recording SECONDS after the job started, in every process
    /// (GPUTRACE_DELAY), e.g. 2.5 or 500ms.
    #[arg(long, value_name = "SECONDS", help_heading = "Recording window")]
    pub delay: Option<OsString>,

    /// Stop recording SECONDS after it started (GPUTRACE_DURATION); the
    /// program runs on untraced.
    #[arg(long, value_name = "SECONDS", help_heading = "Recording window")]
    pub duration: Option<OsString>,

    /// Stop the job when no process recorded an MPI or NCCL call for
    /// SECONDS (GPUTRACE_HANG_TIMEOUT), and say what was in flight; 0: never.
    #[arg(long, value_name = "SECONDS")]
    pub hang_timeout: Option<OsString>,

    /// Keep only the last SECONDS of events per thread
    /// (GPUTRACE_FLIGHT_RECORDER): memory and disk bounded; the archive of
    /// the last window is written at a hang (timeout 300 s unless set),
    /// at SIGUSR1, when a rank dies and at the end.
    #[arg(long, value_name = "SECONDS")]
    pub flight_recorder: Option<OsString>,

    /// What the hang timeout does (GPUTRACE_ON_HANG): stop (the job) or
    /// snapshot (an archive of what was recorded so far; the job runs on).
    /// With a hang timeout, SIGUSR1 to gputrace writes a snapshot too.
    #[arg(long, value_name = "WHAT")]
    pub on_hang: Option<OsString>,

    /// Record only inside a range the program marks (GPUTRACE_CAPTURE_RANGE):
    /// nvtx:NAME[@N[-M]] (the Nth to Mth NVTX range NAME), cudaProfilerApi
    /// (cudaProfilerStart to Stop), pcontrol (MPI_Pcontrol(0) off, (1) on).
    #[arg(long, value_name = "RANGE", help_heading = "Recording window")]
    pub capture_range: Option<OsString>,

    /// Print gputrace's own diagnostics (GPUTRACE_VERBOSE=true).
    #[arg(short, long)]
    pub verbose: bool,

    /// Developer setting: save the CUPTI buffers the CUDA agent processes
    /// into DIR, for test fixtures (GPUTRACE_CUDA_CAPTURE).
    #[arg(long, value_name = "DIR", help_heading = "Developer options")]
    pub cuda_capture: Option<OsString>,

    /// Developer setting: write every NCCL plugin callback to FILE (%p:
    /// pid, %h: host), for test fixtures (GPUTRACE_NCCL_CAPTURE).
    #[arg(long, value_name = "FILE", help_heading = "Developer options")]
    pub nccl_capture: Option<OsString>,
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
        /// Not taken: the archive is written into DIR (an error says so).
        #[arg(short = 'o', long = "output", hide = true)]
        output: Option<PathBuf>,
        /// Threads that write the archive's locations at once (default:
        /// GPUTRACE_MERGE_JOBS, else one per available core).
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Be one rank of a merge run as an MPI job (`mpirun -np K gputrace
        /// merge --mpi DIR`, or under srun): the K ranks write one archive
        /// together, each its share of the processes.
        #[arg(long)]
        mpi: bool,
        /// With --mpi after a traced run: when the program ended.
        #[arg(long, hide = true, requires = "mpi")]
        program_ended: Option<u64>,
        /// With --mpi after a traced run: remove raw/ after a merge
        /// without warnings.
        #[arg(long, hide = true, requires = "mpi")]
        remove_raw: bool,
    },
    /// Summary tables of an archive, as `nsys stats` prints them: CUDA
    /// API, kernels, memory operations, MPI, NCCL, NVLink, and the MPI and
    /// GPU communication matrices.
    Stats {
        /// An experiment directory or its traces.otf2 (Score-P's archives too).
        input: PathBuf,
        /// A report to print (repeatable, or a comma-separated list;
        /// default: every summary that applies, the per-event *_trace
        /// reports only when named). nsys's names are taken too
        /// (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum,
        /// mpi_event_trace). An unknown name lists them.
        #[arg(long = "report", value_name = "NAME")]
        reports: Vec<String>,
        /// How the reports are written.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = StatsFormat::Table)]
        format: StatsFormat,
        /// A row per name and process (MPI rank) in the summaries of
        /// durations (mpi_sum, user_region_sum, cuda_api_sum...), as Cube
        /// shows every metric per process.
        #[arg(long)]
        by_rank: bool,
        /// Instances the per-event reports (cuda_api_trace,
        /// cuda_gpu_trace, mpi_trace) list: the N longest, longest first.
        #[arg(long, value_name = "N", default_value_t = report::stats::longest::DEFAULT_LONGEST)]
        longest: usize,
        /// The short form printed after a traced run: the top 5 rows of
        /// each non-empty report.
        #[arg(long, conflicts_with_all = ["reports", "format", "output", "by_rank", "from", "to", "ranks"])]
        short: bool,
        #[command(flatten)]
        window: WindowArgs,
        /// Write the reports to files instead of standard output, as `nsys
        /// stats --output`: PREFIX_<report>.txt (table) or
        /// PREFIX_<report>.csv (csv), one per report, or PREFIX.json (json;
        /// -o x.json writes x.json).
        #[arg(short = 'o', long = "output", value_name = "PREFIX")]
        output: Option<PathBuf>,
    },
    /// Why the time went where it went: MPI wait states as Scalasca
    /// defines them (Late Sender, Late Receiver, Wait at NxN, Wait at
    /// Barrier, Late Broadcast, Early Reduce), GPU time per stream and GPU
    /// (kernels, copies, memsets, NCCL, idle waiting for the host or for a
    /// dependency), rules in the manner of `nsys analyze` (synchronous
    /// copies and memsets, pageable memory in async copies, synchronization
    /// calls, GPU gaps, kernels shorter than their launch) and load
    /// imbalance; findings ranked by time lost.
    Analyze {
        /// An experiment directory or its traces.otf2.
        input: PathBuf,
        /// How the analysis is written.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = AnalyzeFormat::Table)]
        format: AnalyzeFormat,
        /// Write the analysis (table or JSON, as --format says) to FILE
        /// instead of standard output. The MPI wait states go to
        /// scout.cubex beside the archive either way.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// A GPU idle at least this long is a GPU gap finding: 500ms, 2ms,
        /// 100us, 50000ns (a bare number is milliseconds).
        #[arg(long, value_name = "DURATION", default_value = "500ms")]
        gap_threshold: String,
        /// Synchronization API calls (cudaDeviceSynchronize...) of one call
        /// path are a finding from this many calls on.
        #[arg(long, value_name = "N", default_value_t = 10)]
        sync_min_calls: u64,
        /// Kernels of one name on one stream that ran shorter than their
        /// launch call are a finding from this many on.
        #[arg(long, value_name = "N", default_value_t = 10)]
        short_kernel_min: u64,
        /// The region (an NVTX range or user region) whose instances are
        /// the iterations: per iteration its critical path, straggler and
        /// what-if projections. NAME also matches NAME#3, "NAME 3", NAME_3
        /// and NAME3.
        #[arg(long, value_name = "NAME")]
        iterations: Option<String>,
    },
    /// Convert an archive: `--format chrome` writes Chrome trace-event
    /// JSON (Perfetto, chrome://tracing) to -o FILE (.json or .json.gz);
    /// `--format vite-otf2` writes to -o DIR a copy of the archive that
    /// ViTE can display.
    Export {
        /// What to write.
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: ExportFormat,
        /// Where to write it (required): the JSON file (.json, or .json.gz
        /// compressed) for chrome, a directory (made if missing, without an
        /// archive in it) for vite-otf2.
        #[arg(short = 'o', long = "output", value_name = "PATH")]
        output: Option<PathBuf>,
        /// An experiment directory or its traces.otf2.
        input: PathBuf,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// Draw an archive as a PNG (-o FILE): a timeline with a lane per
    /// thread and stream, with --matrix a heatmap of the MPI (rank x
    /// rank) or GPU (GPU x GPU) communication matrix, with --metrics the
    /// GPU metrics over time (utilization, memory, clock, power,
    /// temperature), a line per GPU.
    Plot {
        /// A communication heatmap instead of the timeline.
        #[arg(long, value_enum, value_name = "WHICH", conflicts_with = "metrics")]
        matrix: Option<Matrix>,
        /// Line plots of the GPU metrics over time instead of the timeline.
        #[arg(long)]
        metrics: bool,
        /// Image width in pixels.
        #[arg(long, default_value_t = 1600)]
        width: u32,
        /// The PNG file to write (required).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// An experiment directory or its traces.otf2.
        input: PathBuf,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// Information about gputrace.
    Info {
        #[command(subcommand)]
        what: Info,
    },
    /// The merge's worker process, started by gputrace itself (see
    /// merge_worker.rs); not for users.
    #[command(name = "__merge-worker", hide = true)]
    MergeWorker {
        dir: PathBuf,
        #[arg(long)]
        force: bool,
        /// Where the worker's messages go (a copy of gputrace's stderr).
        #[arg(long, allow_negative_numbers = true)]
        messages_fd: i32,
        /// What gputrace knows was not traced: `CUDA:why` (repeatable).
        #[arg(long, value_name = "PART:WHY")]
        not_traced: Vec<String>,
        /// When the traced program ended (CLOCK_MONOTONIC ns), for the
        /// time from its end to the archive.
        #[arg(long)]
        program_ended: Option<u64>,
        /// Remove raw/ after a merge without warnings.
        #[arg(long)]
        remove_raw: bool,
        /// The processes are still running: a snapshot.
        #[arg(long)]
        snapshot: bool,
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
        /// Not taken: the list goes to standard output (an error says so).
        #[arg(short = 'o', long = "output", hide = true)]
        output: Option<PathBuf>,
    },
}

/// `--from`, `--to`, `--ranks` of `stats`, `export` and `plot`: the part
/// of the archive the report is of (see `report::window`).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Window (Vampir's zoom: regions across an edge are clipped to it)")]
pub struct WindowArgs {
    /// Only what happened from TIME on, counted from the trace's start:
    /// 2.5s, 300ms, 40us, 1500ns (a unit is required). A region open at
    /// TIME is cut to begin there.
    #[arg(long, value_name = "TIME")]
    pub from: Option<report::window::Offset>,
    /// Only what happened up to TIME, counted from the trace's start. A
    /// region still open at TIME is cut to end there.
    #[arg(long, value_name = "TIME")]
    pub to: Option<report::window::Offset>,
    /// Only these MPI ranks (their threads and GPU streams): a list such
    /// as 0,2-5. A process without MPI goes by its place among the
    /// archive's processes.
    #[arg(long, value_name = "LIST")]
    pub ranks: Option<report::window::RankList>,
}

impl WindowArgs {
    pub fn window(&self) -> report::window::Window {
        report::window::Window { from: self.from, to: self.to, ranks: self.ranks.clone() }
    }
}

/// `gputrace stats --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// Aligned columns, as `nsys stats` prints them.
    Table,
    /// Comma-separated values, a header line per report.
    Csv,
    /// One JSON object per report.
    Json,
}

impl StatsFormat {
    /// The format the reports take.
    pub fn table_format(self) -> report::table::Format {
        match self {
            StatsFormat::Table => report::table::Format::Table,
            StatsFormat::Csv => report::table::Format::Csv,
            StatsFormat::Json => report::table::Format::Json,
        }
    }
}

/// `gputrace analyze --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormat {
    /// Findings ranked by time lost, then GPU time and computation tables.
    Table,
    /// The whole analysis as one JSON object.
    Json,
}

/// `gputrace export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Chrome trace-event JSON (Perfetto, chrome://tracing), to -o FILE (.json or .json.gz).
    Chrome,
    /// A copy of the archive that ViTE can display, to -o DIR.
    #[value(name = "vite-otf2", alias = "vite")]
    ViteOtf2,
}

/// `gputrace plot --matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Matrix {
    /// MPI point-to-point bytes, rank x rank.
    Mpi,
    /// Bytes between GPUs (peer copies and NCCL), GPU x GPU.
    Gpu,
}

impl Matrix {
    /// The name the heatmap takes.
    pub fn name(self) -> &'static str {
        match self {
            Matrix::Mpi => "mpi",
            Matrix::Gpu => "gpu",
        }
    }
}

impl Cli {
    /// The settings: `GPUTRACE_*` variables of the environment, overridden
    /// by flags.
    pub fn settings(&self) -> Vec<(String, String)> {
        self.settings_over(env_settings())
    }

    /// `env` (the variables of the environment) overridden by the flags.
    pub fn settings_over(&self, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
        for (name, value) in self.flags() {
            env.retain(|(k, _)| k != name);
            env.push((name.to_string(), value));
        }
        env
    }

    /// The variables the flags given set, with their values as written.
    fn flags(&self) -> Vec<(&'static str, String)> {
        let text = |v: &Option<OsString>| v.as_ref().map(|v| v.to_string_lossy().into_owned());
        let switch = |on: bool, value: &str| on.then(|| value.to_string());
        [
            ("GPUTRACE_ENABLE_TRACING", switch(self.no_trace, "false")),
            ("GPUTRACE_ENABLE_PROFILING", switch(self.no_profile, "false")),
            ("GPUTRACE_EXPERIMENT_DIRECTORY", self.output.as_ref().map(|o| o.to_string_lossy().into_owned())),
            ("GPUTRACE_TOTAL_MEMORY", text(&self.total_memory)),
            ("GPUTRACE_FILTERING_FILE", text(&self.filter)),
            ("GPUTRACE_MPI_ENABLE_GROUPS", text(&self.mpi_groups)),
            ("GPUTRACE_CUDA_ENABLE", text(&self.cuda)),
            ("GPUTRACE_CUDA_BUFFER", text(&self.cuda_buffer)),
            ("GPUTRACE_NVLINK_INTERVAL", text(&self.nvlink_interval)),
            ("GPUTRACE_TIMER", text(&self.timer)),
            ("GPUTRACE_GPU_METRICS_INTERVAL", text(&self.gpu_metrics_interval)),
            ("GPUTRACE_CUPTI_LIB", text(&self.cupti_lib)),
            ("GPUTRACE_NCCL_ENABLE", text(&self.nccl)),
            ("GPUTRACE_NVTX_ENABLE", switch(self.no_nvtx, "false")),
            ("GPUTRACE_SAMPLING", text(&self.sampling)),
            ("GPUTRACE_SAMPLING_STACK", text(&self.sampling_stack)),
            ("GPUTRACE_UNWINDING", switch(self.unwinding, "true")),
            ("GPUTRACE_KEEP_RAW", switch(self.keep_raw, "true")),
            ("GPUTRACE_MERGE_JOBS", text(&self.merge_jobs)),
            ("GPUTRACE_MERGE_RANKS", text(&self.merge_ranks)),
            ("GPUTRACE_DELAY", text(&self.delay)),
            ("GPUTRACE_DURATION", text(&self.duration)),
            ("GPUTRACE_CAPTURE_RANGE", text(&self.capture_range)),
            ("GPUTRACE_HANG_TIMEOUT", text(&self.hang_timeout)),
            ("GPUTRACE_FLIGHT_RECORDER", text(&self.flight_recorder)),
            ("GPUTRACE_ON_HANG", text(&self.on_hang)),
            ("GPUTRACE_VERBOSE", switch(self.verbose, "true")),
            ("GPUTRACE_CUDA_CAPTURE", text(&self.cuda_capture)),
            ("GPUTRACE_NCCL_CAPTURE", text(&self.nccl_capture)),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
    }
}

/// A command-line error as one line, as gputrace's other errors: clap's
/// message and the values it allows, without the pointer to `--help`.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:"))
        .collect();
    let line = parts.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_string()
}

/// The subcommand `word` is a near miss of, when `next` (the argument
/// after it) is an experiment directory or an archive: `gputrace stat DIR`
/// would otherwise trace `/usr/bin/stat DIR`. A near miss: one or two
/// letters added, dropped, changed or swapped (`stat`, `analyse`,
/// `exprot`). A program of that name is still traced when what follows
/// is not an experiment, or when it is given as a path (`./stat`).
pub fn did_you_mean(word: &std::ffi::OsStr, next: Option<&std::ffi::OsStr>) -> Option<String> {
    let word = word.to_str()?;
    if word.contains('/') {
        return None;
    }
    let next = std::path::Path::new(next?);
    let experiment = next.is_dir() && (next.join("traces.otf2").is_file() || next.join("raw").is_dir())
        || next.extension().is_some_and(|e| e == "otf2") && next.is_file();
    if !experiment {
        return None;
    }
    let cmd = <Cli as clap::CommandFactory>::command();
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_owned())
        .filter(|name| name != word)
        .map(|name| (edit_distance(word, &name), name))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, name)| name)
}

/// Letters to add, drop, change or swap (two neighbours) to turn `a` into
/// `b` (optimal string alignment distance).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The `GPUTRACE_*` variables of the environment.
pub fn env_settings() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        // The timer's map and the window's origin are gputrace's own
        // hand-over to its processes, not settings (a gputrace run inside
        // a traced program sees them).
        .filter(|(k, _)| {
            k.starts_with("GPUTRACE_")
                && k != gputrace_clock::CALIBRATION_VARIABLE
                && k != config::WINDOW_ORIGIN_VARIABLE
        })
        .collect()
}

#[cfg(test)]
mod tests;
