//! The stragglers' rules on hand-made arrivals.
use super::*;
use crate::analyze::describe::Plain;

fn arrival(process: usize, enter: u64, since: &[(u32, u64)]) -> Arrival {
    Arrival {
        loc: process,
        process,
        enter,
        since: since.iter().map(|&(r, t)| (RegionRef::from_id(r), t)).collect(),
        gpu: None,
        transfers: Transfers::default(),
    }
}

/// Rank `process` on GPU `process`, its NCCL kernel started at
/// `start`, the previous one at `prev`, the kernels in between.
fn on_gpu(process: usize, prev: u64, start: u64, kernels: &[(u32, u64)]) -> Arrival {
    let kernels = kernels.iter().map(|&(r, t)| (RegionRef::from_id(r), t)).collect();
    Arrival {
        gpu: Some(GpuArrival { gpu: Some(process), prev: Some(prev), kernels, copies: Transfers::default() }),
        ..arrival(process, start, &[])
    }
}

/// The last rank, its lateness over the next, the others' waiting and
/// the region it spent longer in, summed over the operations.
#[test]
fn the_last_rank_is_named_with_its_lateness_wait_and_cause() {
    let mut s = Stragglers::default();
    let comm = CommRef::from_id(0);
    for i in 0..3u64 {
        let base = i * 1000;
        s.operation(
            comm,
            &[
                arrival(0, base + 100, &[(1, 100), (9, 10)]),
                arrival(1, base + 110, &[(1, 100), (9, 20)]),
                arrival(2, base + 200, &[(1, 190), (9, 10)]),
            ],
            &GpuSamples::default(),
        );
    }
    // A balanced one: rank 0 last by 1, no region explains it.
    s.operation(
        comm,
        &[arrival(0, 5001, &[(1, 100)]), arrival(1, 5000, &[(1, 100)]), arrival(2, 5000, &[(1, 100)])],
        &GpuSamples::default(),
    );
    let rows = s.finish(&Plain);
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!((r.rank, r.operations, r.times_last), (Some(2), 4, 3));
    assert_eq!(r.lateness_ns, 3 * 90);
    assert_eq!(r.wait_caused_ns, 3 * (100 + 90));
    assert_eq!((r.worst_start_ns, r.worst_lateness_ns), (2200, 90));
    assert_eq!((r.cause.as_deref(), r.cause_excess_ns), (Some("region 1"), 3 * 90));
    assert_eq!((r.cause_kind, r.by_kernel), (Some("region"), 0));
    let b = &rows[1];
    assert_eq!((b.rank, b.times_last, b.lateness_ns, b.wait_caused_ns), (Some(0), 1, 1, 2));
    assert_eq!(b.cause, None, "no region spent longer: no cause");
}

/// Judged by the NCCL kernels' starts: a kernel only the last rank ran
/// (spin 2, 90 of the 100 ns it was late by) is the cause, whatever
/// its clock; the host regions (region 1, late by more) are not asked.
#[test]
fn a_kernel_only_the_last_gpu_ran_is_the_cause() {
    let mut s = Stragglers::default();
    let comm = CommRef::from_id(0);
    let mut clocks = GpuSamples::default();
    for (gpu, mhz) in [(0, 1980), (1, 1980), (2, 1000)] {
        clocks.add(Sampled::SmClock, gpu, 0, mhz);
    }
    for i in 0..2u64 {
        let base = 1000 * i;
        let mut late = on_gpu(2, base, base + 200, &[(1, 95), (2, 90)]);
        late.since = vec![(RegionRef::from_id(1), 500)];
        s.operation(
            comm,
            &[on_gpu(0, base, base + 100, &[(1, 100)]), on_gpu(1, base, base + 90, &[(1, 90)]), late],
            &clocks,
        );
    }
    let r = &s.finish(&Plain)[0];
    assert_eq!((r.rank, r.times_last, r.by_kernel, r.lateness_ns), (Some(2), 2, 2, 200));
    assert_eq!((r.cause_kind, r.cause.as_deref(), r.cause_excess_ns), (Some("kernel"), Some("region 2"), 180));
}

/// The last GPU ran the same kernels longer at a clock 45 % below the
/// others': the clock is the cause (the lateness its excess); at the
/// same clock, the kernel that grew; without kernels' excess or a
/// lower clock, the host region.
#[test]
fn a_lower_clock_is_the_cause_of_a_kernel_that_grew() {
    let comm = CommRef::from_id(0);
    let run = |mhz: u64, watts: Option<u64>, kernel: u64| {
        let mut clocks = GpuSamples::default();
        for t in [0, 50, 150] {
            clocks.add(Sampled::SmClock, 0, t, 1980);
            clocks.add(Sampled::SmClock, 1, t, 1980);
            clocks.add(Sampled::SmClock, 2, t, if t == 0 { 1980 } else { mhz });
            if let Some(w) = watts {
                clocks.add(Sampled::Power, 0, t, 400_000);
                clocks.add(Sampled::Power, 1, t, 400_000);
                clocks.add(Sampled::Power, 2, t, w * 1000);
            }
        }
        let mut late = on_gpu(2, 10, 200, &[(1, kernel)]);
        late.since = vec![(RegionRef::from_id(7), 80)];
        let mut s = Stragglers::default();
        s.operation(comm, &[on_gpu(0, 10, 100, &[(1, 90)]), on_gpu(1, 10, 110, &[(1, 90)]), late], &clocks);
        s.finish(&Plain).remove(0)
    };
    let r = run(1089, Some(200), 180);
    assert_eq!((r.rank, r.cause_kind, r.cause_excess_ns), (Some(2), Some("gpu clock"), 90));
    assert_eq!(r.cause.as_deref(), Some("SM clock 1089 MHz, the others' 1980 MHz; power 200 W, the others' 400 W"));
    let r = run(1089, None, 180);
    assert_eq!(r.cause.as_deref(), Some("SM clock 1089 MHz, the others' 1980 MHz"), "no power sampled");
    // 1800 MHz is less than 10 % below: the kernel it spent longer in.
    let r = run(1800, None, 180);
    assert_eq!((r.cause_kind, r.cause.as_deref(), r.cause_excess_ns), (Some("kernel"), Some("region 1"), 90));
    // Neither: the host region (80 of the 90 ns).
    let r = run(1980, None, 100);
    assert_eq!((r.cause_kind, r.cause.as_deref(), r.cause_excess_ns), (Some("region"), Some("region 7"), 80));
}

/// The last rank's messages (MPI) or copies (GPU) took longer than the
/// next rank's, for the same bytes: a slower link, named with the
/// rates; where they did not, the region.
#[test]
fn transfers_that_took_longer_are_a_slower_link() {
    let comm = CommRef::from_id(0);
    let with = |mut a: Arrival, from: usize, ticks: u64| {
        a.transfers.add(Link::From(from), ticks, 1 << 20);
        a
    };
    let mut s = Stragglers::default();
    s.operation(
        comm,
        &[
            with(arrival(0, 100, &[(1, 50)]), 2, 10),
            with(arrival(1, 110, &[(1, 50)]), 0, 10),
            with(arrival(2, 200, &[(1, 50)]), 1, 100),
        ],
        &GpuSamples::default(),
    );
    let r = &s.finish(&Plain)[0];
    assert_eq!((r.rank, r.cause_kind, r.cause_excess_ns), (Some(2), Some("link"), 90));
    assert_eq!(
        r.cause.as_deref(),
        Some("messages from rank 1: 1.0 MiB in 100 ns (9.5 TiB/s), the next rank's 1.0 MiB in 10 ns (95.4 TiB/s)")
    );
    // On the GPU: a copy of the same bytes that took longer.
    let copy = |mut a: Arrival, ticks: u64| {
        if let Some(g) = a.gpu.as_mut() {
            g.copies.add(Link::Copy(RegionRef::from_id(5)), ticks, 1 << 20);
        }
        a
    };
    let mut s = Stragglers::default();
    s.operation(
        comm,
        &[
            copy(on_gpu(0, 0, 100, &[(1, 50)]), 10),
            copy(on_gpu(1, 0, 110, &[(1, 50)]), 10),
            copy(on_gpu(2, 0, 200, &[(1, 50)]), 100),
        ],
        &GpuSamples::default(),
    );
    let r = &s.finish(&Plain)[0];
    assert_eq!((r.cause_kind, r.cause_excess_ns), (Some("link"), 90));
    assert!(r.cause.as_deref().unwrap().starts_with("copies region 5: 1.0 MiB in 100 ns"), "{r:?}");
    // Transfers as long as the next rank's: the region it spent longer in.
    let mut s = Stragglers::default();
    s.operation(
        comm,
        &[
            with(arrival(0, 100, &[(1, 50)]), 2, 10),
            with(arrival(1, 110, &[(1, 50)]), 0, 10),
            with(arrival(2, 200, &[(1, 140)]), 1, 10),
        ],
        &GpuSamples::default(),
    );
    assert_eq!(s.finish(&Plain)[0].cause_kind, Some("region"));
}

#[test]
fn the_clock_credits_the_innermost_region_only() {
    let mut c = RegionClock::default();
    c.credit(None, 10);
    c.credit(Some(RegionRef::from_id(1)), 30); // region 1 from 10 to 30
    c.credit(Some(RegionRef::from_id(2)), 35); // region 2 inside it, 30 to 35
    c.credit(Some(RegionRef::from_id(1)), 50); // back in region 1
    assert_eq!(c.take(), vec![(RegionRef::from_id(1), 35), (RegionRef::from_id(2), 5)]);
    assert!(c.take().is_empty());
}
