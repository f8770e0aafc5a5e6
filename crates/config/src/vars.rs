//! The table of every `GPUTRACE_*` variable: name, type, default and help.
//!
//! This table is the single source: the parser in [`super`], `gputrace info
//! config-vars` and `docs/configuration.md` all read it, so a variable
//! cannot exist in one and be missing from another.

/// The type of a variable's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    /// `true`/`false` (also `yes`/`no`, `on`/`off`, `1`/`0`).
    Bool,
    /// A size in bytes with an optional `k`, `M`, `G` suffix (powers of 1024).
    Size,
    /// A file or directory path.
    Path,
    /// A duration with an optional `ns`, `us`, `ms` or `s` suffix (default ms).
    Duration,
    /// A comma- or space-separated subset of named values.
    Set(&'static [SetValue]),
}

/// One allowed member of a set-valued variable, or an alias for several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetValue {
    pub name: &'static str,
    pub help: &'static str,
    /// Whether this is an alias (`default`, `all`, `none`) rather than a member.
    pub is_alias: bool,
    /// For an alias: the members it stands for.
    pub expands_to: &'static [&'static str],
}

/// One configuration variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub ty: VarType,
    pub default: &'static str,
    /// One line.
    pub brief: &'static str,
    /// More, for `--full` and the docs.
    pub help: &'static str,
}

const fn member(name: &'static str, help: &'static str) -> SetValue {
    SetValue { name, help, is_alias: false, expands_to: &[] }
}

const fn alias(name: &'static str, help: &'static str, expands_to: &'static [&'static str]) -> SetValue {
    SetValue { name, help, is_alias: true, expands_to }
}

const MPI_DEFAULT: &[&str] = &["cg", "coll", "env", "io", "p2p", "rma", "topo", "xnonblock"];
const MPI_ALL: &[&str] = &[
    "cg",
    "coll",
    "env",
    "err",
    "ext",
    "io",
    "misc",
    "perf",
    "p2p",
    "rma",
    "spawn",
    "topo",
    "type",
    "xnonblock",
    "xreqtest",
];

/// The MPI function groups, as in Score-P.
pub const MPI_GROUPS: &[SetValue] = &[
    member("cg", "communicator and group management"),
    member("coll", "collective communication"),
    member("env", "environmental management (Init, Finalize, Wtime, ...)"),
    member("err", "error handlers"),
    member("ext", "external interfaces (generalized requests, ...)"),
    member("io", "MPI file I/O"),
    member("misc", "miscellaneous (Address, Get_count, Info, ...)"),
    member("perf", "MPI_Pcontrol"),
    member("p2p", "point-to-point communication"),
    member("rma", "one-sided communication"),
    member("spawn", "process management (Comm_spawn, ...)"),
    member("topo", "process topologies"),
    member("type", "datatype management"),
    member(
        "xnonblock",
        "follow non-blocking requests to completion (MpiIsend/MpiIrecv events); \
         without it non-blocking messages are not recorded",
    ),
    member("xreqtest", "record an MpiRequestTest event for every test that finds a request unfinished"),
    alias("default", "cg,coll,env,io,p2p,rma,topo,xnonblock", MPI_DEFAULT),
    alias("all", "every group", MPI_ALL),
    alias("none", "no MPI recording", &[]),
    alias("no", "no MPI recording", &[]),
];

const CUDA_DEFAULT: &[&str] = &["driver", "runtime", "kernel", "memcpy", "memset", "peer", "sync", "nvlink"];

/// What the CUDA agent records.
pub const CUDA_FEATURES: &[SetValue] = &[
    member("driver", "CUDA driver API calls (cu*), as regions on the calling thread"),
    member("runtime", "CUDA runtime API calls (cuda*), as regions on the calling thread"),
    member("kernel", "kernels, on their stream, with grid, block, registers and shared memory"),
    member("memcpy", "copies host-to-device, device-to-host, device-to-device and host-to-host"),
    member("memset", "memsets, on their stream"),
    member("peer", "copies between GPUs (peer-to-peer), with source and destination device"),
    member("sync", "synchronizations (stream, event, context) on the waiting thread"),
    member("nvlink", "NVLink topology, and NVLink traffic per GPU sampled from NVML"),
    alias("default", "driver,runtime,kernel,memcpy,memset,peer,sync,nvlink", CUDA_DEFAULT),
    alias("yes", "the same as default", CUDA_DEFAULT),
    alias("all", "the same as default", CUDA_DEFAULT),
    alias("no", "no CUDA recording: the agent is not loaded", &[]),
    alias("none", "the same as no", &[]),
];

const NCCL_DEFAULT: &[&str] = &["group", "coll", "p2p"];
const NCCL_ALL: &[&str] = &["group", "coll", "p2p", "proxy", "kernel"];

/// What the NCCL profiler plugin records.
pub const NCCL_LEVELS: &[SetValue] = &[
    member("group", "ncclGroupStart/End groups, as regions"),
    member(
        "coll",
        "collectives (all-reduce, all-gather, ...) with bytes, root, data type, reduction, algorithm, protocol, channels",
    ),
    member("p2p", "ncclSend/ncclRecv, as messages between the ranks' GPUs"),
    member("proxy", "proxy operations and steps (network and proxy-driven transfers), on the proxy thread"),
    member("kernel", "per-channel kernel timing, on NCCL's channel locations"),
    alias("default", "group,coll,p2p", NCCL_DEFAULT),
    alias("yes", "the same as default", NCCL_DEFAULT),
    alias("all", "every level", NCCL_ALL),
    alias("no", "no NCCL recording: the plugin is not loaded", &[]),
    alias("none", "the same as no", &[]),
];

/// Every variable gputrace reads.
pub const VARS: &[Var] = &[
    Var {
        name: "GPUTRACE_ENABLE_TRACING",
        ty: VarType::Bool,
        default: "true",
        brief: "Write the OTF2 trace archive.",
        help: "When false, events are still recorded so that the summary can be computed, \
               but no OTF2 archive is written.",
    },
    Var {
        name: "GPUTRACE_ENABLE_PROFILING",
        ty: VarType::Bool,
        default: "true",
        brief: "Write the summary profile (summary.txt and the terminal summary).",
        help: "The summary lists processes, locations, events, the MPI functions by time, \
               messages and bytes. When false, only the archive is written.",
    },
    Var {
        name: "GPUTRACE_EXPERIMENT_DIRECTORY",
        ty: VarType::Path,
        default: "",
        brief: "Directory for the raw streams, the archive and the summary.",
        help: "Empty means gputrace-<program>-<YYYYmmdd_HHMMSS> in the working directory, the \
               program's name cut to 64 characters. An existing directory is never overwritten: \
               gputrace refuses to start.",
    },
    Var {
        name: "GPUTRACE_TOTAL_MEMORY",
        ty: VarType::Size,
        default: "16M",
        brief: "Memory for event buffers, per process and producer.",
        help: "Each recording thread takes a buffer from this budget; a full buffer is \
               written to the raw stream, never dropped. Threads beyond the budget get \
               small buffers. At least 64k.",
    },
    Var {
        name: "GPUTRACE_FILTERING_FILE",
        ty: VarType::Path,
        default: "",
        brief: "Score-P filter file: regions to leave out of the trace.",
        help: "Score-P syntax: SCOREP_REGION_NAMES_BEGIN, EXCLUDE/INCLUDE [MANGLED] with \
               shell wildcards, SCOREP_REGION_NAMES_END; the last matching rule wins. A \
               filtered region loses its Enter/Leave events; messages and collectives it \
               made are still recorded so that communication stays complete.",
    },
    Var {
        name: "GPUTRACE_MPI_ENABLE_GROUPS",
        ty: VarType::Set(MPI_GROUPS),
        default: "default",
        brief: "MPI function groups to record.",
        help: "Functions outside the groups are still called, just not recorded. \
               MPI_Init/Init_thread/Finalize are always intercepted (for clock \
               synchronization) but recorded only with env.",
    },
    Var {
        name: "GPUTRACE_CUDA_ENABLE",
        ty: VarType::Set(CUDA_FEATURES),
        default: "default",
        brief: "What the CUDA agent records.",
        help: "The agent is loaded by the CUDA driver (CUDA_INJECTION64_PATH, set by gputrace for \
               the ranks) into every process that initializes CUDA, Python programs included, \
               and records through CUPTI. `no` leaves CUDA untraced. A process that does no GPU \
               work leaves no trace.",
    },
    Var {
        name: "GPUTRACE_CUDA_BUFFER",
        ty: VarType::Size,
        default: "4M",
        brief: "Size of each CUPTI activity buffer.",
        help: "CUPTI fills a buffer, hands it to the agent, which converts it and gives it back: \
               two or three are in use at a time. Larger buffers mean fewer hand-overs. Between \
               64k and 64M.",
    },
    Var {
        name: "GPUTRACE_NVLINK_INTERVAL",
        ty: VarType::Duration,
        default: "10ms",
        brief: "How often NVLink traffic is sampled.",
        help: "Each GPU a process uses gets an `NVLink GPU d` metric location with the bytes sent \
               and received over NVLink since the process started, read from NVML's counters.",
    },
    Var {
        name: "GPUTRACE_CUPTI_LIB",
        ty: VarType::Path,
        default: "",
        brief: "The CUPTI library to use, overriding the search.",
        help: "Empty: the CUPTI beside the CUDA toolkit in use (CUDA_HOME, /usr/local/cuda), then \
               the loader's search path, then pip-installed CUPTI (nvidia/cu13/lib, \
               nvidia/cuda_cupti/lib).",
    },
    Var {
        name: "GPUTRACE_NCCL_ENABLE",
        ty: VarType::Set(NCCL_LEVELS),
        default: "default",
        brief: "What the NCCL profiler plugin records.",
        help: "gputrace sets NCCL_PROFILER_PLUGIN to its plugin for the ranks (NCCL 2.23 and later \
               load it); the levels become NCCL's event activation mask. `no` leaves NCCL \
               untraced (its kernels are still seen by the CUDA agent).",
    },
    Var {
        name: "GPUTRACE_VERBOSE",
        ty: VarType::Bool,
        default: "false",
        brief: "Print gputrace's own diagnostics to stderr.",
        help: "Diagnostics are prefixed [gputrace]; the traced program's output is unchanged.",
    },
];

/// Looks a variable up by name.
pub fn find(name: &str) -> Option<&'static Var> {
    VARS.iter().find(|v| v.name == name)
}

impl VarType {
    /// A short name of the type for listings.
    pub fn name(&self) -> &'static str {
        match self {
            VarType::Bool => "Boolean",
            VarType::Size => "Number with size unit",
            VarType::Path => "Path",
            VarType::Duration => "Duration",
            VarType::Set(_) => "Set",
        }
    }
}
