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

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::raw::chunk::{ChunkHeader, ChunkKind, HEADER_LEN, MAGIC};
use crate::raw::varint::Cursor;
use crate::raw::{Definition, Event, Producer, StreamHeader, parse_stream_file_name};

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
    file: File,
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

const SCAN_WINDOW: usize = 1 << 20;

impl RawFile {
    pub fn open(path: &Path) -> Result<RawFile, ReadError> {
        let io_err = |source| ReadError::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        let mut raw = RawFile {
            path: path.to_path_buf(),
            file,
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
                    let next = raw.find_next_header(pos + 1).map_err(io_err)?;
                    raw.problems.push(Problem::Damaged { offset: pos, len: next - pos, reason });
                    pos = next;
                    continue;
                }
            };
            let start = pos + HEADER_LEN as u64;
            let end = start + u64::from(header.payload_len);
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
        let mut cursor = Cursor::new(payload);
        match cursor.u64() {
            Ok(time) => Events { cursor, time, left: chunk.header.event_count },
            Err(_) => Events { cursor, time: 0, left: 0 },
        }
    }

    fn header_at(&self, pos: u64) -> io::Result<Result<ChunkHeader, String>> {
        let mut h = [0u8; HEADER_LEN];
        let avail = (self.size - pos).min(HEADER_LEN as u64) as usize;
        self.file.read_exact_at(&mut h[..avail], pos)?;
        if avail < HEADER_LEN {
            return Ok(Err("file ends inside a chunk header".into()));
        }
        Ok(ChunkHeader::decode(&h).map_err(|p| p.to_string()))
    }

    /// The offset of the next decodable header at or after `from`, or the
    /// end of the file.
    fn find_next_header(&self, mut from: u64) -> io::Result<u64> {
        let mut window = vec![0u8; SCAN_WINDOW];
        while from < self.size {
            let n = (self.size - from).min(SCAN_WINDOW as u64) as usize;
            self.file.read_exact_at(&mut window[..n], from)?;
            for i in memchr_all(&window[..n], MAGIC[0]) {
                let pos = from + i as u64;
                if self.header_at(pos)?.is_ok() {
                    return Ok(pos);
                }
            }
            // Step back a little so a magic split across windows is found.
            from += (n as u64).saturating_sub(HEADER_LEN as u64).max(1);
        }
        Ok(self.size)
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

fn memchr_all(hay: &[u8], needle: u8) -> impl Iterator<Item = usize> + '_ {
    hay.iter().enumerate().filter(move |(_, b)| **b == needle).map(|(i, _)| i)
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

/// The events of one chunk, with absolute timestamps. Stops at the first
/// undecodable byte (the checksum makes that a bug, not damage).
#[derive(Debug, Clone)]
pub struct Events<'a> {
    cursor: Cursor<'a>,
    time: u64,
    left: u32,
}

impl Iterator for Events<'_> {
    type Item = (u64, Event);

    #[inline]
    fn next(&mut self) -> Option<(u64, Event)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match Event::decode(&mut self.cursor) {
            Ok((delta, ev)) => {
                self.time = self.time.wrapping_add_signed(delta);
                Some((self.time, ev))
            }
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}
