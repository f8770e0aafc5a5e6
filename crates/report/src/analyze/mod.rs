//! `gputrace analyze`: why the time went where it went, across MPI, CUDA
//! and NCCL, from an archive read once, merged by time.
//!
//! - **MPI wait states** as Scalasca defines them ([`Pattern`]): Late
//!   Sender, Late Receiver, Wait at N×N, Wait at Barrier, Late Broadcast,
//!   Early Reduce, each as time lost per rank, call path and communicator.
//! - **GPU time** per stream and per GPU: kernels, copies, memsets, NCCL
//!   kernels and idle time, the idle time split into waiting for the host
//!   to launch and waiting on a dependency; compute/communication overlap
//!   per rank.
//! - **Rules** in the manner of `nsys analyze`: synchronous copies and
//!   memsets, pageable memory in asynchronous copies, synchronization API
//!   calls, GPU gaps longer than a threshold, kernels shorter than their
//!   launch.
//! - **Load imbalance**: computation per rank (time outside MPI, NCCL and
//!   CUDA synchronization), max/mean, the slowest rank.
//! - **Stragglers**: per communicator, the rank that arrived at its
//!   collective operations last (entered the MPI call; started the NCCL
//!   kernel on its GPU), by how much, the waiting it caused and why: a
//!   kernel, its GPU's lower clock, or a region it spent longer in
//!   ([`stragglers`]).
//!
//! The pass ([`replay`]) reads host threads and GPU streams through
//! [`TraceReader::read_by_time`](otf2::reader::TraceReader::read_by_time):
//! what it keeps is per location (an open-region stack), per message in
//! flight (a send not yet received), per collective operation not yet
//! completed by every rank, per CUDA launch whose GPU work may still come
//! (at most [`replay::MAX_LAUNCHES`]) and per finding (aggregated by
//! pattern, location, call path and communicator) — bounded whatever the
//! length of the trace — with one exception: for the critical path, each
//! host thread's changes of innermost region (16 bytes per enter or
//! leave, at most [`critical::MAX_CHANGES`], then no path). Findings are plain data ([`Finding`]) for the
//! terminal, JSON, the Chrome export's analysis tracks and, later, Cube
//! metrics.

pub mod critical;
pub mod cube;
mod describe;
pub mod iterations;
mod render;

pub mod replay;
pub mod sampled;
pub mod stragglers;
pub mod stuck;
#[cfg(test)]
mod tests;
pub mod totals;
pub mod unfinished;

use std::path::Path;

use serde::Serialize;

use crate::Result;

pub use critical::{CriticalPath, GpuWhatIf, PathStep, WhatIf};
pub use render::{summary_block, summary_lines, write_json, write_table};
pub use replay::{Instance, MessagePair, Sink};
pub use stragglers::Straggler;
pub use totals::PatternTotal;

/// The run summary analyses archives of up to this many locations: the
/// pass reads every location at once, holding an OTF2 event chunk (1 MiB)
/// for each, so this bounds what the summary adds to the merge's memory
/// (at most about 256 MiB); larger ones say how to run `gputrace analyze`.
pub const SUMMARY_MAX_LOCATIONS: usize = 256;

/// The top findings this many lines long in the run summary.
pub const SUMMARY_FINDINGS: usize = 5;

/// What `gputrace analyze` looks for and reports.
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// A GPU idle for at least this long (ns) is a GPU gap finding.
    pub gap_threshold_ns: u64,
    /// Synchronization API calls of one call path are a finding from this
    /// many calls on.
    pub sync_min_calls: u64,
    /// Kernels of one name on one stream shorter than their launch call
    /// are a finding from this many on.
    pub short_kernel_min: u64,
    /// A load imbalance (max/mean computation per rank) is a finding from
    /// this ratio on.
    pub imbalance_min_ratio: f64,
    /// The region whose instances are the iterations ([`iterations`]).
    pub iterations: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        // nsys analyze's gpu_gaps rule defaults to 500 ms.
        Self {
            gap_threshold_ns: 500_000_000,
            sync_min_calls: 10,
            short_kernel_min: 10,
            imbalance_min_ratio: 1.05,
            iterations: None,
        }
    }
}

/// What a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    LateSender,
    LateReceiver,
    #[serde(rename = "wait_at_nxn")]
    WaitAtNxN,
    WaitAtBarrier,
    LateBroadcast,
    EarlyReduce,
    SyncMemcpy,
    SyncMemset,
    PageableAsyncMemcpy,
    SyncApi,
    GpuGap,
    ShortKernels,
    LoadImbalance,
}

impl Pattern {
    /// Every pattern, in the order the documentation lists them.
    pub const ALL: [Pattern; 13] = [
        Pattern::LateSender,
        Pattern::LateReceiver,
        Pattern::WaitAtNxN,
        Pattern::WaitAtBarrier,
        Pattern::LateBroadcast,
        Pattern::EarlyReduce,
        Pattern::SyncMemcpy,
        Pattern::SyncMemset,
        Pattern::PageableAsyncMemcpy,
        Pattern::SyncApi,
        Pattern::GpuGap,
        Pattern::ShortKernels,
        Pattern::LoadImbalance,
    ];

    /// As the terminal shows it.
    pub fn title(self) -> &'static str {
        match self {
            Pattern::LateSender => "Late Sender",
            Pattern::LateReceiver => "Late Receiver",
            Pattern::WaitAtNxN => "Wait at NxN",
            Pattern::WaitAtBarrier => "Wait at Barrier",
            Pattern::LateBroadcast => "Late Broadcast",
            Pattern::EarlyReduce => "Early Reduce",
            Pattern::SyncMemcpy => "Synchronous memcpy",
            Pattern::SyncMemset => "Synchronous memset",
            Pattern::PageableAsyncMemcpy => "Async memcpy, pageable memory",
            Pattern::SyncApi => "Synchronization API calls",
            Pattern::GpuGap => "GPU gap",
            Pattern::ShortKernels => "Kernels shorter than their launch",
            Pattern::LoadImbalance => "Load imbalance",
        }
    }

    /// `mpi` (a wait state), `gpu` (a rule) or `balance`.
    pub fn category(self) -> &'static str {
        match self {
            Pattern::LateSender
            | Pattern::LateReceiver
            | Pattern::WaitAtNxN
            | Pattern::WaitAtBarrier
            | Pattern::LateBroadcast
            | Pattern::EarlyReduce => "mpi",
            Pattern::LoadImbalance => "balance",
            _ => "gpu",
        }
    }
}

/// A time window, ns since the trace's start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The instance of a finding that lost the most time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Worst {
    pub window: Window,
    pub time_lost_ns: u64,
    /// The rank waited for (a wait state's late partner: the sender, the
    /// receiver, the last to arrive, the root).
    pub partner_rank: Option<u32>,
}

/// One finding: a pattern at one place (a rank's thread and call path on a
/// communicator, a stream's kernel, a GPU), its instances aggregated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub pattern: Pattern,
    /// The pattern as the terminal shows it.
    pub title: &'static str,
    pub category: &'static str,
    /// The MPI rank (world) of the process where the time was lost.
    pub rank: Option<u32>,
    /// `rank r`, or the process's name without MPI.
    pub process: String,
    /// The thread, stream or GPU (`Master thread`, `CUDA[0:7] rank 0`,
    /// `CUDA Device 0`).
    pub location: String,
    /// The region stack at the waiting call, outermost first (host
    /// findings).
    pub call_path: Vec<String>,
    /// The kernel (or copy) a GPU finding is about.
    pub kernel: Option<String>,
    pub communicator: Option<String>,
    /// How many ranks the communicator has.
    pub communicator_size: Option<u64>,
    /// Its members as world ranks, in runs (`0-3`, `1,3`).
    pub communicator_ranks: Option<String>,
    pub time_lost_ns: u64,
    pub instances: u64,
    /// From the first instance's start to the last one's end.
    pub window: Window,
    pub worst: Worst,
    /// Bytes the instances moved (copies, memsets), when known.
    pub bytes: Option<u64>,
    /// One sentence with the finding's own numbers.
    pub detail: String,
}

/// Time on one GPU stream, or on one GPU (the union of its streams).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GpuTime {
    pub process: String,
    pub rank: Option<u32>,
    /// The stream's name, or the GPU's label.
    pub location: String,
    pub gpu: Option<String>,
    /// Compute kernels (NCCL's apart).
    pub kernels_ns: u64,
    /// NCCL kernels (`ncclKernel*`, `ncclDevKernel*`).
    pub communication_ns: u64,
    pub copies_ns: u64,
    pub memsets_ns: u64,
    /// Any of them (for a GPU: while any stream was busy).
    pub busy_ns: u64,
    /// From the first work's start to the last one's end.
    pub span_ns: u64,
    /// `span − busy`.
    pub idle_ns: u64,
    /// Idle until the next work's launch call ended (the host launched
    /// after the GPU had become free).
    pub idle_host_ns: u64,
    /// Idle after that (launched in time, waiting on a dependency: an
    /// event, another stream, a synchronization).
    pub idle_dependency_ns: u64,
    /// Idle before work whose launch call the archive lacks.
    pub idle_unattributed_ns: u64,
}

/// One process: computation, communication and their overlap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RankTime {
    pub process: String,
    pub rank: Option<u32>,
    /// From the first event to the last of its busiest host thread.
    pub span_ns: u64,
    /// That span outside MPI, NCCL and CUDA synchronization calls.
    pub computation_ns: u64,
    /// Time in MPI calls (outermost), on that thread.
    pub mpi_ns: u64,
    /// Compute kernels running on its streams (union).
    pub gpu_compute_ns: u64,
    /// NCCL kernels on its streams or MPI calls on its threads (union).
    pub communication_ns: u64,
    /// Both at once.
    pub overlap_ns: u64,
}

/// Computation per rank, compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Imbalance {
    pub max_ns: u64,
    pub mean_ns: u64,
    pub min_ns: u64,
    /// max / mean.
    pub ratio: f64,
    /// The process with the most computation.
    pub slowest: String,
    pub slowest_rank: Option<u32>,
}

/// Messages paired by the pass: a send with the receive that got it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MessageCount {
    pub matched: u64,
    /// Pairs whose receive record is earlier than its send record: none
    /// on one clock; across hosts, clocks that disagree.
    pub received_before_sent: u64,
}

/// Everything `gputrace analyze` found.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub archive: String,
    pub options: Options,
    pub events: u64,
    pub trace_ns: u64,
    /// The time shares of the run are of ([`totals::run_ns`]): the
    /// processes' spans summed.
    pub run_ns: u64,
    /// Per pattern, all its findings together, largest first.
    pub totals: Vec<PatternTotal>,
    /// Ranked by time lost, largest first.
    pub findings: Vec<Finding>,
    pub streams: Vec<GpuTime>,
    pub gpus: Vec<GpuTime>,
    pub ranks: Vec<RankTime>,
    pub imbalance: Option<Imbalance>,
    /// Per communicator, the ranks that entered its collective operations
    /// last, the most waiting caused first ([`stragglers`]).
    pub stragglers: Vec<Straggler>,
    /// The chain of host activity that decided the run's length, across
    /// ranks through their wait states ([`critical`]); none when the run
    /// was too large to keep its timelines.
    pub critical_path: Option<CriticalPath>,
    /// Per process that computed more than the median: the run's length
    /// had it computed the median's time ([`critical::what_if`]).
    pub what_if: Vec<WhatIf>,
    /// Projections for GPU work and communication on the critical path
    /// ([`critical::GpuWhatIf`]): a kernel at its median, host gaps
    /// before launches at their median, communication overlapped.
    pub what_if_gpu: Vec<GpuWhatIf>,
    /// Per iteration (the instances of a region that marks them), its
    /// critical path, projections and worst straggler ([`iterations`]).
    pub iterations: Option<iterations::Iterations>,
    /// Per process, the functions its computation's samples fell in, the
    /// most first ([`sampled`]; archives recorded with `--sampling`).
    pub hot_functions: Vec<sampled::HotFunction>,
    /// The calls that had not returned when the recording ended (a hung
    /// or killed job), the innermost per thread ([`stuck`]).
    pub in_flight: Vec<stuck::InFlight>,
    /// Per communicator, the collective some ranks wait in and others
    /// never entered ([`stuck`]).
    pub stuck: Vec<stuck::Stuck>,
    /// Per process of a stopped job, the GPU work launched that never
    /// finished ([`unfinished`]).
    pub unfinished_kernels: Vec<unfinished::Unfinished>,
    /// The point-to-point messages paired (MPI, NCCL, `MPI_COMM_SELF`).
    pub messages: MessageCount,
    /// What could not be analysed (messages without a match...).
    pub notes: Vec<String>,
    /// The program's name: the archive's program region (paradigm
    /// MEASUREMENT_SYSTEM, role ARTIFICIAL), the root of `scout.cubex`.
    #[serde(skip)]
    pub program: Option<String>,
}

/// Analyses the archive `input` names.
pub fn analyze(input: &Path, options: &Options) -> Result<Analysis> {
    let mut reader = crate::open(input)?;
    replay::run(&mut reader, options, &mut ())
}

/// Analyses the archive, handing each instance found to `sink` as it is
/// found (the Chrome export's analysis tracks).
pub fn analyze_with(input: &Path, options: &Options, sink: &mut dyn Sink) -> Result<Analysis> {
    let mut reader = crate::open(input)?;
    replay::run(&mut reader, options, sink)
}
