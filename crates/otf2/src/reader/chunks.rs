//! Checks that each event file ends where OTF2's writer ends one, before
//! libotf2 is given it.
//!
//! libotf2 (3.0.2) reads an event file chunk by chunk into buffers it
//! reuses: the buffer for the next chunk is the one the chunk before the
//! current one was in. Its POSIX substrate takes a short `fread` at the end
//! of the file for success (only `ferror` is an error), and nothing records
//! how much was read. So where a file was cut, the bytes it no longer has
//! are those of an older chunk, left in the buffer: they parse as records,
//! up to that chunk's end-of-chunk mark; the next read gets nothing and
//! serves the other buffer's old chunk, and so on. A file cut at the end of
//! a chunk, or inside its last chunk where the splice happens to parse, is
//! read for ever, its last two chunks in turn (`otf2-print` too), and a
//! reader that keeps anything per event grows without bound.
//!
//! A file OTF2 wrote whole ends, in its last chunk, with an end-of-file
//! record (2) (then the end-of-buffer mark, 1). Walking the last chunk's
//! records as OTF2 frames them, to that record, tells a whole file from a
//! cut one by reading at most one chunk; the full chunks before it are read
//! whole by OTF2, so they cannot run into stale bytes.
//!
//! OTF2's buffer format: a chunk starts with an 18-byte header (3, the byte
//! order: 0x42 little-endian, 0x23 big-endian, the numbers of its first and
//! last event, 8 bytes each); then records: 0 ends the chunk (padding
//! follows), 2 ends the file, 5 is a timestamp (8 bytes), and every kind
//! from 6 on (attribute lists, events) a length byte, or 0xff and an 8-byte
//! length, then that many bytes.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

const CHUNK_HEADER: u8 = 3;
const HEADER_SIZE: usize = 18;
const END_OF_CHUNK: u8 = 0;
const END_OF_FILE: u8 = 2;
const TIMESTAMP: u8 = 5;
const LITTLE_ENDIAN: u8 = 0x42;
const BIG_ENDIAN: u8 = 0x23;

/// Where an event file's last chunk ends early, and how it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// How many bytes of its last chunk the file holds.
    pub at: u64,
    /// The last chunk's number, from 1.
    pub chunk: u64,
    /// What the walk found instead of the end-of-file record.
    pub why: String,
}

/// Checks the event file at `path`, of `chunk_size`-byte chunks, reading
/// its last chunk into `buf` (reused from one file to the next). `Ok(None)`
/// for a file that ends as OTF2 ends one, and for a missing file (OTF2
/// reports that itself, without reading anything).
pub(crate) fn check_event_file(path: &Path, chunk_size: u64, buf: &mut Vec<u8>) -> io::Result<Option<Cut>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    if size == 0 {
        return Ok(Some(Cut { at: 0, chunk: 1, why: "the file is empty".into() }));
    }
    let last = (size - 1) / chunk_size;
    let start = last * chunk_size;
    file.seek(SeekFrom::Start(start))?;
    buf.clear();
    file.take(size - start).read_to_end(buf)?;
    let at = buf.len() as u64;
    Ok(walk_last_chunk(buf).err().map(|why| Cut { at, chunk: last + 1, why }))
}

/// Walks the records of a file's last chunk, `bytes` being what the file
/// holds of it, to the end-of-file record.
pub(crate) fn walk_last_chunk(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < HEADER_SIZE {
        return Err("its chunk header is incomplete".into());
    }
    if bytes[0] != CHUNK_HEADER || !matches!(bytes[1], LITTLE_ENDIAN | BIG_ENDIAN) {
        return Err("it does not start with a chunk header".into());
    }
    let big_endian = bytes[1] == BIG_ENDIAN;
    let mut at = HEADER_SIZE;
    while let Some(&kind) = bytes.get(at) {
        let next = match kind {
            END_OF_FILE => return Ok(()),
            END_OF_CHUNK => return Err("it ends a chunk without OTF2's end-of-file record".into()),
            TIMESTAMP => Some(at + 9),
            6.. => record_end(bytes, at, big_endian),
            _ => return Err(format!("byte {at} holds a record kind ({kind}) that OTF2 does not write there")),
        };
        match next {
            Some(next) if next <= bytes.len() => at = next,
            _ => return Err(format!("the record at byte {at} runs past the end of the file")),
        }
    }
    Err("its records end without OTF2's end-of-file record".into())
}

/// Where the record (kind, length, data) at `at` ends, if its length is
/// in `bytes`.
fn record_end(bytes: &[u8], at: usize, big_endian: bool) -> Option<usize> {
    let small = *bytes.get(at + 1)?;
    let (data, length) = if small == u8::MAX {
        let raw: [u8; 8] = bytes.get(at + 2..at + 10)?.try_into().ok()?;
        let length = if big_endian { u64::from_be_bytes(raw) } else { u64::from_le_bytes(raw) };
        (at + 10, usize::try_from(length).ok()?)
    } else {
        (at + 2, usize::from(small))
    };
    data.checked_add(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A last chunk as OTF2 writes it: header, a timestamp, an Enter
    /// (kind 12, length 1), a large record, the end-of-file record and the
    /// end-of-buffer mark.
    fn whole() -> Vec<u8> {
        let mut b = vec![CHUNK_HEADER, LITTLE_ENDIAN];
        b.extend(1u64.to_le_bytes());
        b.extend(3u64.to_le_bytes());
        b.push(TIMESTAMP);
        b.extend(42u64.to_le_bytes());
        b.extend([12, 1, 7]);
        b.extend([40, 0xff]);
        b.extend(300u64.to_le_bytes());
        b.extend([9; 300]);
        b.extend([END_OF_FILE, 1]);
        b
    }

    #[test]
    fn a_whole_chunk_passes_and_every_cut_of_it_fails() {
        let b = whole();
        assert_eq!(walk_last_chunk(&b), Ok(()));
        // Only the end-of-buffer mark may go: it follows the record.
        assert_eq!(walk_last_chunk(&b[..b.len() - 1]), Ok(()));
        for cut in 0..b.len() - 1 {
            assert!(walk_last_chunk(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_chunk_that_ends_without_the_end_of_file_record_fails() {
        let mut b = whole();
        let end = b.len() - 2;
        b[end] = END_OF_CHUNK;
        assert!(walk_last_chunk(&b).unwrap_err().contains("ends a chunk"));
        b[end] = 4;
        assert!(walk_last_chunk(&b).unwrap_err().contains("record kind (4)"));
        let mut big = whole();
        big[1] = BIG_ENDIAN;
        // The large record's length read big-endian runs past the end.
        assert!(walk_last_chunk(&big).unwrap_err().contains("runs past"));
    }

    #[test]
    fn files_are_checked_at_their_last_chunk() {
        let dir = std::env::temp_dir().join(format!("otf2-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0.evt");
        // Two full chunks of 400 bytes (padding after the end-of-chunk
        // mark), then the whole last chunk.
        let mut full = whole();
        full.truncate(HEADER_SIZE);
        full.push(END_OF_CHUNK);
        full.resize(400, 0);
        let mut buf = Vec::new();
        std::fs::write(&path, [&full[..], &full, &whole()].concat()).unwrap();
        assert_eq!(check_event_file(&path, 400, &mut buf).unwrap(), None);
        // Cut at the end of a chunk.
        std::fs::write(&path, [&full[..], &full].concat()).unwrap();
        let cut = check_event_file(&path, 400, &mut buf).unwrap().unwrap();
        assert_eq!((cut.at, cut.chunk), (400, 2));
        std::fs::write(&path, [&full[..], &full, &whole()[..10]].concat()).unwrap();
        let cut = check_event_file(&path, 400, &mut buf).unwrap().unwrap();
        assert_eq!((cut.at, cut.chunk), (10, 3));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(check_event_file(&path, 400, &mut buf).unwrap().unwrap().at, 0);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(check_event_file(&path, 400, &mut buf).unwrap(), None);
        std::fs::remove_dir(&dir).unwrap();
    }
}
