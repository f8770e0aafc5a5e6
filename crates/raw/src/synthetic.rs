//! Synthetic raw streams, for tests and benchmarks of the merge.
//!
//! [`write_ring`] writes the streams an MPI program of `ranks` processes
//! would leave if each, `iterations` times, computed, sent to its right
//! neighbour, received from its left one, and every tenth time joined an
//! allreduce. The streams use the real writer and format; only the
//! processes are imaginary (pids 1, 2, ... on host `synthetic`).
//!
//! [`write_job`] writes a job of many ranks on many simulated nodes, its
//! streams shaped like the MPI hooks' and the CUDA agent's, with a clock
//! per node that only the recorded clock synchronization aligns.

use std::io;
use std::path::Path;

mod job;

pub use job::{Job, JobCounts, write_job};

use crate::defs::rank_runs;
use crate::writer::EventsEncoder;
use crate::{
    ChunkKind, Collective, CollectiveOp, CommDef, Definition, Event, LocationKind, Message, Paradigm, Producer,
    RegionRole, StreamFile, StreamHeader, stream_file_name,
};

/// What one rank did, for checking a merge against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingCounts {
    pub events: u64,
    pub sends: u64,
    pub bytes: u64,
    pub collectives: u64,
}

const CHUNK: usize = 1 << 20;

/// Writes `ranks` streams into `raw_dir`; returns the counts of one rank.
pub fn write_ring(raw_dir: &Path, ranks: u32, iterations: u64) -> io::Result<RingCounts> {
    let mut counts = RingCounts::default();
    for rank in 0..ranks {
        counts = write_rank(raw_dir, rank, ranks, iterations)?;
    }
    Ok(counts)
}

fn write_rank(raw_dir: &Path, rank: u32, size: u32, iterations: u64) -> io::Result<RingCounts> {
    let pid = 1 + rank;
    let header = StreamHeader {
        producer: Producer::Synthetic,
        host: "synthetic".into(),
        pid,
        process_start: 1000 + u64::from(rank),
        clock_domain: 42,
        monotonic_ns: 1_000_000_000,
        realtime_ns: 1_700_000_000_000_000_000,
        rank_hint: Some(rank),
        command: vec!["synthetic-ring".into()],
    };
    let path = raw_dir.join(stream_file_name("synthetic", pid, Producer::Synthetic));
    let stream = StreamFile::create(&path, &header)?;
    let names = ["compute", "MPI_Send", "MPI_Recv", "MPI_Allreduce"];
    let roles = [RegionRole::Function, RegionRole::Point2Point, RegionRole::Point2Point, RegionRole::CollAll2All];
    let mut defs = Vec::new();
    for (i, n) in names.iter().enumerate() {
        Definition::String { id: i as u32 + 1, value: n.to_string() }.encode(&mut defs);
        let paradigm = if i == 0 { Paradigm::User } else { Paradigm::Mpi };
        Definition::Region { id: i as u32 + 1, name: i as u32 + 1, canonical: 0, paradigm, role: roles[i], group: 0 }
            .encode(&mut defs);
    }
    Definition::String { id: 10, value: "main".into() }.encode(&mut defs);
    Definition::Location { id: 0, kind: LocationKind::HostThread { tid: pid, is_main: true }, name: 10 }
        .encode(&mut defs);
    Definition::MpiRank { rank, size }.encode(&mut defs);
    let world =
        CommDef { id: 0, key: (0, 0), name: "MPI_COMM_WORLD".into(), members: rank_runs(0..size), parent: None };
    Definition::Comm(world).encode(&mut defs);
    stream.write_chunk(ChunkKind::Definitions, None, &defs)?;

    let mut out = ChunkWriter::with_capacity(&stream, CHUNK);
    let mut counts = RingCounts::default();
    let mut t = 2_000_000_000u64;
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    for i in 0..iterations {
        let tag = (i % 8) as i32;
        let bytes = 8 * (i % 100);
        let msg = |peer| Message { peer, comm: 0, tag, bytes };
        let mut step = |ev: Event, dt: u64| {
            t += dt;
            counts.events += 1;
            out.push(t, &ev)
        };
        step(Event::Enter { region: 1 }, 400)?;
        step(Event::Leave { region: 1 }, 300)?;
        step(Event::Enter { region: 2 }, 10)?;
        step(Event::MpiSend(msg(right)), 5)?;
        step(Event::Leave { region: 2 }, 90)?;
        step(Event::Enter { region: 3 }, 10)?;
        step(Event::MpiRecv(msg(left)), 100)?;
        step(Event::Leave { region: 3 }, 5)?;
        counts.sends += 1;
        counts.bytes += bytes;
        if i % 10 == 9 {
            let coll = Collective { op: CollectiveOp::Allreduce, comm: 0, root: None, sent: 8, received: 8 };
            step(Event::Enter { region: 4 }, 10)?;
            step(Event::MpiCollectiveBegin, 1)?;
            step(Event::MpiCollectiveEnd(coll), 200)?;
            step(Event::Leave { region: 4 }, 1)?;
            counts.collectives += 1;
        }
    }
    out.flush()?;
    let mut end = Vec::new();
    Definition::StreamEnd { time: t + 1, exit_started: t + 1 }.encode(&mut end);
    stream.write_chunk(ChunkKind::Definitions, None, &end)?;
    Ok(counts)
}

/// Events of one location, written as events chunks of at most a given
/// size.
struct ChunkWriter<'a> {
    stream: &'a StreamFile,
    location: u32,
    data: Vec<u8>,
    events: EventsEncoder,
}

impl<'a> ChunkWriter<'a> {
    fn with_capacity(stream: &'a StreamFile, capacity: usize) -> Self {
        ChunkWriter { stream, location: 0, data: Vec::with_capacity(capacity), events: EventsEncoder::default() }
    }

    fn push(&mut self, t: u64, ev: &Event) -> io::Result<()> {
        self.push_at(0, t, ev, CHUNK)
    }

    /// Appends an event of `location` (every event of one writer has the
    /// same), in chunks of at most `limit` bytes.
    fn push_at(&mut self, location: u32, t: u64, ev: &Event, limit: usize) -> io::Result<()> {
        if self.data.len() + crate::event::MAX_EVENT_LEN > limit {
            self.flush()?;
        }
        self.location = location;
        self.events.put(&mut self.data, t, ev);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.events.count > 0 {
            self.stream.write_chunk(ChunkKind::Events, Some(self.events.span(self.location)), &self.data)?;
        }
        self.data.clear();
        self.events = EventsEncoder::default();
        Ok(())
    }
}
