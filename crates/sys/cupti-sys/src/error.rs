//! Errors: why no CUPTI library could be used ([`LoadError`]), why a
//! library's version is refused ([`UnsupportedVersion`]), and a failed CUPTI
//! call ([`CuptiError`]). Each displays as one line that names the library or
//! the call at fault.

use std::fmt;
use std::path::PathBuf;

use crate::CUptiResult;

/// A CUPTI function returned something other than `CUPTI_SUCCESS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuptiError {
    /// The function that failed, e.g. `"cuptiActivityEnable"`.
    pub function: &'static str,
    /// Its `CUptiResult`.
    pub code: CUptiResult,
    /// The library's name for `code` (`cuptiGetResultString`), when it gave
    /// one.
    pub name: Option<String>,
}

impl fmt::Display for CuptiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} failed: {} ({})", self.function, name, self.code),
            None => write!(f, "{} failed with CUptiResult {}", self.function, self.code),
        }
    }
}

impl std::error::Error for CuptiError {}

/// Why a CUPTI version is refused (see [`crate::CuptiVersion::from_api`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedVersion {
    /// Older than CUDA 12.0, whose record layouts these bindings do not
    /// describe.
    #[error("CUPTI API version {api} is CUDA {cuda}, older than 12.0; use the CUPTI of CUDA 12.0 or newer")]
    TooOld {
        /// `cuptiGetVersion`'s value.
        api: u32,
        /// The CUDA release it belongs to, as far as known (`"11.8"`, `"≤ 11.6"`).
        cuda: &'static str,
    },
    /// API version 18 is reported by CUDA 11.8 and by 12.0/12.1 alike; the
    /// library's SONAME, which tells them apart, could not be read.
    #[error(
        "CUPTI API version 18 is either CUDA 11.8 or 12.0/12.1, and the library's SONAME, which tells them apart, could not be read"
    )]
    Ambiguous18,
    /// A number that fits neither scheme (12.x: 18..=28, 13.0 on: xxyyzz).
    #[error("CUPTI API version {api} is not a version number this crate knows")]
    Unrecognized {
        /// `cuptiGetVersion`'s value.
        api: u32,
    },
    /// A CUDA major release newer than the newest bindings; its records may
    /// be laid out differently.
    #[error(
        "CUPTI API version {api} is CUDA {major}.x, newer than the newest bindings (13.5); regenerate crates/sys/cupti-sys"
    )]
    NewerMajor {
        /// `cuptiGetVersion`'s value.
        api: u32,
        /// Its CUDA major version.
        major: u32,
    },
}

/// Why no usable CUPTI library was loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// `dlopen` failed: no such file, not found on the loader's path, or a
    /// dependency missing.
    #[error("cannot open {library}: {}", dl_reason(library, source))]
    Open {
        /// The path or name passed to `dlopen`.
        library: String,
        /// libloading's error, with `dlerror`'s text.
        source: libloading::Error,
    },
    /// The library lacks a function every CUPTI since CUDA 12.0 exports:
    /// it is not CUPTI, or a broken copy.
    #[error("{library} lacks {symbol}, so it is not a usable CUPTI: {}", dl_reason(library, source))]
    MissingSymbol {
        /// The path or name passed to `dlopen`.
        library: String,
        /// The missing function.
        symbol: &'static str,
        /// libloading's error.
        source: libloading::Error,
    },
    /// `cuptiGetVersion` failed (CUPTI 13.5 does so where the driver is
    /// older than it needs).
    #[error("{library}: {source}")]
    Version {
        /// The path or name passed to `dlopen`.
        library: String,
        /// The failed call.
        source: CuptiError,
    },
    /// The library's version is refused.
    #[error("{library}: {source}")]
    Unsupported {
        /// The path or name passed to `dlopen`.
        library: String,
        /// Why.
        source: UnsupportedVersion,
    },
    /// A candidate built for a newer CUDA major than the driver supports;
    /// not opened (such a CUPTI cannot initialize, and some crash in
    /// `cuptiGetVersion` when they try).
    #[error("{library} is CUPTI {major}.x but the driver supports CUDA {driver}.x only; not tried")]
    NewerThanDriver {
        /// The candidate's path.
        library: String,
        /// Its CUDA major.
        major: u32,
        /// The driver's CUDA major.
        driver: u32,
    },
    /// The override (gputrace's `GPUTRACE_CUPTI_LIB`, passed to
    /// [`Cupti::find_and_load`](crate::Cupti::find_and_load)) names a
    /// library that cannot be used; no other is tried in its place.
    #[error("GPUTRACE_CUPTI_LIB={}: {}", path.display(), source.about_the_library())]
    Override {
        /// The variable's value.
        path: PathBuf,
        /// Why it cannot be used.
        source: Box<LoadError>,
    },
    /// Every candidate failed (or there was none).
    #[error(
        "no usable CUPTI library found{}; set GPUTRACE_CUPTI_LIB to the path of libcupti.so (CUDA's extras/CUPTI/lib64 or targets/*/lib)",
        tried_list(.tried)
    )]
    NotFound {
        /// Each candidate tried, in order, with why it failed.
        tried: Vec<LoadError>,
    },
}

impl LoadError {
    /// The message without the library's name, for a caller that names it
    /// already (`GPUTRACE_CUPTI_LIB=/x/libcupti.so: cannot open shared
    /// object file: No such file or directory`).
    fn about_the_library(&self) -> String {
        match self {
            LoadError::Open { library, source } => dl_reason(library, source),
            LoadError::MissingSymbol { library, symbol, source } => {
                format!("lacks {symbol}, so it is not a usable CUPTI: {}", dl_reason(library, source))
            }
            LoadError::Version { source, .. } => source.to_string(),
            LoadError::Unsupported { source, .. } => source.to_string(),
            other => other.to_string(),
        }
    }
}

/// `dlerror`'s text without the library's name it starts with
/// (`/x/libcupti.so: cannot open shared object file: ...` → `cannot open
/// shared object file: ...`): the message names the library already. A
/// dependency that is missing keeps its name (`libcudart.so.12: cannot
/// open ...`).
fn dl_reason(library: &str, source: &libloading::Error) -> String {
    let text = source.to_string();
    match text.strip_prefix(library).and_then(|rest| rest.strip_prefix(": ")) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

fn tried_list(tried: &[LoadError]) -> String {
    if tried.is_empty() {
        return String::new();
    }
    let reasons: Vec<String> = tried.iter().map(ToString::to_string).collect();
    format!(" (tried: {})", reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_lists_every_attempt_on_one_line() {
        let err = LoadError::NotFound {
            tried: vec![
                LoadError::Unsupported {
                    library: "/opt/cuda-11.8/libcupti.so".into(),
                    source: UnsupportedVersion::TooOld { api: 18, cuda: "11.8" },
                },
                LoadError::Version {
                    library: "libcupti.so.13".into(),
                    source: CuptiError { function: "cuptiGetVersion", code: 999, name: None },
                },
            ],
        };
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("/opt/cuda-11.8/libcupti.so: CUPTI API version 18"), "{text}");
        assert!(text.contains("libcupti.so.13: cuptiGetVersion failed with CUptiResult 999"), "{text}");
        assert!(text.ends_with("(CUDA's extras/CUPTI/lib64 or targets/*/lib)"), "{text}");
    }

    #[test]
    fn a_library_that_does_not_open_is_named_once() {
        let missing = "/nonexistent/libcupti.so";
        // SAFETY: no file is there, so no initializer can run.
        let Err(source) = (unsafe { libloading::Library::new(missing) }) else {
            panic!("{missing} opened");
        };
        let err = LoadError::Open { library: missing.into(), source };
        assert_eq!(
            err.to_string(),
            "cannot open /nonexistent/libcupti.so: cannot open shared object file: No such file or directory"
        );
        let err = LoadError::Override { path: missing.into(), source: Box::new(err) };
        assert_eq!(
            err.to_string(),
            "GPUTRACE_CUPTI_LIB=/nonexistent/libcupti.so: cannot open shared object file: No such file or directory"
        );
    }

    #[test]
    fn cupti_error_names_the_call_and_the_code() {
        let err =
            CuptiError { function: "cuptiActivityEnable", code: 21, name: Some("CUPTI_ERROR_INVALID_KIND".into()) };
        assert_eq!(err.to_string(), "cuptiActivityEnable failed: CUPTI_ERROR_INVALID_KIND (21)");
    }
}
