//! Replaying a capture into a raw stream, exactly as the live plugin
//! would have written it: how the recording logic is tested on a machine
//! without GPU or NCCL.
//!
//! The capture's callbacks go through the same [`Profiler`] in file
//! order; each captured thread gets a [`ThreadState`] whose events are
//! written, at the end, to a location of that thread (the live plugin
//! records on the calling thread's location). Handles, contexts and
//! parent objects are the captured process's addresses, mapped to the
//! replay's own; a line naming a handle or context the capture never
//! started is skipped, as NCCL would never send it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use raw::{LocationKind, StreamHeader};
use recorder::Recorder;
use recorder::RecorderOptions;

use crate::capture::{Capture, CaptureError, Record};
use crate::handle::{self, HandlePtr};
use crate::model::Descr;
use crate::profiler::{CommContext, Profiler, Stamp, ThreadState};

/// Writes the NCCL stream that `capture` makes, under `dir/raw/`, with the
/// identity in `header` (usually `capture.header`). Returns its path.
pub fn replay(capture: &Capture, dir: &Path, header: StreamHeader) -> Result<PathBuf, CaptureError> {
    let pid = header.pid;
    let rec = Recorder::create_with_header(dir, header, RecorderOptions::default())?;
    let path = rec.path().to_path_buf();
    let profiler = Profiler::new(rec.clone(), capture.levels);
    let mut contexts: HashMap<u64, &'static CommContext> = HashMap::new();
    let mut threads: HashMap<u32, ThreadState> = HashMap::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut order: Vec<u32> = Vec::new();
    // Live handles by captured address, and every captured address's
    // replay key (parents may name handles already stopped).
    let mut handles: HashMap<u64, HandlePtr> = HashMap::new();
    let mut keys: HashMap<u64, usize> = HashMap::new();
    let mut last = 0u64;
    for r in &capture.records {
        match r {
            Record::Thread { tid, name } => {
                names.insert(*tid, name.clone());
            }
            Record::Comment { .. } => {}
            Record::Init { t, ctx, args, .. } => {
                last = last.max(*t);
                contexts.insert(*ctx, profiler.init(args));
            }
            Record::Start { t, tid, ctx, handle: h, start } => {
                last = last.max(*t);
                let mut ctx = contexts.get(ctx).copied();
                if let Descr::ProxyOp(op) = start.descr
                    && u32::try_from(op.pid).ok() != Some(pid)
                {
                    ctx = None;
                }
                let mut s = *start;
                s.parent = match s.parent {
                    0 => 0,
                    p => keys.get(&(p as u64)).copied().unwrap_or(p | 1),
                };
                let th = thread_of(&mut threads, &mut order, *tid);
                if let Some(ours) = profiler.start(th, ctx, &s, &Stamp::at(*t))
                    && *h != 0
                {
                    handles.insert(*h, ours);
                    keys.insert(*h, handle::key(ours));
                }
            }
            Record::State { t, tid, handle: h, state } => {
                last = last.max(*t);
                if let Some(&ours) = handles.get(h) {
                    let th = thread_of(&mut threads, &mut order, *tid);
                    // SAFETY: `ours` was started and is not stopped: stops
                    // remove it from `handles`.
                    unsafe { profiler.state(th, ours, state, &Stamp::at(*t)) };
                }
            }
            Record::Stop { t, tid, handle: h } => {
                last = last.max(*t);
                if let Some(ours) = handles.remove(h) {
                    let th = thread_of(&mut threads, &mut order, *tid);
                    // SAFETY: `ours` was started and is stopped once: it
                    // has just left `handles`.
                    unsafe { profiler.stop(th, ours, &Stamp::at(*t)) };
                }
            }
            Record::NvtxPush { t, tid, range } => {
                last = last.max(*t);
                let th = thread_of(&mut threads, &mut order, *tid);
                profiler.nvtx_push(th, range, &Stamp::at(*t));
            }
            Record::NvtxPop { t, tid, payload } => {
                last = last.max(*t);
                let th = thread_of(&mut threads, &mut order, *tid);
                profiler.nvtx_pop(th, *payload, &Stamp::at(*t));
            }
            Record::Finalize { t, ctx, .. } => {
                last = last.max(*t);
                if let Some(c) = contexts.get(ctx) {
                    profiler.finalize(c);
                }
            }
        }
    }
    for tid in order {
        let Some(th) = threads.get_mut(&tid) else { continue };
        let events = th.take_events();
        if events.is_empty() {
            continue;
        }
        let name = names.get(&tid).cloned().unwrap_or_else(|| format!("thread {tid}"));
        let location = rec.define_location(LocationKind::HostThread { tid, is_main: tid == pid }, &name);
        rec.write_batch(location, &events);
    }
    profiler.finish(last);
    Ok(path)
}

fn thread_of<'a>(threads: &'a mut HashMap<u32, ThreadState>, order: &mut Vec<u32>, tid: u32) -> &'a mut ThreadState {
    threads.entry(tid).or_insert_with(|| {
        order.push(tid);
        ThreadState::buffered(tid)
    })
}
