//! The one clock of gputrace: nanoseconds on the host's CLOCK_MONOTONIC
//! scale, read through the CPU's time-stamp counter where it can be
//! trusted.
//!
//! Every host timestamp is read here; GPU timestamps are put on the same
//! clock by the CUDA agent (CUPTI's timestamp callback calls [`now`]), and
//! the NCCL plugin and NVTX injection read [`now`] too, so one process's
//! producers always share one clock.
//!
//! Two timers, chosen once per process (`GPUTRACE_TIMER`):
//!
//! - **tsc** (the default where usable): the invariant TSC (`rdtsc`, about
//!   11 ns against `clock_gettime`'s 29 ns on the development machine),
//!   converted to ns by a linear map calibrated against CLOCK_MONOTONIC:
//!   `ns = ns0 + (tsc − tsc0) × mult / 2³²`. Every process of one host
//!   reads one map, so that they all read exactly the same clock: the
//!   `gputrace` command calibrates once and hands its map to every process
//!   it starts on its host (`GPUTRACE_TIMER_CALIBRATION`, with the host's
//!   clock domain); on another host the first process to look calibrates
//!   and publishes the map in the experiment directory, where the host's
//!   other processes find it ([`host_map`]). A process that has neither
//!   (no experiment directory, a map file it cannot trust) reads
//!   clock_gettime under `auto`, and calibrates for itself over
//!   [`PROCESS_CALIBRATION`] only under `tsc`. Usable means: an x86-64 CPU whose TSC is
//!   invariant (`constant_tsc` and `nonstop_tsc`) and that the kernel keeps
//!   among its clock sources (it drops the TSC when its cores disagree).
//! - **clock_gettime**: CLOCK_MONOTONIC through the vDSO, everywhere else.
//!
//! The map's slope differs from CLOCK_MONOTONIC's rate by the calibration's
//! error (a few ns over milliseconds: some µs per second), the same for all
//! processes that share a map; between hosts, MPI's clock synchronization
//! at MPI_Init and MPI_Finalize corrects offset and rate linearly, so the
//! rate error of each host's map is removed with its drift. Each stream
//! header says which timer its process used ([`Timer`]), and the archive
//! says it in its properties.
//!
//! CLOCK_REALTIME is read only beside [`now`], once per stream, to align
//! hosts that had no MPI clock synchronization.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

pub mod host_map;

/// Nanoseconds per second: the timer resolution written to OTF2.
pub const TICKS_PER_SECOND: u64 = 1_000_000_000;

/// How long a process that got no calibration from the command measures
/// the TSC against CLOCK_MONOTONIC (it sleeps in between).
pub const PROCESS_CALIBRATION: Duration = Duration::from_millis(2);

/// How long the `gputrace` command calibrates the map it hands on.
pub const LAUNCHER_CALIBRATION: Duration = Duration::from_millis(10);

/// The variable that selects the timer: `tsc`, `clock_gettime` or `auto`.
pub const TIMER_VARIABLE: &str = "GPUTRACE_TIMER";

/// The variable through which the command hands its calibration on:
/// `domain:tsc0:ns0:mult` (decimal).
pub const CALIBRATION_VARIABLE: &str = "GPUTRACE_TIMER_CALIBRATION";

/// The experiment directory, whose `raw/` holds the TSC maps of the hosts
/// the command did not calibrate ([`host_map`]).
pub const DIRECTORY_VARIABLE: &str = "GPUTRACE_EXPERIMENT_DIRECTORY";

/// The timer a process reads, as its stream header records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timer {
    /// CLOCK_MONOTONIC through `clock_gettime`.
    #[default]
    ClockGettime,
    /// The TSC, mapped to CLOCK_MONOTONIC ns; `hz` is the calibrated
    /// frequency, `source` where the map came from.
    Tsc { hz: u64, source: MapSource },
}

/// Where a process's TSC map came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSource {
    /// The process calibrated it for itself (`GPUTRACE_TIMER=tsc` with no
    /// shared map): no other process reads it.
    Process,
    /// The `gputrace` command, for every process it started on its host.
    Command,
    /// The host's map file in the experiment directory, calibrated by the
    /// host's first process ([`host_map`]): the same for every process of
    /// the host.
    HostFile,
}

impl MapSource {
    /// Its code in a stream's Timer definition (1 to 3; 0 is clock_gettime).
    pub fn code(self) -> u8 {
        match self {
            MapSource::Process => 1,
            MapSource::Command => 2,
            MapSource::HostFile => 3,
        }
    }

    /// The source a Timer definition's code names, if any.
    pub fn from_code(code: u8) -> Option<MapSource> {
        match code {
            1 => Some(MapSource::Process),
            2 => Some(MapSource::Command),
            3 => Some(MapSource::HostFile),
            _ => None,
        }
    }
}

impl Timer {
    /// Its name, as `GPUTRACE_TIMER` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Timer::ClockGettime => "clock_gettime",
            Timer::Tsc { .. } => "tsc",
        }
    }
}

impl std::fmt::Display for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Timer::ClockGettime => f.write_str("clock_gettime (CLOCK_MONOTONIC)"),
            Timer::Tsc { hz, source } => write!(
                f,
                "tsc ({:.3} MHz, calibrated against CLOCK_MONOTONIC {})",
                hz as f64 / 1e6,
                match source {
                    MapSource::Process => "by the process",
                    MapSource::Command => "by gputrace",
                    MapSource::HostFile => "by the host's first process, shared through the experiment directory",
                }
            ),
        }
    }
}

const UNSET: u8 = 0;
const GETTIME: u8 = 1;
const TSC: u8 = 2;

// The map, written once before MODE says TSC (Release) and read after it
// (Acquire): never changed afterwards, so a reader never sees half a map.
static MODE: AtomicU8 = AtomicU8::new(UNSET);
static TSC0: AtomicU64 = AtomicU64::new(0);
static NS0: AtomicU64 = AtomicU64::new(0);
static MULT: AtomicU64 = AtomicU64::new(0);
static SOURCE: AtomicU8 = AtomicU8::new(0);
static INIT: std::sync::Once = std::sync::Once::new();
// Why the host's map was not read, when it was not: for the runtime's
// one warning line (this crate prints nothing).
static PROBLEM: OnceLock<String> = OnceLock::new();

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(TICKS_PER_SECOND).wrapping_add(ts.tv_nsec as u64)
}

/// CLOCK_MONOTONIC itself, ns (not the TSC map): for calibration and tests.
pub fn monotonic() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64; it reads a counter.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

/// The time now, ns, on this process's timer.
#[inline]
pub fn now() -> u64 {
    match MODE.load(Ordering::Acquire) {
        TSC => {
            // Signed: a core whose counter reads a few ticks behind the
            // calibrating one's right after calibration must not wrap.
            let delta = rdtsc().wrapping_sub(TSC0.load(Ordering::Relaxed)) as i64;
            let ns = (i128::from(delta) * i128::from(MULT.load(Ordering::Relaxed))) >> 32;
            (NS0.load(Ordering::Relaxed) as i128 + ns) as u64
        }
        GETTIME => monotonic(),
        _ => {
            init();
            now()
        }
    }
}

/// The timer this process reads (choosing it on first use).
pub fn timer() -> Timer {
    init();
    match MODE.load(Ordering::Acquire) {
        TSC => Timer::Tsc {
            hz: hz_of(MULT.load(Ordering::Relaxed)),
            source: MapSource::from_code(SOURCE.load(Ordering::Relaxed)).unwrap_or(MapSource::Process),
        },
        _ => Timer::ClockGettime,
    }
}

fn hz_of(mult: u64) -> u64 {
    if mult == 0 { 0 } else { ((1u128 << 32) * u128::from(TICKS_PER_SECOND) / u128::from(mult)) as u64 }
}

/// Chooses the timer once: from `GPUTRACE_TIMER` (default `auto`) and, for
/// the TSC, from the command's calibration when it is this host's, else
/// from this host's map file in the experiment directory.
pub fn init() {
    INIT.call_once(|| {
        let wanted = std::env::var(TIMER_VARIABLE).unwrap_or_default();
        let wanted = wanted.trim();
        // `tsc` where it cannot be trusted falls back too: a wrong clock
        // is worse than a slower one.
        if wanted == "clock_gettime" || !tsc_usable() {
            MODE.store(GETTIME, Ordering::Release);
            return;
        }
        if let Some(map) = handed_map() {
            install(map, MapSource::Command);
            return;
        }
        // No map from the command for this host: the host's own, shared
        // through the experiment directory. `auto` reads the TSC only with
        // a shared map: processes of one host that each calibrated for
        // themselves would differ by their calibrations' errors (hundreds
        // of ns, growing), and the merge takes processes of one host to
        // share one clock.
        let shared = host_map_directory().map(|dir| {
            host_map::load_or_publish(&dir, domain(), || calibrate(LAUNCHER_CALIBRATION))
                .map_err(|e| PROBLEM.get_or_init(|| describe_problem(&e, wanted == "tsc")).clone())
        });
        match (shared, wanted) {
            (Some(Ok(map)), _) => install(map, MapSource::HostFile),
            (_, "tsc") => install(calibrate(PROCESS_CALIBRATION), MapSource::Process),
            _ => MODE.store(GETTIME, Ordering::Release),
        }
    });
}

/// The map the `gputrace` command handed to this process, if it is this
/// host's ([`CALIBRATION_VARIABLE`]).
fn handed_map() -> Option<Map> {
    std::env::var(CALIBRATION_VARIABLE).ok().and_then(|v| parse_calibration(&v))
}

fn describe_problem(e: &host_map::Error, tsc: bool) -> String {
    if tsc {
        format!("{e}; this process calibrates the TSC for itself (GPUTRACE_TIMER=tsc)")
    } else {
        format!("{e}; this process reads clock_gettime instead of the TSC")
    }
}

/// Where this host's map file is looked for: `raw/` of the experiment
/// directory, when the environment names one.
fn host_map_directory() -> Option<PathBuf> {
    std::env::var_os(DIRECTORY_VARIABLE).filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join("raw"))
}

/// Why this process does not read its host's shared TSC map, when it has
/// an experiment directory and does not (a map file it cannot trust, a
/// directory it cannot write): for one warning line.
pub fn problem() -> Option<&'static str> {
    PROBLEM.get().map(String::as_str)
}

fn install(map: Map, source: MapSource) {
    if map.mult == 0 {
        MODE.store(GETTIME, Ordering::Release);
        return;
    }
    TSC0.store(map.tsc0, Ordering::Relaxed);
    NS0.store(map.ns0, Ordering::Relaxed);
    MULT.store(map.mult, Ordering::Relaxed);
    SOURCE.store(source.code(), Ordering::Relaxed);
    MODE.store(TSC, Ordering::Release);
}

/// A TSC → ns map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Map {
    tsc0: u64,
    ns0: u64,
    /// ns per tick × 2³².
    mult: u64,
}

/// The map in `GPUTRACE_TIMER_CALIBRATION`, if it is this host's.
fn parse_calibration(value: &str) -> Option<Map> {
    let mut parts = value.trim().split(':').map(str::parse::<u64>);
    let (Some(Ok(domain)), Some(Ok(tsc0)), Some(Ok(ns0)), Some(Ok(mult)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    (domain == self::domain() && mult > 0).then_some(Map { tsc0, ns0, mult })
}

/// This process's calibration, for the processes it starts: `None` when
/// it does not read the TSC (they then choose for themselves).
pub fn calibration_for_children() -> Option<String> {
    init();
    (MODE.load(Ordering::Acquire) == TSC).then(|| {
        format!(
            "{}:{}:{}:{}",
            domain(),
            TSC0.load(Ordering::Relaxed),
            NS0.load(Ordering::Relaxed),
            MULT.load(Ordering::Relaxed)
        )
    })
}

/// For the `gputrace` command: chooses the timer now, calibrating the TSC
/// over [`LAUNCHER_CALIBRATION`] (longer than a process would), so that
/// the map handed on is good to a few ns per millisecond.
pub fn init_for_launcher() {
    INIT.call_once(|| {
        let wanted = std::env::var(TIMER_VARIABLE).unwrap_or_default();
        if wanted.trim() == "clock_gettime" || !tsc_usable() {
            MODE.store(GETTIME, Ordering::Release);
            return;
        }
        install(calibrate(LAUNCHER_CALIBRATION), MapSource::Command);
    });
}

/// For gputrace's own tools (the merge, the reports): the command's map
/// when it handed one for this host, else clock_gettime. Never the host's
/// map file: a tool run with `GPUTRACE_EXPERIMENT_DIRECTORY` set (the merge
/// the command starts) neither calibrates nor leaves a map file in the
/// experiment it reads.
pub fn init_for_tool() {
    INIT.call_once(|| {
        let wanted = std::env::var(TIMER_VARIABLE).unwrap_or_default();
        match handed_map() {
            Some(map) if wanted.trim() != "clock_gettime" && tsc_usable() => install(map, MapSource::Command),
            _ => MODE.store(GETTIME, Ordering::Release),
        }
    });
}

/// Whether the TSC can stand in for CLOCK_MONOTONIC on this machine.
pub fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    let kernel_keeps_it = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/available_clocksource")
        .is_ok_and(|s| s.split_whitespace().any(|c| c == "tsc"));
    has("constant_tsc") && has("nonstop_tsc") && kernel_keeps_it
}

/// A reading of `inner` and of `outer` at the same moment, as close as
/// `tries` attempts get: `inner` bracketed by two `outer` readings, the
/// narrowest bracket kept, `outer` taken at its middle.
fn bracketed(tries: usize, outer: impl Fn() -> u64, inner: impl Fn() -> u64) -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..tries {
        let a = outer();
        let m = inner();
        let b = outer();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2)
}

/// A (tsc, CLOCK_MONOTONIC) pair read as close together as possible.
fn tsc_pair() -> (u64, u64) {
    bracketed(7, rdtsc, monotonic)
}

fn calibrate(span: Duration) -> Map {
    let (t0, m0) = tsc_pair();
    std::thread::sleep(span);
    let (t1, m1) = tsc_pair();
    let ticks = t1.wrapping_sub(t0);
    let ns = m1.saturating_sub(m0);
    if ticks == 0 || ns == 0 || t1 < t0 {
        return Map { tsc0: 0, ns0: 0, mult: 0 };
    }
    let mult = ((u128::from(ns) << 32) / u128::from(ticks)) as u64;
    Map { tsc0: t0, ns0: m0, mult }
}

/// CLOCK_REALTIME, ns since the Unix epoch.
pub fn realtime() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// A ([`now`], realtime) pair read as close together as possible.
pub fn paired_readings() -> (u64, u64) {
    bracketed(5, now, realtime)
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

/// For tests that need the TSC: whether it is usable here. Where it is
/// not, the test says so and passes, except under `CI=true`, where it
/// fails (CI machines are x86-64 with an invariant TSC: a skip there
/// would hide a broken check).
#[cfg(test)]
pub(crate) fn tsc_for_tests() -> bool {
    if tsc_usable() {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: the TSC is not usable here");
    eprintln!("note: the TSC is not usable here; test skipped");
    false
}

/// What a file that is not a regular file is, for an error line: "a
/// FIFO", "a directory", ...
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
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

    #[test]
    fn the_timer_follows_clock_monotonic() {
        // Whatever timer was chosen, over 50 ms it agrees with
        // CLOCK_MONOTONIC to within a few µs (a 2 ms calibration is good
        // to about 1e-5).
        let a = (now(), monotonic());
        std::thread::sleep(Duration::from_millis(50));
        let b = (now(), monotonic());
        let ours = b.0 - a.0;
        let kernel = b.1 - a.1;
        assert!(ours.abs_diff(kernel) < 20_000, "{ours} ns vs CLOCK_MONOTONIC's {kernel} ns ({})", timer());
        // And it reads CLOCK_MONOTONIC's scale, not another origin.
        assert!(now().abs_diff(monotonic()) < 1_000_000, "{}", timer());
    }

    #[test]
    fn a_calibration_of_another_host_is_refused() {
        let other = domain().wrapping_add(1);
        assert_eq!(parse_calibration(&format!("{other}:1:2:3")), None);
        assert_eq!(parse_calibration(&format!("{}:1:2:3", domain())), Some(Map { tsc0: 1, ns0: 2, mult: 3 }));
        assert_eq!(parse_calibration(&format!("{}:1:2:0", domain())), None);
        assert_eq!(parse_calibration("garbage"), None);
        assert_eq!(parse_calibration(&format!("{}:1:2:3:4", domain())), None);
    }

    #[test]
    fn a_calibration_maps_ticks_to_ns() {
        if !tsc_for_tests() {
            return;
        }
        let map = calibrate(Duration::from_millis(5));
        let hz = hz_of(map.mult);
        // Any TSC of the last decades: 0.5 to 6 GHz.
        assert!((500_000_000..6_000_000_000).contains(&hz), "{hz} Hz");
    }
}
