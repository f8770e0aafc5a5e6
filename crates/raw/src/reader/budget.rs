//! The open-file budget: a stream's file stays open while the process may
//! hold that many, else it is opened for each read and closed after it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Raw stream files a process keeps open at once (all [`RawFile`](super::RawFile)s
/// together): a quarter of its open-file limit (`RLIMIT_NOFILE`, the soft
/// one), leaving the rest to the archive's files and everything else; at
/// least 4 and at most 65,536.
pub fn open_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `lim` is a valid rlimit to fill.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 { lim.rlim_cur } else { 1024 };
        usize::try_from(soft / 4).unwrap_or(usize::MAX).clamp(4, 65_536)
    })
}

/// Raw files held open now, out of [`open_budget`].
static HELD: AtomicUsize = AtomicUsize::new(0);

/// A stream's file: held open while it is indexed and afterwards while the
/// budget allows, else opened for each read.
#[derive(Debug)]
pub(super) struct Handle {
    path: PathBuf,
    /// The open file, and whether it counts against the budget (a file
    /// being indexed does not: [`RawFile::open`](super::RawFile::open)
    /// settles it at the end).
    held: Mutex<(Option<Arc<File>>, bool)>,
}

impl Handle {
    pub(super) fn indexing(path: &Path, file: File) -> Handle {
        Handle { path: path.to_path_buf(), held: Mutex::new((Some(Arc::new(file)), false)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<Arc<File>>, bool)> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the file open if the budget allows, else closes it.
    pub(super) fn settle(&self) {
        let mut held = self.lock();
        if held.0.is_some() && !held.1 {
            if take_budget() {
                held.1 = true;
            } else {
                held.0 = None;
            }
        }
    }

    fn file(&self) -> io::Result<Arc<File>> {
        let mut held = self.lock();
        if let Some(f) = &held.0 {
            return Ok(Arc::clone(f));
        }
        let f = Arc::new(File::open(&self.path)?);
        if take_budget() {
            *held = (Some(Arc::clone(&f)), true);
        }
        Ok(f)
    }

    pub(super) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file()?.read_exact_at(buf, offset)
    }

    /// The start of the data at or after `from` ([`crate::next_data`]).
    pub(super) fn next_data(&self, from: u64) -> io::Result<Option<u64>> {
        crate::next_data(&*self.file()?, from)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.lock().1 {
            HELD.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

fn take_budget() -> bool {
    let budget = open_budget();
    HELD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < budget).then_some(n + 1)).is_ok()
}
