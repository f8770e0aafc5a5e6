//! A location the flight recorder cut (`GPUTRACE_FLIGHT_RECORDER`): the
//! calls open at the cut have their Leave and not their Enter.

use otf2::RegionRef;
use raw::Event;

use crate::inputs::Process;
use crate::layout::ProcessPlan;
use crate::timeline::Timeline;

/// The regions open at a flight recorder's cut on a host thread: those
/// left and never entered, innermost first (the order of their Leaves),
/// matched as the pass matches them.
pub(super) fn open_at_cut(plan: &ProcessPlan, timeline: Timeline<'_>) -> Vec<(RegionRef, usize)> {
    let region = |stream: usize, id: u32| plan.regions[stream].get(id as usize).copied().flatten();
    let mut stack: Vec<RegionRef> = Vec::new();
    let mut open = Vec::new();
    for (_, stream, ev) in timeline {
        match ev {
            Event::Enter { region: id } | Event::EnterCorrelated { region: id, .. } => {
                if let Some((r, _)) = region(stream, id) {
                    stack.push(r);
                }
            }
            Event::Leave { region: id } => {
                let Some((r, index)) = region(stream, id) else { continue };
                match stack.iter().rposition(|open| *open == r) {
                    Some(depth) => stack.truncate(depth),
                    None => open.push((r, index)),
                }
            }
            _ => {}
        }
    }
    open
}

/// The newest GPU work (kernel, copy, memset) of `p` that the flight
/// recorder gave back, on the process's clock; 0 when none was.
pub(super) fn gpu_cut(p: &Process) -> u64 {
    let gpu = |d: &crate::inputs::StreamDefs, loc: &u32| {
        matches!(d.locations.get(loc), Some((raw::LocationKind::GpuStream { .. }, _)))
    };
    p.defs.iter().flat_map(|d| d.expired.iter().filter(|(loc, _)| gpu(d, loc)).map(|(_, e)| e.1)).max().unwrap_or(0)
}
