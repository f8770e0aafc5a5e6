//! The typed configuration, [`Config`], and how the environment becomes
//! one: strictly for the command, leniently inside a traced process, with
//! a suggestion for a misspelt name.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::ConfigError;
use crate::values::{Value, parse_value};
use crate::window::CaptureRange;
use crate::{CudaSource, DEVELOPER_VARS, EnabledSet, MpiGroup, NcclLevel, SetMember, VARS, vars};

/// The typed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub enable_tracing: bool,
    pub enable_profiling: bool,
    pub experiment_directory: Option<PathBuf>,
    pub total_memory: u64,
    pub filtering_file: Option<PathBuf>,
    pub mpi_groups: EnabledSet<MpiGroup>,
    pub cuda_enable: EnabledSet<CudaSource>,
    pub cuda_buffer: u64,
    pub nvlink_interval: Duration,
    /// Zero: GPU metrics are not sampled.
    pub gpu_metrics_interval: Duration,
    pub cupti_lib: Option<PathBuf>,
    pub nccl_enable: EnabledSet<NcclLevel>,
    pub nvtx_enable: bool,
    /// `GPUTRACE_SAMPLING`: each thread's call stack is sampled every this
    /// much of its CPU time; zero: not sampled.
    pub sampling: Duration,
    /// `GPUTRACE_SAMPLING_STACK`: bytes of stack copied per sample.
    pub sampling_stack: u64,
    /// `GPUTRACE_UNWINDING`: the call path of every MPI, CUDA runtime and NCCL
    /// call is recorded at its Enter.
    pub unwinding: bool,
    /// `GPUTRACE_TIMER`: `auto`, `tsc` or `clock_gettime` (read by
    /// `gputrace_clock` itself, which every producer shares).
    pub timer: &'static str,
    pub verbose: bool,
    pub keep_raw: bool,
    /// Threads of the merge; 0: one per available core.
    pub merge_jobs: u64,
    /// Ranks of an MPI merge after the run; 0: none (threads only).
    pub merge_ranks: u64,
    /// Developer setting `GPUTRACE_CUDA_CAPTURE`.
    pub cuda_capture: Option<PathBuf>,
    /// Developer setting `GPUTRACE_NCCL_CAPTURE`.
    pub nccl_capture: Option<PathBuf>,
    /// `GPUTRACE_DELAY`: recording starts this long after the job started.
    pub delay: Duration,
    /// `GPUTRACE_DURATION`: and stops this long after it started; zero:
    /// at the end.
    pub duration: Duration,
    /// `GPUTRACE_CAPTURE_RANGE`.
    pub capture_range: CaptureRange,
    /// `GPUTRACE_HANG_TIMEOUT`: the job is stopped when nothing was
    /// recorded for this long; zero: never.
    pub hang_timeout: Duration,
    /// `GPUTRACE_ON_HANG`: `stop` or `snapshot`.
    pub on_hang: &'static str,
    /// `GPUTRACE_FLIGHT_RECORDER`: keep only this last window of events;
    /// zero: everything.
    pub flight_recorder: Duration,
}

impl Config {
    /// Whether anything limits recording to a window: a delay, a
    /// duration or a capture range.
    pub fn windowed(&self) -> bool {
        !self.delay.is_zero() || !self.duration.is_zero() || self.capture_range != CaptureRange::None
    }

    /// Whether the source of stem `stem` (raw's table of sources: `mpi`,
    /// `cuda`, `nccl`, `nvtx`, `sampling`) is recorded; `false` for a stem
    /// it does not know.
    pub fn records(&self, stem: &str) -> bool {
        match stem {
            "mpi" => !self.mpi_groups.is_empty(),
            "cuda" => !self.cuda_enable.is_empty(),
            "nccl" => !self.nccl_enable.is_empty(),
            "nvtx" => self.nvtx_enable,
            "sampling" => !self.sampling.is_zero(),
            _ => false,
        }
    }
}

impl Config {
    /// Parses the process environment strictly; every problem is returned.
    pub fn from_env() -> Result<Config, Vec<ConfigError>> {
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
            .collect();
        Self::from_pairs(&env)
    }

    /// Parses the environment, replacing bad values by defaults; returns
    /// the problems as warnings.
    pub fn from_env_lenient() -> (Config, Vec<ConfigError>) {
        let lookup = |name: &str| std::env::var(name).ok();
        Self::parse(lookup)
    }

    /// Strict parsing of explicit (name, value) pairs; unknown `GPUTRACE_`
    /// names are errors.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Config, Vec<ConfigError>> {
        let lookup = |name: &str| pairs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let (config, mut errors) = Self::parse(lookup);
        for (k, _) in pairs {
            if k.starts_with("GPUTRACE_") && vars::find(k).is_none() {
                errors.push(ConfigError::UnknownVariable { name: k.clone(), suggestion: suggest(k) });
            }
        }
        if errors.is_empty() { Ok(config) } else { Err(errors) }
    }

    fn parse(lookup: impl Fn(&str) -> Option<String>) -> (Config, Vec<ConfigError>) {
        let mut errors = Vec::new();
        let mut get = |name: &'static str| -> Value {
            let var = vars::find(name).expect("variable is in the table");
            let raw = lookup(name);
            match parse_value(var, raw.as_deref().unwrap_or(var.default)) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(e);
                    parse_value(var, var.default).expect("defaults parse")
                }
            }
        };
        let config = Config {
            enable_tracing: get("GPUTRACE_ENABLE_TRACING").bool(),
            enable_profiling: get("GPUTRACE_ENABLE_PROFILING").bool(),
            experiment_directory: get("GPUTRACE_EXPERIMENT_DIRECTORY").path(),
            total_memory: get("GPUTRACE_TOTAL_MEMORY").size(),
            filtering_file: get("GPUTRACE_FILTERING_FILE").path(),
            mpi_groups: get(MpiGroup::VARIABLE).set(),
            cuda_enable: get(CudaSource::VARIABLE).set(),
            cuda_buffer: get("GPUTRACE_CUDA_BUFFER").size(),
            nvlink_interval: get("GPUTRACE_NVLINK_INTERVAL").duration(),
            gpu_metrics_interval: get("GPUTRACE_GPU_METRICS_INTERVAL").duration(),
            cupti_lib: get("GPUTRACE_CUPTI_LIB").path(),
            nccl_enable: get(NcclLevel::VARIABLE).set(),
            nvtx_enable: get("GPUTRACE_NVTX_ENABLE").bool(),
            sampling: get("GPUTRACE_SAMPLING").duration(),
            sampling_stack: get("GPUTRACE_SAMPLING_STACK").size(),
            unwinding: get("GPUTRACE_UNWINDING").bool(),
            timer: get("GPUTRACE_TIMER").choice(),
            verbose: get("GPUTRACE_VERBOSE").bool(),
            keep_raw: get("GPUTRACE_KEEP_RAW").bool(),
            merge_jobs: get("GPUTRACE_MERGE_JOBS").count(),
            merge_ranks: get("GPUTRACE_MERGE_RANKS").count(),
            cuda_capture: get("GPUTRACE_CUDA_CAPTURE").path(),
            nccl_capture: get("GPUTRACE_NCCL_CAPTURE").path(),
            delay: get("GPUTRACE_DELAY").duration(),
            duration: get("GPUTRACE_DURATION").duration(),
            capture_range: get("GPUTRACE_CAPTURE_RANGE").capture_range(),
            hang_timeout: get("GPUTRACE_HANG_TIMEOUT").duration(),
            on_hang: get("GPUTRACE_ON_HANG").choice(),
            flight_recorder: get("GPUTRACE_FLIGHT_RECORDER").duration(),
        };
        (config, errors)
    }
}

/// "; did you mean GPUTRACE_X?" for a near miss, or nothing.
fn suggest(name: &str) -> String {
    // No variable is near a name this long; and the distance costs
    // len(name) × len(variable) per variable.
    if name.len() > 64 {
        return String::new();
    }
    let best =
        VARS.iter().chain(DEVELOPER_VARS).map(|v| (edit_distance(name, v.name), v.name)).min().filter(|(d, _)| *d <= 3);
    best.map(|(_, n)| format!("; did you mean {n}?")).unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn defaults_parse() {
        let c = Config::from_pairs(&[]).unwrap();
        assert!(c.enable_tracing && c.enable_profiling && !c.verbose);
        assert_eq!(c.total_memory, 16 << 20);
        assert!(c.mpi_groups.contains(MpiGroup::P2p) && c.mpi_groups.contains(MpiGroup::Xnonblock));
        assert!(!c.mpi_groups.contains(MpiGroup::Xreqtest));
        assert_eq!(c.experiment_directory, None);
        assert!(!c.windowed());
    }

    #[test]
    fn unknown_variables_are_errors_with_a_suggestion() {
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_ENABLE_TRACNG", "1")])).unwrap_err();
        assert_eq!(
            errs[0].to_string(),
            "unknown variable GPUTRACE_ENABLE_TRACNG; did you mean GPUTRACE_ENABLE_TRACING? \
             (`gputrace info config-vars` lists them)"
        );
    }

    #[test]
    fn lenient_parsing_falls_back_to_defaults() {
        let lookup = |n: &str| (n == "GPUTRACE_VERBOSE").then(|| "perhaps".to_string());
        let (c, warnings) = Config::parse(lookup);
        assert!(!c.verbose);
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn developer_settings_are_parsed_once_with_the_others() {
        let c = Config::from_pairs(&pairs(&[
            ("GPUTRACE_CUDA_CAPTURE", "/tmp/cupti"),
            ("GPUTRACE_NCCL_CAPTURE", "/tmp/nccl-%p.txt"),
        ]))
        .unwrap();
        assert_eq!(c.cuda_capture.as_deref(), Some(std::path::Path::new("/tmp/cupti")));
        assert_eq!(c.nccl_capture.as_deref(), Some(std::path::Path::new("/tmp/nccl-%p.txt")));
        let c = Config::from_pairs(&pairs(&[("GPUTRACE_CUDA_CAPTURE", "")])).unwrap();
        assert_eq!(c.cuda_capture, None, "empty is off");
        assert_eq!(Config::from_pairs(&[]).unwrap().nccl_capture, None);
        // Near misses are still unknown, with the developer setting named.
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_CUDA_CAPTUR", "/x")])).unwrap_err();
        assert!(errs[0].to_string().contains("did you mean GPUTRACE_CUDA_CAPTURE?"), "{}", errs[0]);
    }
}
