//! The statistics tables by name: the time summaries (`cuda_api_sum`,
//! `gpu_kern_sum`, `mpi_sum`, …), the NVTX ranges', the user regions',
//! kernels by NVTX range, and memory operations by size; and the
//! statistics row they share with the graphs' table.

use super::collect::{Category, Collected};
use crate::model::NvtxStyle;
use crate::table::{Cell, Table, thousands};

/// The note that some medians are estimates, when one is.
pub(super) fn note_estimate(t: &mut Table, estimated: bool) {
    if estimated {
        t.notes.push(ESTIMATE_NOTE.into());
    }
}

/// A row of a statistics table: `first` (a time share, a name), then
/// total, instances, mean, median, min, max and standard deviation of `s`,
/// then `rest`; `estimated` is set when the median is an estimate.
pub(super) fn stat_row(
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

pub(super) fn time_table(c: &mut Collected, category: Category, name: &str, title: &str, last: &str) -> Table {
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
pub(super) fn nvtx_table(c: &mut Collected) -> Table {
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
pub(super) fn user_table(c: &mut Collected) -> Table {
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
pub(super) fn nvtx_kern_table(c: &mut Collected) -> Table {
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

pub(super) fn size_table(c: &mut Collected) -> Table {
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

impl Cell {
    /// A sort key for text cells (names).
    fn terminal_key(&self) -> &str {
        match self {
            Cell::Text(s) | Cell::Name(s) => s,
            _ => "",
        }
    }
}
