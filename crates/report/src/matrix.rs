//! Communication matrices: rank × rank for MPI point-to-point messages
//! (count, bytes, time in the regions that sent them) and GPU × GPU for
//! bytes moved between GPUs (peer copies, and NCCL send/recv mapped to the
//! GPUs of the ranks involved). Their tables list every non-empty cell
//! (CSV and JSON); the terminal shows them as grids.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::Model;
use crate::table::{Cell, Table, human_bytes, human_ns, thousands};

/// Messages between processes (by index into [`Model::processes`]):
/// only the pairs that exchanged any, so that a job of thousands of
/// ranks costs its messages' pairs, not ranks².
#[derive(Clone, Debug)]
pub struct MpiMatrix {
    pub n: usize,
    cells: BTreeMap<(usize, usize), MpiCell>,
}

/// One (sender, receiver) pair's messages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MpiCell {
    pub messages: u64,
    pub bytes: u128,
    /// Nanoseconds in the send regions, shared among their messages.
    pub time: f64,
}

/// The most processes drawn as a grid; a larger matrix is listed as rows
/// only (a grid wider than a terminal reads as noise).
pub const GRID_MAX: usize = 32;

impl MpiMatrix {
    pub fn new(n: usize) -> Self {
        Self { n, cells: BTreeMap::new() }
    }

    pub fn add_message(&mut self, from: usize, to: usize, bytes: u64) {
        if from < self.n && to < self.n {
            let c = self.cells.entry((from, to)).or_default();
            c.messages += 1;
            c.bytes += u128::from(bytes);
        }
    }

    pub fn add_time(&mut self, from: usize, to: usize, ns: f64) {
        if from < self.n && to < self.n {
            self.cells.entry((from, to)).or_default().time += ns;
        }
    }

    /// The pair's messages (zero where none).
    pub fn cell(&self, from: usize, to: usize) -> MpiCell {
        self.cells.get(&(from, to)).copied().unwrap_or_default()
    }

    /// The pairs with messages, by sender then receiver.
    pub fn pairs(&self) -> impl Iterator<Item = ((usize, usize), &MpiCell)> {
        self.cells.iter().filter(|(_, c)| c.messages > 0).map(|(k, c)| (*k, c))
    }

    /// The table: one row per (sender, receiver) pair with messages, and a
    /// grid for the terminal up to [`GRID_MAX`] processes.
    pub fn table(&self, model: &Model) -> Table {
        let mut t = Table::new(
            "mpi_matrix",
            "MPI Point-to-Point Matrix",
            &["Sender", "Receiver", "Messages", "Bytes", "Send Time (ns)"],
        );
        for ((i, j), c) in self.pairs() {
            t.rows.push(vec![
                Cell::Text(model.process_label(i)),
                Cell::Text(model.process_label(j)),
                Cell::Int(c.messages.into()),
                Cell::Int(c.bytes),
                Cell::Int(c.time.round() as u128),
            ]);
        }
        if t.rows.is_empty() {
            return t;
        }
        if self.n > GRID_MAX {
            t.notes.push(format!("{} processes: listed as pairs (a grid is drawn up to {GRID_MAX})", self.n));
            return t;
        }
        let labels: Vec<String> = (0..self.n).map(|i| model.process_label(i)).collect();
        let mut g = String::new();
        g.push_str(&grid("messages (row sends to column)", &labels, |i, j| {
            let v = self.cell(i, j).messages;
            (v > 0).then(|| thousands(v))
        }));
        g.push('\n');
        g.push_str(&grid("bytes", &labels, |i, j| {
            let v = self.cell(i, j).bytes;
            (v > 0).then(|| human_bytes(v))
        }));
        g.push('\n');
        g.push_str(&grid("time in send regions", &labels, |i, j| {
            let c = self.cell(i, j);
            (c.messages > 0).then(|| human_ns(c.time.round() as u128))
        }));
        t.grid = Some(g);
        t
    }
}

/// Bytes between GPUs (by index into [`Model::gpus`]): only the pairs
/// with traffic, as in [`MpiMatrix`].
#[derive(Clone, Debug)]
pub struct GpuMatrix {
    pub n: usize,
    cells: BTreeMap<(usize, usize), GpuCell>,
    /// Bytes whose GPUs the archive does not say.
    pub peer_unmapped: u128,
    pub nccl_unmapped: u128,
}

/// One (source, destination) pair's traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuCell {
    pub peer_copies: u64,
    pub peer_bytes: u128,
    pub nccl_messages: u64,
    pub nccl_bytes: u128,
}

impl GpuMatrix {
    pub fn new(n: usize) -> Self {
        Self { n, cells: BTreeMap::new(), peer_unmapped: 0, nccl_unmapped: 0 }
    }

    pub fn add_peer_copy(&mut self, src: usize, dst: usize, bytes: u64) {
        if src < self.n && dst < self.n {
            let c = self.cells.entry((src, dst)).or_default();
            c.peer_copies += 1;
            c.peer_bytes += u128::from(bytes);
        }
    }

    pub fn add_nccl(&mut self, src: usize, dst: usize, bytes: u64) {
        if src < self.n && dst < self.n {
            let c = self.cells.entry((src, dst)).or_default();
            c.nccl_messages += 1;
            c.nccl_bytes += u128::from(bytes);
        }
    }

    /// All bytes from `src` to `dst`.
    pub fn total(&self, src: usize, dst: usize) -> u128 {
        self.cells.get(&(src, dst)).map_or(0, |c| c.peer_bytes + c.nccl_bytes)
    }

    /// The table: one row per (source, destination) pair with traffic;
    /// NVLink counters are per GPU, in `nvlink_sum` and the grid's notes.
    pub fn table(&self, model: &Model, nvlink: &[(u64, u64)]) -> Table {
        let mut t = Table::new(
            "gpu_matrix",
            "GPU-to-GPU Matrix",
            &["Source", "Destination", "Peer Copies", "Peer Copy Bytes", "NCCL Messages", "NCCL Bytes", "Total Bytes"],
        );
        for (&(i, j), c) in &self.cells {
            t.rows.push(vec![
                Cell::Text(model.gpus[i].label.clone()),
                Cell::Text(model.gpus[j].label.clone()),
                Cell::Int(c.peer_copies.into()),
                Cell::Int(c.peer_bytes),
                Cell::Int(c.nccl_messages.into()),
                Cell::Int(c.nccl_bytes),
                Cell::Int(c.peer_bytes + c.nccl_bytes),
            ]);
        }
        let labels: Vec<String> = model.gpus.iter().map(|g| g.label.clone()).collect();
        if !t.rows.is_empty() {
            if self.n > GRID_MAX {
                t.notes.push(format!("{} GPUs: listed as pairs (a grid is drawn up to {GRID_MAX})", self.n));
            } else {
                t.grid = Some(grid("bytes, peer copies + NCCL (row sends to column)", &labels, |i, j| {
                    let v = self.total(i, j);
                    (v > 0).then(|| human_bytes(v))
                }));
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProcessInfo;

    fn model(processes: usize) -> Model {
        let mut m = Model::new(&otf2::reader::GlobalDefs::default());
        m.processes = (0..processes)
            .map(|r| ProcessInfo {
                name: format!("p{r}"),
                rank: Some(r as u32),
                host: "h".into(),
                gpu: None,
                lost: Vec::new(),
            })
            .collect();
        m
    }

    #[test]
    fn a_matrix_of_a_million_processes_holds_only_its_pairs() {
        // Dense, this would be 10¹² cells: the allocation alone would fail.
        let n = 1 << 20;
        let mut m = MpiMatrix::new(n);
        for r in 0..1000 {
            m.add_message(r, (r + 1) % n, 8);
            m.add_time(r, (r + 1) % n, 100.0);
        }
        m.add_message(5, 6, 8);
        m.add_time(7, 9, 1.0); // time without a message: not a pair
        assert_eq!(m.pairs().count(), 1000);
        assert_eq!(m.cell(5, 6), MpiCell { messages: 2, bytes: 16, time: 100.0 });
        assert_eq!(m.cell(6, 5), MpiCell::default());
        let mut g = GpuMatrix::new(n);
        g.add_peer_copy(1, 2, 10);
        g.add_nccl(1, 2, 5);
        g.add_nccl(3, 4, 7);
        assert_eq!((g.total(1, 2), g.total(3, 4), g.total(2, 1)), (15, 7, 0));
    }

    #[test]
    fn grids_up_to_grid_max_then_pairs_with_a_note() {
        for (n, grid) in [(GRID_MAX, true), (GRID_MAX + 1, false)] {
            let mut m = MpiMatrix::new(n);
            m.add_message(0, n - 1, 4);
            let t = m.table(&model(n));
            assert_eq!(t.rows.len(), 1, "{n}");
            assert_eq!(t.grid.is_some(), grid, "{n}");
            assert_eq!(t.notes.len(), usize::from(!grid), "{n}: {:?}", t.notes);
        }
    }
}
