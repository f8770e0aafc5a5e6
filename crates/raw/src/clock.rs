//! The one clock of gputrace: CLOCK_MONOTONIC in nanoseconds.
//!
//! Every host timestamp is read here (through the vDSO, about 20 ns); GPU
//! timestamps are put on the same clock by the CUDA agent. CLOCK_REALTIME is
//! read only beside it, once per stream, to align hosts that had no MPI
//! clock synchronization.

/// Nanoseconds per second: the timer resolution written to OTF2.
pub const TICKS_PER_SECOND: u64 = 1_000_000_000;

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(TICKS_PER_SECOND).wrapping_add(ts.tv_nsec as u64)
}

/// CLOCK_MONOTONIC, ns.
#[inline]
pub fn now() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME, ns since the Unix epoch.
pub fn realtime() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// A (monotonic, realtime) pair read as close together as possible: the
/// realtime reading is bracketed by two monotonic ones and the tightest of
/// a few tries is kept.
pub fn paired_readings() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let a = now();
        let r = realtime();
        let b = now();
        let width = b.saturating_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, r);
        }
    }
    (best.1, best.2)
}

/// The clock domain of this host: a hash of the kernel's boot id, equal
/// for every process (containers included) that reads the same
/// CLOCK_MONOTONIC, different after a reboot and on other hosts. The host
/// name stands in where the boot id cannot be read.
pub fn domain() -> u64 {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .or_else(|_| std::fs::read_to_string("/proc/sys/kernel/hostname"))
        .unwrap_or_default();
    // FNV-1a: stable across builds and processes, unlike std's hasher.
    id.trim().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_does_not_go_back() {
        let a = now();
        let b = now();
        assert!(a > 0 && b >= a);
    }

    #[test]
    fn pair_is_consistent_with_realtime() {
        let (m, r) = paired_readings();
        assert!(m > 0);
        // The realtime clock is after 2020 on any machine that runs this.
        assert!(r > 1_577_836_800 * TICKS_PER_SECOND);
    }
}
