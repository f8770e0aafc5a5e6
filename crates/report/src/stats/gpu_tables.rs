//! The tables of the GPUs' side: CUDA memory (allocations by kind, the
//! largest, those never freed), the copies that moved the most bytes,
//! unified memory, GPU metrics and NVLink traffic.

use super::collect::Collected;
use super::memory;
use crate::table::{Cell, Table};

fn gpu_label(c: &Collected, gpu: Option<usize>) -> String {
    gpu.and_then(|g| c.model.gpus.get(g)).map_or_else(|| "-".into(), |g| g.label.clone())
}

fn process_label(c: &Collected, process: usize) -> String {
    c.model.processes.get(process).map_or_else(|| process.to_string(), |p| p.name.clone())
}

pub(super) fn mem_table(c: &Collected) -> Table {
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

pub(super) fn allocations_table(c: &Collected, name: &str, title: &str, leaks: bool) -> Table {
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

pub(super) fn copies_table(c: &Collected) -> Table {
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

pub(super) fn uvm_table(c: &Collected) -> Table {
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

pub(super) fn gpu_metrics_table(c: &Collected) -> Table {
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

pub(super) fn nvlink_table(c: &Collected) -> Table {
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
