//! The pipelined pass of a large location: a second thread reads and
//! decodes its raw events in batches while the pass's thread translates
//! and writes them, when the merge has a thread to spare (fewer locations
//! than threads: a one-rank job's single location, say). The events and
//! their order are the plain loop's.

use raw::Event;

use super::Step;
use crate::Result;
use crate::timeline::Timeline;

/// Locations with at least this many events are read on a thread of
/// their own while they are written, when the merge has a thread to spare
/// ([`pipelined`]).
pub(crate) const EVENTS: u64 = 1 << 18;

/// Events read from the timeline per batch handed to the writing thread.
const BATCH: usize = 4096;

/// Hands every event of `timeline` to `write` in batches, in order, and
/// returns the timeline's clamped count and problems: a second thread
/// reads and decodes the raw events while this one translates and writes
/// them (a location of millions of events, the whole trace of a one-rank
/// job, then takes about the longer of the two instead of their sum). The
/// first error of `write` stops both.
pub(super) fn pipelined(
    mut timeline: Timeline<'_>,
    mut write: impl FnMut(&mut Vec<(u64, usize, Event)>) -> Step,
) -> Result<(u64, Vec<raw::Problem>)> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<(u64, usize, Event)>>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<(u64, usize, Event)>>();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            loop {
                let mut batch = empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
                batch.extend((&mut timeline).take(BATCH));
                if batch.is_empty() || full_tx.send(batch).is_err() {
                    break;
                }
            }
            (timeline.clamped, timeline.problems)
        });
        let mut result = Ok(());
        for mut batch in full_rx.iter() {
            result = write(&mut batch);
            if result.is_err() {
                break;
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        // The reader stops at its next batch once the receiving end is gone.
        drop(full_rx);
        let read = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        result.map(|()| read).map_err(Into::into)
    })
}
