//! A slower link as a straggler's cause: the data a rank moved since its
//! previous collective, per link, and how long it took — for MPI, each
//! message it received from another process, from the moment both sides
//! were in their calls (the sender's entry, or the receive's, whichever
//! was later: waiting for a late sender is not the link's) until the
//! receive completed; on the GPU, each copy (peer, host to device, device
//! to host). Where the last rank's transfers took at least half its
//! lateness longer than the next latest rank's, the link is the cause,
//! named by the link it spent the most time on, with the bandwidths.

use otf2::RegionRef;

use crate::analyze::describe::Describe;
use crate::numbers::{human_bytes, human_ns};

/// What data went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Link {
    /// MPI messages received from this process.
    From(usize),
    /// GPU copies of this region (`[CUDA memcpy PtoP]`, `HtoD`...).
    Copy(RegionRef),
}

impl Link {
    pub(super) fn order(self) -> (u8, u32) {
        match self {
            Link::From(p) => (0, p as u32),
            Link::Copy(r) => (1, r.id()),
        }
    }

    pub(super) fn name(self, d: &dyn Describe) -> String {
        match self {
            Link::From(p) => format!("messages from {}", d.process(p)),
            Link::Copy(r) => format!("copies {}", d.region(r)),
        }
    }
}

/// Per link, the ticks and bytes of its transfers since the last take.
#[derive(Clone, Debug, Default)]
pub(crate) struct Transfers(Vec<(Link, u64, u64)>);

impl Transfers {
    pub(crate) fn add(&mut self, link: Link, ticks: u64, bytes: u64) {
        match self.0.iter_mut().find(|(l, _, _)| *l == link) {
            Some((_, t, b)) => {
                *t += ticks;
                *b += bytes;
            }
            None => self.0.push((link, ticks, bytes)),
        }
    }

    pub(crate) fn take(&mut self) -> Transfers {
        std::mem::take(self)
    }

    /// (ticks, bytes) over every link.
    fn total(&self) -> (u64, u64) {
        self.0.iter().fold((0, 0), |(t, b), l| (t + l.1, b + l.2))
    }

    /// The link with the most time.
    fn busiest(&self) -> Option<Link> {
        self.0.iter().max_by_key(|(l, t, _)| (*t, std::cmp::Reverse(l.order()))).map(|(l, _, _)| *l)
    }
}

/// Whether `late`'s transfers took longer than `other`'s by at least half
/// of `lateness`: the busiest link and that excess.
pub(super) fn excess(late: &Transfers, other: &Transfers, lateness: u64) -> Option<(Link, u64)> {
    let e = late.total().0.saturating_sub(other.total().0);
    (e > 0 && e.saturating_mul(2) >= lateness).then(|| late.busiest().map(|l| (l, e))).flatten()
}

/// The transfers behind the link causes of one row, summed: the last
/// rank's and the next latest rank's.
#[derive(Default)]
pub(super) struct LinkSums {
    mine: (u64, u64),
    theirs: (u64, u64),
}

impl LinkSums {
    pub(super) fn add(&mut self, late: &Transfers, other: &Transfers) {
        let (m, o) = (late.total(), other.total());
        self.mine = (self.mine.0 + m.0, self.mine.1 + m.1);
        self.theirs = (self.theirs.0 + o.0, self.theirs.1 + o.1);
    }

    /// `messages from rank 1: 8.0 MiB in 41.20 ms (194.2 MiB/s), the next
    /// rank's 8.0 MiB in 1.90 ms (4.1 GiB/s)`: the link it spent the most
    /// time on, then every link's transfers summed.
    pub(super) fn describe(&self, link: Link, d: &dyn Describe) -> String {
        let rate = |(ticks, bytes): (u64, u64)| {
            let ns = d.ns(ticks);
            let per_s = if ns > 0 { (bytes as f64 * 1e9 / ns as f64) as u64 } else { 0 };
            format!("{} in {} ({}/s)", human_bytes(bytes), human_ns(ns), human_bytes(per_s))
        };
        format!("{}: {}, the next rank's {}", link.name(d), rate(self.mine), rate(self.theirs))
    }
}
