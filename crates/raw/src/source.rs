//! The sources gputrace records, declared once.
//!
//! A row says what every stage needs to know of a source: the id its
//! streams carry ([`Producer`]), the stem of their file names, the name
//! users read ("NVTX is not traced: ..."), the library that records it
//! and the variable that has the traced program load that library. The
//! command sets the variables and says which libraries it could not find,
//! the merge names sources in its facts, helper processes drop the
//! variables: each by looping over [`SOURCES`]. What a source records and
//! how it is shown stay with its producer crate and its
//! [`Paradigm`](crate::Paradigm); whether it is on stays with the
//! configuration (`Config::records`).

/// Which part of gputrace wrote a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Producer {
    /// The PMPI wrappers (`libgputrace_mpi*.so`).
    Mpi = 1,
    /// The CUDA agent (`libgputrace_cuda.so`).
    Cuda = 2,
    /// The NCCL profiler plugin (`libgputrace_nccl.so`).
    Nccl = 3,
    /// Synthetic streams made by tests and benchmarks.
    Synthetic = 4,
    /// The NVTX injection library (`libgputrace_nvtx.so`).
    Nvtx = 5,
    /// The call-stack sampler (`libgputrace_sampling.so`).
    Sampling = 6,
}

impl Producer {
    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            4 => Some(Self::Synthetic),
            _ => SOURCES.iter().find(|s| s.producer as u8 == v).map(|s| s.producer),
        }
    }

    /// The name used in file names: its source's stem ([`SOURCES`]).
    pub fn name(self) -> &'static str {
        source(self).map_or("synthetic", |s| s.stem)
    }

    /// The name users read ("CUDA was not traced"): its source's name.
    pub fn title(self) -> &'static str {
        source(self).map_or("synthetic", |s| s.name)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "synthetic" => Some(Self::Synthetic),
            _ => SOURCES.iter().find(|s| s.stem == name).map(|s| s.producer),
        }
    }
}

/// One source of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    pub producer: Producer,
    /// Its streams' file names: `<host>.<pid>.<stem>.gtr`.
    pub stem: &'static str,
    /// Its name in what gputrace says.
    pub name: &'static str,
    /// The library that records it, looked for next to `gputrace`; `None`
    /// where the command chooses one (MPI: per MPI flavour).
    pub library: Option<&'static str>,
    /// The variable that has the traced program load the library.
    pub loaded_by: &'static str,
    /// Whether a missing library is said (a warning, and "not traced" in
    /// the summary): not for a source most programs do not use and that
    /// is only loaded by its own library's request (NCCL's plugin).
    pub said_when_missing: bool,
}

/// Every source, in the order gputrace names them.
pub const SOURCES: [Source; 5] = [
    Source {
        producer: Producer::Mpi,
        stem: "mpi",
        name: "MPI",
        library: None,
        loaded_by: "LD_PRELOAD",
        said_when_missing: true,
    },
    Source {
        producer: Producer::Cuda,
        stem: "cuda",
        name: "CUDA",
        library: Some("libgputrace_cuda.so"),
        loaded_by: "CUDA_INJECTION64_PATH",
        said_when_missing: true,
    },
    Source {
        producer: Producer::Nccl,
        stem: "nccl",
        name: "NCCL",
        library: Some("libgputrace_nccl.so"),
        // NCCL (2.23 and later) loads the profiler plugin this names, a
        // full path being accepted; older NCCL ignores the variable.
        loaded_by: "NCCL_PROFILER_PLUGIN",
        said_when_missing: false,
    },
    Source {
        producer: Producer::Nvtx,
        stem: "nvtx",
        name: "NVTX",
        library: Some("libgputrace_nvtx.so"),
        // Every NVTX instance loads the library this names at its first
        // annotation.
        loaded_by: "NVTX_INJECTION64_PATH",
        said_when_missing: true,
    },
    Source {
        producer: Producer::Sampling,
        stem: "sampling",
        name: "sampling",
        library: Some("libgputrace_sampling.so"),
        // Preloaded after the MPI hooks: the one source a program does not
        // load by a request of its own.
        loaded_by: "LD_PRELOAD",
        said_when_missing: true,
    },
];

/// The row of `producer`; `None` for synthetic streams.
pub fn source(producer: Producer) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.producer == producer)
}

/// The source users know by `name` ("CUDA").
pub fn by_name(name: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.name == name)
}

/// Every variable that has a program load one of gputrace's libraries:
/// what the command sets for the ranks only, and what gputrace's own
/// helper processes must not inherit. Each once (the MPI hooks and the
/// sampler are both preloaded).
pub fn loader_variables() -> impl Iterator<Item = &'static str> {
    SOURCES
        .iter()
        .enumerate()
        .filter(|(i, s)| !SOURCES[..*i].iter().any(|t| t.loaded_by == s.loaded_by))
        .map(|(_, s)| s.loaded_by)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_producer_but_the_synthetic_one_is_a_source_with_its_own_stem_name_and_variable() {
        for (i, s) in SOURCES.iter().enumerate() {
            assert_eq!(source(s.producer), Some(s));
            assert_eq!(by_name(s.name), Some(s));
            assert_eq!(Producer::from_name(s.stem), Some(s.producer));
            for t in &SOURCES[i + 1..] {
                assert!(s.stem != t.stem && s.name != t.name, "{s:?} {t:?}");
                // Only preloaded libraries share their variable, whose
                // value is a list.
                assert!(s.loaded_by != t.loaded_by || s.loaded_by == "LD_PRELOAD", "{s:?} {t:?}");
            }
        }
        assert_eq!(source(Producer::Synthetic), None);
        assert_eq!(loader_variables().count(), SOURCES.len() - 1);
    }
}
