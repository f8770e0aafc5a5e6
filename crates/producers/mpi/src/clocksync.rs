//! Measuring how the clocks of the processes relate, at `MPI_Init` and
//! `MPI_Finalize`, so that the merge can put every event on rank 0's
//! clock (linearly between the two measurements).
//!
//! Processes that share a kernel share CLOCK_MONOTONIC, so only one
//! process per clock domain — per boot id — needs measuring: every rank
//! sends rank 0 a hash of `/proc/sys/kernel/random/boot_id`, rank 0
//! ping-pongs with the lowest rank of each domain other than its own,
//! keeps the round with the shortest round trip, and scatters the result
//! (offset = mid-point of rank 0's send and receive times − the worker's
//! time, error = half the round trip) to every rank of that domain. Ranks
//! of rank 0's domain get offset 0, error 0.
//!
//! The round trips are serial, so their number is the cost: a domain gets
//! at least [`MIN_PING_PONGS`] and at most [`PING_PONGS`]; it stops early
//! once its best round trip is within a quarter (and 500 ns) of the
//! shortest round trip rank 0 has seen with any domain so far — as good
//! as the network gives, so more rounds would not make it more accurate.
//! The first domain measured always gets all [`PING_PONGS`]. The cost is
//! a gather and a scatter of a few bytes per rank and 3 to 10 round trips
//! (and one stop message) per host other than rank 0's. All of it runs
//! over our own duplicate of `MPI_COMM_WORLD`, never on a communicator of
//! the program.

use std::ffi::{c_int, c_void};

use raw::Definition;
use recorder::Recorder;

use crate::abi::MpiAbi;
use crate::pmpi;

/// Round trips per measured domain, at most.
pub const PING_PONGS: usize = 10;

/// Round trips per measured domain, at least.
pub const MIN_PING_PONGS: usize = 3;

/// Whether a domain's best round trip `best` is as short as the network
/// gives: within a quarter (and 500 ns) of the shortest seen, `floor`.
fn good_enough(best: u64, floor: u64) -> bool {
    floor != u64::MAX && best <= floor + floor / 4 + 500
}

/// What rank 0's pings say: answer, or the measurement is over.
const PING: u64 = 0;
const STOP: u64 = 1;

/// Test hook (`config::hooks::CLOCK_DOMAIN`): gives every rank `rank % N`
/// (`rank%N`) or its own rank (`rank`) as clock domain, so that the
/// measurement runs on one host. Named outside `GPUTRACE_*` because it is
/// not a user setting.
pub const TEST_DOMAIN_VARIABLE: &str = config::hooks::CLOCK_DOMAIN.name;

const TAG_PING: c_int = 1;
const TAG_PONG: c_int = 2;

/// This process's clock domain.
fn domain(rank: u64) -> u64 {
    if let Ok(v) = std::env::var(TEST_DOMAIN_VARIABLE) {
        let v = v.trim();
        if v == "rank" {
            return rank;
        }
        if let Some(n) = v.strip_prefix("rank%").and_then(|n| n.parse::<u64>().ok()) {
            return rank % n.max(1);
        }
    }
    // The same hash of the boot id that the stream header records.
    recorder::identity::clock_domain()
}

/// One rank's result: offset, error and the local time it refers to (0:
/// "now", for ranks whose clock is rank 0's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
struct Measured {
    offset: i64,
    error: u64,
    local: u64,
}

/// The best of a series of round trips: (rank 0's send time, its receive
/// time, the worker's time) → (offset, error, worker's time).
fn best_round(rounds: &[(u64, u64, u64)]) -> Option<Measured> {
    rounds.iter().min_by_key(|(sent, got, _)| got.saturating_sub(*sent)).map(|&(sent, got, worker)| {
        let mid = (i128::from(sent) + i128::from(got)) / 2;
        Measured { offset: (mid - i128::from(worker)) as i64, error: got.saturating_sub(sent) / 2, local: worker }
    })
}

fn ok<A: MpiAbi>(rc: c_int) -> Option<()> {
    (rc == A::SUCCESS).then_some(())
}

/// Measures and records this process's clock offset; collective over
/// `comm` (a duplicate of the world).
pub fn synchronize<A: MpiAbi>(rec: Option<&Recorder>, comm: A::Comm) -> Option<()> {
    let began = gputrace_clock::now();
    let rank = pmpi::rank_in::<A>(comm)?;
    let n = pmpi::size_of::<A>(comm)? as usize;
    let mine = domain(rank as u64);
    let mut domains = vec![0u64; n];
    // SAFETY: 8 bytes sent from `mine`, 8 received per rank into
    // `domains`; every rank makes this call.
    ok::<A>(unsafe {
        pmpi::allgather::<A>(
            (&mine as *const u64).cast::<c_void>(),
            8,
            A::byte(),
            domains.as_mut_ptr().cast::<c_void>(),
            8,
            A::byte(),
            comm,
        )
    })?;
    let reference = domains[0];
    // The lowest rank of each domain other than rank 0's.
    let leaders: Vec<usize> =
        (1..n).filter(|&r| domains[r] != reference && !domains[..r].contains(&domains[r])).collect();
    let mut results = vec![Measured::default(); if rank == 0 { n } else { 0 }];
    let mut round_trips = 0;
    if rank == 0 {
        // The shortest round trip with any domain so far.
        let mut floor = u64::MAX;
        for &leader in &leaders {
            let m = measure::<A>(comm, leader as c_int, &mut floor, &mut round_trips)?;
            for r in 0..n {
                if domains[r] == domains[leader] {
                    results[r] = m;
                }
            }
        }
    } else if leaders.contains(&(rank as usize)) {
        answer::<A>(comm)?;
    }
    let mut got = Measured::default();
    let size = std::mem::size_of::<Measured>() as c_int;
    // SAFETY: rank 0 sends `size` bytes per rank from `results` (n
    // entries there); everyone receives `size` bytes into `got`.
    ok::<A>(unsafe {
        pmpi::scatter::<A>(
            results.as_ptr().cast::<c_void>(),
            size,
            A::byte(),
            (&mut got as *mut Measured).cast::<c_void>(),
            size,
            A::byte(),
            0,
            comm,
        )
    })?;
    let local = if got.local == 0 { gputrace_clock::now() } else { got.local };
    if let Some(rec) = rec {
        rec.define(&Definition::ClockSync { local, offset: got.offset, error: got.error });
    }
    if rank == 0 {
        let worst = results.iter().map(|m| m.error).max().unwrap_or(0);
        tracing::debug!(
            ranks = n,
            domains = leaders.len() + 1,
            round_trips,
            worst_error_ns = worst,
            took_us = gputrace_clock::now().saturating_sub(began) / 1000,
            "clock synchronization"
        );
    }
    Some(())
}

/// Rank 0's side: ping-pongs with `peer` (see the module's text for how
/// many times), then tells it to stop. `floor` is the shortest round trip
/// seen with any domain; `count` counts the round trips.
fn measure<A: MpiAbi>(comm: A::Comm, peer: c_int, floor: &mut u64, count: &mut usize) -> Option<Measured> {
    let floor_before = *floor;
    let mut rounds = Vec::with_capacity(PING_PONGS);
    let mut best = u64::MAX;
    while rounds.len() < PING_PONGS && !(rounds.len() >= MIN_PING_PONGS && good_enough(best, floor_before)) {
        let mut worker = 0u64;
        let sent = gputrace_clock::now();
        // SAFETY: 8-byte buffers; the peer runs `answer`.
        unsafe {
            ok::<A>(pmpi::send::<A>((&PING as *const u64).cast(), 8, A::byte(), peer, TAG_PING, comm))?;
            ok::<A>(pmpi::recv::<A>(
                (&mut worker as *mut u64).cast(),
                8,
                A::byte(),
                peer,
                TAG_PONG,
                comm,
                A::status_ignore(),
            ))?;
        }
        let got = gputrace_clock::now();
        best = best.min(got.saturating_sub(sent));
        rounds.push((sent, got, worker));
    }
    *count += rounds.len();
    *floor = (*floor).min(best);
    // SAFETY: an 8-byte buffer; the peer's `answer` receives it.
    ok::<A>(unsafe { pmpi::send::<A>((&STOP as *const u64).cast(), 8, A::byte(), peer, TAG_PING, comm) })?;
    best_round(&rounds)
}

/// A measured rank's side: answers each ping with its time, until rank 0
/// says stop.
fn answer<A: MpiAbi>(comm: A::Comm) -> Option<()> {
    // Rank 0 sends at most PING_PONGS pings and a stop.
    for _ in 0..=PING_PONGS {
        let mut ping = 0u64;
        // SAFETY: 8-byte buffers; rank 0 runs `measure`.
        unsafe {
            ok::<A>(pmpi::recv::<A>(
                (&mut ping as *mut u64).cast(),
                8,
                A::byte(),
                0,
                TAG_PING,
                comm,
                A::status_ignore(),
            ))?;
            if ping == STOP {
                return Some(());
            }
            let now = gputrace_clock::now();
            ok::<A>(pmpi::send::<A>((&now as *const u64).cast(), 8, A::byte(), 0, TAG_PONG, comm))?;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins() {
        // Worker clock 1000 ns ahead; the second round is the tightest.
        let rounds = [(100, 180, 1150), (200, 210, 1205), (300, 400, 1330)];
        let m = best_round(&rounds).unwrap();
        assert_eq!(m, Measured { offset: -1000, error: 5, local: 1205 });
    }

    #[test]
    fn a_round_trip_near_the_shortest_seen_is_good_enough() {
        assert!(!good_enough(1_000, u64::MAX), "the first domain gets every round");
        assert!(good_enough(1_700, 1_000));
        assert!(!good_enough(1_800, 1_000));
        assert!(good_enough(100_000, 90_000));
        assert!(!good_enough(200_000, 90_000));
    }

    #[test]
    fn the_domain_is_the_hosts() {
        assert_eq!(domain(3), recorder::identity::clock_domain());
    }
}
