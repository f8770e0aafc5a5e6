//! Sampled call stacks as OTF2 calling contexts, as Score-P writes them
//! with sampling on: one `Function` region of paradigm SAMPLING per
//! function name, a source code location per file and line, a calling
//! context per (caller's context, region, location) over all processes,
//! and one interrupt generator per sampling period. Each process's stack
//! tree (its Frame definitions) maps onto these contexts; a Sample event
//! becomes a `CallingContextSample` of its leaf's context. The MPI
//! stream's tree (`GPUTRACE_UNWINDING`) maps the same way, its leaves
//! being the MPI functions' own regions: a CallPath event makes the next
//! Enter and its Leave a `CallingContextEnter` and `CallingContextLeave`
//! of that leaf's context, as Score-P writes them with unwinding on.

use std::collections::HashMap;

use otf2::{CallingContextRef, Definitions, Paradigm, Region, RegionRef, RegionRole, SourceCodeLocationRef};

use super::Layout;
use crate::inputs::Process;
use crate::symbols::Symbols;

/// A stream's stack-tree nodes → (their context, the context's depth).
pub type Contexts = HashMap<u32, (CallingContextRef, u32)>;

/// A context's key: its caller's context, its region, its location.
type ContextKey = (Option<CallingContextRef>, RegionRef, Option<SourceCodeLocationRef>);

#[derive(Default)]
struct Tables {
    regions: HashMap<String, RegionRef>,
    locations: HashMap<(String, u32), SourceCodeLocationRef>,
    contexts: HashMap<ContextKey, (CallingContextRef, u32)>,
}

/// Defines the contexts of every process's sampled stacks.
pub(super) fn define(defs: &mut Definitions, processes: &[Process], layout: &mut Layout) {
    let mut symbols = Symbols::default();
    let mut tables = Tables::default();
    let mut generators: HashMap<u64, otf2::InterruptGeneratorRef> = HashMap::new();
    for (p, plan) in processes.iter().zip(layout.processes.iter_mut()) {
        for (stream, d) in p.defs.iter().enumerate() {
            let mut contexts = Contexts::new();
            if !d.frames.is_empty() && d.sampling_period != 0 {
                let period = d.sampling_period;
                let name = "CPU time sampling";
                plan.interrupt =
                    Some(*generators.entry(period).or_insert_with(|| defs.interrupt_generator(name, period)));
            }
            // A node's parent has a smaller id: it was defined first.
            for (&id, &(parent, address)) in &d.frames {
                let mut at = contexts.get(&parent).map(|c| c.0);
                let mut depth = contexts.get(&parent).map_or(0, |c| c.1);
                if address & raw::event::REGION_NODE != 0 {
                    // An MPI call's leaf: its region, called at the parent.
                    let local = (address & u64::from(u32::MAX)) as usize;
                    if let Some(&Some((region, _))) = plan.regions.get(stream).and_then(|r| r.get(local)) {
                        let key = (at, region, None);
                        let (ctx, d) = *tables
                            .contexts
                            .entry(key)
                            .or_insert_with(|| (defs.calling_context(region, None, at), depth + 1));
                        contexts.insert(id, (ctx, d));
                    }
                    continue;
                }
                for f in symbols.frames(&d.modules, address) {
                    let region = *tables.regions.entry(f.function.clone()).or_insert_with(|| {
                        let mut r = Region::new(&f.function, RegionRole::Function, Paradigm::Sampling);
                        r.source_file = &f.file;
                        defs.region(r)
                    });
                    let scl = (!f.file.is_empty()).then(|| {
                        *tables
                            .locations
                            .entry((f.file.clone(), f.line))
                            .or_insert_with(|| defs.source_code_location(&f.file, f.line))
                    });
                    let (ctx, d) = *tables
                        .contexts
                        .entry((at, region, scl))
                        .or_insert_with(|| (defs.calling_context(region, scl, at), depth + 1));
                    (at, depth) = (Some(ctx), d);
                }
                if let Some(ctx) = at {
                    contexts.insert(id, (ctx, depth));
                }
            }
            plan.samples.push(contexts);
        }
    }
}
