//! How far streams being written have got, cheaply: for a watchdog that
//! asks every second or so whether a job still records anything
//! (`gputrace --hang-timeout`). Only the chunk headers are read: a slot's
//! committed events are its commit word's, a whole chunk's its header's;
//! no event payload is decoded. GPU activity ([`gpu_activity`]) is told
//! from the CUDA agent's other events by its locations, which the CUDA
//! stream's definitions chunks say (small; decoded each time).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::chunk::{ChunkHeader, ChunkKind, HEADER_LEN, split_commit_word};
use crate::varint::Cursor;
use crate::{Definition, LocationKind, Producer};

/// The events committed so far in the stream file at `path`, if its
/// producer is one of `producers` (0 otherwise). Zeros where a chunk
/// should start are reserved space before a page-aligned slot (or a
/// header whose first byte was never written): the walk goes on at the
/// next page. A damaged header ends the walk: what came before counts.
pub fn committed_events(path: &Path, producers: &[Producer]) -> io::Result<u64> {
    let file = File::open(path)?;
    let mut total = 0u64;
    for (pos, header) in Chunks::new(&file)? {
        if header.kind == ChunkKind::StreamHeader && !producers.contains(&header.producer) {
            return Ok(0);
        }
        if header.kind == ChunkKind::Events && producers.contains(&header.producer) {
            total += if header.is_slot() {
                let mut word = [0u8; 8];
                match file.read_exact_at(&mut word, pos + HEADER_LEN as u64) {
                    Ok(()) => u64::from(split_commit_word(u64::from_le_bytes(word)).1),
                    Err(_) => 0,
                }
            } else {
                u64::from(header.event_count)
            };
        }
    }
    Ok(total)
}

/// The chunk headers of a stream file and where they are, walked by
/// their lengths. Zeros where a chunk should start are a gap: to the next
/// 8-byte boundary (the reserved closing slot is 8-aligned) when a header
/// is there, else to the next page (reserved space before a page-aligned
/// slot, or a header whose first byte was never written). A damaged
/// header ends the walk.
struct Chunks<'a> {
    file: &'a File,
    size: u64,
    page: u64,
    pos: u64,
}

impl<'a> Chunks<'a> {
    fn new(file: &'a File) -> io::Result<Self> {
        Ok(Chunks { file, size: file.metadata()?.len(), page: crate::writer::page_size(), pos: 0 })
    }

    fn header_at(&self, pos: u64) -> Option<ChunkHeader> {
        let mut bytes = [0u8; HEADER_LEN];
        if pos + HEADER_LEN as u64 > self.size || self.file.read_exact_at(&mut bytes, pos).is_err() {
            return None;
        }
        if bytes[0] == 0 {
            return None;
        }
        ChunkHeader::decode(&bytes).ok()
    }
}

impl Iterator for Chunks<'_> {
    type Item = (u64, ChunkHeader);

    fn next(&mut self) -> Option<(u64, ChunkHeader)> {
        let mut first = [0u8; 1];
        while self.pos + HEADER_LEN as u64 <= self.size {
            self.file.read_exact_at(&mut first, self.pos).ok()?;
            if first[0] == 0 {
                let aligned = self.pos.next_multiple_of(8);
                self.pos = if aligned > self.pos && self.header_at(aligned).is_some() {
                    aligned
                } else {
                    // The pages of a hole (the flight recorder's cuts) all
                    // read zero: skipped at once, not read one by one.
                    let page = (self.pos + 1).next_multiple_of(self.page);
                    match crate::next_data(self.file, page) {
                        Ok(Some(data)) => (data / self.page * self.page).max(page),
                        Ok(None) => self.size,
                        Err(_) => page,
                    }
                };
                continue;
            }
            let header = self.header_at(self.pos)?;
            let at = self.pos;
            self.pos += HEADER_LEN as u64 + u64::from(header.payload_len);
            return Some((at, header));
        }
        None
    }
}

/// [`committed_events`] summed over the stream files of `raw_dir`
/// ([`crate::stream_files`]); files that cannot be read (gone, not yet
/// written) count 0.
pub fn committed_in_dir(raw_dir: &Path, producers: &[Producer]) -> u64 {
    crate::stream_files(raw_dir).iter().map(|p| committed_events(p, producers).unwrap_or(0)).sum()
}

/// The GPU work the CUDA stream file at `path` says ended so far: the
/// events of its GPU stream locations (kernels, copies, memsets, which
/// CUPTI reports when they end, written by the agent as whole chunks) —
/// not its API calls (host threads' slots), which a thread waiting in a
/// synchronization does not make either, nor its metric samples (GPU
/// metrics, NVLink traffic: their own locations, sampled whatever the GPU
/// does) or memory events. 0 for another producer's stream. A definitions
/// chunk not yet whole (or damaged) ends the walk, as a damaged header does.
pub fn gpu_activity(path: &Path) -> io::Result<u64> {
    let file = File::open(path)?;
    let mut total = 0u64;
    let mut streams: Vec<u32> = Vec::new();
    let mut payload = Vec::new();
    for (pos, header) in Chunks::new(&file)? {
        match header.kind {
            ChunkKind::StreamHeader if header.producer != Producer::Cuda => return Ok(0),
            // The slot reserved for the closing records (the stream's
            // end, its losses) defines no location.
            ChunkKind::Definitions if !header.is_slot() => {
                payload.resize(header.payload_len as usize, 0);
                if file.read_exact_at(&mut payload, pos + HEADER_LEN as u64).is_err()
                    || crc32fast::hash(&payload) != header.payload_crc
                {
                    break;
                }
                gpu_streams(&payload, &mut streams);
            }
            ChunkKind::Events if !header.is_slot() && streams.contains(&header.location) => {
                total += u64::from(header.event_count);
            }
            _ => {}
        }
    }
    Ok(total)
}

/// Adds the GPU stream locations `defs` (a definitions payload) defines
/// to `streams`.
fn gpu_streams(defs: &[u8], streams: &mut Vec<u32>) {
    let mut c = Cursor::new(defs);
    while !c.is_empty() {
        match Definition::decode(&mut c) {
            Ok(Definition::Location { id, kind: LocationKind::GpuStream { .. }, .. }) => streams.push(id),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// What the hang watchdog counts as progress in `raw_dir`: the MPI and
/// NCCL events committed ([`committed_in_dir`]) and the GPU work ended
/// ([`gpu_activity`]) in every stream file; a file that cannot be read
/// counts 0.
pub fn progress_in_dir(raw_dir: &Path) -> u64 {
    crate::stream_files(raw_dir)
        .iter()
        .map(|p| committed_events(p, &[Producer::Mpi, Producer::Nccl]).unwrap_or(0) + gpu_activity(p).unwrap_or(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::tests::header;
    use crate::{Event, StreamFile};

    use super::LocationKind;

    #[test]
    fn committed_events_follow_the_commit_words_and_whole_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.1.mpi.gtr");
        let mut h = header();
        h.producer = Producer::Mpi;
        let stream = StreamFile::create(&path, &h).unwrap();
        let mut slot = stream.open_slot(0, 64 << 10).unwrap();
        assert_eq!(committed_events(&path, &[Producer::Mpi]).unwrap(), 0);
        slot.append(&[(10, Event::Enter { region: 1 }), (20, Event::Leave { region: 1 })]);
        assert_eq!(committed_events(&path, &[Producer::Mpi]).unwrap(), 2);
        slot.append(&[(30, Event::Enter { region: 2 })]);
        assert_eq!(committed_events(&path, &[Producer::Mpi]).unwrap(), 3);
        // A second thread's slot, after the first (page-aligned, zeros
        // before it).
        let mut other = stream.open_slot(1, 64 << 10).unwrap();
        other.append(&[(40, Event::Enter { region: 1 })]);
        assert_eq!(committed_events(&path, &[Producer::Mpi]).unwrap(), 4);
        stream.close_slot(slot);
        assert_eq!(committed_events(&path, &[Producer::Mpi]).unwrap(), 4, "a sealed slot keeps its count");
        assert_eq!(committed_events(&path, &[Producer::Nccl]).unwrap(), 0, "another producer's stream");
        assert_eq!(committed_in_dir(dir.path(), &[Producer::Mpi, Producer::Nccl]), 4);
        assert_eq!(committed_in_dir(&dir.path().join("none"), &[Producer::Mpi]), 0);
        // A FIFO or a link named like a stream is passed over, not opened.
        let fifo = dir.path().join("h.2.mpi.gtr");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink(&path, dir.path().join("h.3.mpi.gtr")).unwrap();
        assert_eq!(committed_in_dir(dir.path(), &[Producer::Mpi]), 4);
    }

    /// Writes `events` of `location` as one whole chunk of `stream`.
    fn batch(stream: &StreamFile, location: u32, events: &[(u64, Event)]) {
        let (mut enc, mut payload) = (crate::EventsEncoder::default(), Vec::new());
        for (t, e) in events {
            enc.put(&mut payload, *t, e);
        }
        stream.write_chunk(ChunkKind::Events, Some(enc.span(location)), &payload).unwrap();
    }

    #[test]
    fn gpu_activity_counts_the_gpu_streams_events_not_api_calls_or_metric_samples() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.1.cuda.gtr");
        let mut h = header();
        h.producer = Producer::Cuda;
        let stream = StreamFile::create(&path, &h).unwrap();
        let mut defs = Vec::new();
        Definition::String { id: 1, value: "x".into() }.encode(&mut defs);
        let gpu = LocationKind::GpuStream { device: 0, context: 1, stream: 7 };
        Definition::Location { id: 1, kind: gpu, name: 1 }.encode(&mut defs);
        Definition::Location { id: 2, kind: LocationKind::DeviceMetrics { device: 0 }, name: 1 }.encode(&mut defs);
        stream.write_chunk(ChunkKind::Definitions, None, &defs).unwrap();
        // A host thread's API calls (a slot), a GPU metric sample: no GPU
        // work ended.
        let mut api = stream.open_slot(0, 64 << 10).unwrap();
        api.append(&[(10, Event::EnterCorrelated { region: 1, correlation: 1 }), (20, Event::Leave { region: 1 })]);
        batch(&stream, 2, &[(30, Event::Metric { metric: 1, value: 80 })]);
        assert_eq!(gpu_activity(&path).unwrap(), 0);
        // A kernel ended on the GPU stream.
        let kernel = Event::KernelBegin { region: 2, correlation: 1, config: Default::default() };
        batch(&stream, 1, &[(40, kernel), (50, Event::Leave { region: 2 })]);
        assert_eq!(gpu_activity(&path).unwrap(), 2);
        // A stream defined later (its definitions chunk before its events),
        // more samples, a synchronization waiting on the host: only the
        // new stream's copy counts.
        let mut defs = Vec::new();
        let other = LocationKind::GpuStream { device: 0, context: 1, stream: 8 };
        Definition::Location { id: 3, kind: other, name: 1 }.encode(&mut defs);
        stream.write_chunk(ChunkKind::Definitions, None, &defs).unwrap();
        batch(&stream, 3, &[(60, Event::Enter { region: 3 }), (70, Event::Leave { region: 3 })]);
        batch(
            &stream,
            2,
            &[(80, Event::Metric { metric: 1, value: 81 }), (90, Event::Metric { metric: 1, value: 82 })],
        );
        api.append(&[(100, Event::EnterCorrelated { region: 4, correlation: 2 })]);
        assert_eq!(gpu_activity(&path).unwrap(), 4);
        // The watchdog's sum: an MPI stream's committed events and the
        // GPU work; another producer's stream has no GPU activity.
        let mpi_path = dir.path().join("h.1.mpi.gtr");
        h.producer = Producer::Mpi;
        let mpi = StreamFile::create(&mpi_path, &h).unwrap();
        let mut slot = mpi.open_slot(0, 64 << 10).unwrap();
        slot.append(&[(10, Event::Enter { region: 1 })]);
        assert_eq!(gpu_activity(&mpi_path).unwrap(), 0);
        assert_eq!(progress_in_dir(dir.path()), 5);
        // A definitions chunk cut short (a writer in the middle of it):
        // the walk ends there, what came before counts.
        let cut = dir.path().join("h.2.cuda.gtr");
        let mut bytes = std::fs::read(&path).unwrap();
        let file = File::open(&path).unwrap();
        let defs: Vec<u64> = Chunks::new(&file)
            .unwrap()
            .filter(|(_, h)| h.kind == ChunkKind::Definitions && !h.is_slot())
            .map(|(pos, _)| pos)
            .collect();
        assert_eq!(
            defs.len(),
            2,
            "both definitions chunks are walked to, the first between the closing slot and a page"
        );
        bytes.truncate(defs[1] as usize + HEADER_LEN + 2);
        std::fs::write(&cut, &bytes).unwrap();
        assert_eq!(gpu_activity(&cut).unwrap(), 2);
        stream.close_slot(api);
        mpi.close_slot(slot);
    }
}
