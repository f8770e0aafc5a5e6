//! Counting what a producer's source lost before it became events (CUPTI
//! records dropped, NCCL calls of a group whose thread exited), so that
//! nothing is lost silently: each loss site adds to a counter, and the
//! recorder writes the totals into its stream as
//! [`Definition::SourceLost`] records with its next definitions (at the
//! latest within its flusher's period, 100 ms) and when it closes.
//!
//! Two kinds of counter: [`note`], process-wide, for sites that have no
//! recorder at hand (inside a CUPTI callback, before the stream exists);
//! its counts go to the stream of the kind's producer that
//! [`start`](crate::start) opened in this process. And
//! [`Recorder::note_lost`](crate::Recorder::note_lost), for sites that
//! hold their recorder (and for replays and tests, which make several
//! streams in one process).
//!
//! The records are cumulative (each the stream's total so far, one per
//! kind), so a stream cut short keeps the count it last wrote.

use std::sync::atomic::{AtomicU64, Ordering};

use raw::{Definition, Producer, SourceLoss};

/// How many kinds the counters hold ([`SourceLoss::KNOWN`]).
pub(crate) const KINDS: usize = SourceLoss::KNOWN.len();

/// Counters, one per known kind.
pub(crate) type Counts = [AtomicU64; KINDS];

static PROCESS: Counts = [const { AtomicU64::new(0) }; KINDS];

/// Adds `count` losses of kind `what` in this process, for the stream of
/// its producer. Lock-free: one atomic add (a kind this build does not
/// know is ignored).
pub fn note(what: SourceLoss, count: u64) {
    if let Some(i) = what.index()
        && count > 0
    {
        PROCESS[i].fetch_add(count, Ordering::Relaxed);
    }
}

/// Adds `count` of kind `what` to `counts`.
pub(crate) fn add(counts: &Counts, what: SourceLoss, count: u64) {
    if let Some(i) = what.index() {
        counts[i].fetch_add(count, Ordering::Relaxed);
    }
}

/// The producer whose stream reports a kind.
fn producer_of(what: SourceLoss) -> Option<Producer> {
    match what {
        SourceLoss::CuptiDropped
        | SourceLoss::CuptiUndecodable
        | SourceLoss::CudaEarlyOverflow
        | SourceLoss::CudaSyncWithoutCall => Some(Producer::Cuda),
        SourceLoss::NcclThreadExit | SourceLoss::NcclThreadGone => Some(Producer::Nccl),
        SourceLoss::SamplesLost => Some(Producer::Sampling),
        SourceLoss::Other(_) => None,
    }
}

/// A stream's totals: its own counters, and the process-wide ones of its
/// producer's kinds when it is the process's stream of that producer.
pub(crate) fn totals(own: &Counts, producer: Option<Producer>) -> [u64; KINDS] {
    std::array::from_fn(|i| {
        let kind = SourceLoss::KNOWN[i];
        let process =
            if producer.is_some() && producer_of(kind) == producer { PROCESS[i].load(Ordering::Relaxed) } else { 0 };
        own[i].load(Ordering::Relaxed) + process
    })
}

/// Whether `totals` differ from what was `written`.
pub(crate) fn changed(totals: &[u64; KINDS], written: &Counts) -> bool {
    totals.iter().zip(written).any(|(t, w)| *t != w.load(Ordering::Relaxed))
}

/// Encodes a record for each kind whose total changed since `written`,
/// and takes the totals as written.
pub(crate) fn encode_changed(totals: &[u64; KINDS], written: &Counts, out: &mut Vec<u8>) {
    for (i, (t, w)) in totals.iter().zip(written).enumerate() {
        if *t != w.load(Ordering::Relaxed) {
            Definition::SourceLost { what: SourceLoss::KNOWN[i], count: *t }.encode(out);
            w.store(*t, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_counts_go_to_their_producers_stream_only() {
        let own: Counts = Default::default();
        add(&own, SourceLoss::NcclThreadExit, 2);
        // A kind the test owns alone (no other test notes it process-wide).
        note(SourceLoss::CuptiUndecodable, 5);
        let cuda = totals(&own, Some(Producer::Cuda));
        assert!(cuda[SourceLoss::CuptiUndecodable.index().unwrap()] >= 5);
        assert_eq!(cuda[SourceLoss::NcclThreadExit.index().unwrap()], 2);
        let replay = totals(&own, None);
        assert_eq!(replay[SourceLoss::CuptiUndecodable.index().unwrap()], 0);
        let written: Counts = Default::default();
        assert!(changed(&replay, &written));
        let mut out = Vec::new();
        encode_changed(&replay, &written, &mut out);
        assert!(!changed(&replay, &written));
        let mut expected = Vec::new();
        Definition::SourceLost { what: SourceLoss::NcclThreadExit, count: 2 }.encode(&mut expected);
        assert_eq!(out, expected);
    }
}
