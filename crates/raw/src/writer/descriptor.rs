//! The stream file's descriptor, kept out of the traced program's way.
//!
//! The descriptor lives in the program's process, whose code may close
//! it: daemons and some libraries close every descriptor from 3 up, and
//! the next file the program opens gets the number. Anything gputrace then
//! did through that number (a `pwrite`, a `posix_fallocate` growing the
//! file, an `mmap`) would go into the program's file. So:
//!
//! - the descriptor is moved to a high number (`F_DUPFD_CLOEXEC` at three
//!   quarters of the open-file limit, at most 768), out of the range the
//!   program's own files are given (the lowest free number), and closed
//!   on `exec`;
//! - the file's identity (device and inode) is kept, and every use of the
//!   descriptor checks it first with `fstat` (about 0.3 µs, once per chunk
//!   or slot, never per event). A descriptor that is no longer the stream
//!   file is forgotten, never closed (its number is the program's now),
//!   and the file opened again by its path (absolute, made so at
//!   creation), checked to be the same file, moved out of the way, and
//!   locked again (the program's close dropped the writer lock);
//! - when it cannot be opened again (the program used up its open-file
//!   limit, the file was removed) the use fails, which stops recording for
//!   the process with what was lost counted: the closing records go into
//!   the slot mapped for them when the stream was made, which needs no
//!   descriptor.
//!
//! The check and the use are two system calls: a thread of the program
//! closing the descriptor between them, and opening its own file, which
//! the kernel gives that high number (it gives the lowest free one), would
//! still be hit. No such program is known.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The stream file's descriptor and which file it must be.
#[derive(Debug)]
pub(super) struct Descriptor {
    fd: RawFd,
    dev: u64,
    ino: u64,
    /// Times the file was opened again after the program took the number.
    pub reopened: u32,
}

/// The (device, inode) of what `fd` refers to, or None for a number that
/// is not open.
fn identity(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: a zeroed stat is a valid value of this plain C struct, and
    // fstat only writes into it; any number is safe to ask about.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some((st.st_dev, st.st_ino))
}

/// The lowest number the descriptor is moved to: three quarters of the
/// open-file limit (of at most 1,024, so that `select`'s range and small
/// fd tables are not left for it).
fn high_floor() -> libc::c_int {
    // SAFETY: a zeroed rlimit is a valid value; getrlimit writes it.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 { lim.rlim_cur } else { 1024 };
    let limit = soft.min(1024) as libc::c_int;
    (limit - limit / 4).max(3)
}

/// `file`'s descriptor moved to a high number, close-on-exec; the low one
/// is closed. Where no high number is free, the one it has.
fn out_of_the_way(file: File) -> RawFd {
    // SAFETY: duplicates a descriptor we own; fcntl checks the rest.
    let moved = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, high_floor()) };
    if moved < 0 {
        return file.into_raw_fd();
    }
    drop(file);
    moved
}

impl Descriptor {
    /// Opens `path` (created exclusively with `create`), out of the way.
    pub fn open(path: &Path, create: bool) -> io::Result<Descriptor> {
        let file =
            OpenOptions::new().read(true).write(true).create_new(create).custom_flags(libc::O_CLOEXEC).open(path)?;
        let fd = out_of_the_way(file);
        let Some((dev, ino)) = identity(fd) else {
            // SAFETY: the descriptor just opened, ours alone.
            unsafe { libc::close(fd) };
            return Err(io::Error::other("the stream file vanished as it was opened"));
        };
        Ok(Descriptor { fd, dev, ino, reopened: 0 })
    }

    /// Whether the number still refers to the stream file.
    pub fn is_ours(&self) -> bool {
        self.fd >= 0 && identity(self.fd) == Some((self.dev, self.ino))
    }

    /// The descriptor, checked first; opened again from `path` when the
    /// program took the number (see the module doc).
    pub fn get(&mut self, path: &Path) -> io::Result<RawFd> {
        if self.is_ours() {
            return Ok(self.fd);
        }
        // The number is the program's now, or nobody's: forgotten, never
        // closed.
        self.fd = -1;
        let again = Descriptor::open(path, false).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the program closed gputrace's descriptor of it, and reopening failed: {e}"),
            )
        })?;
        if (again.dev, again.ino) != (self.dev, self.ino) {
            return Err(io::Error::other("the program closed gputrace's descriptor of it, and the file was replaced"));
        }
        self.fd = again.fd;
        std::mem::forget(again);
        self.reopened += 1;
        // The program's close dropped the writer lock (POSIX locks go with
        // any close of the file): taken again, best effort as at creation.
        let _ = super::lock(self.fd, libc::F_SETLK, libc::F_RDLCK as libc::c_short);
        Ok(self.fd)
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        if self.is_ours() {
            // SAFETY: the number is still our stream file's, closed once.
            drop(unsafe { File::from_raw_fd(self.fd) });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use crate::chunk::{ChunkKind, HEADER_LEN};
    use crate::reader::tests::header;
    use crate::{Definition, Event, RawFile, StreamFile};

    /// The descriptor numbers of this process open on `path`.
    fn numbers_of(path: &std::path::Path) -> Vec<i32> {
        let path = path.canonicalize().unwrap();
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| std::fs::read_link(e.path()).is_ok_and(|target| target == path))
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// What a program that closes every descriptor and then opens its own
    /// files does to the stream's: the number now refers to the
    /// program's file (made so with `dup2`, the lowest free number being
    /// another in a test process).
    fn take_the_number(stream: &StreamFile, theirs: &std::fs::File) -> i32 {
        let fds = numbers_of(stream.path());
        assert_eq!(fds.len(), 1, "{fds:?}");
        assert!(fds[0] >= 3, "{fds:?}");
        // SAFETY: closes the stream's descriptor, as the program would,
        // and gives its number to the program's file.
        assert_eq!(unsafe { libc::dup2(theirs.as_raw_fd(), fds[0]) }, fds[0]);
        fds[0]
    }

    /// A stream in `dir` whose descriptor number a program's file
    /// (`program.dat`, 8 bytes) now holds.
    struct Taken {
        path: std::path::PathBuf,
        theirs_path: std::path::PathBuf,
        stream: StreamFile,
        theirs: std::fs::File,
        number: i32,
    }

    fn program_takes_the_number(dir: &std::path::Path) -> Taken {
        let path = dir.join("h.1.synthetic.gtr");
        let theirs_path = dir.join("program.dat");
        std::fs::write(&theirs_path, b"12345678").unwrap();
        let stream = StreamFile::create(&path, &header()).unwrap();
        let theirs = std::fs::OpenOptions::new().read(true).write(true).open(&theirs_path).unwrap();
        let number = take_the_number(&stream, &theirs);
        Taken { path, theirs_path, stream, theirs, number }
    }

    fn string(id: u32, value: &str) -> Vec<u8> {
        let mut out = Vec::new();
        Definition::String { id, value: value.into() }.encode(&mut out);
        out
    }

    #[test]
    fn the_descriptor_is_moved_to_a_high_number() {
        let dir = tempfile::tempdir().unwrap();
        let stream = StreamFile::create(&dir.path().join("h.1.synthetic.gtr"), &header()).unwrap();
        let fds = numbers_of(stream.path());
        assert_eq!(fds.len(), 1);
        assert!(fds[0] >= super::high_floor(), "{fds:?}");
        // SAFETY: reads the flags of an open descriptor.
        let flags = unsafe { libc::fcntl(fds[0], libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }

    /// The program's file keeps its bytes; the stream is opened again and
    /// everything written after reaches it.
    #[test]
    fn a_number_the_program_took_is_never_written_and_the_file_is_opened_again() {
        let dir = tempfile::tempdir().unwrap();
        let Taken { path, theirs_path, stream, theirs, number } = program_takes_the_number(dir.path());

        stream.write_chunk(ChunkKind::Definitions, None, &string(1, "after")).unwrap();
        let mut slot = stream.open_slot(0, 64 << 10).unwrap();
        slot.append(&[(10, Event::Enter { region: 1 }), (11, Event::Leave { region: 1 })]);
        stream.close_slot(slot);
        stream.write_closing(&string(2, "closing")).unwrap();
        assert_eq!(stream.reopened(), 1);
        drop(stream);

        assert_eq!(std::fs::read(&theirs_path).unwrap(), b"12345678");
        // The program's descriptor is still open: ours was never closed.
        // SAFETY: asks about a number; no memory is involved.
        assert_ne!(unsafe { libc::fcntl(number, libc::F_GETFD) }, -1);
        drop(theirs);
        let raw = RawFile::open(&path).unwrap();
        assert!(raw.problems.is_empty(), "{:?}", raw.problems);
        assert_eq!(raw.chunks.len(), 1);
        assert_eq!(raw.chunks[0].header.event_count, 2);
        assert_eq!(raw.definitions.len(), 2);
    }

    /// A file that cannot be opened again: each use fails (recording
    /// stops), the program's file is untouched, and the closing records
    /// still reach the stream through their mapped slot.
    #[test]
    fn a_stream_that_cannot_be_opened_again_still_closes() {
        let dir = tempfile::tempdir().unwrap();
        let Taken { path, theirs_path, stream, theirs: _theirs, .. } = program_takes_the_number(dir.path());
        let moved = dir.path().join("moved.gtr");
        std::fs::rename(&path, &moved).unwrap();

        assert!(stream.write_chunk(ChunkKind::Definitions, None, &string(1, "lost")).is_err());
        assert!(stream.open_slot(0, 64 << 10).is_err());
        stream.write_closing(&string(2, "closing")).unwrap();
        drop(stream);

        assert_eq!(std::fs::read(&theirs_path).unwrap(), b"12345678");
        let raw = RawFile::open(&moved).unwrap();
        assert!(raw.problems.is_empty(), "{:?}", raw.problems);
        assert_eq!(raw.definitions, [Definition::String { id: 2, value: "closing".into() }]);
        assert!(std::fs::metadata(&moved).unwrap().len() > HEADER_LEN as u64);
    }
}
