//! The raw trace stream: what producers write while the program runs and
//! the merge reads afterwards.
//!
//! One file per (process, producer), `raw/<host>.<pid>.<producer>.gtr`, made
//! of self-describing [chunks](chunk): a stream header, definitions
//! ([`defs`]) and events ([`event`]) of one location each. A thread's events
//! go into slot chunks mapped from the file and committed per access
//! ([`writer::Slot`]), so a killed process keeps every committed event, and
//! [`reader`] salvages every complete chunk and every committed event of a
//! damaged or unfinished file. The format is described in
//! `docs/raw-format.md`.
//!
//! Depends on no other gputrace crate but the clock (`gputrace-clock`,
//! whose timer a stream names): the producers (through the runtime) and
//! the merge both read and write it.

pub mod chunk;
pub mod defs;
pub mod event;
pub mod lost;
pub mod progress;
pub mod reader;
pub mod source;
#[cfg(feature = "synthetic")]
pub mod synthetic;
mod varint;
pub mod writer;

pub use chunk::{ChunkHeader, ChunkKind};
pub use defs::{
    CapturedOp, CommDef, CudaObject, Definition, DeviceDef, LinkEnd, LocationKind, MetricDef, Module, NvLinkDef,
    Paradigm, RankRuns, RegionRole, StreamHeader,
};
pub use event::{
    Collective, CollectiveOp, CopyKind, Event, KernelConfig, MemCopy, MemoryKind, MemoryOp, Message, PeerEnds, PoolOp,
};
pub use lost::SourceLoss;
pub use reader::{EventChunk, Events, OwnedEvents, Problem, RawFile};
pub use source::Producer;
pub use writer::{ClosedSlot, Extent, Slot, SlotError, StreamFile, writer_pid};
pub use writer::{EventSpan, EventsEncoder};

/// The attribute event, before a kernel's, copy's or memset's begin, that
/// holds CUPTI's id of the CUDA graph node it ran as (CUDA agent); the
/// merge finds a graph's NCCL kernels by it.
pub const GRAPH_NODE_ATTRIBUTE: &str = "CUDA graph node id";

/// The file name of a stream: `<host>.<pid>.<producer>.gtr`.
pub fn stream_file_name(host: &str, pid: u32, producer: Producer) -> String {
    let host: String = host.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{host}.{pid}.{}.gtr", producer.name())
}

/// The stream files (`*.gtr`) of `raw_dir` being written or left there,
/// regular files only: a FIFO named like one would block its open, a
/// link may point anywhere (the merge, which says what it skips, looks at
/// those itself). An unreadable directory has none.
pub fn stream_files(raw_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(raw_dir) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gtr"))
        .collect()
}

/// Parses a stream file name back into (host, pid, producer).
pub fn parse_stream_file_name(name: &str) -> Option<(String, u32, Producer)> {
    let stem = name.strip_suffix(".gtr")?;
    let mut parts = stem.rsplitn(3, '.');
    let producer = Producer::from_name(parts.next()?)?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_string(), pid, producer))
}

/// The start of the data in `file` at or after `from` (`SEEK_DATA`):
/// `Ok(None)` when only a hole follows (the flight recorder's cuts, a
/// slot's unused tail), an error where the file system cannot tell.
pub fn next_data(file: &std::fs::File, from: u64) -> std::io::Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    // SAFETY: lseek on an open file's descriptor; it moves the descriptor's
    // offset, which no read here uses (every read is at an explicit offset).
    let at = unsafe { libc::lseek(file.as_raw_fd(), from as libc::off_t, libc::SEEK_DATA) };
    if at >= 0 {
        return Ok(Some(at as u64));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) { Ok(None) } else { Err(e) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        let name = stream_file_name("node-1.cluster", 4711, Producer::Mpi);
        assert_eq!(name, "node-1_cluster.4711.mpi.gtr");
        assert_eq!(parse_stream_file_name(&name), Some(("node-1_cluster".into(), 4711, Producer::Mpi)));
        assert_eq!(parse_stream_file_name("x.gtr"), None);
        let name = stream_file_name("gpu7", 12, Producer::Nvtx);
        assert_eq!(name, "gpu7.12.nvtx.gtr");
        assert_eq!(parse_stream_file_name(&name), Some(("gpu7".into(), 12, Producer::Nvtx)));
        for p in [Producer::Mpi, Producer::Cuda, Producer::Nccl, Producer::Synthetic, Producer::Nvtx] {
            assert_eq!(Producer::from_u8(p as u8), Some(p));
        }
    }
}
