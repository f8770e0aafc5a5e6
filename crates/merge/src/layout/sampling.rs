//! Sampled call stacks as OTF2 calling contexts, as Score-P writes them
//! with sampling on: one `Function` region of paradigm SAMPLING per
//! function name, a source code location per file and line, a calling
//! context per (caller's context, region, location) over all processes,
//! and one interrupt generator per sampling period. Each process's stack
//! tree (its Frame definitions) maps onto these contexts; a Sample event
//! becomes a `CallingContextSample` of its leaf's context. A Python frame
//! (a PyFrame definition) is a context of a function named after its
//! code's file (base name) and qualified name, `train.py:Model.forward`
//! (as Score-P's Python bindings name theirs `module:function`), at its
//! file and line. The contexts are also kept in the layout
//! ([`Sampled`]), for the profile's call tree. The MPI stream's tree
//! (`GPUTRACE_UNWINDING`) maps the same way, its leaves being the MPI
//! functions' own regions: a CallPath event makes the next Enter and its
//! Leave a `CallingContextEnter` and `CallingContextLeave` of that leaf's
//! context, as Score-P writes them with unwinding on.

use std::collections::HashMap;

use otf2::{CallingContextRef, Definitions, Paradigm, Region, RegionRef, RegionRole, SourceCodeLocationRef};

use super::Layout;
use crate::inputs::{FrameAt, Process, RegionDef};
use crate::symbols::{Frame, Symbols};

/// A stream's stack-tree nodes → (their context, the context's depth).
pub type Contexts = HashMap<u32, (CallingContextRef, u32)>;

/// A context's key: its caller's context, its region, its location.
type ContextKey = (Option<CallingContextRef>, RegionRef, Option<SourceCodeLocationRef>);

/// The sampled calling contexts as the profile needs them.
#[derive(Debug, Default, Clone)]
pub struct Sampled {
    /// By context id: its caller's context and its function (an index
    /// into `functions`).
    pub contexts: HashMap<u32, (Option<u32>, u32)>,
    /// By context id, the contexts whose leaf is a traced region (an MPI,
    /// CUDA or NCCL call whose call path was recorded): its caller's
    /// context and the region's summary index.
    pub leaves: HashMap<u32, (Option<u32>, usize)>,
    /// The functions, as regions (name, source file as the mangled name,
    /// paradigm User, role Function).
    pub functions: Vec<RegionDef>,
    /// Each interrupt generator's period (ns), by its id.
    pub periods: HashMap<u32, u64>,
}

#[derive(Default)]
struct Tables {
    regions: HashMap<String, (RegionRef, u32)>,
    locations: HashMap<(String, u32), SourceCodeLocationRef>,
    contexts: HashMap<ContextKey, (CallingContextRef, u32)>,
    /// The contexts of frames inside the CUDA and NCCL libraries (their
    /// callers' contexts): left out of the paths of their calls.
    inside_gpu_libraries: HashMap<u32, Option<CallingContextRef>>,
}

/// Whether `f` is a frame of the CUDA runtime or driver, CUPTI, NCCL or
/// gputrace's own libraries, which a CUDA or NCCL call's path leaves
/// out so that it ends at the user's function: by its library, or by its
/// name where the runtime is linked into the program (nvcc's default:
/// `cudaLaunchKernel`, `__cudart123`, `cudart::...`).
fn inside_gpu_library(f: &Frame) -> bool {
    let base = f.module.rsplit('/').next().unwrap_or("");
    let api =
        |prefix: &str| f.function.strip_prefix(prefix).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
    ["libcuda.", "libcudart", "libcupti", "libnccl", "libgputrace"].iter().any(|l| base.starts_with(l))
        || api("cuda")
        || api("nccl")
        || f.function.starts_with("__cudart")
        || f.function.starts_with("cudart::")
}

/// Defines the contexts of every process's sampled stacks.
pub(super) fn define(defs: &mut Definitions, processes: &[Process], layout: &mut Layout) {
    let mut symbols = Symbols::default();
    let mut tables = Tables::default();
    let mut generators: HashMap<u64, otf2::InterruptGeneratorRef> = HashMap::new();
    for (p_index, p) in processes.iter().enumerate().take(layout.processes.len()) {
        for (stream, d) in p.defs.iter().enumerate() {
            let mut contexts = Contexts::new();
            if !d.frames.is_empty() && d.sampling_period != 0 {
                let period = d.sampling_period;
                let name = "CPU time sampling";
                let g = *generators.entry(period).or_insert_with(|| defs.interrupt_generator(name, period));
                layout.sampled.periods.insert(g.id(), period);
                layout.processes[p_index].interrupt = Some(g);
            }
            // A node's parent has a smaller id: it was defined first.
            for (&id, &(parent, at_frame)) in &d.frames {
                let mut at = contexts.get(&parent).map(|c| c.0);
                let mut depth = contexts.get(&parent).map_or(0, |c| c.1);
                let frames = match at_frame {
                    FrameAt::Native(address) if address & raw::event::REGION_NODE != 0 => {
                        // An MPI call's leaf: its region, called at the parent.
                        let local = (address & u64::from(u32::MAX)) as usize;
                        let plan = &layout.processes[p_index];
                        if let Some(&Some((region, index))) = plan.regions.get(stream).and_then(|r| r.get(local)) {
                            if matches!(
                                layout.regions.get(index).map(|r| r.paradigm),
                                Some(raw::Paradigm::Cuda | raw::Paradigm::Nccl)
                            ) {
                                while let Some(&caller) = at.and_then(|c| tables.inside_gpu_libraries.get(&c.id())) {
                                    (at, depth) = (caller, depth.saturating_sub(1));
                                }
                            }
                            let (ctx, d) = *tables.contexts.entry((at, region, None)).or_insert_with(|| {
                                let ctx = defs.calling_context(region, None, at);
                                layout.sampled.leaves.insert(ctx.id(), (at.map(|a| a.id()), index));
                                (ctx, depth + 1)
                            });
                            contexts.insert(id, (ctx, d));
                        }
                        continue;
                    }
                    FrameAt::Native(address) => symbols.frames(&d.modules, address),
                    FrameAt::Python { code, line } => vec![python_frame(d.py_codes.get(&code), line)],
                };
                for f in frames {
                    let (region, function) = *tables.regions.entry(f.function.clone()).or_insert_with(|| {
                        let mut r = Region::new(&f.function, RegionRole::Function, Paradigm::Sampling);
                        r.source_file = &f.file;
                        let sampled = &mut layout.sampled.functions;
                        sampled.push(RegionDef {
                            name: f.function.clone(),
                            // The profile's module: the source file, else the binary.
                            canonical: [&f.file, &f.module]
                                .into_iter()
                                .find(|m| !m.is_empty())
                                .map_or_else(|| "[unknown]".to_string(), |m| m.clone()),
                            paradigm: raw::Paradigm::User,
                            role: raw::RegionRole::Function,
                            group: String::new(),
                        });
                        (defs.region(r), sampled.len() as u32 - 1)
                    });
                    let scl = (!f.file.is_empty()).then(|| {
                        *tables
                            .locations
                            .entry((f.file.clone(), f.line))
                            .or_insert_with(|| defs.source_code_location(&f.file, f.line))
                    });
                    let (ctx, d) = *tables.contexts.entry((at, region, scl)).or_insert_with(|| {
                        let ctx = defs.calling_context(region, scl, at);
                        layout.sampled.contexts.insert(ctx.id(), (at.map(|a| a.id()), function));
                        if inside_gpu_library(&f) {
                            tables.inside_gpu_libraries.insert(ctx.id(), at);
                        }
                        (ctx, depth + 1)
                    });
                    (at, depth) = (Some(ctx), d);
                }
                if let Some(ctx) = at {
                    contexts.insert(id, (ctx, depth));
                }
            }
            layout.processes[p_index].samples.push(contexts);
        }
    }
}

/// A Python frame as a function: its code's file's base name and
/// qualified name, its file and the frame's line.
fn python_frame(code: Option<&crate::inputs::PyCode>, line: u32) -> Frame {
    match code {
        Some(c) => {
            let base = c.file.rsplit('/').next().unwrap_or(&c.file);
            Frame { function: format!("{base}:{}", c.name), file: c.file.clone(), line, module: String::new() }
        }
        None => Frame { function: "[python]".into(), file: String::new(), line, module: String::new() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, module: &str) -> Frame {
        Frame { function: function.into(), file: String::new(), line: 0, module: module.into() }
    }

    #[test]
    fn the_cuda_and_nccl_libraries_frames_are_told_from_the_users() {
        for (f, m) in [
            ("cudaLaunchKernel", "/work/app"),
            ("cudaLaunchKernel<char>", "/work/app"),
            ("__cudart1043", "/work/app"),
            ("cudart::cudaApiLaunchKernel", "/work/app"),
            ("[libcuda.so.1]", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            ("cuptiActivityFlushAll", "/usr/local/cuda/lib64/libcupti.so.13"),
            ("ncclEnqueueCheck", "/usr/lib/libnccl.so.2"),
            ("ncclAllReduce", "/opt/torch/lib/libtorch_cuda.so"),
        ] {
            assert!(inside_gpu_library(&frame(f, m)), "{f} in {m}");
        }
        for (f, m) in [("main", "/work/app"), ("cuda_step", "/work/app"), ("step", "/work/app"), ("ncclx", "")] {
            assert!(!inside_gpu_library(&frame(f, m)), "{f} in {m}");
        }
    }
}
