//! What-if projections for GPU work and communication, from what the
//! critical path's walk saw: first-order estimates, as Scalasca's (the
//! path shortens by what leaves it; another chain may become critical
//! sooner).
//!
//! - `kernel_at_median`: a kernel on a stream of the path whose instances
//!   there took longer than the median instance of its name (over every
//!   stream and rank): the path loses each instance's time beyond that
//!   median.
//! - `host_gap_at_median`: where the path went from a GPU activity to its
//!   launch call (the GPU waited for the host), the host's computation on
//!   the path from there back to where the path came to that thread, in
//!   stretches from one change of its innermost region to the next (the
//!   time between two CUDA calls, a user region): had each stretch taken
//!   the median one's time, the path loses the excess — each stretch at
//!   most the time the thread's streams sat idle in it (the rest of the
//!   host's time the GPU was busy with what was queued, work that would
//!   be on the path instead). A host phase as long in every iteration is
//!   the median itself: not projected away.
//! - `communication_overlapped`: communication on the path (NCCL kernels,
//!   MPI calls) overlapped by the compute kernels on the path: the path
//!   loses the smaller of the two. It assumes the communication does not
//!   wait for those kernels' results (as a data-parallel all-reduce of
//!   gradient buckets does not, for the kernels after it).

use std::collections::HashMap;

use serde::Serialize;

use super::stream::Walk;
use super::{CriticalPath, Describe, is_computation};

/// One projection for GPU work or communication.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuWhatIf {
    /// `kernel_at_median`, `host_gap_at_median` or
    /// `communication_overlapped`.
    pub kind: &'static str,
    /// The process and the stream or thread it is about (none for the
    /// overlap, which is the whole path's).
    pub process: Option<String>,
    pub rank: Option<u32>,
    pub location: Option<String>,
    /// The kernel (`kernel_at_median`).
    pub activity: Option<String>,
    /// What it projects, in words.
    pub what: String,
    /// The time on the path it is about (ns): the kernel's; the host's
    /// computation the GPU waited for; the communication's.
    pub on_path_ns: u64,
    /// The kernel's median instance, the median stretch of host
    /// computation, or the compute kernels' time on the path that the
    /// communication could hide behind (ns).
    pub reference_ns: u64,
    /// What the path would lose (ns), and its projected length.
    pub saved_ns: u64,
    pub projected_ns: u64,
    /// The run shorter by (%).
    pub shorter: f64,
}

/// A CUDA API call, by name (`cudaLaunchKernel`, `cuMemcpyAsync`).
fn is_cuda_call(name: &str) -> bool {
    name.starts_with("cuda") || name.strip_prefix("cu").is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// The projections, the largest saving first; none under 1% of the path.
pub(super) fn gpu_what_if(path: &CriticalPath, walk: &Walk, names: &dyn Describe) -> Vec<GpuWhatIf> {
    let length = path.length_ns;
    let mut out = Vec::new();
    let mut row = |kind, loc: Option<usize>, activity, what, on_path_ns, reference_ns, saved_ns: u64| {
        let saved_ns = saved_ns.min(length);
        // Below 1% of the path: noise, not a projection worth a row.
        if saved_ns == 0 || saved_ns * 100 < length {
            return;
        }
        let process = loc.map(|l| names.process_of(l));
        out.push(GpuWhatIf {
            kind,
            process: process.map(|p| names.process(p)),
            rank: process.and_then(|p| names.rank(p)),
            location: loc.map(|l| names.location(l)),
            activity,
            what,
            on_path_ns,
            reference_ns,
            saved_ns,
            projected_ns: length - saved_ns,
            shorter: 100.0 * saved_ns as f64 / length.max(1) as f64,
        });
    };
    for (&(loc, region), &(excess, instances)) in &walk.excess {
        let kernel = names.region(region);
        let median = names.ns(walk.median.get(&region).copied().unwrap_or(0));
        let on_path = walk.on.get(&(loc, super::stream::Act::Work(region))).map_or(0, |&t| names.ns(t));
        let what = format!("{instances} instances of {kernel} on the path took the median instance's time");
        row("kernel_at_median", Some(loc), Some(kernel), what, on_path, median, names.ns(excess));
    }
    // Per thread, its stretches of computation on the path while the GPU
    // waited for it, beyond their median.
    let mut computation: HashMap<u32, bool> = HashMap::new();
    let mut stretches: HashMap<usize, Vec<(u64, u64)>> = HashMap::new();
    for &(loc, node, ticks, idle) in &walk.starved {
        let counts = *computation.entry(node).or_insert_with(|| {
            let name = names.activity(node);
            is_computation(&name) && !is_cuda_call(&name)
        });
        if counts {
            stretches.entry(loc).or_default().push((ticks, idle));
        }
    }
    let mut threads: Vec<(usize, Vec<(u64, u64)>)> = stretches.into_iter().collect();
    threads.sort_unstable_by_key(|(loc, _)| *loc);
    for (loc, mut ticks) in threads {
        ticks.sort_unstable();
        let median = ticks[ticks.len() / 2].0;
        // Each stretch saves its time beyond the median, at most the time
        // the GPU sat idle in it: the rest the GPU was busy with what was
        // queued, work that would be on the path instead.
        let excess: u64 = ticks.iter().map(|&(t, idle)| t.saturating_sub(median).min(idle)).sum();
        let on_path = names.ns(ticks.iter().map(|&(t, _)| t).sum());
        let what = format!(
            "{} stretches of this thread's computation before launches the GPU waited for took the median one's time",
            ticks.len()
        );
        row("host_gap_at_median", Some(loc), None, what, on_path, names.ns(median), names.ns(excess));
    }
    let mpi: u64 = path
        .steps
        .iter()
        .filter(|s| !s.on_gpu && s.activity.starts_with("MPI_") && !s.activity.starts_with("MPI_Init"))
        .map(|s| s.time_ns)
        .sum();
    let communication = names.ns(walk.nccl) + mpi;
    let kernels = names.ns(walk.kernels);
    let what =
        "the communication on the path (NCCL kernels, MPI calls) overlapped its compute kernels fully".to_string();
    row("communication_overlapped", None, None, what, communication, kernels, communication.min(kernels));
    out.sort_by(|a, b| {
        b.saved_ns.cmp(&a.saved_ns).then_with(|| a.kind.cmp(b.kind)).then_with(|| a.process.cmp(&b.process))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_calls_are_told_by_name() {
        assert!(is_cuda_call("cudaLaunchKernel") && is_cuda_call("cuLaunchKernelEx"));
        assert!(!is_cuda_call("cublas_gemm") && !is_cuda_call("compute") && !is_cuda_call("(outside any region)"));
    }
}
