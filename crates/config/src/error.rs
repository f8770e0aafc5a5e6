//! The one error of the crate, and how a value is shown in its message:
//! on one line, cut short, control characters escaped.

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
pub(crate) const WORD_SHOWN: usize = 24;

/// `text` as a message shows it: on one line (control characters
/// escaped), cut to [`SHOWN`] characters with `…` when longer.
pub fn shown(text: &str) -> String {
    cut(text, SHOWN)
}

/// [`shown`] with another length.
pub(crate) fn cut(text: &str, max: usize) -> String {
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

#[cfg(test)]
mod tests {
    use crate::Config;
    use crate::settings::tests::pairs;

    use super::*;

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
}
