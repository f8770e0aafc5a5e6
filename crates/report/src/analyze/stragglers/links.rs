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
    fn order(self) -> (u8, u32) {
        match self {
            Link::From(p) => (0, p as u32),
            Link::Copy(r) => (1, r.id()),
        }
    }

    fn name(self, d: &dyn Describe) -> String {
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
/// of `lateness`: that excess.
pub(super) fn excess(late: &Transfers, other: &Transfers, lateness: u64) -> Option<u64> {
    let e = late.total().0.saturating_sub(other.total().0);
    (e > 0 && e.saturating_mul(2) >= lateness).then_some(e)
}

/// The transfers behind the link causes of one row, summed: the last
/// rank's per link, and the next latest rank's.
#[derive(Default)]
pub(super) struct LinkSums {
    mine: Transfers,
    theirs: (u64, u64),
}

impl LinkSums {
    pub(super) fn add(&mut self, late: &Transfers, other: &Transfers) {
        for &(link, ticks, bytes) in &late.0 {
            self.mine.add(link, ticks, bytes);
        }
        let o = other.total();
        self.theirs = (self.theirs.0 + o.0, self.theirs.1 + o.1);
    }

    /// `messages from rank 1: 8.0 MiB in 41.20 ms (194.2 MiB/s), the next
    /// rank's 8.0 MiB in 1.90 ms (4.1 GiB/s)`: the link it spent the most
    /// time on (`and 1 more` where there were others), then all its
    /// transfers and the next rank's.
    pub(super) fn describe(&self, d: &dyn Describe) -> String {
        let rate = |(ticks, bytes): (u64, u64)| {
            let ns = d.ns(ticks);
            let per_s = if ns > 0 { (bytes as f64 * 1e9 / ns as f64) as u64 } else { 0 };
            format!("{} in {} ({}/s)", human_bytes(bytes), human_ns(ns), human_bytes(per_s))
        };
        let name = self.mine.busiest().map_or_else(|| "transfers".to_string(), |l| l.name(d));
        let more = match self.mine.0.len() {
            0 | 1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        format!("{name}{more}: {}, the next rank's {}", rate(self.mine.total()), rate(self.theirs))
    }
}
