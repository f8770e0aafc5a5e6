//! `gputrace stats`: summary tables of an archive in the manner of
//! `nsys stats` — CUDA API calls, kernels, memory operations by time and
//! by size, MPI functions, NCCL regions, NVTX ranges, NVLink traffic, GPU metrics —
//! and the
//! communication matrices, as terminal tables, CSV or JSON; and the short
//! form printed after a traced run ([`short_summary`]).

pub mod collect;
pub mod graphs;
pub mod longest;
pub mod memory;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::output::OutputFile;
use crate::{Error, Result};

use self::collect::{Category, Collected};
use crate::model::NvtxStyle;
use crate::table::{self, Cell, Format, Table, thousands};

/// Every report: (name, what it shows).
pub const REPORTS: &[(&str, &str)] = &[
    ("cuda_api_sum", "CUDA API calls (runtime and driver) and synchronizations, by name"),
    ("gpu_kern_sum", "GPU kernels, by name"),
    ("gpu_mem_time_sum", "GPU memory operations (copies by kind, peer copies apart, memsets), by time"),
    ("gpu_mem_size_sum", "GPU memory operations, by size"),
    ("mpi_sum", "MPI functions, by name"),
    ("nccl_sum", "NCCL regions (calls and groups), by name"),
    ("nvtx_sum", "NVTX ranges (push/pop and start/end; marks left out), by domain:name and style"),
    ("user_region_sum", "what is neither CUDA nor MPI: user and compiler regions (Score-P's) and NVTX ranges, by name"),
    (
        "nvtx_kern_sum",
        "GPU kernels by the NVTX push/pop range their launch was made in (innermost, same thread), and name",
    ),
    (
        "cuda_graph_sum",
        "CUDA graphs, by graph: launches, time per execution, nodes (kernels, copies, memsets) per launch",
    ),
    ("nvlink_sum", "NVLink bytes sent and received per GPU, with the NVLink topology"),
    ("cuda_mem_sum", "CUDA allocations and frees per process, GPU and memory kind: bytes, peak in use, leaked"),
    ("cuda_mem_largest", "the largest CUDA allocations"),
    ("cuda_mem_leaks", "CUDA allocations never freed: address, size, kind, time"),
    ("cuda_mem_copies", "GPU copies by the CUDA allocation they read or wrote: copies and bytes in and out, copy time"),
    ("cuda_uvm_sum", "unified memory: CPU and GPU page faults, bytes migrated HtoD and DtoH, per process and GPU"),
    ("gpu_metrics_sum", "GPU metrics sampled from NVML (utilization, memory, clock, power...): per GPU, min/mean/max"),
    (
        "lost_sum",
        "records CUPTI or NCCL (or gputrace on their way) lost before they became events, per process and kind",
    ),
    ("mpi_matrix", "MPI point-to-point messages, rank x rank: count, bytes, time in send regions"),
    ("cuda_api_trace", "the longest CUDA API calls: when, how long, correlation id, process, thread (only when asked)"),
    ("cuda_gpu_trace", "the longest kernels, copies and memsets: when, how long, bytes, GPU, stream (only when asked)"),
    ("mpi_trace", "the longest MPI calls: when, how long, process, thread (only when asked)"),
    ("gpu_matrix", "bytes between GPUs: peer copies and NCCL send/recv"),
];

/// nsys's names (since 2023) of reports gputrace has under their older
/// names: (nsys, gputrace).
pub const ALIASES: &[(&str, &str)] = &[
    ("cuda_gpu_kern_sum", "gpu_kern_sum"),
    ("cuda_gpu_mem_time_sum", "gpu_mem_time_sum"),
    ("cuda_gpu_mem_size_sum", "gpu_mem_size_sum"),
    ("mpi_event_trace", "mpi_trace"),
];

/// Reports of single events rather than sums: left out of the default
/// set, as `nsys stats` leaves its `*_trace` reports out.
fn per_event(name: &str) -> bool {
    name.ends_with("_trace")
}

/// The reports `names` ask for, as `nsys stats --report` takes them:
/// comma-separated lists (`--report a,b`) split, nsys's names
/// ([`ALIASES`]) given as gputrace's, each report once.
pub fn resolve(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
        let name = ALIASES.iter().find(|(nsys, _)| *nsys == name).map_or(name, |(_, ours)| ours);
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// What `gputrace stats` was asked for.
#[derive(Clone, Debug)]
pub struct StatsRequest {
    /// Report names; empty: the default set.
    pub reports: Vec<String>,
    pub format: Format,
    /// A row per name and process in the summaries of durations.
    pub by_rank: bool,
    /// The part of the archive the reports are of.
    pub window: crate::window::Window,
    /// Instances the `*_trace` reports list.
    pub longest: usize,
}

/// Checks report names, listing the known ones for an unknown one.
pub fn check_reports(names: &[String]) -> Result<()> {
    for n in names {
        if !REPORTS.iter().any(|(r, _)| r == n) {
            let known: Vec<String> = REPORTS
                .iter()
                .map(|(r, what)| match ALIASES.iter().find(|(_, ours)| ours == r) {
                    Some((nsys, _)) => format!("  {r:<18} {what} (nsys: {nsys})"),
                    None => format!("  {r:<18} {what}"),
                })
                .collect();
            return Err(Error::BadInput(format!("unknown report `{n}`; the reports are:\n{}", known.join("\n"))));
        }
    }
    Ok(())
}

/// `gputrace stats`, to a stream.
pub fn run(input: &Path, request: &StatsRequest, out: &mut dyn Write) -> Result<()> {
    table::write_reports(&tables(input, request)?, request.format, out)?;
    Ok(())
}

/// `gputrace stats -o PREFIX`, as `nsys stats --output`: a file per report,
/// `PREFIX_<report>.csv` (CSV) or `PREFIX_<report>.txt` (tables), or all
/// of them in one `PREFIX.json` (JSON, one object keyed by report name, as
/// on the terminal). Each is written through [`OutputFile`], replacing a
/// link rather than writing through it. Returns the files written.
pub fn write_files(input: &Path, request: &StatsRequest, prefix: &Path) -> Result<Vec<PathBuf>> {
    let tables = tables(input, request)?;
    // `-o x.json` is the file itself, not a prefix of `x.json.json`.
    let prefix = match request.format {
        Format::Json if prefix.extension().is_some_and(|e| e == "json") => prefix.with_extension(""),
        _ => prefix.to_path_buf(),
    };
    let with_suffix = |suffix: &str| {
        let mut name = prefix.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    let files: Vec<(PathBuf, &[Table])> = match request.format {
        Format::Json => vec![(with_suffix(".json"), &tables[..])],
        Format::Csv | Format::Table => {
            let ext = if request.format == Format::Csv { "csv" } else { "txt" };
            tables.chunks(1).map(|t| (with_suffix(&format!("_{}.{ext}", t[0].name)), t)).collect()
        }
    };
    for (path, tables) in &files {
        let mut file = OutputFile::create(path).map_err(|source| Error::Create { path: path.clone(), source })?;
        table::write_reports(tables, request.format, &mut file).map_err(|e| Error::writing(path)(e.into()))?;
        file.commit().map_err(|e| Error::writing(path)(e.into()))?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

/// The tables `request` asks for.
fn tables(input: &Path, request: &StatsRequest) -> Result<Vec<Table>> {
    let reports = resolve(&request.reports);
    check_reports(&reports)?;
    let mut reader = super::open(input)?;
    let mut collected = collect::collect_longest(&mut reader, request.by_rank, &request.window, request.longest)?;
    let explicit = !reports.is_empty();
    let names: Vec<&str> = if explicit {
        reports.iter().map(String::as_str).collect()
    } else {
        REPORTS.iter().map(|(n, _)| *n).filter(|n| !per_event(n)).collect()
    };
    let mut tables = Vec::new();
    for name in names {
        let t = build(&mut collected, name);
        // Reports about things an archive may simply not have are left
        // out of the default set when empty.
        let optional = matches!(
            name,
            "nccl_sum"
                | "nvtx_sum"
                | "user_region_sum"
                | "nvtx_kern_sum"
                | "cuda_graph_sum"
                | "nvlink_sum"
                | "cuda_mem_sum"
                | "cuda_mem_largest"
                | "cuda_mem_leaks"
                | "cuda_mem_copies"
                | "cuda_uvm_sum"
                | "gpu_metrics_sum"
                | "mpi_matrix"
                | "gpu_matrix"
                | "lost_sum"
        );
        if explicit || !optional || !t.rows.is_empty() {
            tables.push(t);
        }
    }
    Ok(tables)
}

/// The short form printed after a traced run: the five first rows of each
/// non-empty report.
pub fn short_summary(anchor: &Path) -> Result<String> {
    let mut reader = super::open(anchor)?;
    let mut collected = collect::collect(&mut reader)?;
    let mut out = String::new();
    for (name, _) in REPORTS {
        // Lists of single allocations are for `gputrace stats`; the
        // summary's memory table has their counts (a caching allocator's
        // blocks, held to the end, would read as leaks there).
        // Losses have their lines in the summary already.
        if matches!(*name, "cuda_mem_largest" | "cuda_mem_leaks" | "cuda_mem_copies" | "lost_sum") || per_event(name) {
            continue;
        }
        let mut t = build(&mut collected, name);
        if t.rows.is_empty() {
            continue;
        }
        // Matrices: the busiest pairs first, as rows rather than grids.
        if let Some(col) = t.columns.iter().position(|c| c == "Bytes" || c == "Total Bytes") {
            t.rows.sort_by(|a, b| match (&b[col], &a[col]) {
                (Cell::Int(x), Cell::Int(y)) => x.cmp(y),
                _ => std::cmp::Ordering::Equal,
            });
        }
        t.grid = None;
        t.notes.clear();
        out.push_str(&t.render(Some(5)));
        out.push('\n');
    }
    Ok(out)
}

/// Builds one report's table.
pub fn build(c: &mut Collected, name: &str) -> Table {
    match name {
        "cuda_api_sum" => time_table(c, Category::CudaApi, name, "CUDA API Summary", "Name"),
        "gpu_kern_sum" => time_table(c, Category::Kernel, name, "CUDA GPU Kernel Summary", "Name"),
        "gpu_mem_time_sum" => time_table(c, Category::Memory, name, "CUDA GPU MemOps Summary (by Time)", "Operation"),
        "gpu_mem_size_sum" => size_table(c),
        "mpi_sum" => time_table(c, Category::Mpi, name, "MPI Summary", "Name"),
        "nccl_sum" => time_table(c, Category::Nccl, name, "NCCL Summary", "Name"),
        "nvtx_sum" => nvtx_table(c),
        "user_region_sum" => user_table(c),
        "nvtx_kern_sum" => nvtx_kern_table(c),
        "cuda_graph_sum" => {
            let mut estimated = false;
            let mut t = graphs::table(&c.graphs, &c.model, &mut c.times, &mut estimated);
            note_estimate(&mut t, estimated);
            t
        }
        "nvlink_sum" => nvlink_table(c),
        "gpu_metrics_sum" => gpu_metrics_table(c),
        "cuda_mem_sum" => mem_table(c),
        "cuda_mem_largest" => allocations_table(c, "cuda_mem_largest", "CUDA Largest Allocations", false),
        "cuda_mem_leaks" => allocations_table(c, "cuda_mem_leaks", "CUDA Allocations Never Freed", true),
        "cuda_mem_copies" => copies_table(c),
        "cuda_uvm_sum" => uvm_table(c),
        "lost_sum" => lost_table(c),
        "mpi_matrix" => c.mpi.table(&c.model),
        "cuda_api_trace" => longest::table(c, longest::Trace::CudaApi),
        "cuda_gpu_trace" => longest::table(c, longest::Trace::Gpu),
        "mpi_trace" => longest::table(c, longest::Trace::Mpi),
        "gpu_matrix" => {
            let nv: Vec<(u64, u64)> = c.nvlink.iter().map(|n| (n.sent, n.received)).collect();
            c.gpu.table(&c.model, &nv)
        }
        _ => Table::new(name, name, &[]),
    }
}

/// `lost_sum`: one row per process and kind of loss, from the processes'
/// `GPUTRACE::LOST::<KIND>` properties.
fn lost_table(c: &Collected) -> Table {
    let mut t = Table::new("lost_sum", "Records Lost Before Tracing", &["Process", "Host", "Kind", "Count", "What"]);
    for (p, info) in c.model.processes.iter().enumerate() {
        for (key, n) in &info.lost {
            t.rows.push(vec![
                Cell::Text(c.model.process_label(p)),
                Cell::Text(info.host.clone()),
                Cell::Text(key.clone()),
                Cell::Int(u128::from(*n)),
                Cell::Text(crate::lost::what(key)),
            ]);
        }
    }
    t
}

/// The note that some medians are estimates, when one is.
fn note_estimate(t: &mut Table, estimated: bool) {
    if estimated {
        t.notes.push(ESTIMATE_NOTE.into());
    }
}

/// A row of a statistics table: `first` (a time share, a name), then
/// total, instances, mean, median, min, max and standard deviation of `s`,
/// then `rest`; `estimated` is set when the median is an estimate.
fn stat_row(
    first: Option<Cell>,
    s: &mut crate::durations::Stats,
    estimated: &mut bool,
    rest: impl IntoIterator<Item = Cell>,
) -> Vec<Cell> {
    let med = median_cell(s);
    *estimated |= matches!(med, Cell::Estimate(..));
    let stats = [
        Cell::Int(s.total()),
        Cell::Int(s.count().into()),
        Cell::Float(s.mean(), 1),
        med,
        Cell::Int(s.min().into()),
        Cell::Int(s.max().into()),
        Cell::Float(s.stddev(), 1),
    ];
    first.into_iter().chain(stats).chain(rest).collect()
}

/// A median cell: exact, or marked as an estimate.
fn median_cell(stats: &mut crate::durations::Stats) -> Cell {
    let m = stats.median();
    if stats.median_is_exact() { Cell::Float(m, 1) } else { Cell::Estimate(m, 1) }
}

/// MPI calls that set MPI up or tear it down: `mpi_sum` shows them apart
/// from the steady state (MPI_Init alone is most of a short run's MPI time).
pub fn is_mpi_init_finalize(name: &str) -> bool {
    matches!(name, "MPI_Init" | "MPI_Init_thread" | "MPI_Finalize" | "MPI_Session_init" | "MPI_Session_finalize")
}

/// The marker in `mpi_sum`'s Time (%) column of init/finalize rows.
pub const INIT_FINALIZE: &str = "init/fin";

/// Where the rows of a summary come from: a category, and its label in the
/// `kind` column (when the table has one).
struct Source {
    category: Category,
    label: &'static str,
}

fn time_table(c: &mut Collected, category: Category, name: &str, title: &str, last: &str) -> Table {
    summary_table(c, name, title, &[Source { category, label: "" }], None, last)
}

/// A statistics table over the names of `sources`: with `--by-rank` a
/// Process column first and a row per (name, process); Time (%) the share
/// of the table's total over all processes. In `mpi_sum`, init and
/// finalize calls come last, marked [`INIT_FINALIZE`], and the other rows'
/// shares are of the steady state without them.
fn summary_table(
    c: &mut Collected,
    name: &str,
    title: &str,
    sources: &[Source],
    kind_column: Option<&str>,
    last: &str,
) -> Table {
    let mut columns: Vec<&str> = Vec::new();
    if c.by_rank {
        columns.push("Process");
    }
    columns.extend([
        "Time (%)",
        "Total Time (ns)",
        "Instances",
        "Avg (ns)",
        "Med (ns)",
        "Min (ns)",
        "Max (ns)",
        "StdDev (ns)",
    ]);
    columns.extend(kind_column);
    columns.push(last);
    let mut t = Table::new(name, title, &columns);
    let apart = |category: Category, n: &str| category == Category::Mpi && is_mpi_init_finalize(n);
    let mut grand: u128 = 0;
    let mut apart_total: u128 = 0;
    for src in sources {
        for n in c.named.get(&src.category).into_iter().flatten() {
            let total = c.times.get_mut(n.time).total();
            if apart(src.category, &n.name) {
                apart_total += total;
            } else {
                grand += total;
            }
        }
    }
    // (init/finalize, process, total, name, kind), row.
    type Key = (bool, Option<usize>, std::cmp::Reverse<u128>, String, &'static str);
    let mut rows: Vec<(Key, Vec<Cell>)> = Vec::new();
    let mut estimated = false;
    for src in sources {
        let Some(named) = c.named.get(&src.category) else { continue };
        for n in named {
            let s = c.times.get_mut(n.time);
            if s.count() == 0 {
                continue;
            }
            let is_apart = apart(src.category, &n.name);
            let share = if is_apart {
                Cell::Text(INIT_FINALIZE.into())
            } else {
                Cell::Float(if grand == 0 { 0.0 } else { s.total() as f64 * 100.0 / grand as f64 }, 1)
            };
            // Kernel names run to thousands of characters (templates):
            // base names in the terminal, whole in CSV and JSON.
            let name_cell =
                if src.category == Category::Kernel { Cell::Name(n.name.clone()) } else { Cell::Text(n.name.clone()) };
            let rest = kind_column.map(|_| Cell::Text(src.label.into())).into_iter().chain([name_cell]);
            let mut row = stat_row(Some(share), s, &mut estimated, rest);
            if c.by_rank {
                let process = n.process.map_or_else(|| "-".into(), |p| c.model.process_label(p));
                row.insert(0, Cell::Text(process));
            }
            rows.push(((is_apart, n.process, std::cmp::Reverse(s.total()), n.name.clone(), src.label), row));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    if rows.iter().any(|(k, _)| k.0) {
        t.notes.push(format!(
            "{INIT_FINALIZE}: MPI initialization and finalization ({} ns in all), apart from the steady state; \
             Time (%) of the other rows is their share of the steady state ({} ns).",
            thousands(apart_total),
            thousands(grand)
        ));
    }
    if c.by_rank && !rows.is_empty() {
        t.notes.push("A row per name and process; Time (%) is the share of all processes' total.".into());
    }
    t.rows = rows.into_iter().map(|(_, r)| r).collect();
    note_estimate(&mut t, estimated);
    t
}

/// `nvtx_sum`: the ranges of both styles in one table, as `nsys stats`
/// prints it — time share over all ranges, the statistics, the style and
/// the range as `domain:name` (`:name` in the default domain).
fn nvtx_table(c: &mut Collected) -> Table {
    let sources = [
        Source { category: Category::NvtxPushPop, label: NvtxStyle::PushPop.name() },
        Source { category: Category::NvtxStartEnd, label: NvtxStyle::StartEnd.name() },
    ];
    summary_table(c, "nvtx_sum", "NVTX Range Summary", &sources, Some("Style"), "Range")
}

/// `user_region_sum`: what is neither CUDA nor MPI — Score-P's user
/// regions, compiler-instrumented functions and NVTX ranges — by name, the
/// kind saying which. Time (%) is of their sum: nested regions count in
/// each level, as nsys's `nvtx_sum` counts nested ranges.
fn user_table(c: &mut Collected) -> Table {
    let sources = [
        Source { category: Category::User, label: "user" },
        Source { category: Category::Compiler, label: "compiler" },
        Source { category: Category::NvtxPushPop, label: "NVTX PushPop" },
        Source { category: Category::NvtxStartEnd, label: "NVTX StartEnd" },
    ];
    summary_table(c, "user_region_sum", "User Region Summary", &sources, Some("Kind"), "Name")
}

/// `nvtx_kern_sum`: kernels by the NVTX push/pop range that was innermost
/// on the thread when their launch was made, as `nsys stats`'
/// `nvtx_kern_sum`: grouped by range (ranges by name), the kernels of a
/// range by total time.
fn nvtx_kern_table(c: &mut Collected) -> Table {
    let mut t = Table::new(
        "nvtx_kern_sum",
        "NVTX Range Kernel Summary",
        &[
            "Range",
            "Total Time (ns)",
            "Instances",
            "Avg (ns)",
            "Med (ns)",
            "Min (ns)",
            "Max (ns)",
            "StdDev (ns)",
            "Kernel Name",
        ],
    );
    let mut rows: Vec<(String, u128, Vec<Cell>)> = Vec::new();
    let mut estimated = false;
    for (range, kernel, time) in &c.nvtx_kern.rows {
        let s = c.times.get_mut(*time);
        if s.count() == 0 {
            continue;
        }
        let name = c.nvtx_kern.ranges[*range].clone();
        rows.push((
            name.clone(),
            s.total(),
            stat_row(Some(Cell::Text(name)), s, &mut estimated, [Cell::Name(kernel.clone())]),
        ));
    }
    rows.sort_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)).then_with(|| a.2[8].terminal_key().cmp(b.2[8].terminal_key()))
    });
    t.rows = rows.into_iter().map(|(_, _, r)| r).collect();
    if !t.rows.is_empty() && c.nvtx_kern.outside > 0 {
        t.notes.push(format!(
            "{} kernel(s) launched outside every NVTX push/pop range are not listed.",
            thousands(u128::from(c.nvtx_kern.outside))
        ));
    }
    note_estimate(&mut t, estimated);
    t
}

const ESTIMATE_NOTE: &str =
    "~: median estimated within 0.1% (more instances than gputrace keeps exactly; see docs/analysis.md)";

fn size_table(c: &mut Collected) -> Table {
    let mut columns = if c.by_rank { vec!["Process"] } else { Vec::new() };
    columns.extend([
        "Total (bytes)",
        "Count",
        "Avg (bytes)",
        "Med (bytes)",
        "Min (bytes)",
        "Max (bytes)",
        "StdDev (bytes)",
        "Operation",
    ]);
    let mut t = Table::new("gpu_mem_size_sum", "CUDA GPU MemOps Summary (by Size)", &columns);
    let Some(named) = c.named.get(&Category::Memory) else { return t };
    let mut rows = Vec::new();
    let mut estimated = false;
    for n in named {
        let Some(size) = n.size else { continue };
        let s = c.sizes.get_mut(size);
        if s.count() == 0 {
            continue;
        }
        let mut row = stat_row(None, s, &mut estimated, [Cell::Text(n.name.clone())]);
        if c.by_rank {
            row.insert(0, Cell::Text(n.process.map_or_else(|| "-".into(), |p| c.model.process_label(p))));
        }
        rows.push(((n.process, std::cmp::Reverse(s.total())), row));
    }
    rows.sort_by_key(|r| r.0);
    t.rows = rows.into_iter().map(|(_, r)| r).collect();
    note_estimate(&mut t, estimated);
    t
}

fn gpu_label(c: &Collected, gpu: Option<usize>) -> String {
    gpu.and_then(|g| c.model.gpus.get(g)).map_or_else(|| "-".into(), |g| g.label.clone())
}

fn process_label(c: &Collected, process: usize) -> String {
    c.model.processes.get(process).map_or_else(|| process.to_string(), |p| p.name.clone())
}

fn mem_table(c: &Collected) -> Table {
    let mut t = Table::new(
        "cuda_mem_sum",
        "CUDA Memory Summary",
        &[
            "Process",
            "GPU",
            "Kind",
            "Allocations",
            "Allocated (bytes)",
            "Frees",
            "Freed (bytes)",
            "Peak In Use (bytes)",
            "Leaked",
            "Leaked (bytes)",
        ],
    );
    for ((p, g, kind), m) in &c.memory.totals {
        t.rows.push(vec![
            Cell::Text(process_label(c, *p)),
            Cell::Text(gpu_label(c, *g)),
            Cell::Text(kind.clone()),
            Cell::Int(m.allocs.into()),
            Cell::Int(m.alloc_bytes.into()),
            Cell::Int(m.frees.into()),
            Cell::Int(m.freed_bytes.into()),
            Cell::Int(m.peak.into()),
            Cell::Int(m.leaked.into()),
            Cell::Int(m.leaked_bytes.into()),
        ]);
    }
    if !t.rows.is_empty() {
        t.notes.push(
            "Kind `all` is every kind together; its peak is the most memory the process held on that GPU at once. \
             Leaked: allocated and not freed before the process's trace ended."
                .into(),
        );
    }
    t
}

fn allocations_table(c: &Collected, name: &str, title: &str, leaks: bool) -> Table {
    let mut t = Table::new(name, title, &["Process", "GPU", "Kind", "Address", "Bytes", "Time (ns)"]);
    let list = if leaks { &c.memory.leaks } else { &c.memory.largest };
    for a in list {
        let mut row = allocation_cells(c, a);
        row.push(Cell::Int(a.time.into()));
        t.rows.push(row);
    }
    if !t.rows.is_empty() {
        t.notes.push("Time: when the allocation was made, since the start of the trace.".into());
    }
    t
}

/// An allocation's first cells: Process, GPU, Kind, Address, Bytes.
fn allocation_cells(c: &Collected, a: &memory::Allocation) -> Vec<Cell> {
    vec![
        Cell::Text(process_label(c, a.process)),
        Cell::Text(gpu_label(c, a.gpu)),
        Cell::Text(a.kind.clone()),
        Cell::Text(format!("{:#x}", a.address)),
        Cell::Int(a.bytes.into()),
    ]
}

fn copies_table(c: &Collected) -> Table {
    let mut t = Table::new(
        "cuda_mem_copies",
        "CUDA Copies by Allocation",
        &[
            "Process",
            "GPU",
            "Kind",
            "Address",
            "Bytes",
            "Copies In",
            "Bytes In",
            "Copies Out",
            "Bytes Out",
            "Copy Time (ns)",
        ],
    );
    let (rows, outside) = c.memory.copies_by_allocation();
    let shown = rows.len().min(memory::LARGEST);
    for r in &rows[..shown] {
        let mut row = allocation_cells(c, &r.allocation);
        row.extend([
            Cell::Int(r.copies_in.into()),
            Cell::Int(r.bytes_in.into()),
            Cell::Int(r.copies_out.into()),
            Cell::Int(r.bytes_out.into()),
            Cell::Int(r.ns.into()),
        ]);
        t.rows.push(row);
    }
    if !t.rows.is_empty() {
        let mut note = format!(
            "The {shown} allocations copies moved the most bytes into or out of, of {} that copies touched; \
             copies are known by address with GPUTRACE_CUDA_ENABLE=...,memory.",
            rows.len()
        );
        if outside.ends > 0 {
            note.push_str(&format!(
                " {} copy ends ({} bytes) were in no traced allocation: pageable host memory, or memory allocated \
                 before tracing or by another process.",
                outside.ends, outside.bytes
            ));
        }
        t.notes.push(note);
    }
    t
}

fn uvm_table(c: &Collected) -> Table {
    let mut t = Table::new("cuda_uvm_sum", "Unified Memory Summary", &["Process", "GPU", "Counter", "Total"]);
    for ((p, g, name), v) in &c.memory.uvm {
        t.rows.push(vec![
            Cell::Text(process_label(c, *p)),
            Cell::Text(gpu_label(c, *g)),
            Cell::Text(name.trim_start_matches("UVM ").to_string()),
            Cell::Int((*v).into()),
        ]);
    }
    t
}

fn gpu_metrics_table(c: &Collected) -> Table {
    let mut t = Table::new(
        "gpu_metrics_sum",
        "GPU Metrics Summary",
        &["GPU", "Product", "Metric", "Unit", "Samples", "Min", "Mean", "Max"],
    );
    for ((g, name), m) in &c.gpu_metrics {
        let Some(gpu) = c.model.gpus.get(*g) else { continue };
        t.rows.push(vec![
            Cell::Text(gpu.label.clone()),
            Cell::Text(gpu.product.clone()),
            Cell::Text(name.clone()),
            Cell::Text(m.unit.clone()),
            Cell::Int(m.samples.into()),
            Cell::Int(m.min.into()),
            Cell::Float(m.mean(), 1),
            Cell::Int(m.max.into()),
        ]);
    }
    if !t.rows.is_empty() {
        t.notes.push(
            "Sampled from NVML at GPUTRACE_GPU_METRICS_INTERVAL by every process using the GPU; the mean is \
             of the samples, not weighted by time."
                .into(),
        );
    }
    t
}

fn nvlink_table(c: &Collected) -> Table {
    let mut t = Table::new(
        "nvlink_sum",
        "NVLink Summary",
        &["GPU", "Product", "Sent (bytes)", "Received (bytes)", "Samples", "Topology"],
    );
    for (g, gpu) in c.model.gpus.iter().enumerate() {
        let n = c.nvlink[g];
        if n.samples == 0 && gpu.links.is_empty() {
            continue;
        }
        let topology: Vec<String> = gpu.links.iter().map(|(to, what)| format!("to {to}: {what}")).collect();
        t.rows.push(vec![
            Cell::Text(gpu.label.clone()),
            Cell::Text(gpu.product.clone()),
            Cell::Int(n.sent.into()),
            Cell::Int(n.received.into()),
            Cell::Int(n.samples.into()),
            Cell::Text(topology.join("; ")),
        ]);
    }
    if !t.rows.is_empty() {
        t.notes.push(
            "Sent/received: NVLink bytes of all links since the first sample (NVML device counters; the \
             largest of the processes that sampled the GPU)."
                .into(),
        );
    }
    t
}

impl Cell {
    /// A sort key for text cells (names).
    fn terminal_key(&self) -> &str {
        match self {
            Cell::Text(s) | Cell::Name(s) => s,
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsys_names_and_comma_lists_are_reports() {
        let asked = ["cuda_gpu_kern_sum,cuda_api_sum", " mpi_sum ", "gpu_kern_sum", "cuda_gpu_mem_size_sum,"];
        let asked: Vec<String> = asked.iter().map(|s| s.to_string()).collect();
        let reports = resolve(&asked);
        assert_eq!(reports, ["gpu_kern_sum", "cuda_api_sum", "mpi_sum", "gpu_mem_size_sum"]);
        assert!(check_reports(&reports).is_ok());
        for (nsys, ours) in ALIASES {
            assert!(REPORTS.iter().any(|(r, _)| r == ours), "{nsys}");
        }
        assert!(check_reports(&resolve(&["kern_sum".to_string()])).is_err());
    }

    #[test]
    fn init_and_finalize_are_apart_and_queries_are_not() {
        for name in ["MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Session_init", "MPI_Session_finalize"] {
            assert!(is_mpi_init_finalize(name), "{name}");
        }
        // Queries and steady-state calls stay in the steady state.
        for name in ["MPI_Initialized", "MPI_Finalized", "MPI_Send", "MPI_Init_something"] {
            assert!(!is_mpi_init_finalize(name), "{name}");
        }
        assert!(check_reports(&["user_region_sum".to_string()]).is_ok());
    }
}
