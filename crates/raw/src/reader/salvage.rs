//! Walking a damaged or unfinished file: slots read up to their commit
//! word, zeros a writer reserved told from a chunk torn by a kill, and the
//! scan for the next valid header past damage.

use std::io;

use super::{EventChunk, Problem, RawFile};
use crate::Event;
use crate::chunk::{ChunkHeader, ChunkKind, HEADER_LEN, MAGIC, SEAL_LEN, SLOT_PREFIX, Seal, split_commit_word};
use crate::varint::Cursor;

const SCAN_WINDOW: usize = 1 << 20;

/// Bytes where a chunk should start that no writer wrote (see
/// [`RawFile::unwritten`]); `next` is where reading goes on.
pub(super) enum Unwritten {
    /// Zeros a writer reserved: skipped silently.
    Reserved { next: u64 },
    /// A chunk being written when its process ended: a torn write.
    Torn { next: u64 },
}

impl RawFile {
    /// Reads the slot chunk at `pos`: its committed bytes, sealed or not.
    pub(super) fn read_slot(&mut self, pos: u64, slot: ChunkHeader) -> io::Result<()> {
        let slot_end = (pos + HEADER_LEN as u64 + u64::from(slot.payload_len)).min(self.size);
        let payload_at = pos + SLOT_PREFIX as u64;
        if payload_at > slot_end {
            self.problems.push(Problem::Truncated { offset: pos, have: slot_end - pos, need: SLOT_PREFIX as u64 });
            return Ok(());
        }
        let mut word = [0u8; 8];
        self.file.read_exact_at(&mut word, pos + HEADER_LEN as u64)?;
        let (bytes, events) = split_commit_word(u64::from_le_bytes(word));
        let room = slot_end - payload_at;
        let nominal_end = pos + HEADER_LEN as u64 + u64::from(slot.payload_len);
        let mut cut_short = false;
        if u64::from(bytes) > room {
            if nominal_end <= self.size {
                let reason = format!("commit word claims {bytes} bytes in a slot of {room}");
                self.problems.push(Problem::Damaged { offset: pos, len: slot_end - pos, reason });
                return Ok(());
            }
            // The file was cut inside the slot (a copy cut short): keep
            // the events that are there.
            let need = SLOT_PREFIX as u64 + u64::from(bytes);
            self.problems.push(Problem::Truncated { offset: pos, have: slot_end - pos, need });
            cut_short = true;
        }
        let mut payload = vec![0u8; u64::from(bytes).min(room) as usize];
        self.file.read_exact_at(&mut payload, payload_at)?;
        let seal_at = payload_at + u64::from(bytes);
        let mut seal = [0u8; SEAL_LEN];
        let sealed = if !cut_short && seal_at + SEAL_LEN as u64 <= slot_end {
            self.file.read_exact_at(&mut seal, seal_at)?;
            Seal::decode(&seal).filter(|s| s.bytes == bytes && s.events == events)
        } else {
            None
        };
        match slot.kind {
            ChunkKind::Definitions => self.decode_definitions(pos, &payload),
            ChunkKind::StreamHeader => {}
            ChunkKind::Events if payload.is_empty() => {}
            ChunkKind::Events => {
                let mut header = ChunkHeader { flags: 0, payload_len: payload.len() as u32, ..slot };
                if let Some(s) = sealed {
                    header.payload_crc = s.payload_crc;
                    header.event_count = s.events;
                    header.min_time = s.min_time;
                    header.max_time = s.max_time;
                } else {
                    // The process ended while recording here: what the
                    // seal would have said comes from the events.
                    header.payload_crc = crc32fast::hash(&payload);
                    header.event_count = events;
                    let probe = EventChunk { offset: payload_at, header };
                    let (mut n, mut min, mut max) = (0u32, u64::MAX, 0u64);
                    for (t, _) in RawFile::events(&probe, &payload) {
                        n += 1;
                        min = min.min(t);
                        max = max.max(t);
                    }
                    header.event_count = n;
                    header.min_time = if n == 0 { 0 } else { min };
                    header.max_time = max;
                    if !cut_short {
                        let cut = self.torn_events(seal_at, slot_end)?;
                        self.problems.push(Problem::OpenSlot { offset: pos, events: n, cut });
                    }
                }
                self.chunks.push(EventChunk { offset: payload_at, header });
            }
        }
        Ok(())
    }

    /// How many events were being written after the committed bytes of an
    /// open slot: 0 when the bytes after them are zeros (nothing was).
    fn torn_events(&self, from: u64, slot_end: u64) -> io::Result<u32> {
        let mut tail = vec![0u8; (slot_end - from).min(4096) as usize];
        self.file.read_exact_at(&mut tail, from)?;
        let Some(last) = tail.iter().rposition(|b| *b != 0) else {
            return Ok(0);
        };
        // Staged events are committed together: count those the torn bytes
        // held (at least the one being written).
        let mut c = Cursor::new(&tail[..=last]);
        let mut n = 0;
        while !c.is_empty() && Event::decode(&mut c).is_ok() {
            n += 1;
        }
        Ok(n.max(1))
    }

    /// What the bytes at `pos`, where a chunk should start and none does,
    /// are when they begin with zeros: space a writer reserved and never
    /// used, or a chunk whose header was not written; `None` when they are
    /// neither (damage).
    ///
    /// Zeros followed by a chunk (or the end) are reserved space: the gap
    /// before a page-aligned slot, which can be shorter than a header, or
    /// a slot that was allocated and never started. Zeros followed by bytes
    /// that make no chunk are a chunk whose header — written after its
    /// payload, its first byte last of all — was not (or not wholly)
    /// written when its process ended.
    pub(super) fn unwritten(&self, pos: u64) -> io::Result<Option<Unwritten>> {
        let mut first = [0u8; 1];
        self.file.read_exact_at(&mut first, pos)?;
        if first[0] != 0 {
            return Ok(None);
        }
        let next = self.skip_zeros(pos)?;
        if next >= self.size || self.header_at(next)?.is_ok() {
            return Ok(Some(Unwritten::Reserved { next }));
        }
        Ok(Some(Unwritten::Torn { next: self.find_next_header(next + 1)? }))
    }

    /// The offset of the first non-zero byte at or after `from`, or the end.
    fn skip_zeros(&self, mut from: u64) -> io::Result<u64> {
        // Holes (the flight recorder's cuts, unused slot tails) are skipped
        // without reading them: a long run's stream can be gigabytes of
        // holes. Where the file system cannot tell, this finds nothing.
        from = self.next_data(from);
        let mut window = vec![0u8; SCAN_WINDOW];
        while from < self.size {
            let n = (self.size - from).min(SCAN_WINDOW as u64) as usize;
            self.file.read_exact_at(&mut window[..n], from)?;
            if let Some(i) = window[..n].iter().position(|b| *b != 0) {
                return Ok(from + i as u64);
            }
            from += n as u64;
        }
        Ok(self.size)
    }

    /// The start of the data at or after `from`, or `from` where the file
    /// system does not say; the end when only a hole follows.
    fn next_data(&self, from: u64) -> u64 {
        match self.file.next_data(from) {
            Ok(Some(at)) => at.clamp(from, self.size),
            Ok(None) => self.size,
            Err(_) => from,
        }
    }

    pub(super) fn header_at(&self, pos: u64) -> io::Result<Result<ChunkHeader, String>> {
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
    pub(super) fn find_next_header(&self, mut from: u64) -> io::Result<u64> {
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
}

fn memchr_all(hay: &[u8], needle: u8) -> impl Iterator<Item = usize> + '_ {
    hay.iter().enumerate().filter(move |(_, b)| **b == needle).map(|(i, _)| i)
}
