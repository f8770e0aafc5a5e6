//! Message-based correction of the clock maps, for jobs on several hosts.
//!
//! The offsets measured at MPI_Init and MPI_Finalize are only as good as
//! half the best round trip of the measurement: a message between hosts
//! whose latency is below that error can come out received before it was
//! sent. When the processes span more than one clock domain, this pass
//! reads every MPI point-to-point send and receive (only the MPI streams'
//! event chunks: its cost is that of the messages), pairs them as MPI
//! delivers them — by sender, receiver, communicator and tag, in order —
//! and corrects the clocks so that every receive comes after its send:
//!
//! 1. **Per host, a constant** (expressible as ClockOffset points, so the
//!    archive keeps its local timestamps). Each message from domain `a` to
//!    domain `b` asks `δ_b − δ_a ≥ send − receive + MIN_LATENCY` (times on
//!    the measured clocks); rank 0's domain stays fixed (`δ = 0`). These
//!    difference constraints are solved by longest paths ([`solve`]): every
//!    domain starts at its measured offset, moved only as far as rank 0's
//!    domain forces it (the longest paths from and to it), then later by
//!    the least amount the other domains force. Domains whose messages are
//!    all in order are not moved.
//! 2. **When no constant can do it** (the constraints have a positive
//!    cycle: a host whose measured offset is wrong in one direction at
//!    MPI_Init and the other at MPI_Finalize, or a receive before its send
//!    on one host), the measured maps stay and the receives are moved
//!    instead, as Scalasca's controlled logical clock moves them: the
//!    messages are replayed in causal order; a receive earlier than its
//!    send (as corrected so far) plus the minimum latency is moved to that
//!    time, and the events of its location up to the new time are raised
//!    to it (so a later send of that location is moved too, and its own
//!    receive after it). The archive then holds the raised local
//!    timestamps ([`Floors`]).
//!
//! Every merge rank of a merge run as an MPI job computes the same
//! correction from the same streams. One clock domain: nothing is read.

use std::collections::{HashMap, VecDeque};

use raw::{Event, Producer, RawFile};

use crate::clock::ClockMap;
use crate::inputs::Process;

/// How long a message between hosts takes at least, ns: the corrected
/// receive is at least this long after its send. One nanosecond, the
/// timestamps' resolution: a larger minimum would have to hold on every
/// link of every machine, or it would turn consistent measurements into
/// contradictions. Between processes of one host the receive may share its
/// send's timestamp.
pub const MIN_LATENCY: u64 = 1;

/// The most sends and receives between hosts the correction reads by
/// default (about 128 bytes each with their pairing, so some 256 MiB):
/// beyond them it leaves the measured offsets as they are and says so,
/// rather than let the merge's memory grow with the job's messages.
pub const MAX_MESSAGES: u64 = 2 << 20;

/// What the correction found and did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Clock domains (hosts) of the job.
    pub domains: usize,
    /// Point-to-point messages paired between processes on different
    /// clocks (hosts).
    pub messages: u64,
    /// Receives before their send on the measured clocks.
    pub before: u64,
    /// Receives before their send after the correction (0 unless the
    /// streams' messages cannot be paired as sent).
    pub after: u64,
    /// How it corrected.
    pub method: Method,
    /// The largest shift of a domain's clock (Offsets) or of a receive
    /// (Timestamps), ns.
    pub max_shift: u64,
    /// Domains whose clock was shifted (Offsets) or receives moved
    /// (Timestamps).
    pub moved: u64,
}

impl Report {
    /// As the run summary says it.
    pub fn for_summary(&self) -> gputrace_summary::Clocks {
        gputrace_summary::Clocks {
            hosts: self.domains,
            messages: self.messages,
            before: self.before,
            after: self.after,
            moved_receives: self.method == Method::Timestamps,
            skipped: match self.method {
                Method::Skipped { limit } => Some(limit),
                _ => None,
            },
            moved: self.moved,
            max_shift: self.max_shift,
        }
    }
}

/// How the clocks were corrected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Method {
    /// Every receive followed its send: nothing changed.
    #[default]
    None,
    /// Each host's offsets shifted by a constant (ClockOffset points).
    Offsets,
    /// Receives moved, their locations' timestamps raised.
    Timestamps,
    /// More sends and receives between hosts than `limit`, the merge's
    /// ([`MAX_MESSAGES`] unless told otherwise): not corrected, the
    /// measured offsets stand.
    Skipped { limit: u64 },
}

/// The raised timestamps of the timestamp correction: per (process, stream,
/// stream-local location), `(t, floor)` pairs by `t`: an event at local
/// time `u ≥ t` is written at no earlier than `floor` (of the last pair
/// with `t ≤ u`).
#[derive(Debug, Default, Clone)]
pub struct Floors {
    map: HashMap<(usize, usize, u32), Vec<(u64, u64)>>,
}

impl Floors {
    /// The floors of the location that `feeds` (stream, local location)
    /// of process `process` make, merged by time.
    pub fn of(&self, process: usize, feeds: &[(usize, u32)]) -> Vec<(u64, u64)> {
        let mut all: Vec<(u64, u64)> =
            feeds.iter().filter_map(|&(s, l)| self.map.get(&(process, s, l))).flat_map(|v| v.iter().copied()).collect();
        all.sort_unstable();
        // Floors never go down along the location.
        let mut high = 0;
        for f in &mut all {
            high = high.max(f.1);
            f.1 = high;
        }
        all
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The latest floor (local time) of each process, for the trace bounds.
    pub fn latest(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.map.iter().filter_map(|(&(p, _, _), v)| v.last().map(|f| (p, f.1)))
    }
}

/// Applies a location's floors ([`Floors::of`]) to its events in order.
#[derive(Debug, Default)]
pub struct Raise {
    floors: Vec<(u64, u64)>,
    next: usize,
    floor: u64,
}

impl Raise {
    pub fn new(floors: Vec<(u64, u64)>) -> Raise {
        Raise { floors, next: 0, floor: 0 }
    }

    /// The time to write an event of local time `t` at (`t`s come in
    /// order).
    #[inline]
    pub fn at(&mut self, t: u64) -> u64 {
        while let Some(&(from, floor)) = self.floors.get(self.next) {
            if from > t {
                break;
            }
            self.floor = floor;
            self.next += 1;
        }
        t.max(self.floor)
    }
}

/// One MPI send or receive of a process.
#[derive(Debug, Clone, Copy)]
struct Msg {
    /// Local time.
    t: u64,
    /// Index of its location in the process's list.
    loc: u32,
    send: bool,
    /// (sender, receiver) world ranks, the communicator's key and the tag.
    key: Key,
}

type Key = (u32, u32, (u32, u64), i32);

/// A message: (process, index) of its send and of its receive.
type Pair = ((usize, usize), (usize, usize));

/// A process's messages, by location and time, and its locations.
#[derive(Debug, Default)]
struct Messages {
    msgs: Vec<Msg>,
    /// (stream, stream-local location) of each location.
    locs: Vec<(usize, u32)>,
}

/// Corrects `clocks` (one per process) by the processes' messages when
/// they span more than one clock domain, reading on up to `jobs` threads.
/// Returns the report and, when receives had to be moved, their floors.
/// Reads at most `limit` sends and receives between hosts (else
/// [`Method::Skipped`]).
pub fn correct(processes: &[Process], clocks: &mut [ClockMap], jobs: usize, limit: u64) -> Option<(Report, Floors)> {
    let mut domains: Vec<u64> = processes.iter().map(|p| p.clock_domain).collect();
    domains.sort_unstable();
    domains.dedup();
    if domains.len() < 2 {
        return None;
    }
    let started = std::time::Instant::now();
    let dom: Vec<usize> =
        processes.iter().map(|p| domains.binary_search(&p.clock_domain).expect("a domain of the list")).collect();
    let reference = processes.iter().position(|p| p.mpi.is_some_and(|(r, _)| r == 0)).unwrap_or(0);
    // Processes of one clock map (one host's, as its ranks all get the
    // measurement of the one that was measured) cannot disagree: only the
    // messages between maps are read.
    let class = map_classes(&dom, clocks);
    let mut class_of_rank = Vec::new();
    for (p, c) in processes.iter().zip(&class) {
        if let Some((r, _)) = p.mpi {
            let r = r as usize;
            if class_of_rank.len() <= r {
                class_of_rank.resize(r + 1, u32::MAX);
            }
            class_of_rank[r] = *c;
        }
    }
    let Some(mut all) = read_all(processes, jobs, Some((&class_of_rank, &class)), limit) else {
        let report = Report { domains: domains.len(), method: Method::Skipped { limit }, ..Report::default() };
        tracing::info!(domains = report.domains, limit, "message-based clock correction skipped");
        return Some((report, Floors::default()));
    };
    let mut pairs = pair(processes, &all);
    let mut report = Report { domains: domains.len(), messages: pairs.len() as u64, ..Report::default() };
    let global = |clocks: &[ClockMap], (p, i): (usize, usize)| clocks[p].global(all[p].msgs[i].t);
    // Each message asks δ_b − δ_a ≥ w; the largest w per pair of domains.
    let mut worst: HashMap<(usize, usize), i64> = HashMap::new();
    for &(s, r) in &pairs {
        let (gs, gr) = (global(clocks, s), global(clocks, r));
        report.before += u64::from(gr < gs);
        let (a, b) = (dom[s.0], dom[r.0]);
        let latency = if a == b { 0 } else { MIN_LATENCY as i64 };
        let w = (i128::from(gs) - i128::from(gr)) as i64 + latency;
        let e = worst.entry((a, b)).or_insert(w);
        *e = (*e).max(w);
    }
    let mut floors = Floors::default();
    let mut constraints: Vec<(usize, usize, i64)> = worst.into_iter().map(|((a, b), w)| (a, b, w)).collect();
    constraints.sort_unstable();
    // w > 0: a receive at or before its send (before it, on one host).
    if !constraints.iter().any(|c| c.2 > 0) {
        report.method = Method::None;
    } else if let Some(shift) = solve(domains.len(), dom[reference], &constraints) {
        report.method = Method::Offsets;
        for (p, clock) in clocks.iter_mut().enumerate() {
            let d = shift[dom[p]];
            if d != 0 {
                let (first, last) = processes[p].event_span();
                clock.shift(d, first, last);
            }
        }
        report.moved = shift.iter().filter(|&&d| d != 0).count() as u64;
        report.max_shift = shift.iter().map(|d| d.unsigned_abs()).max().unwrap_or(0);
    } else {
        // Moving a receive moves what follows it, and so every message
        // matters: all are read again.
        let Some(every) = read_all(processes, jobs, None, limit) else {
            report.method = Method::Skipped { limit };
            return Some((report, Floors::default()));
        };
        report.method = Method::Timestamps;
        all = every;
        pairs = pair(processes, &all);
        let moved = replay(&all, &pairs, clocks, &dom);
        report.moved = moved.moved;
        report.max_shift = moved.max_raise;
        floors = moved.floors;
    }
    // The receives before their send now, as the archive will have them.
    let raised = |p: usize, i: usize| -> u64 {
        let m = all[p].msgs[i];
        let (stream, local) = all[p].locs[m.loc as usize];
        let t = match floors.map.get(&(p, stream, local)) {
            // (By time, and rising.)
            Some(v) => match v.partition_point(|f| f.0 <= m.t) {
                0 => m.t,
                k => m.t.max(v[k - 1].1),
            },
            None => m.t,
        };
        clocks[p].global(t)
    };
    report.after = pairs.iter().filter(|&&(s, r)| raised(r.0, r.1) < raised(s.0, s.1)).count() as u64;
    tracing::info!(
        domains = report.domains,
        messages = report.messages,
        before = report.before,
        after = report.after,
        method = ?report.method,
        max_shift_ns = report.max_shift,
        moved = report.moved,
        took = ?started.elapsed(),
        "message-based clock correction"
    );
    Some((report, floors))
}

/// For each process, which of the distinct clock maps of its domain it
/// has (numbered across domains).
fn map_classes(dom: &[usize], clocks: &[ClockMap]) -> Vec<u32> {
    // Per domain, its maps so far: (class, process that has it).
    let mut seen: HashMap<usize, Vec<(u32, usize)>> = HashMap::new();
    let mut next = 0;
    (0..dom.len())
        .map(|p| {
            let maps = seen.entry(dom[p]).or_default();
            match maps.iter().find(|&&(_, q)| clocks[q] == clocks[p]) {
                Some(&(c, _)) => c,
                None => {
                    maps.push((next, p));
                    next += 1;
                    next - 1
                }
            }
        })
        .collect()
}

/// What [`read_process`] keeps: the clock map class of each world rank
/// and of each process (only messages between classes), or all.
type Filter<'a> = Option<(&'a [u32], &'a [u32])>;

/// Every process's MPI sends and receives, on up to `jobs` threads;
/// `None` beyond `limit` of them.
fn read_all(processes: &[Process], jobs: usize, filter: Filter<'_>, limit: u64) -> Option<Vec<Messages>> {
    let jobs = jobs.clamp(1, processes.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let read = std::sync::atomic::AtomicU64::new(0);
    let mut all: Vec<Messages> = std::iter::repeat_with(Messages::default).take(processes.len()).collect();
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= processes.len() {
                        break;
                    }
                    if read.load(std::sync::atomic::Ordering::Relaxed) > limit {
                        break;
                    }
                    let only = filter.map(|(ranks, class)| (ranks, class[i]));
                    mine.push((i, read_process(&processes[i], only, (&read, limit))));
                }
                done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(mine);
            });
        }
    });
    if read.into_inner() > limit {
        return None;
    }
    for (i, m) in done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        all[i] = m;
    }
    Some(all)
}

/// The MPI messages of one process, by time (then location); with
/// `only`, those with a peer whose clock map class (by world rank) is not
/// this process's.
/// Stops early once `read.0` (the count of every process's) passes
/// `read.1`.
fn read_process(p: &Process, only: Option<(&[u32], u32)>, read: (&std::sync::atomic::AtomicU64, u64)) -> Messages {
    let (read, limit) = read;
    let mut out = Messages::default();
    let Some((me, _)) = p.mpi else { return out };
    let mut payload = Vec::new();
    for (s, file) in p.streams.iter().enumerate() {
        if file.header.producer != Producer::Mpi {
            continue;
        }
        let comms = &p.defs[s].comms;
        for chunk in &file.chunks {
            if file.read_payload(chunk, &mut payload).is_err() {
                // The event pass reports it.
                continue;
            }
            if read.load(std::sync::atomic::Ordering::Relaxed) > limit {
                return out;
            }
            let local = chunk.header.location;
            let loc = match out.locs.iter().position(|&l| l == (s, local)) {
                Some(i) => i as u32,
                None => {
                    out.locs.push((s, local));
                    (out.locs.len() - 1) as u32
                }
            };
            for (t, ev) in RawFile::events(chunk, &payload) {
                let (m, send) = match ev {
                    Event::MpiSend(m) | Event::MpiIsend { msg: m, .. } => (m, true),
                    Event::MpiRecv(m) | Event::MpiIrecv { msg: m, .. } => (m, false),
                    _ => continue,
                };
                let Some(c) = comms.get(&m.comm) else { continue };
                if c.key.1 == u64::MAX {
                    // MPI_COMM_SELF: to itself.
                    continue;
                }
                let Some(peer) = member(&c.members, m.peer) else { continue };
                if let Some((ranks, mine)) = only
                    && ranks.get(peer as usize).is_none_or(|&c| c == mine)
                {
                    continue;
                }
                let key = if send { (me, peer, c.key, m.tag) } else { (peer, me, c.key, m.tag) };
                out.msgs.push(Msg { t, loc, send, key });
                read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    out.msgs.sort_by_key(|m| (m.t, m.loc));
    out
}

/// The world rank of rank `i` of a communicator of `runs`.
fn member(runs: &[(u32, u32)], mut i: u32) -> Option<u32> {
    for &(first, count) in runs {
        if i < count {
            return Some(first + i);
        }
        i -= count;
    }
    None
}

/// Sends paired with their receives, (process, index) each: per
/// (sender, receiver, communicator, tag), the n-th send with the n-th
/// receive.
fn pair(processes: &[Process], all: &[Messages]) -> Vec<Pair> {
    let mut by_rank: HashMap<u32, usize> = HashMap::new();
    for (i, p) in processes.iter().enumerate() {
        if let Some((r, _)) = p.mpi {
            by_rank.entry(r).or_insert(i);
        }
    }
    let mut sends: HashMap<Key, VecDeque<(usize, usize)>> = HashMap::new();
    let mut recvs: HashMap<Key, VecDeque<(usize, usize)>> = HashMap::new();
    for (p, m) in all.iter().enumerate() {
        for (i, msg) in m.msgs.iter().enumerate() {
            // A process that claims another's rank has no partner here.
            let owner = if msg.send { msg.key.0 } else { msg.key.1 };
            if by_rank.get(&owner) != Some(&p) {
                continue;
            }
            let queue = if msg.send { &mut sends } else { &mut recvs };
            queue.entry(msg.key).or_default().push_back((p, i));
        }
    }
    let mut pairs = Vec::new();
    let mut keys: Vec<&Key> = sends.keys().collect();
    keys.sort_unstable();
    for key in keys {
        if let Some(r) = recvs.get(key) {
            pairs.extend(sends[key].iter().copied().zip(r.iter().copied()));
        }
    }
    pairs
}

/// What the replay moved.
struct Moved {
    floors: Floors,
    moved: u64,
    max_raise: u64,
}

/// Replays the messages in causal order on the measured clocks, moving
/// each receive to at least its (moved) send plus the minimum latency and
/// raising what follows it on its location.
fn replay(all: &[Messages], pairs: &[Pair], clocks: &[ClockMap], dom: &[usize]) -> Moved {
    // The send of each receive.
    let mut partner: Vec<Vec<Option<(usize, usize)>>> = all.iter().map(|m| vec![None; m.msgs.len()]).collect();
    for &(s, r) in pairs {
        partner[r.0][r.1] = Some(s);
    }
    // Locations: (process, location index) and their messages in order.
    let mut locations: Vec<(usize, u32, Vec<usize>)> = Vec::new();
    for (p, m) in all.iter().enumerate() {
        for l in 0..m.locs.len() as u32 {
            let idx: Vec<usize> = (0..m.msgs.len()).filter(|&i| m.msgs[i].loc == l).collect();
            locations.push((p, l, idx));
        }
    }
    let mut at: Vec<Vec<Option<u64>>> = all.iter().map(|m| vec![None; m.msgs.len()]).collect();
    let mut cursor = vec![0usize; locations.len()];
    let mut floor = vec![0u64; locations.len()];
    let mut waiting: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    let mut ready: VecDeque<usize> = (0..locations.len()).collect();
    let mut result = Moved { floors: Floors::default(), moved: 0, max_raise: 0 };
    let mut forced: u64 = 0;
    loop {
        while let Some(l) = ready.pop_front() {
            let (p, loc, ref idx) = locations[l];
            while let Some(&i) = idx.get(cursor[l]) {
                let m = all[p].msgs[i];
                let mut t = m.t.max(floor[l]);
                if !m.send
                    && let Some(s) = partner[p][i]
                {
                    let Some(sent) = at[s.0][s.1] else {
                        waiting.entry(s).or_default().push(l);
                        break;
                    };
                    let latency = if dom[s.0] == dom[p] { 0 } else { MIN_LATENCY };
                    let target = sent + latency;
                    if clocks[p].global(t) < target {
                        let before = clocks[p].global(m.t);
                        t = local_at_least(&clocks[p], target, t);
                        let (stream, local) = all[p].locs[loc as usize];
                        result.floors.map.entry((p, stream, local)).or_default().push((m.t, t));
                        result.moved += 1;
                        result.max_raise = result.max_raise.max(clocks[p].global(t).saturating_sub(before));
                    }
                }
                floor[l] = t;
                at[p][i] = Some(clocks[p].global(t));
                cursor[l] += 1;
                if m.send
                    && let Some(w) = waiting.remove(&(p, i))
                {
                    ready.extend(w);
                }
            }
        }
        // Receives that wait for each other (messages the pairing got
        // wrong): the first goes unconstrained.
        let Some(l) = (0..locations.len()).find(|&l| cursor[l] < locations[l].2.len()) else { break };
        forced += 1;
        let (p, _, ref idx) = locations[l];
        let i = idx[cursor[l]];
        let t = all[p].msgs[i].t.max(floor[l]);
        floor[l] = t;
        at[p][i] = Some(clocks[p].global(t));
        cursor[l] += 1;
        ready.push_back(l);
    }
    if forced > 0 {
        tracing::debug!(forced, "receives replayed before their sends (unpairable)");
    }
    result
}

/// The earliest local time at or after `from` that `clock` maps to
/// `target` or later (the map never goes back: its slope is near 1).
fn local_at_least(clock: &ClockMap, target: u64, from: u64) -> u64 {
    if clock.global(from) >= target {
        return from;
    }
    // global(lo) < target <= global(hi)
    let (mut lo, mut hi) = (from, from);
    for _ in 0..64 {
        let g = clock.global(hi);
        if g >= target {
            break;
        }
        lo = hi;
        hi += (target - g).max(1);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clock.global(mid) >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

mod solve;
#[cfg(test)]
mod tests;

pub use solve::solve;
