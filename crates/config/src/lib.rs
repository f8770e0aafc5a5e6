//! Parsing every `GPUTRACE_*` variable, in one place.
//!
//! The `gputrace` command parses strictly ([`Config::from_env`]): a bad value
//! or an unknown `GPUTRACE_` name stops it before the program starts, with
//! one line naming the variable, the value and what is allowed. Inside a
//! traced process, parsing is lenient ([`Config::from_env_lenient`]): a bad
//! value falls back to the default with a warning and never breaks the
//! program.
//!
//! The variables are one table ([`vars`]); the members of the set-valued
//! ones are enums declared once there ([`MpiGroup`], [`CudaSource`],
//! [`NcclLevel`]), which the producers test membership with. Test hooks,
//! which are no settings, are listed in [`hooks`].
//!
//! Depends on no other gputrace crate: the command, the runtime and the
//! producers all read it.

pub mod filter;
pub mod hooks;
pub mod sets;
pub mod vars;

pub use filter::Filter;

use std::path::PathBuf;
use std::time::Duration;

pub use sets::{Alias, EnabledSet, MemberDoc, SetMember, SetProblem, SetSpec, parse_set};
pub use vars::{CudaSource, DEVELOPER_VARS, MpiGroup, NcclLevel, VARS, Var, VarType};

/// A bad variable. Its message is one line, whatever the value holds: the
/// value is shown once, cut to [`SHOWN`] characters, control characters
/// escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{name}={}: {problem}; allowed: {allowed}", shown(value))]
    BadValue { name: String, value: String, problem: String, allowed: String },
    #[error("unknown variable {}{suggestion} (`gputrace info config-vars` lists them)", shown(name))]
    UnknownVariable { name: String, suggestion: String },
}

/// At most this many characters of a value are repeated in a message.
pub const SHOWN: usize = 80;

/// At most this many characters of one word of a set's value.
const WORD_SHOWN: usize = 24;

/// `text` as a message shows it: on one line (control characters
/// escaped), cut to [`SHOWN`] characters with `…` when longer.
pub fn shown(text: &str) -> String {
    cut(text, SHOWN)
}

/// [`shown`] with another length.
fn cut(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

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
}

impl Config {
    /// Whether anything limits recording to a window: a delay, a
    /// duration or a capture range.
    pub fn windowed(&self) -> bool {
        !self.delay.is_zero() || !self.duration.is_zero() || self.capture_range != CaptureRange::None
    }
}

/// The variable by which `gputrace` hands its processes the moment it
/// launched the job (CLOCK_REALTIME, nanoseconds), from which
/// `GPUTRACE_DELAY` counts: gputrace's own hand-over, not a setting.
pub const WINDOW_ORIGIN_VARIABLE: &str = "GPUTRACE_WINDOW_ORIGIN";

/// What opens and closes the recording window (`GPUTRACE_CAPTURE_RANGE`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaptureRange {
    /// Nothing: recording follows the delay and duration alone.
    #[default]
    None,
    /// Inside the `first`th to `last`th push/pop NVTX range `name` of the
    /// process (counted from 1).
    Nvtx { name: String, first: u64, last: u64 },
    /// Between cudaProfilerStart and cudaProfilerStop.
    CudaProfilerApi,
    /// MPI_Pcontrol(0) stops, any other level resumes (Score-P's convention).
    Pcontrol,
}

impl std::fmt::Display for CaptureRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureRange::None => f.write_str("none"),
            CaptureRange::Nvtx { name, first, last } if first == last => write!(f, "nvtx:{name}@{first}"),
            CaptureRange::Nvtx { name, first, last } => write!(f, "nvtx:{name}@{first}-{last}"),
            CaptureRange::CudaProfilerApi => f.write_str("cudaProfilerApi"),
            CaptureRange::Pcontrol => f.write_str("pcontrol"),
        }
    }
}

/// `none`, `nvtx:NAME`, `nvtx:NAME@N`, `nvtx:NAME@N-M`, `cudaProfilerApi`,
/// `pcontrol`: what is wrong otherwise.
pub fn parse_capture_range(text: &str) -> Result<CaptureRange, &'static str> {
    let t = text.trim();
    if ["none", "no", "off", "false"].iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return Ok(CaptureRange::None);
    }
    if t.eq_ignore_ascii_case("cudaProfilerApi") {
        return Ok(CaptureRange::CudaProfilerApi);
    }
    if t.eq_ignore_ascii_case("pcontrol") || t.eq_ignore_ascii_case("MPI_Pcontrol") {
        return Ok(CaptureRange::Pcontrol);
    }
    let Some(rest) = t.get(..5).filter(|p| p.eq_ignore_ascii_case("nvtx:")).map(|_| &t[5..]) else {
        return Err("unknown capture range");
    };
    // NAME@N or NAME@N-M; an @ followed by anything else is part of the name.
    let occurrences = |s: &str| -> Option<(u64, u64)> {
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if !digits(a) || !digits(b) {
            return None;
        }
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let (name, (first, last)) = match rest.rsplit_once('@') {
        Some((name, n)) => match occurrences(n) {
            Some(range) => (name, range),
            None if n.bytes().next().is_some_and(|c| c.is_ascii_digit()) => {
                return Err("bad occurrences after @ (N or N-M, from 1)");
            }
            None => (rest, (1, 1)),
        },
        None => (rest, (1, 1)),
    };
    if name.is_empty() {
        return Err("no NVTX range name after nvtx:");
    }
    if first == 0 || last < first {
        return Err("bad occurrences after @ (N or N-M, from 1)");
    }
    Ok(CaptureRange::Nvtx { name: name.to_string(), first, last })
}

/// `2`, `2.5`, `500ms`, `1min`, `0`: seconds, or with a unit.
pub fn parse_seconds(text: &str) -> Option<Duration> {
    let t = text.trim();
    if ["no", "off", "none", "false"].iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return Some(Duration::ZERO);
    }
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let number: f64 = t[..end].parse().ok()?;
    let factor = match t[end..].trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(number * factor).ok().filter(|d| d.as_secs() < 366 * 86_400)
}

/// The smallest GPUTRACE_TOTAL_MEMORY accepted.
pub const MIN_TOTAL_MEMORY: u64 = 64 << 10;

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
        };
        (config, errors)
    }
}

/// A parsed value of any type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Size(u64),
    Path(Option<PathBuf>),
    Duration(Duration),
    Count(u64),
    /// The members' bits (see [`EnabledSet::bits`]).
    Set(u64),
    /// The chosen name of a [`VarType::Choice`].
    Choice(&'static str),
    /// A [`VarType::CaptureRange`].
    Capture(CaptureRange),
}

impl Value {
    fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
    fn size(self) -> u64 {
        if let Value::Size(s) = self { s } else { 0 }
    }
    fn choice(self) -> &'static str {
        if let Value::Choice(c) = self { c } else { "" }
    }
    fn capture_range(self) -> CaptureRange {
        if let Value::Capture(c) = self { c } else { CaptureRange::None }
    }
    fn count(self) -> u64 {
        if let Value::Count(n) = self { n } else { 0 }
    }
    fn path(self) -> Option<PathBuf> {
        if let Value::Path(p) = self { p } else { None }
    }
    fn set<M: SetMember>(self) -> EnabledSet<M> {
        EnabledSet::from_bits(if let Value::Set(bits) = self { bits } else { 0 })
    }
    /// The duration of a [`VarType::Duration`] value.
    pub fn duration(self) -> Duration {
        if let Value::Duration(d) = self { d } else { Duration::ZERO }
    }
}

/// Parses `raw` as a value of `var`.
pub fn parse_value(var: &Var, raw: &str) -> Result<Value, ConfigError> {
    let bad = |problem: &str, allowed: String| ConfigError::BadValue {
        name: var.name.to_string(),
        value: raw.to_string(),
        problem: problem.to_string(),
        allowed,
    };
    let text = raw.trim();
    match var.ty {
        VarType::Bool => parse_bool(text)
            .map(Value::Bool)
            .ok_or_else(|| bad("not a Boolean", "true, false, yes, no, on, off, 1, 0".into())),
        VarType::Size => match parse_size(text) {
            Some(n) if var.name == "GPUTRACE_TOTAL_MEMORY" && n < MIN_TOTAL_MEMORY => {
                Err(bad("too small", "at least 64k".into()))
            }
            Some(n) if var.name == "GPUTRACE_CUDA_BUFFER" && !(64 << 10..=64 << 20).contains(&n) => {
                Err(bad("out of range", "between 64k and 64M".into()))
            }
            Some(n) => Ok(Value::Size(n)),
            None => Err(bad("not a size", "a number with an optional k, M or G suffix, e.g. 16M".into())),
        },
        VarType::Count => text
            .parse::<u64>()
            .ok()
            .filter(|&n| n <= 1 << 20)
            .map(Value::Count)
            .ok_or_else(|| bad("not a whole number", "0 to 1048576".into())),
        VarType::Path => Ok(Value::Path((!text.is_empty()).then(|| PathBuf::from(text)))),
        VarType::Duration => parse_duration(text).map(Value::Duration).ok_or_else(|| {
            bad("not a duration", "a number with an optional ns, us, ms or s suffix; 0 or no: off".into())
        }),
        VarType::Seconds => parse_seconds(text)
            .map(Value::Duration)
            .ok_or_else(|| bad("not a time", "seconds (2, 2.5) or a number with ns, us, ms, s or min; 0: none".into())),
        VarType::CaptureRange => parse_capture_range(text).map(Value::Capture).map_err(|problem| {
            bad(problem, "none, nvtx:NAME, nvtx:NAME@N, nvtx:NAME@N-M, cudaProfilerApi, pcontrol".into())
        }),
        VarType::Choice(values) => values
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map(|(name, _)| Value::Choice(name))
            .ok_or_else(|| bad("unknown value", values.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))),
        VarType::Set(spec) => parse_set(text, &spec).map(Value::Set).map_err(|problem| {
            let names: Vec<&str> = spec.values().map(|(name, _)| name).collect();
            let nothing = spec.nothing();
            let problem = match problem {
                SetProblem::Empty => format!("empty (to record nothing, say `{nothing}`)"),
                // The value is shown once: a word that is the whole value
                // is not repeated.
                SetProblem::Unknown(word) if word == text => "unknown value".to_string(),
                // Only a piece of the word, the value being shown already.
                SetProblem::Unknown(word) => format!("unknown value '{}'", cut(&word, WORD_SHOWN)),
                SetProblem::Contradiction { nothing, something } => {
                    format!("'{}' (nothing) contradicts '{}'", cut(&nothing, WORD_SHOWN), cut(&something, WORD_SHOWN))
                }
            };
            bad(&problem, names.join(", "))
        }),
    }
}

pub fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// `16M`, `16000k`, `1G`, `65536`, `4 MB`: powers of 1024.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let number: u64 = t[..digits].parse().ok()?;
    let unit = t[digits..].trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').filter(|u| !u.is_empty()).unwrap_or(&unit);
    let factor: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// `100`, `100ms`, `5us`, `1s`, `250000ns`: a bare number is milliseconds;
/// `no`, `off`, `none`, `false`: zero (what samples nothing).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if ["no", "off", "none", "false"].iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return Some(Duration::ZERO);
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let number: u64 = t[..digits].parse().ok()?;
    Some(match t[digits..].trim() {
        "" | "ms" => Duration::from_millis(number),
        "ns" => Duration::from_nanos(number),
        "us" => Duration::from_micros(number),
        "s" => Duration::from_secs(number),
        _ => return None,
    })
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
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
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
    fn windows_parse() {
        let c = Config::from_pairs(&pairs(&[("GPUTRACE_DELAY", "2.5"), ("GPUTRACE_DURATION", "300ms")])).unwrap();
        assert_eq!((c.delay, c.duration), (Duration::from_millis(2500), Duration::from_millis(300)));
        assert!(c.windowed());
        assert_eq!(parse_seconds("1min"), Some(Duration::from_secs(60)));
        assert_eq!(parse_seconds("no"), Some(Duration::ZERO));
        for bad in ["", "-1", "2x", "1e400", "1.2.3"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        let nvtx = |name: &str, first, last| CaptureRange::Nvtx { name: name.into(), first, last };
        assert_eq!(parse_capture_range("nvtx:step"), Ok(nvtx("step", 1, 1)));
        assert_eq!(parse_capture_range("NVTX:step@3"), Ok(nvtx("step", 3, 3)));
        assert_eq!(parse_capture_range("nvtx:a@b@2-4"), Ok(nvtx("a@b", 2, 4)));
        assert_eq!(parse_capture_range("nvtx:user@host"), Ok(nvtx("user@host", 1, 1)));
        assert_eq!(parse_capture_range("cudaprofilerapi"), Ok(CaptureRange::CudaProfilerApi));
        assert_eq!(parse_capture_range("pcontrol"), Ok(CaptureRange::Pcontrol));
        assert_eq!(parse_capture_range("none"), Ok(CaptureRange::None));
        for bad in ["nvtx:", "nvtx:x@0", "nvtx:x@3-2", "nvtx:x@2-", "cuda", "nvtx:@1"] {
            assert!(parse_capture_range(bad).is_err(), "{bad}");
        }
        assert_eq!(nvtx("step", 2, 5).to_string(), "nvtx:step@2-5");
        let e = Config::from_pairs(&pairs(&[("GPUTRACE_CAPTURE_RANGE", "nvtx:x@0")])).unwrap_err();
        assert!(e[0].to_string().contains("GPUTRACE_CAPTURE_RANGE"), "{}", e[0]);
    }

    #[test]
    fn bad_values_name_variable_value_and_allowed() {
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_MPI_ENABLE_GROUPS", "p2p,bogus")])).unwrap_err();
        let line = errs[0].to_string();
        assert!(line.starts_with("GPUTRACE_MPI_ENABLE_GROUPS=p2p,bogus: unknown value 'bogus'"), "{line}");
        assert!(line.contains("allowed: cg, coll"), "{line}");
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_ENABLE_TRACING", "maybe")])).unwrap_err();
        assert!(errs[0].to_string().contains("allowed: true, false"));
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_TOTAL_MEMORY", "12q")])).unwrap_err();
        assert!(errs[0].to_string().starts_with("GPUTRACE_TOTAL_MEMORY=12q: not a size"));
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
    fn sizes_durations_and_sets() {
        assert_eq!(parse_size("16000k"), Some(16000 << 10));
        assert_eq!(parse_size("2 GB"), Some(2 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_duration("10"), Some(Duration::from_millis(10)));
        assert_eq!(parse_duration("No"), Some(Duration::ZERO));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("nope"), None);
        let c = Config::from_pairs(&[]).unwrap();
        assert_eq!(c.gpu_metrics_interval, Duration::from_millis(10), "the default period");
        let c = Config::from_pairs(&pairs(&[("GPUTRACE_GPU_METRICS_INTERVAL", "off")])).unwrap();
        assert!(c.gpu_metrics_interval.is_zero());
        let s = EnabledSet::<MpiGroup>::parse("p2p, COLL").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), [MpiGroup::Coll, MpiGroup::P2p]);
        assert!(EnabledSet::<MpiGroup>::parse("none").unwrap().is_empty());
        assert_eq!(EnabledSet::<MpiGroup>::parse("all").unwrap().iter().count(), 15);
    }

    #[test]
    fn an_empty_set_is_refused_like_other_empty_values() {
        for var in ["GPUTRACE_MPI_ENABLE_GROUPS", "GPUTRACE_CUDA_ENABLE", "GPUTRACE_NCCL_ENABLE"] {
            for value in ["", ",", " , ", ",,\t"] {
                let errs = Config::from_pairs(&pairs(&[(var, value)])).unwrap_err();
                assert_eq!(errs.len(), 1, "{var}={value:?}");
                let line = errs[0].to_string();
                assert!(line.starts_with(&format!("{var}=")), "{line}");
                assert!(line.contains(": empty (to record nothing, say `"), "{line}");
                assert_eq!(line.lines().count(), 1, "{line}");
            }
        }
        // As every other type refuses an empty value (paths excepted:
        // empty is their default).
        for var in ["GPUTRACE_ENABLE_TRACING", "GPUTRACE_TOTAL_MEMORY", "GPUTRACE_NVLINK_INTERVAL"] {
            assert!(Config::from_pairs(&pairs(&[(var, "")])).is_err(), "{var}");
        }
        assert!(Config::from_pairs(&pairs(&[("GPUTRACE_FILTERING_FILE", "")])).is_ok());
        // Recording nothing is said with `none` or `no`.
        let c = Config::from_pairs(&pairs(&[("GPUTRACE_MPI_ENABLE_GROUPS", "none")])).unwrap();
        assert!(c.mpi_groups.is_empty());
    }

    #[test]
    fn contradictory_sets_are_refused_with_one_line() {
        for (var, value, nothing, something) in [
            ("GPUTRACE_MPI_ENABLE_GROUPS", "none,p2p", "none", "p2p"),
            ("GPUTRACE_MPI_ENABLE_GROUPS", "all,no", "no", "all"),
            ("GPUTRACE_MPI_ENABLE_GROUPS", "p2p NONE", "NONE", "p2p"),
            ("GPUTRACE_CUDA_ENABLE", "kernel,no", "no", "kernel"),
            ("GPUTRACE_NCCL_ENABLE", "none,default", "none", "default"),
        ] {
            let errs = Config::from_pairs(&pairs(&[(var, value)])).unwrap_err();
            assert_eq!(errs.len(), 1);
            let line = errs[0].to_string();
            assert_eq!(
                line.split("; allowed:").next().unwrap(),
                format!("{var}={value}: '{nothing}' (nothing) contradicts '{something}'")
            );
        }
        // Not contradictions: nothing said twice, a default plus extras,
        // everything plus a member.
        for value in ["none,no", "default,xreqtest", "all,p2p", "p2p,p2p"] {
            Config::from_pairs(&pairs(&[("GPUTRACE_MPI_ENABLE_GROUPS", value)])).unwrap();
        }
    }

    #[test]
    fn a_huge_bad_value_is_shown_once_and_cut() {
        let huge = "x".repeat(100_000);
        let shown_run = "x".repeat(SHOWN);
        for (var, value) in [
            ("GPUTRACE_MPI_ENABLE_GROUPS", huge.clone()),
            ("GPUTRACE_ENABLE_TRACING", huge.clone()),
            ("GPUTRACE_TOTAL_MEMORY", huge.clone()),
            ("GPUTRACE_CUDA_ENABLE", huge.clone()),
        ] {
            let errs = Config::from_pairs(&pairs(&[(var, &value)])).unwrap_err();
            let line = errs[0].to_string();
            assert!(line.starts_with(&format!("{var}={shown_run}…: ")), "{var}: {}", &line[..200]);
            assert_eq!(line.matches(&shown_run).count(), 1, "{var}: shown once: {line}");
            assert!(line.len() < 600, "{var}: {} bytes", line.len());
        }
        // A bad word inside a long list: the value cut, a piece of the word.
        let value = format!("p2p,coll,{huge}");
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_MPI_ENABLE_GROUPS", &value)])).unwrap_err();
        let line = errs[0].to_string();
        assert!(line.len() < 600 && line.contains(&format!("unknown value '{}…'", "x".repeat(24))), "{line}");
        // Control characters cannot break the line.
        let errs = Config::from_pairs(&pairs(&[("GPUTRACE_VERBOSE", "yes\nno\r")])).unwrap_err();
        let line = errs[0].to_string();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(line.starts_with("GPUTRACE_VERBOSE=yes\\nno\\r: not a Boolean"), "{line}");
        // A huge unknown name too.
        let name = format!("GPUTRACE_{huge}");
        let errs = Config::from_pairs(&pairs(&[(&name, "1")])).unwrap_err();
        let line = errs[0].to_string();
        assert!(line.len() < 300 && line.contains('…'), "{line}");
    }

    #[test]
    fn lenient_parsing_falls_back_to_defaults() {
        let lookup = |n: &str| (n == "GPUTRACE_VERBOSE").then(|| "perhaps".to_string());
        let (c, warnings) = Config::parse(lookup);
        assert!(!c.verbose);
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn every_default_in_the_table_parses() {
        for v in VARS.iter().chain(DEVELOPER_VARS) {
            parse_value(v, v.default).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        }
    }

    /// One set's enum against the table, the parser and the listing.
    fn members_round_trip<M: SetMember + std::fmt::Display>() {
        let var = vars::find(M::VARIABLE).unwrap_or_else(|| panic!("{} is not in the table", M::VARIABLE));
        assert_eq!(var.ty, VarType::Set(M::SPEC), "{}: the table's set is the enum's", M::VARIABLE);
        assert_eq!(M::ALL.len(), M::SPEC.members.len());
        for (i, &m) in M::ALL.iter().enumerate() {
            // The listing (info config-vars, the docs) shows the enum's names.
            assert_eq!((M::SPEC.members[i].name, M::SPEC.members[i].help), (m.name(), m.help()));
            assert_eq!(m.bit(), 1 << i);
            assert_eq!(m.to_string(), m.name());
            // Parsed alone, in capitals, and through the variable.
            assert_eq!(EnabledSet::<M>::parse(m.name()), Ok(EnabledSet::of(&[m])), "{}", m.name());
            assert_eq!(EnabledSet::<M>::parse(&m.name().to_uppercase()), Ok(EnabledSet::of(&[m])));
            let c = Config::from_pairs(&pairs(&[(M::VARIABLE, m.name())])).unwrap();
            let parsed = match M::VARIABLE {
                "GPUTRACE_MPI_ENABLE_GROUPS" => c.mpi_groups.bits(),
                "GPUTRACE_CUDA_ENABLE" => c.cuda_enable.bits(),
                "GPUTRACE_NCCL_ENABLE" => c.nccl_enable.bits(),
                other => panic!("{other}: no field"),
            };
            assert_eq!(parsed, m.bit(), "{}={}", M::VARIABLE, m.name());
            assert_eq!(EnabledSet::<M>::of(&[m]).iter().collect::<Vec<_>>(), [m]);
        }
        // Names: lower case, no list separator (a hyphen inside joins
        // words: `runtime-all`), none twice (members and aliases).
        let names: Vec<&str> = M::SPEC.values().map(|(name, _)| name).collect();
        for name in &names {
            assert!(
                !name.is_empty()
                    && !name.starts_with('-')
                    && !name.ends_with('-')
                    && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name} twice");
        }
        // Every name is allowed, in the listing's order, in the message.
        let err = Config::from_pairs(&pairs(&[(M::VARIABLE, "bogus")])).unwrap_err()[0].to_string();
        assert!(err.ends_with(&format!("; allowed: {}", names.join(", "))), "{err}");
        // The default parses to what its alias stands for.
        let default = M::SPEC.aliases.iter().find(|a| a.name == "default").unwrap();
        assert_eq!(EnabledSet::<M>::parse(var.default).unwrap().bits(), default.mask);
    }

    #[test]
    fn every_member_round_trips_through_parse_and_the_listing() {
        members_round_trip::<MpiGroup>();
        members_round_trip::<CudaSource>();
        members_round_trip::<NcclLevel>();
        // And no other set-valued variable exists without an enum.
        let sets: Vec<&str> = VARS.iter().filter(|v| matches!(v.ty, VarType::Set(_))).map(|v| v.name).collect();
        assert_eq!(sets, [MpiGroup::VARIABLE, CudaSource::VARIABLE, NcclLevel::VARIABLE]);
    }

    /// The names and expansions are those of the string tables the enums
    /// replaced: parsing is unchanged.
    #[test]
    fn sets_accept_what_they_accepted_before() {
        fn names<M: SetMember>(text: &str) -> String {
            EnabledSet::<M>::parse(text).unwrap().iter().map(M::name).collect::<Vec<_>>().join(",")
        }
        fn allowed<M: SetMember>() -> String {
            M::SPEC.values().map(|(name, _)| name).collect::<Vec<_>>().join(",")
        }
        assert_eq!(
            allowed::<MpiGroup>(),
            "cg,coll,env,err,ext,io,misc,perf,p2p,rma,spawn,topo,type,xnonblock,xreqtest,default,all,none,no"
        );
        assert_eq!(names::<MpiGroup>("default"), "cg,coll,env,io,p2p,rma,topo,xnonblock");
        assert_eq!(
            names::<MpiGroup>("all"),
            "cg,coll,env,err,ext,io,misc,perf,p2p,rma,spawn,topo,type,xnonblock,xreqtest"
        );
        assert_eq!(
            allowed::<CudaSource>(),
            "driver,runtime,runtime-all,kernel,memcpy,memset,peer,sync,nvlink,graph,memory,uvm,default,yes,all,no,none"
        );
        assert_eq!(names::<CudaSource>("default,graph"), "runtime,kernel,memcpy,memset,peer,nvlink,graph");
        for default in ["default", "yes"] {
            assert_eq!(names::<CudaSource>(default), "runtime,kernel,memcpy,memset,peer,nvlink");
        }
        assert_eq!(
            names::<CudaSource>("all"),
            "driver,runtime,runtime-all,kernel,memcpy,memset,peer,sync,nvlink,memory,uvm"
        );
        assert_eq!(names::<CudaSource>("default,driver"), "driver,runtime,kernel,memcpy,memset,peer,nvlink");
        assert_eq!(allowed::<NcclLevel>(), "group,coll,p2p,proxy,kernel,default,yes,all,no,none");
        assert_eq!(names::<NcclLevel>("default"), "group,coll,p2p");
        assert_eq!(names::<NcclLevel>("YES"), "group,coll,p2p");
        assert_eq!(names::<NcclLevel>("all"), "group,coll,p2p,proxy,kernel");
        for nothing in ["no", "none", "None"] {
            assert_eq!(names::<CudaSource>(nothing), "");
            assert_eq!(names::<NcclLevel>(nothing), "");
            assert_eq!(names::<MpiGroup>(nothing), "");
        }
        assert_eq!(MpiGroup::SPEC.nothing(), "none");
        assert_eq!(CudaSource::SPEC.nothing(), "no");
        assert_eq!(NcclLevel::SPEC.nothing(), "no");
    }

    #[test]
    fn every_variable_has_its_own_flag() {
        let all: Vec<&Var> = VARS.iter().chain(DEVELOPER_VARS).collect();
        for v in &all {
            assert!(v.flag.starts_with("--") && v.flag.len() > 3, "{}: {}", v.name, v.flag);
            assert_eq!(all.iter().filter(|w| w.flag == v.flag).count(), 1, "{} shared", v.flag);
        }
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
