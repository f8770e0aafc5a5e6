//! What can stop a merge.

use std::path::PathBuf;

/// A merge that could not be done. The raw streams are never changed: a
/// merge that failed can be run again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The raw-stream directory holds no raw stream at all.
    #[error("nothing was recorded in {}: the program made no MPI call and did no GPU work", .0.display())]
    NothingRecorded(PathBuf),
    /// Raw streams are there, but nothing in them can make an archive
    /// readers accept (no stream could be read, or none defines a
    /// location).
    #[error("nothing to merge in {}: {why}", dir.display())]
    NothingToMerge { dir: PathBuf, why: &'static str },
    /// An archive is already there and replacing it was not asked for.
    #[error("{} already holds an archive", .0.display())]
    ArchiveExists(PathBuf),
    // Errors that wrap another say only what they add: callers print the
    // whole chain (`{:#}`), so repeating the source would say it twice.
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot remove {}", path.display())]
    Remove { path: PathBuf, source: std::io::Error },
    /// Writing the archive failed (a full disk, say).
    #[error("{what}")]
    Archive { what: &'static str, source: otf2::Error },
}

impl Error {
    /// Whether the input is what is wrong (nothing to merge, an archive
    /// in the way), as opposed to a failure while writing.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::NothingRecorded(_) | Error::NothingToMerge { .. } | Error::ArchiveExists(_))
    }
}

impl From<Box<otf2::Error>> for Error {
    fn from(source: Box<otf2::Error>) -> Self {
        Error::Archive { what: "writing the archive", source: *source }
    }
}

impl From<otf2::Error> for Error {
    fn from(source: otf2::Error) -> Self {
        Error::Archive { what: "writing the archive", source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
