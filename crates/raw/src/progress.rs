//! How far streams being written have got, cheaply: for a watchdog that
//! asks every second or so whether a job still records anything
//! (`gputrace --hang-timeout`). Only the chunk headers are read: a slot's
//! committed events are its commit word's, a whole chunk's its header's;
//! no payload is decoded.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::Producer;
use crate::chunk::{ChunkHeader, ChunkKind, HEADER_LEN, split_commit_word};

/// The events committed so far in the stream file at `path`, if its
/// producer is one of `producers` (0 otherwise). Zeros where a chunk
/// should start are reserved space before a page-aligned slot (or a
/// header whose first byte was never written): the walk goes on at the
/// next page. A damaged header ends the walk: what came before counts.
pub fn committed_events(path: &Path, producers: &[Producer]) -> io::Result<u64> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let page = crate::writer::page_size();
    let mut total = 0u64;
    let mut pos = 0u64;
    let mut bytes = [0u8; HEADER_LEN];
    while pos + HEADER_LEN as u64 <= size {
        file.read_exact_at(&mut bytes, pos)?;
        if bytes[0] == 0 {
            pos = (pos + 1).next_multiple_of(page);
            continue;
        }
        let Ok(header) = ChunkHeader::decode(&bytes) else { break };
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
        pos += HEADER_LEN as u64 + u64::from(header.payload_len);
    }
    Ok(total)
}

/// [`committed_events`] summed over the stream files of `raw_dir`
/// ([`crate::stream_files`]); files that cannot be read (gone, not yet
/// written) count 0.
pub fn committed_in_dir(raw_dir: &Path, producers: &[Producer]) -> u64 {
    crate::stream_files(raw_dir).iter().map(|p| committed_events(p, producers).unwrap_or(0)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::tests::header;
    use crate::{Event, StreamFile};

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
}
