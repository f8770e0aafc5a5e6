//! Parsing every `GPUTRACE_*` variable, in one place.
//!
//! The `gputrace` command parses strictly ([`Config::from_env`]): a bad value
//! or an unknown `GPUTRACE_` name stops it before the program starts, with
//! one line naming the variable, the value and what is allowed. Inside a
//! traced process, parsing is lenient ([`Config::from_env_lenient`]): a bad
//! value falls back to the default with a warning and never breaks the
//! program.
//!
//! Depends on no other gputrace crate: the command, the runtime and the
//! producers all read it.

pub mod filter;
pub mod vars;

pub use filter::Filter;

use std::path::PathBuf;
use std::time::Duration;

pub use vars::{SetValue, VARS, Var, VarType};

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

/// Why a set-valued variable was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetProblem {
    /// No name at all (`""`, `","`): it would silently record nothing.
    Empty,
    /// A name that is not a member or alias.
    Unknown(String),
    /// An alias for nothing (`none`, `no`) with something to record.
    Contradiction { nothing: String, something: String },
}

/// A parsed set-valued variable: the members enabled, aliases expanded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnabledSet(Vec<&'static str>);

impl EnabledSet {
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(&name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().copied()
    }
}

/// The typed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub enable_tracing: bool,
    pub enable_profiling: bool,
    pub experiment_directory: Option<PathBuf>,
    pub total_memory: u64,
    pub filtering_file: Option<PathBuf>,
    pub mpi_groups: EnabledSet,
    pub cuda_enable: EnabledSet,
    pub cuda_buffer: u64,
    pub nvlink_interval: Duration,
    pub cupti_lib: Option<PathBuf>,
    pub nccl_enable: EnabledSet,
    pub verbose: bool,
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
            if k.starts_with("GPUTRACE_") && vars::find(k).is_none() && !INTERNAL.contains(&k.as_str()) {
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
            mpi_groups: get("GPUTRACE_MPI_ENABLE_GROUPS").set(),
            cuda_enable: get("GPUTRACE_CUDA_ENABLE").set(),
            cuda_buffer: get("GPUTRACE_CUDA_BUFFER").size(),
            nvlink_interval: get("GPUTRACE_NVLINK_INTERVAL").duration(),
            cupti_lib: get("GPUTRACE_CUPTI_LIB").path(),
            nccl_enable: get("GPUTRACE_NCCL_ENABLE").set(),
            verbose: get("GPUTRACE_VERBOSE").bool(),
        };
        (config, errors)
    }
}

/// Developer settings (documented in docs/testing.md), accepted by the
/// command but not listed for users: `GPUTRACE_CUDA_CAPTURE=<dir>` makes
/// the CUDA agent save the CUPTI buffers it processes and
/// `GPUTRACE_NCCL_CAPTURE=<file>` the NCCL plugin its callbacks, for test
/// fixtures.
pub const INTERNAL: &[&str] = &["GPUTRACE_CUDA_CAPTURE", "GPUTRACE_NCCL_CAPTURE"];

/// A parsed value of any type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Size(u64),
    Path(Option<PathBuf>),
    Duration(Duration),
    Set(EnabledSet),
}

impl Value {
    fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
    fn size(self) -> u64 {
        if let Value::Size(s) = self { s } else { 0 }
    }
    fn path(self) -> Option<PathBuf> {
        if let Value::Path(p) = self { p } else { None }
    }
    fn set(self) -> EnabledSet {
        if let Value::Set(s) = self { s } else { EnabledSet::default() }
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
        VarType::Path => Ok(Value::Path((!text.is_empty()).then(|| PathBuf::from(text)))),
        VarType::Duration => parse_duration(text)
            .map(Value::Duration)
            .ok_or_else(|| bad("not a duration", "a number with an optional ns, us, ms or s suffix".into())),
        VarType::Set(values) => parse_set(text, values).map(Value::Set).map_err(|problem| {
            let names: Vec<&str> = values.iter().map(|v| v.name).collect();
            let nothing = values.iter().find(|v| v.is_alias && v.expands_to.is_empty()).map_or("none", |v| v.name);
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

/// `100`, `100ms`, `5us`, `1s`, `250000ns`: a bare number is milliseconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
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

/// Parses a set: names separated by commas or spaces. Refused: no name at
/// all, an unknown name (the first), and an alias for nothing (`none`,
/// `no`) together with a name that records something (`none,p2p`).
pub fn parse_set(text: &str, values: &'static [SetValue]) -> Result<EnabledSet, SetProblem> {
    let mut enabled: Vec<&'static str> = Vec::new();
    let mut nothing: Option<&str> = None;
    let mut something: Option<&str> = None;
    for word in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()) {
        let lower = word.to_ascii_lowercase();
        let v = values.iter().find(|v| v.name == lower).ok_or_else(|| SetProblem::Unknown(word.to_string()))?;
        if v.is_alias && v.expands_to.is_empty() {
            nothing.get_or_insert(word);
        } else {
            something.get_or_insert(word);
        }
        let members: Vec<&'static str> = if v.is_alias { v.expands_to.to_vec() } else { vec![v.name] };
        for m in members {
            if !enabled.contains(&m) {
                enabled.push(m);
            }
        }
    }
    match (nothing, something) {
        (None, None) => Err(SetProblem::Empty),
        (Some(n), Some(s)) => Err(SetProblem::Contradiction { nothing: n.to_string(), something: s.to_string() }),
        _ => Ok(EnabledSet(enabled)),
    }
}

/// "; did you mean GPUTRACE_X?" for a near miss, or nothing.
fn suggest(name: &str) -> String {
    // No variable is near a name this long; and the distance costs
    // len(name) × len(variable) per variable.
    if name.len() > 64 {
        return String::new();
    }
    let best = VARS.iter().map(|v| (edit_distance(name, v.name), v.name)).min().filter(|(d, _)| *d <= 3);
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
        assert!(c.mpi_groups.contains("p2p") && c.mpi_groups.contains("xnonblock"));
        assert!(!c.mpi_groups.contains("xreqtest"));
        assert_eq!(c.experiment_directory, None);
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
        let s = parse_set("p2p, COLL", vars::MPI_GROUPS).unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), ["p2p", "coll"]);
        assert!(parse_set("none", vars::MPI_GROUPS).unwrap().is_empty());
        assert_eq!(parse_set("all", vars::MPI_GROUPS).unwrap().iter().count(), 15);
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
        for v in VARS {
            parse_value(v, v.default).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        }
    }
}
