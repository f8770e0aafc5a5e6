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
    #[error("cannot create {}: {source}", path.display())]
    Create { path: PathBuf, source: std::io::Error },
    /// Writing an output failed (a full disk, a closed pipe).
    #[error("writing {}: {source}", path.display())]
    Writing { path: PathBuf, source: Box<Error> },
    /// A step of a report failed: `what` says which.
    #[error("{what}: {source}")]
    Step { what: &'static str, source: Box<Error> },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Otf2(#[from] otf2::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Csv(#[from] csv::Error),
    #[error("{0}")]
    Png(#[from] png::EncodingError),
    /// Drawing a plot failed.
    #[error("drawing the {what}: {detail}")]
    Draw { what: &'static str, detail: String },
}

impl Error {
    /// Whether the input is what is wrong.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::BadInput(_))
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
