//! What kind of work a region is — a kernel, a copy of some direction, a
//! memset, a CUDA API call or synchronization, an MPI function, an NCCL
//! call, an NVTX range or mark, or something else — from its name,
//! description, paradigm and role and whether it runs on a GPU stream. The rules read gputrace's naming
//! (docs/otf2-mapping.md) and Score-P's, which agree on most: MPI regions
//! are named as the functions, CUDA API regions as the calls, kernels by
//! their demangled names on stream locations.

use otf2::reader::GlobalDefs;
use otf2::{Paradigm, RegionRole};

/// What a region is, for the reports and the timeline colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegionKind {
    Kernel,
    Copy(CopyKind),
    Memset,
    Sync,
    CudaApi,
    Mpi,
    Nccl,
    /// An NVTX range or mark ([`RegionInfo::nvtx`] says which).
    Nvtx,
    /// One execution of a CUDA graph (`GPUTRACE_CUDA_ENABLE=graph`).
    Graph,
    /// A CUDA allocation, free or pool operation (zero-length regions
    /// described `CUDA memory`): read by the memory reports, not timed.
    CudaMemory,
    Other,
}

/// The direction of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CopyKind {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    PtoP,
}

impl CopyKind {
    /// gputrace's (and nsys') region name for the copy.
    pub fn region_name(self) -> &'static str {
        match self {
            Self::HtoD => "[CUDA memcpy HtoD]",
            Self::DtoH => "[CUDA memcpy DtoH]",
            Self::DtoD => "[CUDA memcpy DtoD]",
            Self::HtoH => "[CUDA memcpy HtoH]",
            Self::PtoP => "[CUDA memcpy PtoP]",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "HtoD" => Self::HtoD,
            "DtoH" => Self::DtoH,
            "DtoD" => Self::DtoD,
            "HtoH" => Self::HtoH,
            "PtoP" => Self::PtoP,
            _ => return None,
        })
    }
}

/// How an NVTX annotation was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NvtxStyle {
    /// nvtxRangePush/Pop: nested, on the calling thread.
    PushPop,
    /// nvtxRangeStart/End: on a lane of its own.
    StartEnd,
    /// nvtxMark: a region of length zero.
    Mark,
}

impl NvtxStyle {
    /// As `nsys stats` names the styles.
    pub fn name(self) -> &'static str {
        match self {
            NvtxStyle::PushPop => "PushPop",
            NvtxStyle::StartEnd => "StartEnd",
            NvtxStyle::Mark => "Mark",
        }
    }
}

/// What gputrace's NVTX regions say of themselves (docs/otf2-mapping.md):
/// the domain (empty: the default domain) from the description `NVTX` or
/// `NVTX domain <name>`, the style from the role (FUNCTION push/pop, CODE
/// start/end, ARTIFICIAL a mark).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvtxRegion {
    pub domain: String,
    pub style: NvtxStyle,
}

impl NvtxRegion {
    fn of(description: &str, paradigm: Paradigm, role: RegionRole) -> Option<Self> {
        if paradigm != Paradigm::User {
            return None;
        }
        let domain = match description {
            "NVTX" => "",
            d => d.strip_prefix("NVTX domain ")?,
        };
        let style = match role {
            RegionRole::Code => NvtxStyle::StartEnd,
            RegionRole::Artificial => NvtxStyle::Mark,
            _ => NvtxStyle::PushPop,
        };
        Some(NvtxRegion { domain: domain.to_owned(), style })
    }

    /// The range's name as `nsys stats` shows it: `domain:message`, the
    /// default domain empty (`:message`).
    pub fn qualified(&self, name: &str) -> String {
        format!("{}:{name}", self.domain)
    }
}

/// A region with its kind as it would be on a host thread and on a stream.
#[derive(Clone, Debug)]
pub struct RegionInfo {
    pub name: String,
    pub on_host: RegionKind,
    pub on_stream: RegionKind,
    /// Of an NVTX region: its domain and style.
    pub nvtx: Option<NvtxRegion>,
    /// Its paradigm: USER and COMPILER regions that are not NVTX go to
    /// `user_region_sum`.
    pub paradigm: Paradigm,
}

pub fn region_kinds(defs: &GlobalDefs) -> Vec<RegionInfo> {
    let max = defs.regions.keys().map(|r| r.id() as usize + 1).max().unwrap_or(0);
    let mut out = vec![
        RegionInfo {
            name: String::new(),
            on_host: RegionKind::Other,
            on_stream: RegionKind::Other,
            nvtx: None,
            paradigm: Paradigm::Unknown,
        };
        max
    ];
    for (&r, def) in &defs.regions {
        let name = defs.string(def.name);
        let description = defs.string(def.description);
        out[r.id() as usize] = RegionInfo {
            name: name.to_owned(),
            on_host: classify(name, description, def.paradigm, def.role, false),
            on_stream: classify(name, description, def.paradigm, def.role, true),
            nvtx: NvtxRegion::of(description, def.paradigm, def.role),
            paradigm: def.paradigm,
        };
    }
    out
}

/// The kind of a region from its name, description, paradigm and role,
/// and whether it is on a GPU stream.
/// The region group (OTF2 description) of the CUDA agent's graph
/// executions, `CUDA graph <id>`.
pub const GRAPH_GROUP: &str = "CUDA graph";

pub fn classify(name: &str, description: &str, paradigm: Paradigm, role: RegionRole, on_stream: bool) -> RegionKind {
    // Whatever the program called it (an NVTX range named `MPI_Send`).
    if NvtxRegion::of(description, paradigm, role).is_some() {
        return RegionKind::Nvtx;
    }
    if let Some(rest) = name.strip_prefix("[CUDA memcpy ") {
        return CopyKind::parse(rest.trim_end_matches(']').trim()).map_or(RegionKind::Other, RegionKind::Copy);
    }
    if name.starts_with("[CUDA memset") {
        return RegionKind::Memset;
    }
    if name.starts_with("[CUDA sync") {
        return RegionKind::Sync;
    }
    if paradigm == Paradigm::Cuda && description == GRAPH_GROUP && name.starts_with("CUDA graph ") {
        return RegionKind::Graph;
    }
    if paradigm == Paradigm::Mpi || name.starts_with("MPI_") {
        return RegionKind::Mpi;
    }
    if !on_stream && (description == "NCCL" || name.starts_with("nccl")) {
        return RegionKind::Nccl;
    }
    if description == "CUDA memory" {
        return RegionKind::CudaMemory;
    }
    if paradigm == Paradigm::Cuda || on_stream {
        if on_stream {
            return RegionKind::Kernel;
        }
        if role == RegionRole::ImplicitBarrier {
            return RegionKind::Sync;
        }
        return RegionKind::CudaApi;
    }
    RegionKind::Other
}
