//! The chunk: the unit in which raw streams are written, checked and salvaged.
//!
//! Every chunk starts with a fixed 48-byte header that carries its own
//! checksum, so a reader can walk a file by headers alone (skipping event
//! payloads it does not need yet) and can tell a damaged header from a
//! damaged payload. The payload has a second checksum, checked when the
//! payload is used.
//!
//! ```text
//! offset size  field
//!  0     4     magic "GTRC"
//!  4     1     format version
//!  5     1     chunk kind (stream header, definitions, events)
//!  6     1     producer (mpi, cuda, nccl, ...)
//!  7     1     flags: bit 0 = a slot chunk (see below)
//!  8     4     payload length, bytes (little-endian); of a slot chunk,
//!              the slot's length

//! 12     4     CRC-32 of the payload
//! 16     4     location (event chunks; 0 otherwise)
//! 20     4     number of events (event chunks; 0 otherwise)
//! 24     8     smallest timestamp in the chunk (event chunks)
//! 32     8     largest timestamp in the chunk (event chunks)
//! 40     4     CRC-32 of bytes 0..40
//! 44     4     reserved, 0
//! ```
//!
//! A *slot chunk* is filled in place: the recorder maps its bytes (a
//! shared file mapping) and appends events there, so what a thread
//! recorded is in the page cache the moment it is recorded, and survives
//! the process however it dies. Its header is written once, when the slot
//! is opened; what the slot holds is said by a commit word and, once the
//! slot is closed, a seal:
//!
//! ```text
//! slot offset  size  field
//!  0           48    chunk header (flags bit 0; payload length = slot length)
//! 48            8    commit word: bytes committed (low 32 bits), events (high 32)
//! 56           ...   payload: the committed bytes, then the seal
//! 56+bytes     32    seal: bytes, events (u32 each), smallest and largest
//!                    timestamp (u64 each), CRC-32 of the payload, CRC-32
//!                    of the seal's first 28 bytes
//! ```
//!
//! The writer stores the commit word (one aligned 8-byte store) after the
//! bytes it covers, so a reader takes every committed event and ignores a
//! torn one after them. A slot without a valid seal belongs to a process
//! that ended while recording into it; the reader decodes its committed
//! events to learn what the seal would have said.

use crate::Producer;

pub const MAGIC: [u8; 4] = *b"GTRC";
/// Version of the raw format; bumped on any incompatible change (version
/// 3 added the NVTX producer, its paradigm, the CODE region role and the
/// ThreadName definition, which a version-2 reader would take for damage;
/// version 4 the memory events MemAlloc, MemFree and MemPool; version 5
/// the SourceLost definition; version 6 the CUDA graph definitions
/// GraphNode, GraphCaptured and GraphLaunchReported; version 7 the
/// sampled call stacks: the Module and Frame definitions, the Sample
/// event; version 8 the CallPath event, an MPI call's call path, and the
/// Python frames of sampled stacks: the PyCode and PyFrame definitions).
pub const FORMAT_VERSION: u8 = 8;
/// The oldest version this reader still reads (version 1 had no slot
/// chunks; its chunks are read as they are).
pub const OLDEST_VERSION: u8 = 1;
pub const HEADER_LEN: usize = 48;
/// Payloads larger than this are refused on read: no writer makes them, so a
/// larger length means a damaged header.
pub const MAX_PAYLOAD: u32 = 64 << 20;
/// Flag bit of a slot chunk.
pub const FLAG_SLOT: u8 = 1;
/// Bytes of a slot before its payload: the header and the commit word.
pub const SLOT_PREFIX: usize = HEADER_LEN + 8;
/// Length of a slot's seal.
pub const SEAL_LEN: usize = 32;

/// What a chunk's payload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChunkKind {
    /// The stream header: which process and producer wrote the file.
    StreamHeader = 1,
    /// Definition records (strings, regions, locations, communicators, ...).
    Definitions = 2,
    /// Events of one location.
    Events = 3,
}

impl ChunkKind {
    fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::StreamHeader),
            2 => Some(Self::Definitions),
            3 => Some(Self::Events),
            _ => None,
        }
    }
}

/// A decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    pub version: u8,
    pub kind: ChunkKind,
    pub producer: Producer,
    /// [`FLAG_SLOT`] for a slot chunk.
    pub flags: u8,
    pub payload_len: u32,
    pub payload_crc: u32,
    pub location: u32,
    pub event_count: u32,
    pub min_time: u64,
    pub max_time: u64,
}

/// Why a header could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderProblem {
    NoMagic,
    BadChecksum,
    UnknownVersion(u8),
    UnknownKind(u8),
    UnknownProducer(u8),
    TooLong(u32),
}

impl ChunkHeader {
    /// A header for `payload`, with its checksum.
    pub fn for_payload(kind: ChunkKind, producer: Producer, payload: &[u8]) -> Self {
        ChunkHeader {
            version: FORMAT_VERSION,
            kind,
            producer,
            flags: 0,
            payload_len: payload.len() as u32,
            payload_crc: crc32fast::hash(payload),
            location: 0,
            event_count: 0,
            min_time: 0,
            max_time: 0,
        }
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC);
        h[4] = self.version;
        h[5] = self.kind as u8;
        h[6] = self.producer as u8;
        h[7] = self.flags;
        h[8..12].copy_from_slice(&self.payload_len.to_le_bytes());
        h[12..16].copy_from_slice(&self.payload_crc.to_le_bytes());
        h[16..20].copy_from_slice(&self.location.to_le_bytes());
        h[20..24].copy_from_slice(&self.event_count.to_le_bytes());
        h[24..32].copy_from_slice(&self.min_time.to_le_bytes());
        h[32..40].copy_from_slice(&self.max_time.to_le_bytes());
        let crc = crc32fast::hash(&h[0..40]);
        h[40..44].copy_from_slice(&crc.to_le_bytes());
        h
    }

    pub fn decode(h: &[u8; HEADER_LEN]) -> Result<Self, HeaderProblem> {
        if h[0..4] != MAGIC {
            return Err(HeaderProblem::NoMagic);
        }
        let le32 = |r: std::ops::Range<usize>| u32::from_le_bytes(h[r].try_into().unwrap());
        let le64 = |r: std::ops::Range<usize>| u64::from_le_bytes(h[r].try_into().unwrap());
        if crc32fast::hash(&h[0..40]) != le32(40..44) {
            return Err(HeaderProblem::BadChecksum);
        }
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&h[4]) {
            return Err(HeaderProblem::UnknownVersion(h[4]));
        }
        let kind = ChunkKind::from_u8(h[5]).ok_or(HeaderProblem::UnknownKind(h[5]))?;
        let producer = Producer::from_u8(h[6]).ok_or(HeaderProblem::UnknownProducer(h[6]))?;
        let payload_len = le32(8..12);
        if payload_len > MAX_PAYLOAD {
            return Err(HeaderProblem::TooLong(payload_len));
        }
        Ok(ChunkHeader {
            version: h[4],
            kind,
            producer,
            flags: h[7] & FLAG_SLOT,
            payload_len,
            payload_crc: le32(12..16),
            location: le32(16..20),
            event_count: le32(20..24),
            min_time: le64(24..32),
            max_time: le64(32..40),
        })
    }

    pub fn payload_ok(&self, payload: &[u8]) -> bool {
        payload.len() == self.payload_len as usize && crc32fast::hash(payload) == self.payload_crc
    }

    /// The header that opens a slot of `slot_len` bytes (header included).
    pub fn for_slot(kind: ChunkKind, producer: Producer, location: u32, slot_len: usize) -> Self {
        ChunkHeader {
            version: FORMAT_VERSION,
            kind,
            producer,
            flags: FLAG_SLOT,
            payload_len: (slot_len - HEADER_LEN) as u32,
            payload_crc: 0,
            location,
            event_count: 0,
            min_time: 0,
            max_time: 0,
        }
    }

    pub fn is_slot(&self) -> bool {
        self.flags & FLAG_SLOT != 0
    }
}

/// The commit word of a slot: bytes and events committed.
#[inline]
pub fn commit_word(bytes: u32, events: u32) -> u64 {
    u64::from(bytes) | (u64::from(events) << 32)
}

/// Splits a commit word into (bytes, events).
pub fn split_commit_word(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

/// What a closed slot holds, written right after its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seal {
    pub bytes: u32,
    pub events: u32,
    pub min_time: u64,
    pub max_time: u64,
    pub payload_crc: u32,
}

impl Seal {
    pub fn encode(&self) -> [u8; SEAL_LEN] {
        let mut s = [0u8; SEAL_LEN];
        s[0..4].copy_from_slice(&self.bytes.to_le_bytes());
        s[4..8].copy_from_slice(&self.events.to_le_bytes());
        s[8..16].copy_from_slice(&self.min_time.to_le_bytes());
        s[16..24].copy_from_slice(&self.max_time.to_le_bytes());
        s[24..28].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32fast::hash(&s[0..28]);
        s[28..32].copy_from_slice(&crc.to_le_bytes());
        s
    }

    /// The seal in `s`, if its checksum holds.
    pub fn decode(s: &[u8; SEAL_LEN]) -> Option<Seal> {
        let le32 = |at: usize| u32::from_le_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]]);
        let le64 = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
        (crc32fast::hash(&s[0..28]) == le32(28)).then(|| Seal {
            bytes: le32(0),
            events: le32(4),
            min_time: le64(8),
            max_time: le64(16),
            payload_crc: le32(24),
        })
    }
}

impl std::fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderProblem::NoMagic => write!(f, "no chunk magic"),
            HeaderProblem::BadChecksum => write!(f, "chunk header checksum mismatch"),
            HeaderProblem::UnknownVersion(v) => write!(f, "unknown raw format version {v}"),
            HeaderProblem::UnknownKind(k) => write!(f, "unknown chunk kind {k}"),
            HeaderProblem::UnknownProducer(p) => write!(f, "unknown producer {p}"),
            HeaderProblem::TooLong(n) => write!(f, "implausible chunk length {n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_detects_damage() {
        let payload = b"hello events";
        let mut h = ChunkHeader::for_payload(ChunkKind::Events, Producer::Mpi, payload);
        h.location = 7;
        h.event_count = 3;
        h.min_time = 10;
        h.max_time = 99;
        let bytes = h.encode();
        assert_eq!(ChunkHeader::decode(&bytes), Ok(h));
        assert!(h.payload_ok(payload));
        assert!(!h.payload_ok(b"hello evenTs"));
        let mut bad = bytes;
        bad[20] ^= 1;
        assert_eq!(ChunkHeader::decode(&bad), Err(HeaderProblem::BadChecksum));
        bad = bytes;
        bad[0] = b'X';
        assert_eq!(ChunkHeader::decode(&bad), Err(HeaderProblem::NoMagic));
    }

    #[test]
    fn slot_header_and_seal_round_trip() {
        let h = ChunkHeader::for_slot(ChunkKind::Events, Producer::Mpi, 3, 64 << 10);
        let back = ChunkHeader::decode(&h.encode()).unwrap();
        assert!(back.is_slot());
        assert_eq!((back.location, back.payload_len), (3, (64 << 10) - HEADER_LEN as u32));
        let seal = Seal { bytes: 100, events: 7, min_time: 5, max_time: 9, payload_crc: 0xdead };
        let mut bytes = seal.encode();
        assert_eq!(Seal::decode(&bytes), Some(seal));
        bytes[3] ^= 0x40;
        assert_eq!(Seal::decode(&bytes), None);
        assert_eq!(Seal::decode(&[0; SEAL_LEN]), None, "zeros are no seal");
        assert_eq!(split_commit_word(commit_word(12, 3)), (12, 3));
    }
}
