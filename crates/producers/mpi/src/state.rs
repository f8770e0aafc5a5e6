//! The process-wide state of the MPI producer: where it is in MPI's
//! lifetime, its recorder, and which function groups are recorded.
//!
//! Everything here is read on the hot path of every wrapper, so the state
//! is a handful of atomics and a `OnceLock`, never a lock.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use config::EnabledSet;
use recorder::Recorder;

/// Where the process is in MPI's lifetime, as far as recording goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Before `MPI_Init`: every call goes straight to MPI.
    BeforeInit = 0,
    /// Recording.
    Active = 1,
    /// After `MPI_Finalize` (or an abort, or exit): straight to MPI.
    Finished = 2,
    /// Not recording for good: wrong MPI flavour, tracing off, or the
    /// stream could not be created.
    Disabled = 3,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::BeforeInit as u8);
static RECORDER: OnceLock<Recorder> = OnceLock::new();
static GROUPS: AtomicU64 = AtomicU64::new(0);

/// The current phase.
#[inline]
pub fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::BeforeInit,
        1 => Phase::Active,
        2 => Phase::Finished,
        _ => Phase::Disabled,
    }
}

pub(crate) fn set_phase(p: Phase) {
    PHASE.store(p as u8, Ordering::Release);
}

/// Moves from `from` to `to`; false if the phase was something else (two
/// threads racing to finish, say).
pub(crate) fn transition(from: Phase, to: Phase) -> bool {
    PHASE.compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire).is_ok()
}

/// The recorder, once `MPI_Init` started it.
#[inline]
pub fn recorder() -> Option<&'static Recorder> {
    RECORDER.get()
}

pub(crate) fn set_recorder(rec: Recorder) -> &'static Recorder {
    RECORDER.get_or_init(|| rec)
}

/// The MPI function groups: `GPUTRACE_MPI_ENABLE_GROUPS`'s members,
/// declared once in the configuration. A group's name is its name in the
/// variable and in region definitions; its bit is its bit in the mask.
pub use config::MpiGroup as Group;

/// The mask of the groups in `set`.
pub fn group_mask(set: &EnabledSet<Group>) -> u64 {
    set.bits()
}

pub(crate) fn set_groups(mask: u64) {
    GROUPS.store(mask, Ordering::Relaxed);
}

static PCONTROL: AtomicBool = AtomicBool::new(false);

/// Whether `MPI_Pcontrol` switches recording (`--capture-range pcontrol`).
pub fn pcontrol() -> bool {
    PCONTROL.load(Ordering::Relaxed)
}

pub(crate) fn set_pcontrol(on: bool) {
    PCONTROL.store(on, Ordering::Relaxed);
}

/// Whether functions of `g` are recorded.
#[inline]
pub fn enabled(g: Group) -> bool {
    GROUPS.load(Ordering::Relaxed) & g.bit() != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_has_the_bits_of_the_configured_groups() {
        let all = EnabledSet::<Group>::parse("all").unwrap();
        assert_eq!(group_mask(&all), (1 << Group::ALL.len()) - 1);
        let some = EnabledSet::<Group>::parse("p2p,xreqtest").unwrap();
        assert_eq!(group_mask(&some), Group::P2p.bit() | Group::Xreqtest.bit());
    }
}
