//! What can stop a report.

use std::path::{Path, PathBuf};

/// A report that could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is what is wrong (a missing, empty or damaged archive, an
    /// unknown report): the command exits with status 2, as for bad usage.
    #[error("{0}")]
    BadInput(String),
    /// The archive holds nothing this report can show.
    #[error("{0}")]
    NothingToShow(String),
    // Errors that wrap another say only what they add: the command prints
    // the whole chain (`{:#}`), so repeating the source would say it twice.
    #[error("cannot create {}", path.display())]
    Create { path: PathBuf, source: std::io::Error },
    /// Writing an output failed (a full disk, a closed pipe, or the input
    /// found damaged while it was being written).
    #[error("writing {}", path.display())]
    Writing { path: PathBuf, source: Box<Error> },
    /// A step of a report failed: `what` says which.
    #[error("{what}")]
    Step { what: &'static str, source: Box<Error> },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Otf2(#[from] otf2::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Png(#[from] png::EncodingError),
    /// Writing a Cube file failed.
    #[error("cannot write {}", path.display())]
    Cube { path: PathBuf, source: cube::Error },
    /// Drawing a plot failed.
    #[error("drawing the {what}: {detail}")]
    Draw { what: &'static str, detail: String },
}

impl Error {
    /// Whether the input is what is wrong (also when found while an
    /// output was being written).
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::BadInput(_) => true,
            Error::Writing { source, .. } | Error::Step { source, .. } => source.is_bad_input(),
            _ => false,
        }
    }

    /// Whether a closed pipe stopped the output (`gputrace stats | head
    /// -1`): the reader has what it wanted, which is no error. The
    /// transparent variants hide their `io::Error` from `source()`, so the
    /// gputrace binary asks here.
    pub fn is_broken_pipe(&self) -> bool {
        let pipe = |e: &std::io::Error| e.kind() == std::io::ErrorKind::BrokenPipe;
        match self {
            Error::Io(e) => pipe(e),
            Error::Json(e) => e.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe),
            Error::Csv(e) => matches!(e.kind(), csv::ErrorKind::Io(e) if pipe(e)),
            Error::Writing { source, .. } | Error::Step { source, .. } => source.is_broken_pipe(),
            _ => false,
        }
    }

    /// `e` as an error while writing `path`.
    pub(crate) fn writing(path: &Path) -> impl FnOnce(Error) -> Error + '_ {
        move |e| Error::Writing { path: path.to_path_buf(), source: Box::new(e) }
    }

    /// `e` as an error of the step `what`.
    pub(crate) fn step(what: &'static str) -> impl FnOnce(Error) -> Error {
        move |e| Error::Step { what, source: Box::new(e) }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
