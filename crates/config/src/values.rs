//! A variable's value: parsed by its type ([`parse_value`]), with the
//! problem and what is allowed when it is bad.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{ConfigError, WORD_SHOWN, cut};
use crate::window::{CaptureRange, parse_capture_range};
use crate::{EnabledSet, SetMember, SetProblem, Var, VarType, parse_set};

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
    pub(crate) fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
    pub(crate) fn size(self) -> u64 {
        if let Value::Size(s) = self { s } else { 0 }
    }
    pub(crate) fn choice(self) -> &'static str {
        if let Value::Choice(c) = self { c } else { "" }
    }
    pub(crate) fn capture_range(self) -> CaptureRange {
        if let Value::Capture(c) = self { c } else { CaptureRange::None }
    }
    pub(crate) fn count(self) -> u64 {
        if let Value::Count(n) = self { n } else { 0 }
    }
    pub(crate) fn path(self) -> Option<PathBuf> {
        if let Value::Path(p) = self { p } else { None }
    }
    pub(crate) fn set<M: SetMember>(self) -> EnabledSet<M> {
        EnabledSet::from_bits(if let Value::Set(bits) = self { bits } else { 0 })
    }
    /// The duration of a [`VarType::Duration`] value.
    pub fn duration(self) -> Duration {
        if let Value::Duration(d) = self { d } else { Duration::ZERO }
    }
}

/// The shortest sampling period accepted (GPUTRACE_SAMPLING).
pub const MIN_SAMPLING_PERIOD: Duration = Duration::from_micros(100);
/// The smallest GPUTRACE_TOTAL_MEMORY accepted.
pub const MIN_TOTAL_MEMORY: u64 = 64 << 10;
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
            Some(n) if var.name == "GPUTRACE_SAMPLING_STACK" && !(1 << 10..=60 << 10).contains(&n) => {
                Err(bad("out of range", "between 1k and 60k".into()))
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
        VarType::Duration => match parse_duration(text) {
            Some(d) if var.name == "GPUTRACE_SAMPLING" && !d.is_zero() && d < MIN_SAMPLING_PERIOD => {
                Err(bad("too short", "at least 100us; 0 or no: off".into()))
            }
            Some(d) => Ok(Value::Duration(d)),
            None => Err(bad("not a duration", "a number with an optional ns, us, ms or s suffix; 0 or no: off".into())),
        },
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

#[cfg(test)]
mod tests {
    use crate::settings::tests::pairs;
    use crate::{Config, DEVELOPER_VARS, MpiGroup, VARS};

    use super::*;

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
    fn every_default_in_the_table_parses() {
        for v in VARS.iter().chain(DEVELOPER_VARS) {
            parse_value(v, v.default).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        }
    }
}
