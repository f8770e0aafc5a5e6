//! The crate's one error type.
//!
//! OTF2 reports failures as an `OTF2_ErrorCode` and, through its error
//! callback, a formatted message it would otherwise print to stderr. The
//! FFI layer installs that callback, so an [`Error::Otf2`] carries the
//! code, its name and description, and OTF2's own message; nothing is
//! printed behind the caller's back.

use std::io;
use std::path::PathBuf;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong writing or reading an OTF2 archive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A collective operation among the processes writing one archive
    /// failed, or what they exchanged did not fit.
    #[error("the processes writing the archive together failed {what}")]
    Collective { what: &'static str },
    /// An OTF2 call failed.
    #[error("{operation} failed: {name} ({description}){}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Otf2 {
        /// The OTF2 function that failed, such as `OTF2_Archive_Open`.
        operation: &'static str,
        /// The raw `OTF2_ErrorCode`.
        code: i32,
        /// `OTF2_Error_GetName(code)`, such as `INVALID_ARGUMENT`.
        name: &'static str,
        /// `OTF2_Error_GetDescription(code)`.
        description: &'static str,
        /// What OTF2 said through its error callback, when it said
        /// something for this failure.
        message: Option<String>,
    },

    /// [`ArchiveWriter::create`](crate::ArchiveWriter::create) found part of
    /// an archive at the target; it never overwrites one.
    #[error("{}: already exists; refusing to overwrite an OTF2 archive (choose another name or remove it)", path.display())]
    AlreadyExists {
        /// The anchor file, definitions file or trace folder that exists.
        path: PathBuf,
    },

    /// A file system operation outside OTF2 failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path being created or opened.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The archive name is empty or contains `/` or NUL.
    #[error("invalid archive name {name:?}: it must be non-empty and contain neither '/' nor NUL")]
    InvalidName {
        /// The rejected name.
        name: String,
    },

    /// The same location id was defined twice.
    #[error("location {id} is already defined")]
    DuplicateLocation {
        /// The location id.
        id: u64,
    },

    /// A location id is not usable (`u64::MAX` is OTF2's "undefined").
    #[error("location id {id} is reserved by OTF2 for \"undefined\"")]
    InvalidLocationId {
        /// The location id.
        id: u64,
    },

    /// A location handle that this archive did not define.
    #[error("location {id} is not defined in this archive")]
    UnknownLocation {
        /// The location id.
        id: u64,
    },

    /// Events of a location were already written: each location gets one
    /// event writer, because reopening would truncate its event file.
    #[error("the events of location {id} were already written")]
    EventsAlreadyWritten {
        /// The location id.
        id: u64,
    },

    /// A metric event carries at most 255 values.
    #[error("a metric event takes at most 255 values, got {count}")]
    TooManyMetricValues {
        /// How many values were given.
        count: usize,
    },

    /// A metric class has between 1 and 255 members.
    #[error("a metric class needs 1 to 255 members, got {count}")]
    BadMetricClassSize {
        /// How many members were given.
        count: usize,
    },

    /// A location's event file ended before all the events its definition
    /// announces (a copy or a write that was cut short).
    #[error("location {location}: its event file holds {read} events, its definition announces {announced}")]
    TruncatedEvents {
        /// The location id.
        location: u64,
        /// `number_of_events` of the location definition.
        announced: u64,
        /// Events actually read.
        read: u64,
    },

    /// A location's event file does not end as OTF2 ends one: it was cut
    /// inside its last chunk or at the end of a chunk (a copy interrupted,
    /// a disk that filled). Found when the archive is opened, because
    /// libotf2 would read such a file for ever (see `reader::chunks`).
    #[error(
        "{} is cut short at byte {at} of its last chunk (chunk {chunk}, of {chunk_size} bytes: {why}): the event file of location {location} was not written or copied whole; copy the archive again from where it was written",
        path.display()
    )]
    CutEvents {
        /// The event file.
        path: PathBuf,
        /// The location id.
        location: u64,
        /// How many bytes of its last chunk the file holds.
        at: u64,
        /// The last chunk's number, from 1.
        chunk: u64,
        /// The archive's event chunk size.
        chunk_size: u64,
        /// What was found instead of OTF2's end-of-file record.
        why: String,
    },

    /// The events were already read by time
    /// ([`TraceReader::read_by_time`](crate::reader::TraceReader::read_by_time)),
    /// which uses OTF2's readers up.
    #[error("the events of this archive were already read by time; open it again to read them again")]
    AlreadyReadByTime,

    /// The file is not a readable OTF2 archive.
    #[error("{}: not a readable OTF2 archive: {reason}", path.display())]
    NotAnArchive {
        /// The anchor file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

impl Error {
    /// The raw OTF2 error code, when OTF2 reported the failure.
    pub fn otf2_code(&self) -> Option<i32> {
        match self {
            Error::Otf2 { code, .. } => Some(*code),
            _ => None,
        }
    }
}
