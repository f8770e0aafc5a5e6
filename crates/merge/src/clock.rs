//! Putting every process on one clock.
//!
//! The reference is the CLOCK_MONOTONIC of MPI rank 0's host. A process
//! whose MPI hooks measured its offset (at MPI_Init and MPI_Finalize) is
//! corrected linearly between the measurements, and beyond them along the
//! nearest segment, exactly as OTF2's readers apply ClockOffset records. A
//! single measurement (a process that died before MPI_Finalize) is
//! repeated at the process's last event, because OTF2 ignores a lone
//! offset. A process without
//! measurements on rank 0's clock domain needs no correction; one on
//! another host is aligned through the CLOCK_REALTIME/CLOCK_MONOTONIC pair
//! its stream header recorded (NTP accuracy, better than nothing).
//!
//! Where the processes span several hosts, [`crate::correct`] then
//! refines these maps by the MPI messages, so that every receive follows
//! its send.
//!
//! The archive keeps each location's own timestamps and carries the
//! corrections as OTF2 ClockOffset definitions, which every OTF2 reader
//! applies; [`ClockMap::global`] computes the same function so that the
//! merge knows the corrected times (trace bounds, summary).

use crate::inputs::{ClockPoint, Process};

/// One process's local → reference time function.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockMap {
    /// (local time, offset, standard deviation) points, by local time,
    /// never exactly one; empty means no offset.
    pub points: Vec<(u64, i64, f64)>,
}

impl ClockMap {
    pub fn identity() -> ClockMap {
        ClockMap { points: Vec::new() }
    }

    /// The reference time of local time `t`.
    #[inline]
    pub fn global(&self, t: u64) -> u64 {
        t.wrapping_add_signed(self.offset_at(t))
    }

    /// The offset at local time `t`: linear between points, and beyond
    /// them along the first or last segment, as OTF2 readers compute it.
    pub fn offset_at(&self, t: u64) -> i64 {
        let pts = &self.points;
        if pts.len() < 2 {
            return 0;
        }
        let i = pts.partition_point(|p| p.0 < t).clamp(1, pts.len() - 1);
        let (t1, o1, _) = pts[i - 1];
        let (t2, o2, _) = pts[i];
        if t2 == t1 {
            return o1;
        }
        let slope = (o2 - o1) as f64 / (t2 - t1) as f64;
        let diff = if t >= t1 { (t - t1) as f64 } else { -((t1 - t) as f64) };
        // Rounded half to even, as OTF2's readers (rint).
        o1 + (slope * diff).round_ties_even() as i64
    }

    /// Shifts the whole map by `delta` ns; a map without points gets two,
    /// at `first` and `last` (OTF2 ignores a lone one).
    pub fn shift(&mut self, delta: i64, first: u64, last: u64) {
        if self.points.is_empty() {
            self.points = vec![(first, delta, 0.0), (last.max(first + 1), delta, 0.0)];
        } else {
            for p in &mut self.points {
                p.1 += delta;
            }
        }
    }
}

/// The clock maps of all processes, in the order given.
pub fn clock_maps(processes: &[Process]) -> Vec<ClockMap> {
    let reference = processes.iter().find(|p| p.mpi.is_some_and(|(r, _)| r == 0)).or(processes.first());
    let Some(reference) = reference else {
        return Vec::new();
    };
    let ref_domain = reference.clock_domain;
    let (ref_mono, ref_real) = reference.clock_pair;
    processes
        .iter()
        .map(|p| {
            let last = p.event_span().1;
            if !p.clock_points.is_empty() {
                return ClockMap { points: measured(&p.clock_points, last) };
            }
            if p.clock_domain == ref_domain {
                return ClockMap::identity();
            }
            // realtime − monotonic differs between hosts by the offset of
            // their monotonic clocks (assuming synchronized realtime clocks).
            let (mono, real) = p.clock_pair;
            let offset = ((real as i128 - mono as i128) - (ref_real as i128 - ref_mono as i128)) as i64;
            ClockMap { points: vec![(mono, offset, 0.0), (last.max(mono + 1), offset, 0.0)] }
        })
        .collect()
}

/// The measurement points (the first per local time), a lone one repeated
/// at `last`.
fn measured(points: &[ClockPoint], last: u64) -> Vec<(u64, i64, f64)> {
    let mut out: Vec<(u64, i64, f64)> = Vec::new();
    for c in points {
        if out.last().is_none_or(|p| p.0 < c.local) {
            out.push((c.local, c.offset, c.error as f64));
        }
    }
    if let [(t, o, e)] = out[..] {
        out.push((last.max(t + 1), o, e));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_between_and_beyond_points() {
        let m = ClockMap { points: vec![(1000, 100, 0.0), (2000, 200, 0.0)] };
        assert_eq!(m.global(500), 550);
        assert_eq!(m.global(1000), 1100);
        assert_eq!(m.global(1500), 1650);
        assert_eq!(m.global(2000), 2200);
        assert_eq!(m.global(3000), 3300);
        assert_eq!(ClockMap::identity().global(77), 77);
        let m = ClockMap { points: vec![(1000, 100, 0.0), (2000, 200, 0.0), (3000, 200, 0.0)] };
        assert_eq!(m.global(2500), 2700);
        assert_eq!(m.global(4000), 4200);
    }

    #[test]
    fn a_lone_measurement_is_repeated() {
        let pts = measured(&[ClockPoint { local: 10, offset: -3, error: 1 }], 500);
        assert_eq!(pts, vec![(10, -3, 1.0), (500, -3, 1.0)]);
        assert_eq!(ClockMap { points: pts }.global(1000), 997);
    }

    #[test]
    fn correction_keeps_order() {
        let m = ClockMap { points: vec![(1_000_000, -50_000, 0.0), (2_000_000, 70_000, 0.0)] };
        let mut last = 0;
        for t in (900_000..2_100_000).step_by(997) {
            let g = m.global(t);
            assert!(g >= last);
            last = g;
        }
    }
}
