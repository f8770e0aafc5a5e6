//! The table of every `GPUTRACE_*` variable: name, type, default and help.
//!
//! This table is the single source: the parser
//! ([`parse_value`](crate::parse_value)), `gputrace info config-vars` and
//! `docs/configuration.md` all read it, so a variable cannot exist in one
//! and be missing from another. The members of the
//! set-valued variables are enums declared here, once
//! ([`set_members!`](crate::set_members)).

use crate::sets::{SetMember, SetSpec};

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
    Set(SetSpec),
    /// One of named values: (name, meaning).
    Choice(&'static [(&'static str, &'static str)]),
    /// A whole number.
    Count,
    /// A time in seconds: a number with decimals, or with an `ns`, `us`,
    /// `ms`, `s` or `min` suffix.
    Seconds,
    /// What opens and closes the recording window ([`crate::CaptureRange`]).
    CaptureRange,
}

/// One configuration variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub ty: VarType,
    pub default: &'static str,
    /// The `gputrace` flag that sets it (`--cuda`). A Boolean variable's
    /// flag takes no value and sets the opposite of the default.
    pub flag: &'static str,
    /// One line.
    pub brief: &'static str,
    /// More, for `--full` and the docs.
    pub help: &'static str,
}

crate::set_members! {
    /// The MPI function groups (`GPUTRACE_MPI_ENABLE_GROUPS`), as in
    /// Score-P. The MPI producer tests each wrapper's group against the
    /// set.
    pub enum MpiGroup for "GPUTRACE_MPI_ENABLE_GROUPS" {
        Cg = "cg": "communicator and group management",
        Coll = "coll": "collective communication",
        Env = "env": "environmental management (Init, Finalize, Wtime, ...)",
        Err = "err": "error handlers",
        Ext = "ext": "external interfaces (generalized requests, ...)",
        Io = "io": "MPI file I/O",
        Misc = "misc": "miscellaneous (Address, Get_count, Info, ...)",
        Perf = "perf": "MPI_Pcontrol",
        P2p = "p2p": "point-to-point communication",
        Rma = "rma": "one-sided communication",
        Spawn = "spawn": "process management (Comm_spawn, ...)",
        Topo = "topo": "process topologies",
        Type = "type": "datatype management",
        Xnonblock = "xnonblock": "follow non-blocking requests to completion (MpiIsend/MpiIrecv events); \
                                  without it non-blocking messages are not recorded",
        Xreqtest = "xreqtest": "record an MpiRequestTest event for every test that finds a request unfinished",
    }
    aliases {
        "default": "cg,coll,env,io,p2p,rma,topo,xnonblock" => &[Cg, Coll, Env, Io, P2p, Rma, Topo, Xnonblock],
        "all": "every group" => MpiGroup::ALL,
        "none": "no MPI recording" => &[],
        "no": "no MPI recording" => &[],
    }
}

crate::set_members! {
    /// What the CUDA agent records (`GPUTRACE_CUDA_ENABLE`).
    pub enum CudaSource for "GPUTRACE_CUDA_ENABLE" {
        Driver = "driver": "CUDA driver API calls (cu*), as regions on the calling thread",
        Runtime = "runtime": "the CUDA runtime calls that create, order or wait for GPU work (launches, copies, \
                              memsets, allocations and frees, synchronizations, event record and wait, graph \
                              launches, stream creation and capture), as regions on the calling thread with their \
                              correlation to the GPU work; not the getters and queries (runtime-all)",
        RuntimeAll = "runtime-all": "every CUDA runtime API call (cuda*), getters and queries too \
                                     (cudaGetDevice, cudaStreamIsCapturing, ...): what runtime was before",
        Kernel = "kernel": "kernels, on their stream, with grid, block, registers and shared memory",
        Memcpy = "memcpy": "copies host-to-device, device-to-host, device-to-device and host-to-host",
        Memset = "memset": "memsets, on their stream",
        Peer = "peer": "copies between GPUs (peer-to-peer), with source and destination device",
        Sync = "sync": "synchronizations (stream, event, context) on the waiting thread",
        Nvlink = "nvlink": "NVLink topology, and NVLink traffic per GPU sampled from NVML",
        Graph = "graph": "one region per CUDA graph execution on its stream, instead of the kernels, copies and \
                          memsets of its nodes (CUPTI's graph-level trace: one record per launch, not per node)",
        Memory = "memory": "allocations and frees (device, pinned, managed, stream-ordered pools, VMM mappings) with \
                            address, size and stream, memory pools, the memory in use per process and GPU over \
                            time, and the addresses each copy call named (the copy report by allocation); \
                            one record per allocation or free, a callback per copy call",
        Uvm = "uvm": "unified (managed) memory: CPU and GPU page faults, migrations host-to-device and \
                      device-to-host in bytes, thrashing; off by default (CUDA's driver reports every \
                      fault group and migration)",
    }
    aliases {
        "default": "runtime,kernel,memcpy,memset,peer,nvlink (the runtime calls that make or wait for GPU \
                     work, synchronizations among them, not the driver calls they make; sync, memory and uvm \
                     cost every call, measured: docs/cuda.md)" => CUDA_DEFAULT,
        "yes": "the same as default" => CUDA_DEFAULT,
        "all": "every member but graph (a choice, not more: add it by name)" => CUDA_ALL,
        "no": "no CUDA recording: the agent is not loaded" => &[],
        "none": "the same as no" => &[],
    }
}

/// `GPUTRACE_CUDA_ENABLE=default`: the runtime API and the GPU work; not
/// the driver API (the calls the runtime makes; Score-P and nsys leave it
/// out too), not `sync` (CUPTI's SYNCHRONIZATION kind costs every runtime
/// call, getters too, about 190 ns on an H200, while the synchronizing
/// calls are regions of `runtime` already), not `memory` and `uvm`
/// (CUPTI's memory tracking costs every op), measured in docs/cuda.md,
/// and not `graph`, which replaces the nodes of graphs by one region per
/// graph execution.
const CUDA_DEFAULT: &[CudaSource] = {
    use CudaSource::*;
    &[Runtime, Kernel, Memcpy, Memset, Peer, Nvlink]
};

/// `GPUTRACE_CUDA_ENABLE=all`: every member but `graph`.
const CUDA_ALL: &[CudaSource] = {
    use CudaSource::*;
    &[Driver, Runtime, RuntimeAll, Kernel, Memcpy, Memset, Peer, Sync, Nvlink, Memory, Uvm]
};

crate::set_members! {
    /// What the NCCL profiler plugin records (`GPUTRACE_NCCL_ENABLE`).
    pub enum NcclLevel for "GPUTRACE_NCCL_ENABLE" {
        Group = "group": "ncclGroupStart/End groups, as regions",
        Coll = "coll": "collectives (all-reduce, all-gather, ...) with bytes, root, data type, reduction, \
                        algorithm, protocol, channels",
        P2p = "p2p": "ncclSend/ncclRecv, as messages between the ranks' GPUs",
        Proxy = "proxy": "proxy operations and steps (network and proxy-driven transfers), on the proxy thread",
        Kernel = "kernel": "per-channel kernel timing, on NCCL's channel locations",
    }
    aliases {
        "default": "group,coll,p2p" => &[Group, Coll, P2p],
        "yes": "the same as default" => &[Group, Coll, P2p],
        "all": "every level" => NcclLevel::ALL,
        "no": "no NCCL recording: the plugin is not loaded" => &[],
        "none": "the same as no" => &[],
    }
}

/// Every variable gputrace reads.
pub const VARS: &[Var] = &[
    Var {
        name: "GPUTRACE_ENABLE_TRACING",
        ty: VarType::Bool,
        default: "true",
        flag: "--no-trace",
        brief: "Write the OTF2 trace archive.",
        help: "When false (profile only, as Score-P's SCOREP_ENABLE_TRACING=false), events are still \
               recorded and merged into the Cube profile and the summary, but no OTF2 archive \
               (traces.otf2) is written.",
    },
    Var {
        name: "GPUTRACE_ENABLE_PROFILING",
        ty: VarType::Bool,
        default: "true",
        flag: "--no-profile",
        brief: "Write the Cube profile (profile.cubex) and the summary.",
        help: "The profile is a CUBE4 call-path profile made in the merge's pass: time, visits, bytes \
               sent and received, GPU kernel, copy and memset time and bytes, per call path and \
               location, for Cube, cube_stat or pycubexr (docs/profile.md). The summary \
               (summary.txt and the terminal summary: processes, events, the MPI functions by time, \
               messages and bytes) costs next to nothing and comes with it. When false, only the \
               archive is written; when both this and GPUTRACE_ENABLE_TRACING are false, nothing \
               is recorded.",
    },
    Var {
        name: "GPUTRACE_EXPERIMENT_DIRECTORY",
        ty: VarType::Path,
        default: "",
        flag: "--output",
        brief: "Directory for the raw streams, the archive, the profile and the summary.",
        help: "Empty means gputrace-<program>-<YYYYmmdd_HHMMSS> in the working directory, the \
               program's name cut to 64 characters. An existing directory is never overwritten: \
               gputrace refuses to start.",
    },
    Var {
        name: "GPUTRACE_TOTAL_MEMORY",
        ty: VarType::Size,
        default: "16M",
        flag: "--total-memory",
        brief: "Memory for event buffers, per process and producer.",
        help: "Each recording thread takes a buffer from this budget; a full buffer is \
               written to the raw stream, never dropped. Threads beyond the budget get \
               small buffers. At least 64k.",
    },
    Var {
        name: "GPUTRACE_FILTERING_FILE",
        ty: VarType::Path,
        default: "",
        flag: "--filter",
        brief: "Score-P filter file: regions to leave out of the trace.",
        help: "Score-P syntax: SCOREP_REGION_NAMES_BEGIN, EXCLUDE/INCLUDE [MANGLED] with \
               shell wildcards, SCOREP_REGION_NAMES_END; the last matching rule wins. A \
               filtered region loses its Enter/Leave events; messages and collectives it \
               made are still recorded so that communication stays complete.",
    },
    Var {
        name: "GPUTRACE_MPI_ENABLE_GROUPS",
        ty: VarType::Set(MpiGroup::SPEC),
        default: "default",
        flag: "--mpi-groups",
        brief: "MPI function groups to record.",
        help: "Functions outside the groups are still called, just not recorded. \
               MPI_Init/Init_thread/Finalize are always intercepted (for clock \
               synchronization) but recorded only with env.",
    },
    Var {
        name: "GPUTRACE_CUDA_ENABLE",
        ty: VarType::Set(CudaSource::SPEC),
        default: "default",
        flag: "--cuda",
        brief: "What the CUDA agent records.",
        help: "The agent is loaded by the CUDA driver (CUDA_INJECTION64_PATH, set by gputrace for \
               the ranks) into every process that initializes CUDA, Python programs included, \
               and records through CUPTI. `no` leaves CUDA untraced. A process that does no GPU \
               work leaves no trace. Kernels, copies and memsets a CUDA graph ran carry its graph \
               and node ids; `default,graph` records one region per graph execution instead \
               (no kernels, copies or memsets of graph nodes).",
    },
    Var {
        name: "GPUTRACE_CUDA_BUFFER",
        ty: VarType::Size,
        default: "4M",
        flag: "--cuda-buffer",
        brief: "Size of each CUPTI activity buffer.",
        help: "CUPTI fills a buffer, hands it to the agent, which converts it and gives it back: \
               two or three are in use at a time. Larger buffers mean fewer hand-overs. Between \
               64k and 64M.",
    },
    Var {
        name: "GPUTRACE_NVLINK_INTERVAL",
        ty: VarType::Duration,
        default: "10ms",
        flag: "--nvlink-interval",
        brief: "How often NVLink traffic is sampled.",
        help: "Each GPU a process uses gets an `NVLink GPU d` metric location with the bytes sent \
               and received over NVLink since the process started, read from NVML's counters. \
               0 or `no`: not sampled.",
    },
    Var {
        name: "GPUTRACE_GPU_METRICS_INTERVAL",
        ty: VarType::Duration,
        default: "10ms",
        flag: "--gpu-metrics-interval",
        brief: "How often GPU utilization, memory, SM clock, power and temperature are sampled.",
        help: "Each GPU a process uses gets a `GPU d metrics` metric location with NVML's GPU and \
               memory utilization (%), device memory in use (bytes), SM clock (MHz), power (mW) \
               and temperature (°C); a metric the GPU does not offer is left out. Sampled on the \
               NVLink sampler's thread (docs/cuda.md). 0 or `no`: not sampled.",
    },
    Var {
        name: "GPUTRACE_SAMPLING",
        ty: VarType::Duration,
        default: "0",
        flag: "--sampling",
        brief: "Sample every thread's call stack each PERIOD of its CPU time (1ms, 10ms); 0: off.",
        help: "gputrace preloads its sampling library into the ranks: each thread is interrupted every \
               PERIOD of the CPU time it uses (perf_event_open where the kernel allows it, else a \
               per-thread POSIX timer), its registers and the top of its stack are copied, unwound \
               with the binaries' DWARF CFI (no frame pointers or rebuild needed) and symbolized by the \
               merge: OTF2 calling contexts and CallingContextSample events, and a table of sampled \
               functions in `gputrace stats` (docs/sampling.md). At least 100us.",
    },
    Var {
        name: "GPUTRACE_SAMPLING_STACK",
        ty: VarType::Size,
        default: "16k",
        flag: "--sampling-stack",
        brief: "Bytes of a thread's stack copied at each sample, for unwinding.",
        help: "Frames deeper in the stack than this are cut from the sampled call path (it then \
               starts at the outermost frame that could be unwound). Between 1k and 60k.",
    },
    Var {
        name: "GPUTRACE_UNWINDING",
        ty: VarType::Bool,
        default: "false",
        flag: "--unwinding",
        brief: "Record the call path of every MPI, CUDA runtime and NCCL call at its Enter (as Score-P's \
                SCOREP_ENABLE_UNWINDING).",
        help: "The MPI wrappers, the CUDA runtime callbacks and the NCCL plugin unwind their caller's stack at each \
               recorded call (DWARF CFI, no frame pointers or rebuild needed) and record the node of \
               the process's call-path tree with the Enter; the merge writes the call as \
               CallingContextEnter and CallingContextLeave events, whose calling context is the \
               function under the user functions that called it, and the Cube profile puts the call, \
               and the GPU work a launch started, under them (docs/sampling.md). Adds about 160 ns per \
               MPI call, more for deeper call paths (docs/sampling.md).",
    },
    Var {
        name: "GPUTRACE_CUPTI_LIB",
        ty: VarType::Path,
        default: "",
        flag: "--cupti-lib",
        brief: "The CUPTI library to use, overriding the search.",
        help: "Empty: the CUPTI beside the CUDA toolkit in use (CUDA_HOME, /usr/local/cuda), then \
               the loader's search path, then pip-installed CUPTI (nvidia/cu13/lib, \
               nvidia/cuda_cupti/lib).",
    },
    Var {
        name: "GPUTRACE_NCCL_ENABLE",
        ty: VarType::Set(NcclLevel::SPEC),
        default: "default",
        flag: "--nccl",
        brief: "What the NCCL profiler plugin records.",
        help: "gputrace sets NCCL_PROFILER_PLUGIN to its plugin for the ranks (NCCL 2.23 and later \
               load it); the levels become NCCL's event activation mask. `no` leaves NCCL \
               untraced (its kernels are still seen by the CUDA agent).",
    },
    Var {
        name: "GPUTRACE_NVTX_ENABLE",
        ty: VarType::Bool,
        default: "true",
        flag: "--no-nvtx",
        brief: "Record NVTX ranges, marks and thread names.",
        help: "gputrace sets NVTX_INJECTION64_PATH to its NVTX library for the ranks; every NVTX \
               instance of a process (C/C++ nvtx3, PyTorch, the Python nvtx package) loads it at its \
               first annotation, before CUDA or without it. Push/pop ranges become user regions on \
               the calling thread, start/end ranges regions on `NVTX ranges` lanes, marks \
               zero-length regions (docs/nvtx.md). `no` does not inject the library: NVTX calls \
               stay the empty calls they are without a tool.",
    },
    Var {
        name: "GPUTRACE_KEEP_RAW",
        ty: VarType::Bool,
        default: "false",
        flag: "--keep-raw",
        brief: "Keep the raw streams (raw/) after the archive is written.",
        help: "After a run, once the merge has read every raw stream to its end and written the \
               archive without a warning, gputrace removes raw/ (as Score-P keeps only its traces \
               and nsys its report): the archive holds everything they held. Set this to keep them, \
               for `gputrace merge DIR` to merge them again. After a merge that warned, failed or \
               met a process still writing, raw/ is always kept.",
    },
    Var {
        name: "GPUTRACE_TIMER",
        ty: VarType::Choice(&[
            (
                "auto",
                "the TSC with one map per host (gputrace's on its host, the host's map file in the experiment \
                 directory on others), else clock_gettime",
            ),
            (
                "tsc",
                "the TSC wherever usable, a process calibrating it for itself where it finds no map of its host \
                 (clock_gettime where not usable)",
            ),
            ("clock_gettime", "CLOCK_MONOTONIC through clock_gettime"),
        ]),
        default: "auto",
        flag: "--timer",
        brief: "The clock of every host timestamp: the TSC or clock_gettime.",
        help: "The TSC (rdtsc, an invariant counter: the CPU says constant_tsc and nonstop_tsc and \
               the kernel keeps it among its clock sources) costs a third of clock_gettime. It is \
               mapped to CLOCK_MONOTONIC's nanoseconds by a calibration, one per host, so that a host's \
               processes read one clock: gputrace calibrates once and hands the map to every process it \
               starts on its host; on another host (a cluster's nodes) the first process calibrates and \
               publishes the map in the experiment directory (raw/timer-<domain>.tsc), where the host's \
               other processes read it. With `auto` a process that finds no map it can trust reads \
               clock_gettime (after one warning, for a bad map file); with `tsc` it calibrates for itself, \
               and only MPI's clock synchronization corrects the difference. The archive's GPUTRACE::TIMER property says which timer was read \
               (docs/architecture.md).",
    },
    Var {
        name: "GPUTRACE_MERGE_JOBS",
        ty: VarType::Count,
        default: "0",
        flag: "--merge-jobs",
        brief: "Threads of the merge after a run; 0: one per available core.",
        help: "The merge writes the archive's locations on this many threads at once, each \
               location (a thread's or GPU stream's events) whole on one thread, the locations \
               balanced among the threads by their events; the archive is the same whatever the \
               number. `gputrace merge --jobs N DIR` sets it for a merge run by hand.",
    },
    Var {
        name: "GPUTRACE_MERGE_RANKS",
        ty: VarType::Count,
        default: "0",
        flag: "--merge-ranks",
        brief: "Merge as an MPI job of this many ranks, started with the run's launcher; 0: no.",
        help: "After the program, gputrace runs `LAUNCHER -np K gputrace merge --mpi DIR` (srun: \
               `srun -n K`) with the launcher the program was started with: K merge ranks each \
               read and write the events of their share of the processes, into one archive, \
               through OTF2's collective callbacks over MPI (docs/mpi.md, \"The merge as an MPI \
               job\"). Needs an MPI launcher (mpirun, mpiexec, srun) and at most as many merge \
               ranks as traced processes.",
    },
    Var {
        name: "GPUTRACE_DELAY",
        ty: VarType::Seconds,
        default: "0",
        flag: "--delay",
        brief: "Start recording this many seconds after the job started (as nsys --delay).",
        help: "Counted from the moment gputrace launched the job, on every process of it (every rank, \
               every producer: MPI, CUDA, NCCL, NVTX), so that all start at once; a process started later \
               starts recording at the same instant. Before it nothing is recorded but what every run needs \
               (definitions, MPI's clock synchronization). Seconds, decimals allowed (2.5), or with a \
               unit (500ms). The archive shows each window as a `gputrace capture` region on a lane of \
               its own in every process (docs/window.md).",
    },
    Var {
        name: "GPUTRACE_DURATION",
        ty: VarType::Seconds,
        default: "0",
        flag: "--duration",
        brief: "Stop recording this many seconds after it started (after the delay); 0: until the end.",
        help: "With GPUTRACE_DELAY, the window is [delay, delay + duration) from the job's start. The \
               program runs on to its end untraced; the merge runs when it ends. A region entered \
               inside the window keeps its Leave after it, one entered before it is left out whole \
               (docs/window.md).",
    },
    Var {
        name: "GPUTRACE_HANG_TIMEOUT",
        ty: VarType::Seconds,
        default: "0",
        flag: "--hang-timeout",
        brief: "Stop the job when no process recorded an MPI or NCCL call or ended GPU work for this long; 0: \
                never.",
        help: "gputrace watches the raw streams as they are written: when no MPI or NCCL event was \
               committed and no GPU work (kernel, copy, memset) ended in any process for this long (a hang: \
               every rank stuck in a call, or waiting for one that never comes; a kernel that never ends), \
               it says so and stops the job (SIGTERM to the launcher, which stops the ranks; SIGKILL 15 s \
               later). CUDA API calls and GPU metric samples are not progress. The merge then runs as after \
               any stopped job, and the summary and `gputrace analyze` say what was in flight: each \
               thread's call that had not returned, per communicator the collective some ranks wait in \
               that the others never entered, and the GPU work launched that never finished. Choose it \
               longer than the longest phase without communication or GPU work (docs/analysis.md, \"In \
               flight\").",
    },
    Var {
        name: "GPUTRACE_FLIGHT_RECORDER",
        ty: VarType::Seconds,
        default: "0",
        flag: "--flight-recorder",
        brief: "Keep only the last SECONDS of events per thread (a flight recorder); 0: keep everything.",
        help: "Each process records as usual into its raw streams, but gives back the events older than \
               this window behind the newest it recorded (the slots that hold them are punched out of the \
               stream files), so memory and disk stay bounded however long the job runs. The archive, \
               written at a hang (the hang timeout defaults to 300 s with a flight recorder), at SIGUSR1 \
               to gputrace (a snapshot), when a rank dies or at the end, holds the last window: calls open \
               when it began start at its first event, and the summary counts what was given back \
               (docs/analysis.md, \"Flight recorder\").",
    },
    Var {
        name: "GPUTRACE_ON_HANG",
        ty: VarType::Choice(&[
            ("stop", "say so and stop the job (SIGTERM, SIGKILL 15 s later); the archive is written as after any run"),
            (
                "snapshot",
                "write what was recorded until then to snapshot-N/ in the experiment directory, with what was in \
                 flight, and let the job run on (another snapshot only after it recorded again)",
            ),
        ]),
        default: "stop",
        flag: "--on-hang",
        brief: "What GPUTRACE_HANG_TIMEOUT does when it fires: stop the job or write a snapshot and let it run.",
        help: "With a hang timeout set, SIGUSR1 sent to gputrace also writes a snapshot (instead of being \
               forwarded to the job), whichever this says: `kill -USR1 <gputrace's pid>` shows what every rank is \
               in right now. A snapshot is an archive of its own, merged from the streams as they are \
               (docs/analysis.md, \"In flight\").",
    },
    Var {
        name: "GPUTRACE_CAPTURE_RANGE",
        ty: VarType::CaptureRange,
        default: "none",
        flag: "--capture-range",
        brief: "Record only inside a range the program marks: an NVTX range, cudaProfilerStart/Stop, MPI_Pcontrol.",
        help: "`nvtx:NAME` records inside the first push/pop NVTX range NAME of each process (nsys's \
               --capture-range=nvtx --nvtx-capture=NAME); `nvtx:NAME@N` inside its Nth occurrence, \
               `nvtx:NAME@N-M` inside each of the Nth to Mth (counted per process, from 1), nothing \
               between them. `cudaProfilerApi` records between cudaProfilerStart and cudaProfilerStop \
               (off until the first start). `pcontrol` follows MPI_Pcontrol as Score-P does: on from the \
               start, MPI_Pcontrol(0) stops recording, any other level resumes it; without it \
               MPI_Pcontrol is only recorded, never obeyed. A range switches every producer of its \
               process; together with GPUTRACE_DELAY/DURATION recording needs both open. `none`: no \
               capture range (docs/window.md).",
    },
    Var {
        name: "GPUTRACE_VERBOSE",
        ty: VarType::Bool,
        default: "false",
        flag: "--verbose",
        brief: "Print gputrace's own diagnostics to stderr.",
        help: "Diagnostics are prefixed [gputrace]; the traced program's output is unchanged.",
    },
];

/// Developer settings: accepted by `gputrace` and parsed like the others,
/// but listed only by `gputrace info config-vars --full` and in their own
/// section of `docs/configuration.md`. They make the producers save what
/// they process, for the test fixtures (docs/testing.md).
pub const DEVELOPER_VARS: &[Var] = &[
    Var {
        name: "GPUTRACE_CUDA_CAPTURE",
        ty: VarType::Path,
        default: "",
        flag: "--cuda-capture",
        brief: "Developer setting: a directory where the CUDA agent saves the CUPTI buffers it processes.",
        help: "Each buffer, its records and the strings they point to, becomes `<dir>/<pid>-<n>.cupti`; \
               tests/fixtures/cupti holds such captures, replayed by the tests where there is no GPU \
               (docs/cuda.md).",
    },
    Var {
        name: "GPUTRACE_NCCL_CAPTURE",
        ty: VarType::Path,
        default: "",
        flag: "--nccl-capture",
        brief: "Developer setting: a file where the NCCL plugin writes every callback it receives.",
        help: "One text line per callback; `%p` in the name becomes the pid, `%h` the host; without \
               `%p` an existing file makes it `<file>.<pid>`. Replayed by the tests where there is no GPU \
               (docs/nccl.md).",
    },
];

/// Looks a variable (a user's or a developer's) up by name.
pub fn find(name: &str) -> Option<&'static Var> {
    VARS.iter().chain(DEVELOPER_VARS).find(|v| v.name == name)
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
            VarType::Choice(_) => "Choice",
            VarType::Count => "Number",
            VarType::Seconds => "Seconds",
            VarType::CaptureRange => "Capture range",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_has_its_own_flag() {
        let all: Vec<&Var> = VARS.iter().chain(DEVELOPER_VARS).collect();
        for v in &all {
            assert!(v.flag.starts_with("--") && v.flag.len() > 3, "{}: {}", v.name, v.flag);
            assert_eq!(all.iter().filter(|w| w.flag == v.flag).count(), 1, "{} shared", v.flag);
        }
    }
}
