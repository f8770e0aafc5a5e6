//! gputrace's merge: an experiment's raw streams into one OTF2 archive
//! and its run summary (a [`RunSummary`], which the `report` crate
//! renders).
//!
//! 1. [`inputs`] reads every stream's header and definitions (event chunks
//!    are only indexed) and joins the streams of each process;
//! 2. [`clock`] puts every process on rank 0's clock, and [`correct`]
//!    refines it by the MPI messages when the job spans several hosts;
//! 3. [`layout`] defines the archive's system tree, locations, regions and
//!    communicators;
//! 4. [`write`] streams each location's events through its [`timeline`]
//!    into a [`Sink`] — the archive's event writer, the summary's
//!    [`Counters`](gputrace_summary::Counters) and the caller's [`Extra`]
//!    sink (the Cube profile) — one location at a time, so memory does not
//!    grow with the trace.
//!
//! Inside, `run.rs` takes a merge through these steps, `passes.rs` runs
//! the event passes (on several threads, and as one rank of a merge run as
//! an MPI job), and `archive.rs` holds what concerns the archive's files
//! (removing and measuring one) and its process-level definitions.
//!
//! A library: it prints nothing (warnings and progress go to the caller's
//! [`Observer`]) and knows nothing of the command or of the processes
//! that wrote the streams. It depends on `raw`, `otf2` (and never on the
//! in-process `runtime` or a producer).

mod archive;
pub mod clock;
pub mod correct;
mod error;
pub mod graph_traffic;
pub mod inputs;
pub mod launch_paths;
pub mod layout;
mod passes;
mod run;
mod sampled_defs;
pub mod sink;
pub mod summary;
pub mod symbols;
pub mod timeline;
pub mod write;
pub mod writers;

use std::path::{Path, PathBuf};

pub use archive::{archive_size, lost_property, remove_archive, timers};
pub use error::{Error, Result};
use gputrace_summary::RunSummary;
pub use inputs::NotTraced;
use inputs::Process;
pub use sink::{Extra, Record, Sink, Work};
pub use write::Repairs;

/// What to merge, and where to.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// The directory of raw streams (`*.gtr`).
    pub raw_dir: &'a Path,
    /// Where the archive goes; `None`: only the summary is made.
    pub archive: Option<Target<'a>>,
    /// What the caller knows was not traced, and why (the program ran
    /// under nsys; `GPUTRACE_CUDA_ENABLE=no`): said with what the streams
    /// say, in the summary or in [`Error::NothingRecorded`].
    pub not_traced: &'a [NotTraced],
    /// When the traced program ended, as its launcher saw it ([`gputrace_clock::now`]'s
    /// clock): the summary's time to the archive runs from there. Without
    /// it, from the last process's exit on this host.
    pub program_ended: Option<u64>,
    /// The processes are still running (a snapshot of a job gputrace
    /// keeps running, `GPUTRACE_ON_HANG=snapshot`): one that has not
    /// closed its trace is not reported as ended, and its calls in flight
    /// end at `program_ended` (the snapshot's moment).
    pub running: bool,
    /// Whether the MPI processes recorded all their communication (the
    /// point-to-point, collective and non-blocking groups were on): the
    /// archive's `OTF2::MPI_COMMUNICATION_COMPLETE`, false too when a
    /// process dropped events.
    pub mpi_complete: bool,
    /// Threads that write locations at once ([`jobs`] for the default):
    /// 1 writes them one after the other on the calling thread.
    pub jobs: usize,
    /// The most sends and receives between hosts the clock correction
    /// reads ([`correct::MAX_MESSAGES`] but in tests).
    pub max_correction_messages: u64,
}

/// The number of threads a merge uses by default: the cores this process
/// may run on.
pub fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// An archive to write: `dir/name.otf2`, `dir/name.def`, `dir/name/`.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub dir: &'a Path,
    pub name: &'a str,
    /// Replace an archive that is there (else [`Error::ArchiveExists`]).
    pub force: bool,
}

impl Target<'_> {
    /// The anchor file readers open.
    pub fn anchor(&self) -> PathBuf {
        self.dir.join(format!("{}.otf2", self.name))
    }
}

/// Who hears of a merge as it goes: from every thread of the merge.
pub trait Observer: Sync {
    /// A problem in the input that the merge worked around (a damaged
    /// stream, a process numbered twice): one line.
    fn warning(&self, text: &str);
    /// The merge begins; it will read about this many events.
    fn started(&self, _total_events: u64) {}
    /// This many more events were read.
    fn progress(&self, _events: u64) {}
    /// The merge ended (successfully or not).
    fn finished(&self) {}
}

/// What the archive defines, as an [`Extra`] sink learns it before the
/// first event.
#[derive(Clone, Copy)]
pub struct Defined<'a> {
    /// Every definition (the system tree is read back with
    /// [`otf2::Definitions::system_tree`]).
    pub defs: &'a otf2::Definitions,
    /// Regions by summary index, the processes' locations.
    pub layout: &'a layout::Layout,
    /// The processes, in the layout's order.
    pub processes: &'a [Process],
}

/// Merges the raw streams of `options.raw_dir`, writing the archive when a
/// target is given, and returns the summary.
///
/// # Errors
///
/// Nothing to merge ([`Error::NothingRecorded`], [`Error::NothingToMerge`]),
/// an archive in the way, or a failed write. A half-written archive is
/// removed; the raw streams are never touched.
pub fn merge(options: &Options<'_>, observer: &dyn Observer) -> Result<RunSummary> {
    merge_with(options, observer, &mut ())
}

/// [`merge`], with `extra` fed the same events in the same pass (a
/// profile): with the archive and the summary, or with the summary alone.
pub fn merge_with<E: Extra>(options: &Options<'_>, observer: &dyn Observer, extra: &mut E) -> Result<RunSummary> {
    let summary = run::run(options, observer, extra, None)?;
    Ok(summary.expect("a merge on its own has the summary"))
}

/// [`merge_with`], as one of the `comm.size()` merge ranks of a merge run
/// as an MPI job: each rank merges its share of the processes (balanced
/// by their events) into the one archive the ranks write together
/// ([`otf2::ArchiveWriter::create_collective`]); rank 0 gets every rank's
/// counters and `extra` results and returns the summary (the others
/// `None`). Every rank reads every stream's header and definitions, and
/// defines the same archive.
///
/// A rank that gets an error must end the job (the others wait in a
/// collective operation); the error is the same on every rank when the
/// input is what is wrong ([`Error::is_bad_input`]).
///
/// # Errors
///
/// As [`merge_with`]; [`Error::TooManyRanks`] for more ranks than
/// processes; [`Error::Exchange`] when the ranks could not exchange their
/// results.
pub fn merge_collective<E: Extra>(
    options: &Options<'_>,
    observer: &dyn Observer,
    extra: &mut E,
    comm: std::sync::Arc<dyn otf2::Collectives>,
) -> Result<Option<RunSummary>> {
    run::run(options, observer, extra, Some(comm))
}
