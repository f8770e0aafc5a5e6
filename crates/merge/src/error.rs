//! What can stop a merge.

use std::path::PathBuf;

use raw::Producer;

use crate::inputs::NotTraced;

/// A merge that could not be done. The raw streams are never changed: a
/// merge that failed can be run again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The raw-stream directory holds no raw stream at all, or only
    /// streams that say their producer recorded nothing: the program made
    /// no MPI call and did no GPU work, or what it did was not traced
    /// (`not_traced` says what and why).
    #[error("nothing was recorded in {}: {}", dir.display(), nothing_because(not_traced))]
    NothingRecorded { dir: PathBuf, not_traced: Vec<NotTraced> },
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
    /// A merge as an MPI job with more merge ranks than processes.
    #[error(
        "{ranks} merge ranks for {processes} traced process{}: run the merge with at most {processes} rank{}",
        if *processes == 1 { "" } else { "es" },
        if *processes == 1 { "" } else { "s" }
    )]
    TooManyRanks { ranks: u32, processes: usize },
    /// The merge ranks could not exchange their results.
    #[error("the merge ranks could not exchange their results: {why}")]
    Exchange { why: String },
    /// Writing the archive failed (a full disk, say).
    #[error("{what}")]
    Archive { what: &'static str, source: otf2::Error },
}

impl Error {
    /// Whether the input is what is wrong (nothing to merge, an archive
    /// in the way), as opposed to a failure while writing.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::NothingRecorded { .. }
                | Error::NothingToMerge { .. }
                | Error::ArchiveExists(_)
                | Error::TooManyRanks { .. }
        )
    }
}

/// Why nothing was recorded: what was not traced (and why), then what
/// the program did not do of what was traced. `CUDA was not traced
/// (CUPTI could not be loaded: ...) and the program made no MPI call`.
fn nothing_because(not_traced: &[NotTraced]) -> String {
    let why = |part: Producer| -> Option<String> {
        let reasons: Vec<&str> = not_traced.iter().filter(|f| f.what == part).map(|f| f.why.as_str()).collect();
        (!reasons.is_empty()).then(|| format!("{} was not traced ({})", part.title(), reasons.join("; ")))
    };
    match (why(Producer::Cuda), why(Producer::Mpi)) {
        (Some(cuda), Some(mpi)) => format!("{cuda} and {mpi}"),
        (Some(cuda), None) => format!("{cuda} and the program made no MPI call"),
        (None, Some(mpi)) => format!("{mpi} and the program did no GPU work"),
        (None, None) => "the program made no MPI call and did no GPU work".to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(what: Producer, why: &str) -> NotTraced {
        NotTraced { what, why: why.into(), processes: 1 }
    }

    #[test]
    fn nothing_recorded_says_what_was_not_traced() {
        let said =
            |not_traced: Vec<NotTraced>| Error::NothingRecorded { dir: "run/raw".into(), not_traced }.to_string();
        assert_eq!(said(vec![]), "nothing was recorded in run/raw: the program made no MPI call and did no GPU work");
        assert_eq!(
            said(vec![fact(Producer::Cuda, "CUPTI could not be loaded: no libcupti.so")]),
            "nothing was recorded in run/raw: CUDA was not traced (CUPTI could not be loaded: no libcupti.so) and \
             the program made no MPI call"
        );
        assert_eq!(
            said(vec![fact(Producer::Mpi, "libgputrace_mpi.so not found next to gputrace")]),
            "nothing was recorded in run/raw: MPI was not traced (libgputrace_mpi.so not found next to gputrace) \
             and the program did no GPU work"
        );
        assert_eq!(
            said(vec![fact(Producer::Cuda, "a"), fact(Producer::Mpi, "b"), fact(Producer::Cuda, "c")]),
            "nothing was recorded in run/raw: CUDA was not traced (a; c) and MPI was not traced (b)"
        );
    }
}
