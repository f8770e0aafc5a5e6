//! GPU work launched that never finished, when a job was stopped: per
//! process, the kernels whose launch call is in the archive and whose GPU
//! record is not, and on NCCL the collective after which no NCCL kernel
//! ran to its end. With [`super::stuck`], what a hung job's GPUs were doing.
//!
//! CUPTI writes a kernel's record when the kernel ends; one that spins
//! forever leaves its launch call only (a CUDA API region with the
//! `CUDA correlation id` attribute). The pass keeps the kernel launches
//! (`cudaLaunchKernel`, `cuLaunchKernelEx`...) whose correlation id no GPU
//! work carried yet; what is left at the end never finished, or its record
//! was lost (the process's `lost` counters say whether CUPTI dropped any).
//! The CUDA agent names the kernel at its launch (the `CUDA kernel`
//! attribute of the call, from CUPTI's callback); an archive without it
//! gives the launch call only.
//!
//! NCCL launches its kernel with the driver API, which the default
//! recording leaves out: for an NCCL communicator the pass keeps each
//! process's last collective call, and when no NCCL kernel started on the
//! process's GPUs after that call was entered (while NCCL kernels were
//! recorded before), that collective's kernel never finished.

use serde::Serialize;

use super::render::{communicator, secs};
use super::{Analysis, stuck::Stuck};
use crate::names;
use crate::numbers::{human_ns, thousands};
use crate::table::{Cell, Table};

/// One kernel launch that never finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Launched {
    /// The kernel's name, when the archive has it (the launch's `CUDA
    /// kernel` attribute).
    pub kernel: Option<String>,
    /// The launch call (`cudaLaunchKernel`), and the regions open on its
    /// thread then, outermost first, itself last.
    pub call: String,
    pub path: String,
    pub thread: String,
    /// When it was launched (ns since the trace's start), and how long
    /// before the end of the recording.
    pub launched_ns: u64,
    pub before_end_ns: u64,
}

/// An NCCL collective whose kernel never finished on a process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NcclUnfinished {
    pub call: String,
    pub communicator: String,
    /// Its place among the communicator's collectives, from 1, and NCCL's
    /// sequence number of it when the archive has it.
    pub operation: u64,
    pub sequence: Option<u64>,
    pub path: String,
    pub thread: String,
    pub launched_ns: u64,
    pub before_end_ns: u64,
}

/// Per process, the GPU work launched that never finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unfinished {
    pub rank: Option<u32>,
    pub process: String,
    /// The GPU its streams are on, when they are all on one.
    pub gpu: Option<String>,
    /// Kernel launches without a GPU record; the first and the last of
    /// them (the later ones of a stream queue behind the first).
    pub count: u64,
    pub first: Option<Launched>,
    pub last: Option<Launched>,
    pub nccl: Option<NcclUnfinished>,
}

/// `GPU 1 (rank 1)`, or the process alone when its GPU is unknown.
fn who(u: &Unfinished) -> String {
    match &u.gpu {
        Some(g) => format!("{g} ({})", u.process),
        None => u.process.clone(),
    }
}

fn kernel(l: &Launched) -> String {
    match &l.kernel {
        Some(k) => format!("kernel {}", names::for_terminal(k, 40)),
        None => format!("a kernel (name unknown, launched by {})", l.call),
    }
}

/// One line per process with GPU work that never finished.
pub fn lines(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for u in &a.unfinished_kernels {
        if let Some(l) = &u.last {
            let mut line = format!(
                "Unfinished: {}: {} launched {} before the end never finished ({})",
                who(u),
                kernel(l),
                human_ns(l.before_end_ns),
                names::cut(&l.path, 60)
            );
            if let Some(f) = u.first.as_ref().filter(|_| u.count > 1) {
                line.push_str(&format!(
                    "; {} launches never finished, the first: {} {} before the end",
                    thousands(u.count),
                    kernel(f),
                    human_ns(f.before_end_ns)
                ));
            }
            out.push(line);
        }
        if let Some(n) = &u.nccl {
            let seq = n.sequence.map(|s| format!(", NCCL sequence number {s}")).unwrap_or_default();
            out.push(format!(
                "Unfinished: {}: the NCCL kernel of {} (collective #{}{} on {}) launched {} before the end never finished",
                who(u),
                n.call,
                thousands(n.operation),
                seq,
                n.communicator,
                human_ns(n.before_end_ns)
            ));
        }
    }
    out
}

/// One line per communicator whose collective some ranks wait in and
/// others never entered.
pub fn stuck_lines(a: &Analysis) -> Vec<String> {
    a.stuck.iter().map(stuck_line).collect()
}

fn ranks(list: &str) -> (&'static str, &'static str) {
    if list.contains(['-', ',']) { ("ranks", "") } else { ("rank", "s") }
}

fn stuck_line(s: &Stuck) -> String {
    let (waiting, verb_s) = ranks(&s.waiting);
    let (missing, _) = ranks(&s.missing);
    let comm = communicator(Some(&s.communicator), Some(s.communicator_size), Some(&s.communicator_ranks));
    let seq = s.sequence.map(|n| format!(" (NCCL sequence number {n})")).unwrap_or_default();
    let head = if s.returned {
        format!(
            "Stuck: {waiting} {} entered {}, collective #{}{seq} on {} {comm}, and wait{verb_s} ({})",
            s.waiting,
            s.calls.join("/"),
            thousands(s.operation),
            s.paradigm,
            s.waiting_doing.join("; ")
        )
    } else {
        format!(
            "Stuck: {waiting} {} wait{verb_s} in {}, collective #{}{seq} on {} {comm}",
            s.waiting,
            s.calls.join("/"),
            thousands(s.operation),
            s.paradigm
        )
    };
    format!("{head}; {missing} {} never entered it ({})", s.missing, s.missing_doing.join("; "))
}

/// The kernel launches that never finished, per process.
pub fn table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "unfinished_kernels",
        "GPU work launched that never finished",
        &["Process", "GPU", "Kernel", "Launched (s)", "Before The End", "Launches", "Launch Call Path"],
    );
    for u in &a.unfinished_kernels {
        let gpu = Cell::Text(u.gpu.clone().unwrap_or_else(|| "-".into()));
        if let Some(l) = &u.last {
            t.rows.push(vec![
                Cell::Text(u.process.clone()),
                gpu.clone(),
                Cell::Text(
                    l.kernel.as_deref().map_or_else(|| format!("? ({})", l.call), |k| names::for_terminal(k, 40)),
                ),
                Cell::Text(secs(l.launched_ns)),
                Cell::Text(human_ns(l.before_end_ns)),
                Cell::Text(thousands(u.count)),
                Cell::Text(names::cut(&l.path, 60)),
            ]);
        }
        if let Some(n) = &u.nccl {
            t.rows.push(vec![
                Cell::Text(u.process.clone()),
                gpu,
                Cell::Text(format!("NCCL kernel of {} #{}", n.call, thousands(n.operation))),
                Cell::Text(secs(n.launched_ns)),
                Cell::Text(human_ns(n.before_end_ns)),
                Cell::Text("-".into()),
                Cell::Text(names::cut(&n.path, 60)),
            ]);
        }
    }
    t.notes.push(
        "A kernel's record is written when it ends: the last launch without one is shown, with the number of such \
         launches (a lost record counts too). NCCL: its last collective, when no NCCL kernel started after it."
            .into(),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launched(kernel: Option<&str>, before: u64) -> Launched {
        Launched {
            kernel: kernel.map(str::to_string),
            call: "cudaLaunchKernel".into(),
            path: "main > cudaLaunchKernel".into(),
            thread: "Master thread".into(),
            launched_ns: 1_000_000_000,
            before_end_ns: before,
        }
    }

    #[test]
    fn the_lines_name_the_gpu_the_kernel_and_how_long_before_the_end() {
        let u = Unfinished {
            rank: Some(1),
            process: "rank 1".into(),
            gpu: Some("CUDA Device 1".into()),
            count: 1,
            first: Some(launched(Some("spin_forever(int volatile*)"), 12_300_000_000)),
            last: Some(launched(Some("spin_forever(int volatile*)"), 12_300_000_000)),
            nccl: None,
        };
        let line = |u: &Unfinished| who(u) + ": " + &kernel(u.last.as_ref().unwrap());
        assert_eq!(line(&u), "CUDA Device 1 (rank 1): kernel spin_forever");
        let unnamed = Unfinished { gpu: None, last: Some(launched(None, 5)), ..u };
        assert_eq!(line(&unnamed), "rank 1: a kernel (name unknown, launched by cudaLaunchKernel)");
    }
}
