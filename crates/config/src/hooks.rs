//! Test hooks: environment variables that tests set to steer gputrace's
//! own code, never settings for users. Their names start with
//! `_GPUTRACE_TEST_`, outside the `GPUTRACE_*` namespace on purpose:
//! `gputrace` neither checks nor forwards them, and `gputrace info
//! config-vars` lists them only with `--full`. This is the one list of
//! them (`docs/configuration.md` prints it); every variable a user may
//! set is in [`VARS`](crate::VARS) or [`DEVELOPER_VARS`](crate::DEVELOPER_VARS).

/// One test hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hook {
    pub name: &'static str,
    /// The code that reads it.
    pub read_by: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// Gives every rank an artificial clock domain, so that the clock
/// measurement between domains runs on one host.
pub const CLOCK_DOMAIN: Hook = Hook {
    name: "_GPUTRACE_TEST_CLOCK_DOMAIN",
    read_by: "the MPI producer (crates/producers/mpi/src/clocksync.rs)",
    help: "`rank%N`: every rank's clock domain is its rank modulo N; `rank`: its own rank. The \
           clocks are measured against rank 0 as if the ranks ran on different hosts.",
};

/// Makes a test binary of the recorder, run again as a child, record until
/// it is killed.
pub const KILL_DIR: Hook = Hook {
    name: "_GPUTRACE_TEST_KILL_DIR",
    read_by: "the recorder's own tests (crates/recorder/src/tests.rs)",
    help: "The child records into this directory until the parent test kills it.",
};

/// Makes a test binary of the recorder, run again as a child, panic inside
/// the recorder.
pub const PANIC: Hook = Hook {
    name: "_GPUTRACE_TEST_PANIC",
    read_by: "the recorder's own tests (crates/recorder/src/tests.rs, guard.rs)",
    help: "The child panics inside the tracer, to show that one [gputrace] line is all the \
           program's stderr gets.",
};

/// Makes a test binary of the recorder, run again as a child, record one
/// stream in this experiment directory without the command's TSC map.
pub const HOST_MAP: Hook = Hook {
    name: "_GPUTRACE_TEST_HOST_MAP",
    read_by: "the recorder's own tests (crates/recorder/src/tests.rs)",
    help: "The child records one stream there, reading the TSC through the host's map file.",
};

/// Makes one rank of a merge run as an MPI job fail at its start, while
/// the others wait for it in a collective call.
pub const MERGE_RANK_FAILS: Hook = Hook {
    name: "_GPUTRACE_TEST_MERGE_RANK_FAILS",
    read_by: "gputrace merge --mpi (crates/gputrace/src/mpi_merge.rs)",
    help: "The merge rank of this number fails as a rank whose writing failed does: one line, \
           then MPI_Abort, which must end the whole job.",
};

/// Lowers the number of messages between hosts the merge's clock
/// correction reads, so that a test reaches the limit with a small job.
pub const CORRECTION_LIMIT: Hook = Hook {
    name: "_GPUTRACE_TEST_CORRECTION_LIMIT",
    read_by: "the merge, through gputrace (crates/gputrace/src/trace.rs)",
    help: "A number: the clock correction by the messages reads at most this many sends and            receives between hosts (by default 2,097,152) and leaves the measured offsets beyond it.",
};

/// Makes a test binary of the raw crate, run again as a child, publish a
/// host's TSC map in this directory, racing its siblings.
pub const RACE_DIR: Hook = Hook {
    name: "_GPUTRACE_TEST_RACE_DIR",
    read_by: "the clock crate's own tests (crates/clock/src/host_map.rs)",
    help: "The child publishes its TSC map in this directory and prints the map it got.",
};

/// When the children of [`RACE_DIR`] start publishing, all at once.
pub const RACE_AT: Hook = Hook {
    name: "_GPUTRACE_TEST_RACE_AT",
    read_by: "the clock crate's own tests (crates/clock/src/host_map.rs)",
    help: "CLOCK_MONOTONIC ns: the children of _GPUTRACE_TEST_RACE_DIR wait until then.",
};

/// Makes the CUDA agent refuse some of the buffers CUPTI asks for, so
/// that CUPTI drops records for real (on a GPU machine) and the count of
/// them can be checked: a small `GPUTRACE_CUDA_BUFFER` does not do it,
/// CUPTI asks for more buffers.
pub const CUPTI_REFUSE: Hook = Hook {
    name: "_GPUTRACE_TEST_CUPTI_REFUSE",
    read_by: "the CUDA agent (crates/producers/cuda/src/lost.rs)",
    help: "A number N (at least 2): every N-th buffer CUPTI asks for is refused; CUPTI drops the records \
           it had no room for, and the summary's `lost:` line counts them.",
};

/// Makes the sampler take its fallback, as where perf events are refused.
pub const SAMPLING_TIMER: Hook = Hook {
    name: "_GPUTRACE_TEST_SAMPLING_TIMER",
    read_by: "the sampler (crates/producers/sampling/src/sampler.rs)",
    help: "Any value: every thread is sampled by its POSIX timer signal, not by a perf event, so that the \
           fallback is tested on a machine that allows perf events.",
};

/// Makes the sampler leave the Python frames out, so that a benchmark
/// can measure what reading them costs (`bench/sampling_python.sh`).
pub const SAMPLING_NO_PYTHON: Hook = Hook {
    name: "_GPUTRACE_TEST_SAMPLING_NO_PYTHON",
    read_by: "the sampler (crates/producers/sampling/src/sampler.rs)",
    help: "Any value: the interpreter is not looked for, so a Python program's samples keep their native \
           frames only and are drained every 5 ms as a native program's; for tests and benchmarks only.",
};

/// Every test hook.
pub const ALL: &[Hook] = &[
    CLOCK_DOMAIN,
    KILL_DIR,
    PANIC,
    HOST_MAP,
    MERGE_RANK_FAILS,
    CORRECTION_LIMIT,
    RACE_DIR,
    RACE_AT,
    CUPTI_REFUSE,
    SAMPLING_TIMER,
    SAMPLING_NO_PYTHON,
];

#[cfg(test)]
mod tests {
    use crate::settings::tests::pairs;
    use crate::{Config, hooks, vars};

    #[test]
    fn test_hooks_are_outside_the_variables() {
        for hook in hooks::ALL {
            assert!(hook.name.starts_with("_GPUTRACE_TEST_"), "{}", hook.name);
            assert!(vars::find(hook.name).is_none());
            // gputrace neither checks nor refuses them.
            Config::from_pairs(&pairs(&[(hook.name, "anything")])).unwrap();
        }
    }
}
