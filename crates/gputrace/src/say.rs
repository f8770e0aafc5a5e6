//! gputrace's own lines to the user.
//!
//! `eprintln!` panics when stderr cannot be written (`2>/dev/full`, a
//! closed pipe after `2>&1 | head -1`), which would turn a lost message
//! into a lost exit code. Every line gputrace prints goes through [`line`]
//! instead: one `write` per line (so lines of several processes sharing
//! stderr do not interleave), errors ignored. Our messages may be lost;
//! the program's exit code never is. Hand-written rather than a logging
//! crate for that: one `write(2)` per line, to a descriptor we choose, and
//! no error ever surfacing.
//!
//! The merge worker (see [`crate::merge_worker`]) writes its lines to a
//! copy of gputrace's stderr handed to it, while its own stderr, which
//! libotf2 and the C library may scribble on when they fail, goes to the
//! parent: [`set_fd`] points the lines there.

use std::sync::atomic::{AtomicI32, Ordering};

static FD: AtomicI32 = AtomicI32::new(libc::STDERR_FILENO);

/// Prints one line (a newline is added), ignoring every error.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::line(&format!($($arg)*))
    };
}

/// Writes `text` and a newline to the message descriptor; errors (a full
/// disk, a closed pipe, no descriptor at all) are ignored.
pub fn line(text: &str) {
    let mut bytes = Vec::with_capacity(text.len() + 1);
    bytes.extend_from_slice(text.as_bytes());
    bytes.push(b'\n');
    write_all(fd(), &bytes);
}

/// Where the lines go: gputrace's stderr, or in the merge worker the
/// descriptor its parent handed over (`-1`: nowhere).
pub fn fd() -> i32 {
    FD.load(Ordering::Relaxed)
}

/// Sends the lines to `fd` from now on.
pub fn set_fd(fd: i32) {
    FD.store(fd, Ordering::Relaxed);
}

/// Writes all of `bytes` to `fd`, retrying interrupted and partial writes,
/// giving up silently on any error.
pub fn write_all(fd: i32, mut bytes: &[u8]) {
    if fd < 0 {
        return;
    }
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice of `bytes.len()` bytes; write(2)
        // only reads it. A bad descriptor is an error return, not UB.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            return;
        }
    }
}

/// A `tracing` writer onto the message descriptor, so that the
/// diagnostics of `GPUTRACE_VERBOSE` reach the user from the merge worker
/// too (its own stderr goes to the parent, which shows it only when the
/// worker fails). Each event is one formatted buffer, written at once.
struct Diagnostics;

impl std::io::Write for Diagnostics {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut line = b"[gputrace] ".to_vec();
        line.extend_from_slice(bytes);
        write_all(fd(), &line);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Shows gputrace's own `tracing` diagnostics (debug and above, each line
/// prefixed `[gputrace]`) when `verbose` is set (GPUTRACE_VERBOSE,
/// `--verbose`); nothing otherwise.
pub fn init_tracing(verbose: bool) {
    if verbose {
        let _ = tracing_subscriber::fmt()
            .with_writer(|| Diagnostics)
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .event_format(tracing_subscriber::fmt::format().without_time().with_target(false).with_level(false))
            .try_init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_to_a_full_or_closed_descriptor_is_silent() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        write_all(std::os::fd::AsRawFd::as_raw_fd(&full), b"lost\n");
        write_all(-1, b"lost\n");
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        // Rust ignores SIGPIPE, so a closed pipe is EPIPE, ignored here.
        write_all(std::os::fd::AsRawFd::as_raw_fd(&w), b"lost\n");
    }
}
