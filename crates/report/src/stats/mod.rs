//! `gputrace stats`: summary tables of an archive in the manner of
//! `nsys stats` — CUDA API calls, kernels, memory operations by time and
//! by size, MPI functions, NCCL regions, NVTX ranges, NVLink traffic, GPU metrics —
//! and the
//! communication matrices, as terminal tables, CSV or JSON; and the short
//! form printed after a traced run ([`short_summary`]).

pub mod collect;
mod gpu_tables;
pub mod graphs;
pub mod longest;
pub mod memory;
pub mod samples;
mod summaries;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::output::OutputFile;
use crate::{Error, Result};

use self::collect::{Category, Collected};
use self::gpu_tables::{allocations_table, copies_table, gpu_metrics_table, mem_table, nvlink_table, uvm_table};
use self::summaries::{note_estimate, nvtx_kern_table, nvtx_table, size_table, time_table, user_table};
use crate::table::{self, Cell, Format, Table};

pub use self::summaries::{INIT_FINALIZE, is_mpi_init_finalize};

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
    ("sampled_sum", "functions of the sampled call stacks (--sampling): self and inclusive share of the samples"),
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
                | "sampled_sum"
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
        "sampled_sum" => samples::table(&c.samples, c.by_rank, &|p| c.model.process_label(p)),
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
