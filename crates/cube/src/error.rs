//! What goes wrong building or writing a cube.

use std::path::PathBuf;

/// What went wrong building or writing a cube.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A handle that this cube did not give out.
    #[error("no {what} {id} in this cube")]
    Unknown { what: &'static str, id: u32 },
    /// A value of the wrong type for its metric.
    #[error("metric {metric} holds {expected} values, not {given}")]
    WrongType { metric: String, expected: &'static str, given: &'static str },
    /// A cube that readers would reject: it lacks a metric, call-tree
    /// node or location.
    #[error("a cube needs at least one {0}")]
    Empty(&'static str),
    /// The file could not be written (nothing was left at `path`).
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// Writing to a stream failed.
    #[error("writing the cube: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, Error>;
