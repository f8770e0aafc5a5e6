//! The event pass: every location's timeline, translated into the
//! archive's ids, written through its event writer and counted for the
//! summary.
//!
//! Region stacks are checked as events go by: a Leave that does not match
//! the innermost open region closes the regions opened inside it first; a
//! Leave of a region that is not open is dropped; regions still open when
//! a location's events end (a process killed mid-call) are closed at its
//! last timestamp. Each repair is counted in the summary.

use anyhow::{Context, Result};
use otf2_writer::{
    Collective as OtfCollective, CollectiveOp as OtfOp, CommRef, EventWriter, RegionRef,
};
use tracer::raw::{Collective, Event};

use super::inputs::Process;
use super::layout::{LocationPlan, ProcessPlan};
use super::progress::Progress;
use super::summary::Summary;
use super::timeline::{Source, Timeline};

/// Writes (or, without a writer, only counts) the events of one location.
pub fn location_events(
    process: &Process,
    plan: &ProcessPlan,
    loc: &LocationPlan,
    mut writer: Option<EventWriter<'_>>,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<()> {
    let mut sources = Vec::new();
    for &(stream, local) in &loc.feeds {
        let file = &process.streams[stream];
        for chunk in file.chunks.iter().filter(|c| c.header.location == local) {
            sources.push(Source {
                file,
                stream,
                chunk: *chunk,
            });
        }
    }
    let mut timeline = Timeline::new(sources);
    let mut stack: Vec<(RegionRef, usize, u64)> = Vec::new();
    let mut last = 0u64;
    let mut count = 0u64;
    let w = &mut writer;
    for (t, stream, ev) in &mut timeline {
        last = t;
        count += 1;
        if count.is_multiple_of(65536) {
            progress.add(65536);
        }
        let region = |id: u32| plan.regions[stream].get(id as usize).copied().flatten();
        let comm = |id: u32| {
            plan.comms
                .get(stream)
                .and_then(|c| c.get(id as usize))
                .copied()
                .flatten()
        };
        match ev {
            Event::Enter { region: id } => {
                let Some((r, idx)) = region(id) else { continue };
                if let Some(w) = w {
                    w.enter(t, r)?;
                }
                stack.push((r, idx, t));
            }
            Event::Leave { region: id } => {
                let Some((r, _)) = region(id) else { continue };
                let Some(depth) = stack.iter().rposition(|(open, _, _)| *open == r) else {
                    summary.unmatched_leaves += 1;
                    continue;
                };
                while stack.len() > depth {
                    let (open, idx, since) = stack.pop().expect("depth < len");
                    if open != r {
                        summary.closed_open_regions += 1;
                    }
                    if let Some(w) = w {
                        w.leave(t, open)?;
                    }
                    summary.region_done(idx, t - since);
                }
            }
            Event::MpiSend(m) | Event::MpiIsend { msg: m, .. } => {
                summary.p2p_messages += 1;
                summary.p2p_bytes += m.bytes;
                let Some(c) = comm(m.comm) else { continue };
                if let Some(w) = w {
                    match ev {
                        Event::MpiIsend { request, .. } => {
                            w.mpi_isend(t, m.peer, c, m.tag as u32, m.bytes, request)?
                        }
                        _ => w.mpi_send(t, m.peer, c, m.tag as u32, m.bytes)?,
                    }
                }
            }
            Event::MpiRecv(m) | Event::MpiIrecv { msg: m, .. } => {
                let Some(c) = comm(m.comm) else { continue };
                if let Some(w) = w {
                    match ev {
                        Event::MpiIrecv { request, .. } => {
                            w.mpi_irecv(t, m.peer, c, m.tag as u32, m.bytes, request)?
                        }
                        _ => w.mpi_recv(t, m.peer, c, m.tag as u32, m.bytes)?,
                    }
                }
            }
            Event::MpiIsendComplete { request } => {
                if let Some(w) = w {
                    w.mpi_isend_complete(t, request)?;
                }
            }
            Event::MpiIrecvRequest { request } => {
                if let Some(w) = w {
                    w.mpi_irecv_request(t, request)?;
                }
            }
            Event::MpiRequestTest { request } => {
                if let Some(w) = w {
                    w.mpi_request_test(t, request)?;
                }
            }
            Event::MpiRequestCancelled { request } => {
                if let Some(w) = w {
                    w.mpi_request_cancelled(t, request)?;
                }
            }
            Event::MpiCollectiveBegin => {
                if let Some(w) = w {
                    w.mpi_collective_begin(t)?;
                }
            }
            Event::MpiCollectiveEnd(k) => {
                summary.collectives += 1;
                summary.collective_bytes += k.sent;
                if let (Some(w), Some(c)) = (w.as_mut(), comm(k.comm)) {
                    w.mpi_collective_end(t, &collective(&k, c))?;
                }
            }
            Event::NonBlockingCollectiveRequest { request } => {
                if let Some(w) = w {
                    w.non_blocking_collective_request(t, request)?;
                }
            }
            Event::EnterCorrelated { .. }
            | Event::KernelBegin { .. }
            | Event::CopyBegin(_)
            | Event::CopyEnd { .. }
            | Event::MemsetBegin { .. }
            | Event::Metric { .. } => {}
            Event::NonBlockingCollectiveComplete { coll, request } => {
                summary.collectives += 1;
                summary.collective_bytes += coll.sent;
                if let (Some(w), Some(c)) = (w.as_mut(), comm(coll.comm)) {
                    w.non_blocking_collective_complete(t, &collective(&coll, c), request)?;
                }
            }
        }
    }
    progress.add(count % 65536);
    while let Some((open, idx, since)) = stack.pop() {
        summary.closed_open_regions += 1;
        if let Some(w) = w {
            w.leave(last, open)?;
        }
        summary.region_done(idx, last - since);
    }
    summary.events += count;
    summary.clamped += timeline.clamped;
    for p in &timeline.problems {
        eprintln!("[gputrace] warning: {}: {p}", process.host);
    }
    if let Some(w) = writer {
        w.close().context("closing an event writer")?;
    }
    Ok(())
}

fn collective(k: &Collective, comm: CommRef) -> OtfCollective {
    OtfCollective {
        op: OtfOp::from_raw(k.op as u8),
        comm,
        root: k.root,
        bytes_sent: k.sent,
        bytes_received: k.received,
    }
}
