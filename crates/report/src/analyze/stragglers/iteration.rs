//! Stragglers per iteration: each operation judged is kept (where the run
//! marks iterations), so that an iteration names the rank that caused the
//! most waiting at the collectives that began in it.

use std::collections::HashMap;

use super::Cause;
use crate::analyze::describe::Describe;
use crate::analyze::iterations::IterationStraggler;

/// One operation: its last rank's arrival (ticks), that rank's process,
/// its lateness over the next latest rank, the waiting it caused, and why.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub(crate) enter: u64,
    pub(crate) process: usize,
    pub(crate) lateness: u64,
    pub(crate) wait: u64,
    cause: Option<(Cause, u64)>,
}

impl Op {
    pub(super) fn new(enter: u64, process: usize, lateness: u64, wait: u64, cause: Option<(Cause, u64)>) -> Op {
        Op { enter, process, lateness, wait, cause }
    }
}

/// Over `ops` (one iteration's), the process that caused the most
/// waiting, with the cause that explained the most of its lateness.
pub(crate) fn worst_of(ops: &[Op], d: &dyn Describe) -> Option<IterationStraggler> {
    #[derive(Default)]
    struct Sum {
        last: u64,
        lateness: u64,
        wait: u64,
        causes: HashMap<Cause, u64>,
    }
    let mut per: HashMap<usize, Sum> = HashMap::new();
    for o in ops {
        let s = per.entry(o.process).or_default();
        s.last += 1;
        s.lateness += o.lateness;
        s.wait += o.wait;
        if let Some((c, e)) = o.cause {
            *s.causes.entry(c).or_default() += e;
        }
    }
    let (process, s) =
        per.into_iter().filter(|(_, s)| s.wait > 0).max_by_key(|(p, s)| (s.wait, std::cmp::Reverse(*p)))?;
    let top = s.causes.iter().max_by_key(|(c, ns)| (**ns, std::cmp::Reverse(c.order()))).map(|(c, _)| *c);
    let (kind, cause) = match top {
        Some(Cause::Region(r)) => (Some("region"), Some(d.region(r))),
        Some(Cause::Kernel(r)) => (Some("kernel"), Some(d.region(r))),
        Some(Cause::Clock) => (Some("gpu clock"), Some("a lower SM clock".to_string())),
        Some(Cause::Link) => (Some("link"), Some("a slower link".to_string())),
        None => (None, None),
    };
    Some(IterationStraggler {
        rank: d.rank(process),
        process: d.process(process),
        operations: ops.len() as u64,
        times_last: s.last,
        lateness_ns: d.ns(s.lateness),
        wait_caused_ns: d.ns(s.wait),
        cause_kind: kind,
        cause,
    })
}
