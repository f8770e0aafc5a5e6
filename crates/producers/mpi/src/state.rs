//! The process-wide state of the MPI producer: where it is in MPI's
//! lifetime, its recorder, and which function groups are recorded.
//!
//! Everything here is read on the hot path of every wrapper, so the state
//! is a handful of atomics and a `OnceLock`, never a lock.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

use config::EnabledSet;
use runtime::Recorder;

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
static GROUPS: AtomicU32 = AtomicU32::new(0);

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

/// The MPI function groups, as Score-P names them. The discriminant is
/// the group's bit in the enabled mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Group {
    Cg = 0,
    Coll,
    Env,
    Err,
    Ext,
    Io,
    Misc,
    Perf,
    P2p,
    Rma,
    Spawn,
    Topo,
    Type,
    Xnonblock,
    Xreqtest,
}

impl Group {
    pub const ALL: [Group; 15] = [
        Group::Cg,
        Group::Coll,
        Group::Env,
        Group::Err,
        Group::Ext,
        Group::Io,
        Group::Misc,
        Group::Perf,
        Group::P2p,
        Group::Rma,
        Group::Spawn,
        Group::Topo,
        Group::Type,
        Group::Xnonblock,
        Group::Xreqtest,
    ];

    /// The name in `GPUTRACE_MPI_ENABLE_GROUPS` and in region definitions.
    pub fn name(self) -> &'static str {
        match self {
            Group::Cg => "cg",
            Group::Coll => "coll",
            Group::Env => "env",
            Group::Err => "err",
            Group::Ext => "ext",
            Group::Io => "io",
            Group::Misc => "misc",
            Group::Perf => "perf",
            Group::P2p => "p2p",
            Group::Rma => "rma",
            Group::Spawn => "spawn",
            Group::Topo => "topo",
            Group::Type => "type",
            Group::Xnonblock => "xnonblock",
            Group::Xreqtest => "xreqtest",
        }
    }

    #[inline]
    fn bit(self) -> u32 {
        1 << self as u8
    }
}

/// The mask of the groups in `set`.
pub fn group_mask(set: &EnabledSet) -> u32 {
    Group::ALL.iter().filter(|g| set.contains(g.name())).fold(0, |m, g| m | g.bit())
}

pub(crate) fn set_groups(mask: u32) {
    GROUPS.store(mask, Ordering::Relaxed);
}

/// Whether functions of `g` are recorded.
#[inline]
pub fn enabled(g: Group) -> bool {
    GROUPS.load(Ordering::Relaxed) & g.bit() != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::{parse_set, vars::MPI_GROUPS};

    #[test]
    fn group_names_are_the_configuration_names() {
        let all = parse_set("all", MPI_GROUPS).unwrap();
        assert_eq!(group_mask(&all), (1 << Group::ALL.len()) - 1);
        let some = parse_set("p2p,xreqtest", MPI_GROUPS).unwrap();
        assert_eq!(group_mask(&some), Group::P2p.bit() | Group::Xreqtest.bit());
    }
}
