//! Communication matrices: rank × rank for MPI point-to-point messages
//! (count, bytes, time in the regions that sent them) and GPU × GPU for
//! bytes moved between GPUs (peer copies, and NCCL send/recv mapped to the
//! GPUs of the ranks involved). Their tables list every non-empty cell
//! (CSV and JSON); the terminal shows them as grids.

use std::fmt::Write as _;

use crate::model::Model;
use crate::table::{Cell, Table, human_bytes, human_ns, thousands};

/// Messages between processes (by index into [`Model::processes`]).
#[derive(Clone, Debug)]
pub struct MpiMatrix {
    pub n: usize,
    pub messages: Vec<u64>,
    pub bytes: Vec<u128>,
    /// Nanoseconds in the send regions, shared among their messages.
    pub time: Vec<f64>,
}

impl MpiMatrix {
    pub fn new(n: usize) -> Self {
        Self { n, messages: vec![0; n * n], bytes: vec![0; n * n], time: vec![0.0; n * n] }
    }

    pub fn add_message(&mut self, from: usize, to: usize, bytes: u64) {
        if from < self.n && to < self.n {
            self.messages[from * self.n + to] += 1;
            self.bytes[from * self.n + to] += u128::from(bytes);
        }
    }

    pub fn add_time(&mut self, from: usize, to: usize, ns: f64) {
        if from < self.n && to < self.n {
            self.time[from * self.n + to] += ns;
        }
    }

    /// The table: one row per (sender, receiver) pair with messages.
    pub fn table(&self, model: &Model) -> Table {
        let mut t = Table::new(
            "mpi_matrix",
            "MPI Point-to-Point Matrix",
            &["Sender", "Receiver", "Messages", "Bytes", "Send Time (ns)"],
        );
        for i in 0..self.n {
            for j in 0..self.n {
                let k = i * self.n + j;
                if self.messages[k] > 0 {
                    t.rows.push(vec![
                        Cell::Text(model.process_label(i)),
                        Cell::Text(model.process_label(j)),
                        Cell::Int(self.messages[k].into()),
                        Cell::Int(self.bytes[k]),
                        Cell::Int(self.time[k].round() as u128),
                    ]);
                }
            }
        }
        if !t.rows.is_empty() {
            let labels: Vec<String> = (0..self.n).map(|i| model.process_label(i)).collect();
            let mut g = String::new();
            g.push_str(&grid("messages (row sends to column)", &labels, |i, j| {
                let v = self.messages[i * self.n + j];
                (v > 0).then(|| thousands(v))
            }));
            g.push('\n');
            g.push_str(&grid("bytes", &labels, |i, j| {
                let v = self.bytes[i * self.n + j];
                (v > 0).then(|| human_bytes(v))
            }));
            g.push('\n');
            g.push_str(&grid("time in send regions", &labels, |i, j| {
                let k = i * self.n + j;
                (self.messages[k] > 0).then(|| human_ns(self.time[k].round() as u128))
            }));
            t.grid = Some(g);
        }
        t
    }
}

/// Bytes between GPUs (by index into [`Model::gpus`]).
#[derive(Clone, Debug)]
pub struct GpuMatrix {
    pub n: usize,
    pub peer_copies: Vec<u64>,
    pub peer_bytes: Vec<u128>,
    pub nccl_messages: Vec<u64>,
    pub nccl_bytes: Vec<u128>,
    /// Bytes whose GPUs the archive does not say.
    pub peer_unmapped: u128,
    pub nccl_unmapped: u128,
}

impl GpuMatrix {
    pub fn new(n: usize) -> Self {
        Self {
            n,
            peer_copies: vec![0; n * n],
            peer_bytes: vec![0; n * n],
            nccl_messages: vec![0; n * n],
            nccl_bytes: vec![0; n * n],
            peer_unmapped: 0,
            nccl_unmapped: 0,
        }
    }

    pub fn add_peer_copy(&mut self, src: usize, dst: usize, bytes: u64) {
        if src < self.n && dst < self.n {
            self.peer_copies[src * self.n + dst] += 1;
            self.peer_bytes[src * self.n + dst] += u128::from(bytes);
        }
    }

    pub fn add_nccl(&mut self, src: usize, dst: usize, bytes: u64) {
        if src < self.n && dst < self.n {
            self.nccl_messages[src * self.n + dst] += 1;
            self.nccl_bytes[src * self.n + dst] += u128::from(bytes);
        }
    }

    /// All bytes from `src` to `dst`.
    pub fn total(&self, src: usize, dst: usize) -> u128 {
        let k = src * self.n + dst;
        self.peer_bytes[k] + self.nccl_bytes[k]
    }

    /// The table: one row per (source, destination) pair with traffic;
    /// NVLink counters are per GPU, in `nvlink_sum` and the grid's notes.
    pub fn table(&self, model: &Model, nvlink: &[(u64, u64)]) -> Table {
        let mut t = Table::new(
            "gpu_matrix",
            "GPU-to-GPU Matrix",
            &["Source", "Destination", "Peer Copies", "Peer Copy Bytes", "NCCL Messages", "NCCL Bytes", "Total Bytes"],
        );
        for i in 0..self.n {
            for j in 0..self.n {
                let k = i * self.n + j;
                if self.peer_copies[k] + self.nccl_messages[k] > 0 {
                    t.rows.push(vec![
                        Cell::Text(model.gpus[i].label.clone()),
                        Cell::Text(model.gpus[j].label.clone()),
                        Cell::Int(self.peer_copies[k].into()),
                        Cell::Int(self.peer_bytes[k]),
                        Cell::Int(self.nccl_messages[k].into()),
                        Cell::Int(self.nccl_bytes[k]),
                        Cell::Int(self.total(i, j)),
                    ]);
                }
            }
        }
        let labels: Vec<String> = model.gpus.iter().map(|g| g.label.clone()).collect();
        if !t.rows.is_empty() {
            t.grid = Some(grid("bytes, peer copies + NCCL (row sends to column)", &labels, |i, j| {
                let v = self.total(i, j);
                (v > 0).then(|| human_bytes(v))
            }));
        }
        for (g, (sent, received)) in nvlink.iter().enumerate() {
            if sent + received > 0 {
                t.notes.push(format!(
                    "NVLink {}: {} sent, {} received",
                    labels[g],
                    human_bytes(*sent),
                    human_bytes(*received)
                ));
            }
        }
        if self.peer_unmapped > 0 {
            t.notes.push(format!(
                "{} of peer copies name GPUs the archive does not define",
                human_bytes(self.peer_unmapped)
            ));
        }
        if self.nccl_unmapped > 0 {
            t.notes.push(format!(
                "{} of NCCL messages are between ranks whose GPU is not known (no stream, or several GPUs)",
                human_bytes(self.nccl_unmapped)
            ));
        }
        t
    }
}

/// A square grid with row and column labels; `cell` gives a cell's text
/// (`None`: empty, shown as `.`).
fn grid(title: &str, labels: &[String], cell: impl Fn(usize, usize) -> Option<String>) -> String {
    let n = labels.len();
    let cells: Vec<Vec<String>> =
        (0..n).map(|i| (0..n).map(|j| cell(i, j).unwrap_or_else(|| ".".into())).collect()).collect();
    let first = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = cells.iter().flatten().chain(labels).map(|c| c.chars().count()).max().unwrap_or(1);
    let mut out = format!(" {title}:\n");
    let _ = write!(out, " {:first$}", "");
    for l in labels {
        let _ = write!(out, "  {l:>width$}");
    }
    out.push('\n');
    for (i, row) in cells.iter().enumerate() {
        let _ = write!(out, " {:<first$}", labels[i]);
        for c in row {
            let _ = write!(out, "  {c:>width$}");
        }
        out.push('\n');
    }
    out
}
