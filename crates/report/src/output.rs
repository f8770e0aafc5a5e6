//! Writing a file into a directory that may hold anything: a new file
//! beside the destination, renamed over it once complete.
//!
//! Whatever is at the destination is replaced, never written through: a
//! symbolic link there (which may point at any file the user can write,
//! left in an experiment directory or an output folder by anyone) is
//! replaced by the new file, its target untouched, as the merge's Cube
//! profile and the OTF2 archive already treat links. An existing file is
//! replaced whole, so a write that fails leaves it as it was, and never a
//! half-written one. The one exception is an output the user named that is
//! a stream — a FIFO or a character device (`-o /dev/stdout` to a pipe or
//! a terminal, `/dev/null`), named directly or through a link — or a path
//! under `/dev` or `/proc` (`-o /dev/stdout` redirected to a file): there
//! is nothing to replace, so it is written to ([`OutputFile::create`]).
//! Files gputrace names itself ([`OutputFile::replace`], the summary) are
//! always replaced, so a FIFO left there never blocks a merge.
//!
//! The new file is not synced before the rename: every output here can be
//! made again from the archive, and a sync would cost large exports
//! seconds.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A file being written to a destination; [`commit`](Self::commit) puts
/// it in place, dropping it uncommitted removes it.
#[derive(Debug)]
pub struct OutputFile {
    file: File,
    /// The new file beside the destination; `None` for a stream written
    /// in place.
    temp: Option<PathBuf>,
    path: PathBuf,
}

impl OutputFile {
    /// For an output the user named: a new file that replaces whatever is
    /// at `path` (a file, a link) once committed, except a FIFO or a
    /// character device (also through a link), which is written to.
    pub fn create(path: &Path) -> io::Result<Self> {
        let is_stream = |t: std::fs::FileType| t.is_fifo() || t.is_char_device();
        // A link is followed only to see whether it leads to a stream.
        if std::fs::metadata(path).is_ok_and(|m| is_stream(m.file_type())) {
            let file = OpenOptions::new().write(true).open(path)?;
            return Ok(Self { file, temp: None, path: path.to_owned() });
        }
        // The system's own names for a process's descriptors
        // (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`) lead to whatever
        // the descriptor is, a regular file where the shell redirected it:
        // written to, never replaced (a rename there, as root, would
        // replace /dev/stdout itself for every program).
        if path.starts_with("/dev") || path.starts_with("/proc") {
            let file = OpenOptions::new().write(true).truncate(true).open(path)?;
            return Ok(Self { file, temp: None, path: path.to_owned() });
        }
        Self::replace(path)
    }

    /// For a file gputrace names itself: a new file that replaces whatever
    /// is at `path` once committed, a link or a FIFO included.
    pub fn replace(path: &Path) -> io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = path.file_name().ok_or_else(|| io::Error::other("not a file name"))?.to_string_lossy();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let temp = dir.join(format!(".{name}.{}.{n}.part", std::process::id()));
            // create_new: O_EXCL, which never follows a link at that name.
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => return Ok(Self { file, temp: Some(temp), path: path.to_owned() }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Puts the file in place (renames it over the destination).
    pub fn commit(mut self) -> io::Result<()> {
        self.file.flush()?;
        match self.temp.take() {
            Some(temp) => std::fs::rename(&temp, &self.path).inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            }),
            None => Ok(()),
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `bytes` to `path`, a file gputrace names itself, replacing
/// whatever is there ([`OutputFile::replace`]).
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut out = OutputFile::replace(path)?;
    out.write_all(bytes)?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_link_is_replaced_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let target = dir.join("target");
        std::fs::write(&target, "precious").unwrap();
        for (i, create) in [OutputFile::create, OutputFile::replace].into_iter().enumerate() {
            let link = dir.join(format!("out{i}"));
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let mut out = create(&link).unwrap();
            out.write_all(b"new").unwrap();
            out.commit().unwrap();
            assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
            assert_eq!(std::fs::read(&link).unwrap(), b"new");
            assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        }
        assert_eq!(entries(dir), ["out0", "out1", "target"]);
    }

    /// `/dev/stdout` of a process whose stdout is a regular file: written
    /// to, the link left as it is.
    #[test]
    fn a_descriptor_name_is_written_to_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("redirected");
        let f = File::create(&file).unwrap();
        use std::os::fd::AsRawFd;
        let name = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        let mut out = OutputFile::create(&name).unwrap();
        out.write_all(b"through").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"through");
        assert!(std::fs::symlink_metadata(&name).unwrap().file_type().is_symlink());
    }

    #[test]
    fn an_uncommitted_file_leaves_the_old_one_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("out.json");
        std::fs::write(&path, "old").unwrap();
        let mut out = OutputFile::create(&path).unwrap();
        out.write_all(b"half").unwrap();
        drop(out);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir), ["out.json"]);
        replace(&path, b"whole").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
    }

    #[test]
    fn a_stream_the_user_names_is_written_to() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let link = dir.join("null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        for path in [Path::new("/dev/null"), &link] {
            let mut out = OutputFile::create(path).unwrap();
            out.write_all(b"gone").unwrap();
            out.commit().unwrap();
        }
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        // A FIFO gputrace names itself is replaced, never opened.
        let fifo = dir.join("summary.txt");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        replace(&fifo, b"summary").unwrap();
        assert_eq!(std::fs::read(&fifo).unwrap(), b"summary");
    }
}
