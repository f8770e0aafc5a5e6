//! The per-event reports, as `nsys stats`' `*_trace` reports name them:
//! `cuda_api_trace` (CUDA API calls), `cuda_gpu_trace` (kernels, copies
//! and memsets on the GPU) and `mpi_trace` (MPI calls; nsys's
//! `mpi_event_trace`). nsys lists every event in time order; an archive
//! of millions of events makes that a file no one reads, so these list
//! the N longest instances (`gputrace stats --longest N`), longest first,
//! with when each started (ns since the trace's start, or since `--from`'s
//! origin: the same clock), its process (rank) and thread or stream.
//!
//! Memory: at most 2N instances per report while the archive is read
//! (cut back to the N longest whenever 2N are held).

use otf2::{LocationRef, RegionRef};

use crate::table::{Cell, Table};

use super::collect::Collected;

/// How many instances each report lists unless told.
pub const DEFAULT_LONGEST: usize = 20;

/// Which per-event report an instance goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trace {
    CudaApi,
    Gpu,
    Mpi,
}

/// One region instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub ns: u64,
    /// Ns since the trace's start.
    pub start: u64,
    pub region: RegionRef,
    /// The statistics' name (copies by kind).
    pub name: String,
    pub location: LocationRef,
    pub process: usize,
    pub correlation: Option<u64>,
    /// Of copies and memsets.
    pub bytes: Option<u64>,
}

impl Instance {
    /// Longest first; equal ones by start, then place: the same table on
    /// every run.
    fn key(&self) -> (std::cmp::Reverse<u64>, u64, u64, u32) {
        (std::cmp::Reverse(self.ns), self.start, self.location.id(), self.region.id())
    }
}

/// The N longest instances of each report.
#[derive(Debug)]
pub struct Longest {
    pub n: usize,
    pub cuda_api: Vec<Instance>,
    pub gpu: Vec<Instance>,
    pub mpi: Vec<Instance>,
    /// Instances seen, per report (the tables say "of M").
    pub seen: [u64; 3],
    /// Per report, the shortest of the N kept when last cut back: nothing
    /// shorter can be listed.
    floor: [u64; 3],
}

impl Default for Longest {
    fn default() -> Self {
        Self::new(DEFAULT_LONGEST)
    }
}

impl Longest {
    pub fn new(n: usize) -> Self {
        Self { n, cuda_api: Vec::new(), gpu: Vec::new(), mpi: Vec::new(), seen: [0; 3], floor: [0; 3] }
    }

    fn list(&mut self, trace: Trace) -> &mut Vec<Instance> {
        match trace {
            Trace::CudaApi => &mut self.cuda_api,
            Trace::Gpu => &mut self.gpu,
            Trace::Mpi => &mut self.mpi,
        }
    }

    /// Whether an instance of `ns` could be listed: saves making its name.
    pub fn wants(&self, trace: Trace, ns: u64) -> bool {
        self.n > 0 && ns >= self.floor[trace as usize]
    }

    /// Counts an instance, and keeps it when it may be among the N longest.
    pub fn add(&mut self, trace: Trace, instance: Instance) {
        self.seen[trace as usize] += 1;
        let n = self.n;
        if !self.wants(trace, instance.ns) {
            return;
        }
        let list = self.list(trace);
        list.push(instance);
        if list.len() >= 2 * n {
            list.sort_by_key(Instance::key);
            list.truncate(n);
            let floor = list.last().map_or(0, |i| i.ns);
            self.floor[trace as usize] = floor;
        }
    }

    /// Counts an instance too short to be listed.
    pub fn count(&mut self, trace: Trace) {
        self.seen[trace as usize] += 1;
    }

    /// The N longest of `trace`, longest first.
    pub fn sorted(&self, trace: Trace) -> Vec<Instance> {
        let mut list = match trace {
            Trace::CudaApi => self.cuda_api.clone(),
            Trace::Gpu => self.gpu.clone(),
            Trace::Mpi => self.mpi.clone(),
        };
        list.sort_by_key(Instance::key);
        list.truncate(self.n);
        list
    }
}

/// Builds `cuda_api_trace`, `cuda_gpu_trace` or `mpi_trace`.
pub fn table(c: &Collected, trace: Trace) -> Table {
    let (name, title) = match trace {
        Trace::CudaApi => ("cuda_api_trace", "CUDA API Trace (longest calls)"),
        Trace::Gpu => ("cuda_gpu_trace", "CUDA GPU Trace (longest kernels and memory operations)"),
        Trace::Mpi => ("mpi_trace", "MPI Trace (longest calls)"),
    };
    let mut columns = vec!["Start (ns)", "Duration (ns)"];
    match trace {
        Trace::CudaApi => columns.extend(["CorrID", "Process", "Thread", "Name"]),
        Trace::Gpu => columns.extend(["CorrId", "Bytes", "Process", "GPU", "Stream", "Name"]),
        Trace::Mpi => columns.extend(["Process", "Thread", "Name"]),
    }
    let mut t = Table::new(name, title, &columns);
    let model = &c.model;
    let list = c.longest.sorted(trace);
    for i in &list {
        let process = Cell::Text(model.process_label(i.process));
        let place = Cell::Text(model.locations.get(&i.location).map_or_else(String::new, |l| l.name.clone()));
        let corr = i.correlation.map_or(Cell::Text(String::new()), |c| Cell::Int(c.into()));
        let mut row = vec![Cell::Int(i.start.into()), Cell::Int(i.ns.into())];
        match trace {
            Trace::CudaApi => row.extend([corr, process, place, Cell::Text(i.name.clone())]),
            Trace::Gpu => {
                let gpu = model.locations.get(&i.location).and_then(|l| l.gpu).and_then(|g| model.gpus.get(g));
                let bytes = i.bytes.map_or(Cell::Text(String::new()), |b| Cell::Int(b.into()));
                let gpu = Cell::Text(gpu.map_or_else(String::new, |g| g.label.clone()));
                row.extend([corr, bytes, process, gpu, place, Cell::Name(i.name.clone())]);
            }
            Trace::Mpi => row.extend([process, place, Cell::Text(i.name.clone())]),
        }
        t.rows.push(row);
    }
    let seen = c.longest.seen[trace as usize];
    if seen > 0 {
        t.notes.push(format!(
            "The {} longest of {} instances (--longest N), longest first; Start: ns since the trace's start.",
            list.len(),
            crate::numbers::thousands(seen)
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(ns: u64, start: u64) -> Instance {
        Instance {
            ns,
            start,
            region: RegionRef::from_id(1),
            name: "MPI_Recv".into(),
            location: LocationRef::from_id(0),
            process: 0,
            correlation: None,
            bytes: None,
        }
    }

    #[test]
    fn keeps_the_n_longest_in_bounded_memory() {
        let mut l = Longest::new(3);
        // Durations 0..100 in a scrambled order.
        for k in 0..100u64 {
            let ns = (k * 37) % 100;
            l.add(Trace::Mpi, instance(ns, k));
            assert!(l.mpi.len() < 6);
        }
        let got: Vec<u64> = l.sorted(Trace::Mpi).iter().map(|i| i.ns).collect();
        assert_eq!(got, [99, 98, 97]);
        assert_eq!(l.seen, [0, 0, 100]);
        // Ties: the earlier first.
        let mut l = Longest::new(2);
        for start in [5, 1, 3] {
            l.add(Trace::Gpu, instance(10, start));
        }
        let got: Vec<u64> = l.sorted(Trace::Gpu).iter().map(|i| i.start).collect();
        assert_eq!(got, [1, 3]);
        assert!(!Longest::new(0).wants(Trace::Gpu, 5));
    }
}
