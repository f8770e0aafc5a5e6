//! A safe, typed writer of OTF2 trace archives (the format Vampir,
//! Scalasca and Score-P's tools read), and a small streaming reader.
//!
//! The crate knows nothing of MPI libraries, CUDA or gputrace's raw
//! streams: it speaks OTF2's vocabulary (locations, regions, communicators,
//! metrics) and leaves the mapping to the caller, as samply's
//! `fxprof-processed-profile` does for the Firefox profiler format.
//!
//! Writing, in three steps:
//!
//! 1. [`ArchiveWriter::create`] claims `dir/<name>.otf2`, refusing to
//!    overwrite anything.
//! 2. [`ArchiveWriter::defs`] gives the [`Definitions`] builder, which hands
//!    out small `Copy` handles ([`StringRef`], [`RegionRef`],
//!    [`LocationRef`]...) and interns strings.
//! 3. [`ArchiveWriter::event_writer`] writes one location's events at a
//!    time, straight to disk; [`ArchiveWriter::close`] writes the
//!    definitions (event counts included) and finalizes the archive.
//!
//! Reading: [`reader::TraceReader`].
//!
//! All FFI lives in one private module over `otf2-sys`; everything else is
//! safe code (`unsafe_code` is denied outside it). OTF2's own error output
//! is captured into [`Error::Otf2`] instead of being printed.
//!
//! Depends on `otf2-sys` only: never on the raw stream format, the
//! configuration or anything that runs inside a traced process (which must
//! not link OTF2).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

mod archive;
pub mod collective;
mod defs;
mod error;
mod events;
#[allow(unsafe_code)]
mod ffi;
pub mod reader;
mod refs;
mod types;
mod values;

pub use archive::{ArchiveWriter, ConcurrentWriters};
pub use collective::Collectives;
pub use defs::{Definitions, MetricMember, Region, SystemTree, TreeGroup, TreeLocation, TreeNode};
pub use error::{Error, Result};
pub use events::{DefsMut, EventWriter};
pub use refs::{
    AttributeRef, CallingContextRef, CommRef, GroupRef, InterruptGeneratorRef, LocationGroupRef, LocationRef,
    MetricMemberRef, MetricRef, RegionRef, RmaWinRef, SourceCodeLocationRef, StringRef, SystemTreeNodeRef,
};
pub use types::{
    Base, CollectiveOp, CommFlags, GroupFlags, GroupType, LocationGroupType, LocationType, MetricMode,
    MetricOccurrence, MetricType, Paradigm, ParadigmClass, ParadigmProperty, RecorderKind, RegionFlags, RegionRole,
    RmaWinFlags, SystemTreeDomain, Type,
};
pub use values::{AttributeValue, ClockOffset, ClockProperties, Collective, MetricScope, MetricValue};

#[cfg(test)]
mod tests {
    #[test]
    fn writers_and_readers_can_move_between_threads() {
        fn is_send<T: Send>() {}
        is_send::<crate::ArchiveWriter>();
        is_send::<crate::reader::TraceReader>();
        fn is_sync<T: Sync>() {}
        is_sync::<crate::ConcurrentWriters<'_>>();
    }
}
