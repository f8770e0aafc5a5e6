//! Appending chunks to a stream file.
//!
//! Each chunk goes out with one `write` of header and payload under a mutex
//! (taken once per full buffer, never per event), on a file opened with
//! `O_APPEND`. The file is created exclusively: a stream never overwrites
//! another.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::raw::chunk::{ChunkHeader, ChunkKind, HEADER_LEN};
use crate::raw::{Producer, StreamHeader};

/// An open stream file.
#[derive(Debug)]
pub struct StreamFile {
    path: PathBuf,
    producer: Producer,
    file: Mutex<File>,
}

/// Where a chunk of events belongs and what it spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpan {
    pub location: u32,
    pub count: u32,
    pub min_time: u64,
    pub max_time: u64,
}

impl StreamFile {
    /// Creates `path` (which must not exist) and writes the stream header.
    pub fn create(path: &Path, header: &StreamHeader) -> io::Result<StreamFile> {
        let file = OpenOptions::new().append(true).create_new(true).custom_flags(libc::O_CLOEXEC).open(path)?;
        let stream = StreamFile { path: path.to_path_buf(), producer: header.producer, file: Mutex::new(file) };
        let mut payload = Vec::new();
        header.encode(&mut payload);
        stream.write_chunk(ChunkKind::StreamHeader, None, &payload)?;
        Ok(stream)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn producer(&self) -> Producer {
        self.producer
    }

    /// Appends one chunk. `span` is given for event chunks.
    pub fn write_chunk(&self, kind: ChunkKind, span: Option<EventSpan>, payload: &[u8]) -> io::Result<()> {
        let mut header = ChunkHeader::for_payload(kind, self.producer, payload);
        if let Some(s) = span {
            header.location = s.location;
            header.event_count = s.count;
            header.min_time = s.min_time;
            header.max_time = s.max_time;
        }
        let head = header.encode();
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        write_all_vectored(&mut file, &head, payload)
    }
}

/// Writes header and payload, normally with a single `writev`.
fn write_all_vectored(file: &mut File, head: &[u8; HEADER_LEN], payload: &[u8]) -> io::Result<()> {
    let total = head.len() + payload.len();
    let mut done = 0;
    while done < total {
        let n = if done < head.len() {
            file.write_vectored(&[io::IoSlice::new(&head[done..]), io::IoSlice::new(payload)])
        } else {
            file.write(&payload[done - head.len()..])
        };
        match n {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
