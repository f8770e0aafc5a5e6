//! Checks that hold for every traced run, and counting helpers.

use std::collections::HashMap;

use raw::Event;

use super::{Stream, Trace};

/// A message as both ends must see it: communicator key, sender and
/// receiver as world ranks, tag, bytes.
pub type Envelope = ((u32, u64), u32, u32, i32, u64);

/// Every stream ended cleanly, has no damage, balanced Enter/Leave and
/// non-decreasing timestamps per location.
pub fn well_formed(trace: &Trace) {
    for s in &trace.streams {
        assert!(s.ended, "{}: no StreamEnd", s.path.display());
        assert_eq!(s.problems, 0, "{}: damaged", s.path.display());
        balanced(s);
    }
}

/// Balanced Enter/Leave and non-decreasing time, per location.
pub fn balanced(s: &Stream) {
    let mut stacks: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut last: HashMap<u32, u64> = HashMap::new();
    for (loc, t, e) in &s.events {
        let prev = last.insert(*loc, *t).unwrap_or(0);
        assert!(*t >= prev, "rank {} location {loc}: time goes back at {e:?}", s.rank);
        match e {
            Event::Enter { region } => stacks.entry(*loc).or_default().push(*region),
            Event::Leave { region } => {
                let top = stacks.entry(*loc).or_default().pop();
                assert_eq!(top, Some(*region), "rank {}: Leave of {} unmatched", s.rank, s.region(*region));
            }
            _ => {}
        }
    }
    for (loc, st) in stacks {
        assert!(st.is_empty(), "rank {} location {loc}: regions left open: {st:?}", s.rank);
    }
}

/// Every send matches exactly one receive, and every non-blocking
/// operation completes.
pub fn messages_match(trace: &Trace) {
    let mut sends: HashMap<Envelope, i64> = HashMap::new();
    for s in &trace.streams {
        let mut isends = HashMap::new();
        let mut irecvs = HashMap::new();
        for (_, _, e) in &s.events {
            match e {
                Event::MpiSend(m) | Event::MpiIsend { msg: m, .. } => {
                    let env = (s.comm_key(m.comm), s.rank, s.world(m.comm, m.peer), m.tag, m.bytes);
                    *sends.entry(env).or_default() += 1;
                }
                Event::MpiRecv(m) | Event::MpiIrecv { msg: m, .. } => {
                    let env = (s.comm_key(m.comm), s.world(m.comm, m.peer), s.rank, m.tag, m.bytes);
                    *sends.entry(env).or_default() -= 1;
                }
                _ => {}
            }
            match e {
                Event::MpiIsend { request, .. } => *isends.entry(*request).or_insert(0) += 1,
                Event::MpiIsendComplete { request } => *isends.entry(*request).or_insert(0) -= 1,
                Event::MpiIrecvRequest { request } => *irecvs.entry(*request).or_insert(0) += 1,
                Event::MpiIrecv { request, .. } => *irecvs.entry(*request).or_insert(0) -= 1,
                _ => {}
            }
        }
        let open: Vec<_> = isends.iter().chain(&irecvs).filter(|(_, n)| **n != 0).collect();
        assert!(open.is_empty(), "rank {}: requests not completed once: {open:?}", s.rank);
    }
    let unmatched: Vec<_> = sends.iter().filter(|(_, n)| **n != 0).collect();
    assert!(unmatched.is_empty(), "unmatched messages (+ send, - receive): {unmatched:?}");
}

/// Message counts of one stream.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub sends: i64,
    pub recvs: i64,
    pub isends: i64,
    pub irecvs: i64,
    pub bytes_sent: i64,
    pub bytes_recv: i64,
}

pub fn counts(s: &Stream) -> Counts {
    let mut c = Counts::default();
    for (_, _, e) in &s.events {
        match e {
            Event::MpiSend(m) => {
                c.sends += 1;
                c.bytes_sent += m.bytes as i64;
            }
            Event::MpiIsend { msg, .. } => {
                c.isends += 1;
                c.bytes_sent += msg.bytes as i64;
            }
            Event::MpiRecv(m) => {
                c.recvs += 1;
                c.bytes_recv += m.bytes as i64;
            }
            Event::MpiIrecv { msg, .. } => {
                c.irecvs += 1;
                c.bytes_recv += msg.bytes as i64;
            }
            _ => {}
        }
    }
    c
}
