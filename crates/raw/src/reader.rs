//! Reading a stream file back, salvaging what a crash or damage left.
//!
//! [`RawFile::open`] walks the file by chunk headers: it decodes the stream
//! header and every definitions chunk, and indexes event chunks without
//! reading their payloads. A damaged header makes it scan forward for the
//! next valid header; a chunk cut short by the end of the file is dropped.
//! Every such loss becomes a [`Problem`] that says what was dropped. Event
//! payloads are read and checked one chunk at a time by
//! [`RawFile::read_events`], so memory stays bounded however large the
//! file is.
//!
//! A `RawFile` does not hold its file open for its whole life: a merge of
//! thousands of streams would run out of file descriptors (see
//! [`open_budget`]). Past the budget, a stream's file is opened for each
//! chunk read and closed after it.

mod budget;
mod events;
mod salvage;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::chunk::{ChunkHeader, ChunkKind, HEADER_LEN};
use crate::varint::Cursor;
use crate::{Definition, Producer, StreamHeader, parse_stream_file_name};
use budget::Handle;
pub use budget::open_budget;
pub use events::{Events, OwnedEvents};
use salvage::Unwritten;

/// Something of the file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Bytes between `offset` and `offset + len` held no valid chunk.
    Damaged { offset: u64, len: u64, reason: String },
    /// The last chunk, at `offset`, was cut short: `have` of `need` bytes.
    Truncated { offset: u64, have: u64, need: u64 },
    /// The chunk at `offset` had a valid header but a bad payload.
    BadPayload { offset: u64, kind: ChunkKind, events: u32 },
    /// The stream header was lost; the identity came from the file name.
    NoStreamHeader,
    /// The slot at `offset` was still open when its process ended (killed,
    /// or ended by a signal): its `events` committed events are kept, and
    /// `cut` events being written at that instant were dropped.
    OpenSlot { offset: u64, events: u32, cut: u32 },
    /// A chunk was being written when its process ended: its payload is
    /// there but not its header, or not all of it (a header is written
    /// last, its first byte last of all), `len` bytes dropped. Nothing
    /// committed refers to it (definitions are written before the events
    /// that use them commit, a slot's events after its header).
    TornWrite { offset: u64, len: u64 },
}

impl Problem {
    /// Whether this is damage (as opposed to the normal trace of a process
    /// that ended while recording).
    pub fn is_damage(&self) -> bool {
        !matches!(self, Problem::OpenSlot { .. } | Problem::TornWrite { .. })
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Damaged { offset, len, reason } => {
                write!(f, "{len} damaged bytes at offset {offset} skipped ({reason})")
            }
            Problem::Truncated { offset, have, need } => {
                write!(f, "last chunk at offset {offset} cut short ({have} of {need} bytes) dropped")
            }
            Problem::BadPayload { offset, kind, events } => match kind {
                ChunkKind::Events => {
                    write!(f, "chunk at offset {offset} failed its checksum: {events} events dropped")
                }
                _ => write!(f, "{kind:?} chunk at offset {offset} failed its checksum: dropped"),
            },
            Problem::NoStreamHeader => {
                write!(f, "stream header lost; process identity taken from the file name")
            }
            Problem::TornWrite { offset, len } => {
                write!(f, "chunk at offset {offset} was being written when its process ended: {len} bytes dropped")
            }
            Problem::OpenSlot { offset, events, cut } => {
                write!(f, "buffer at offset {offset} still open at the end: {events} events kept, {cut} cut")
            }
        }
    }
}

/// An event chunk found in the file, not yet read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventChunk {
    /// Offset of the payload in the file.
    pub offset: u64,
    pub header: ChunkHeader,
}

/// A stream file opened for reading.
#[derive(Debug)]
pub struct RawFile {
    path: PathBuf,
    file: Handle,
    pub header: StreamHeader,
    pub definitions: Vec<Definition>,
    pub chunks: Vec<EventChunk>,
    pub problems: Vec<Problem>,
    pub size: u64,
}

/// The file could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is not a gputrace raw stream")]
    NotAStream { path: PathBuf },
}

impl RawFile {
    pub fn open(path: &Path) -> Result<RawFile, ReadError> {
        let io_err = |source| ReadError::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        let mut raw = RawFile {
            path: path.to_path_buf(),
            file: Handle::indexing(path, file),
            header: placeholder_header(path),
            definitions: Vec::new(),
            chunks: Vec::new(),
            problems: Vec::new(),
            size,
        };
        let mut have_header = false;
        let mut pos = 0u64;
        let mut payload = Vec::new();
        while pos < size {
            let header = match raw.header_at(pos).map_err(io_err)? {
                Ok(h) => h,
                Err(reason) => {
                    match raw.unwritten(pos).map_err(io_err)? {
                        Some(Unwritten::Reserved { next }) => pos = next,
                        Some(Unwritten::Torn { next }) => {
                            raw.problems.push(Problem::TornWrite { offset: pos, len: next - pos });
                            pos = next;
                        }
                        None => {
                            let next = raw.find_next_header(pos + 1).map_err(io_err)?;
                            raw.problems.push(Problem::Damaged { offset: pos, len: next - pos, reason });
                            pos = next;
                        }
                    }
                    continue;
                }
            };
            let start = pos + HEADER_LEN as u64;
            let end = start + u64::from(header.payload_len);
            if header.is_slot() {
                raw.read_slot(pos, header).map_err(io_err)?;
                pos = end.min(size);
                continue;
            }
            if end > size {
                raw.problems.push(Problem::Truncated { offset: pos, have: size - pos, need: end - pos });
                break;
            }
            match header.kind {
                ChunkKind::Events => raw.chunks.push(EventChunk { offset: start, header }),
                ChunkKind::StreamHeader | ChunkKind::Definitions => {
                    payload.resize(header.payload_len as usize, 0);
                    raw.file.read_exact_at(&mut payload, start).map_err(io_err)?;
                    if !header.payload_ok(&payload) {
                        raw.problems.push(Problem::BadPayload { offset: pos, kind: header.kind, events: 0 });
                    } else if header.kind == ChunkKind::StreamHeader {
                        if let Ok(h) = StreamHeader::decode(&payload) {
                            raw.header = h;
                            have_header = true;
                        }
                    } else {
                        raw.decode_definitions(pos, &payload);
                    }
                }
            }
            pos = end;
        }
        if !have_header {
            if raw.definitions.is_empty() && raw.chunks.is_empty() {
                return Err(ReadError::NotAStream { path: path.to_path_buf() });
            }
            raw.problems.push(Problem::NoStreamHeader);
        }
        raw.file.settle();
        Ok(raw)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and checks the payload of `chunk` into `buf`. A bad payload is
    /// reported as a [`Problem`], never as a panic.
    pub fn read_payload(&self, chunk: &EventChunk, buf: &mut Vec<u8>) -> Result<(), Problem> {
        buf.resize(chunk.header.payload_len as usize, 0);
        let bad = || Problem::BadPayload {
            offset: chunk.offset - HEADER_LEN as u64,
            kind: chunk.header.kind,
            events: chunk.header.event_count,
        };
        self.file.read_exact_at(buf, chunk.offset).map_err(|_| bad())?;
        if chunk.header.payload_ok(buf) { Ok(()) } else { Err(bad()) }
    }

    /// The events of a payload read by [`read_payload`](Self::read_payload).
    /// The payload starts with the chunk's base time (varint); each event's
    /// timestamp is a delta from the previous one, the first from the base.
    pub fn events<'a>(chunk: &EventChunk, payload: &'a [u8]) -> Events<'a> {
        Events::of_payload(payload, chunk.header.event_count)
    }

    fn decode_definitions(&mut self, offset: u64, payload: &[u8]) {
        let mut c = Cursor::new(payload);
        while !c.is_empty() {
            match Definition::decode(&mut c) {
                Ok(d) => self.definitions.push(d),
                Err(_) => {
                    self.problems.push(Problem::Damaged {
                        offset: offset + (HEADER_LEN + c.position()) as u64,
                        len: (payload.len() - c.position()) as u64,
                        reason: "undecodable definition".into(),
                    });
                    return;
                }
            }
        }
    }
}

/// A header made from the file name, for a file whose header was lost.
fn placeholder_header(path: &Path) -> StreamHeader {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (host, pid, producer) =
        parse_stream_file_name(name).unwrap_or_else(|| ("unknown".into(), 0, Producer::Synthetic));
    StreamHeader {
        producer,
        host,
        pid,
        process_start: 0,
        clock_domain: 0,
        monotonic_ns: 0,
        realtime_ns: 0,
        rank_hint: None,
        command: Vec::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::writer::page_size;
    use crate::{Event, StreamFile};

    pub(crate) fn header() -> StreamHeader {
        StreamHeader {
            producer: Producer::Synthetic,
            host: "h".into(),
            pid: 1,
            process_start: 0,
            clock_domain: 0,
            monotonic_ns: 0,
            realtime_ns: 0,
            rank_hint: None,
            command: Vec::new(),
        }
    }

    /// A definitions payload of exactly `len` bytes (one String record).
    pub(super) fn definitions_of_len(len: usize) -> Vec<u8> {
        for n in (0..=len).rev() {
            let mut out = Vec::new();
            Definition::String { id: 1, value: "x".repeat(n) }.encode(&mut out);
            if out.len() == len {
                return out;
            }
        }
        panic!("no definitions payload of {len} bytes");
    }

    /// Writes a definitions chunk that ends `gap` bytes before a page
    /// boundary, so that the page-aligned slot opened next follows a gap
    /// of `gap` zero bytes.
    fn chunk_ending_before_a_page(stream: &StreamFile, gap: u64) {
        let page = page_size();
        let end = std::fs::metadata(stream.path()).unwrap().len();
        let target = (end + HEADER_LEN as u64 + 200).next_multiple_of(page) - gap;
        let payload = definitions_of_len((target - end) as usize - HEADER_LEN);
        stream.write_chunk(ChunkKind::Definitions, None, &payload).unwrap();
        assert_eq!(std::fs::metadata(stream.path()).unwrap().len(), target);
    }

    /// Slots are page-aligned: the zeros before one may be fewer than a
    /// chunk header's 48 bytes, and are still no damage — whether the
    /// slot was closed or its process was killed while recording into it.
    #[test]
    fn a_gap_shorter_than_a_header_before_a_slot_is_not_damage() {
        for gap in [1, 18, 47, 48, 100] {
            for killed in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("h.1.synthetic.gtr");
                let stream = StreamFile::create(&path, &header()).unwrap();
                chunk_ending_before_a_page(&stream, gap);
                let mut slot = stream.open_slot(0, 64 << 10).unwrap();
                slot.append(&[(10, Event::Enter { region: 1 }), (11, Event::Leave { region: 1 })]);
                if killed {
                    drop(slot);
                } else {
                    stream.close_slot(slot);
                }
                let raw = RawFile::open(&path).unwrap();
                let damage: Vec<_> = raw.problems.iter().filter(|p| p.is_damage()).collect();
                assert!(damage.is_empty(), "gap {gap}, killed {killed}: {damage:?}");
                assert_eq!(raw.chunks.len(), 1, "gap {gap}, killed {killed}");
                assert_eq!(raw.chunks[0].header.event_count, 2, "gap {gap}, killed {killed}");
                assert_eq!(raw.definitions.len(), 1, "gap {gap}, killed {killed}");
            }
        }
    }
}

/// Writer and reader together: what a kill in the middle of writing a
/// header leaves.
#[cfg(test)]
mod torn_tests {
    use super::tests::{definitions_of_len, header};
    use super::*;
    use crate::StreamFile;

    fn len(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    /// The writer writes a header's first byte last (`write_header_at`,
    /// `start_slot`), so a kill while it writes one leaves the header's
    /// other bytes, or some of them, after a zero: a torn write, whatever
    /// part of the header was written — of a whole chunk (its payload is
    /// already there) or of a slot (nothing committed in it yet). The
    /// chunks around it are read.
    #[test]
    fn a_header_cut_before_its_first_byte_is_a_torn_write() {
        for written in [1, 2, 8, 17, 33, HEADER_LEN] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("h.1.synthetic.gtr");
            let stream = StreamFile::create(&path, &header()).unwrap();
            stream.write_chunk(ChunkKind::Definitions, None, &definitions_of_len(300)).unwrap();
            let chunk_at = len(&path);
            stream.write_chunk(ChunkKind::Definitions, None, &definitions_of_len(500)).unwrap();
            let slot = stream.open_slot(0, 64 << 10).unwrap();
            let slot_at = len(&path) - slot.len() as u64;
            drop(slot);
            let mut last = Vec::new();
            Definition::String { id: 9, value: "after".into() }.encode(&mut last);
            stream.write_chunk(ChunkKind::Definitions, None, &last).unwrap();
            drop(stream);

            // Cut both headers: bytes 1..written are there, the rest not.
            let mut bytes = std::fs::read(&path).unwrap();
            for at in [chunk_at as usize, slot_at as usize] {
                bytes[at] = 0;
                bytes[at + written..at + HEADER_LEN].fill(0);
            }
            std::fs::write(&path, &bytes).unwrap();

            let raw = RawFile::open(&path).unwrap();
            assert!(!raw.problems.is_empty(), "{written} bytes: the cut went unnoticed");
            assert!(
                raw.problems.iter().all(|p| matches!(p, Problem::TornWrite { .. })),
                "{written} bytes: {:?}",
                raw.problems
            );
            let ids: Vec<u32> = raw
                .definitions
                .iter()
                .filter_map(|d| if let Definition::String { id, .. } = d { Some(*id) } else { None })
                .collect();
            assert_eq!(ids, [1, 9], "{written} bytes");
            assert!(raw.chunks.is_empty());
        }
    }

    /// The closing slot's commit word is one aligned store: the slot is
    /// 8-aligned, whatever the length of the stream header, and still
    /// reads.
    #[test]
    fn the_closing_slots_commit_word_never_crosses_a_page() {
        let page = crate::writer::page_size();
        for arg in (page - 200..page).map(|n| n as usize) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("h.1.synthetic.gtr");
            let mut h = header();
            h.command = vec!["x".repeat(arg)];
            let stream = StreamFile::create(&path, &h).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let first = ChunkHeader::decode(bytes[..HEADER_LEN].try_into().unwrap()).unwrap();
            let header_end = (HEADER_LEN as u32 + first.payload_len) as u64;
            let slot_at = len(&path) - crate::writer::CLOSING_SLOT_LEN as u64;
            let word_at = slot_at + HEADER_LEN as u64;
            assert!(word_at % page <= page - 8, "command of {arg}: commit word at {word_at}");
            assert!(slot_at.is_multiple_of(8) && slot_at - header_end < 8, "command of {arg}: slot at {slot_at}");
            stream.write_closing(&definitions_of_len(100)).unwrap();
            let raw = RawFile::open(&path).unwrap();
            assert!(raw.problems.is_empty(), "command of {arg}: {:?}", raw.problems);
            assert_eq!(raw.definitions.len(), 1, "command of {arg}");
        }
    }
}
