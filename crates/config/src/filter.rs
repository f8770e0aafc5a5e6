//! Score-P filter files: which regions to leave out of the trace.
//!
//! The syntax is Score-P's, so existing filter files work unchanged:
//!
//! ```text
//! # leave out everything but the MPI point-to-point calls
//! SCOREP_REGION_NAMES_BEGIN
//!   EXCLUDE *
//!   INCLUDE MPI_Send MPI_Recv
//!           MPI_Isend MPI_Irecv
//! SCOREP_REGION_NAMES_END
//! ```
//!
//! Each `EXCLUDE` or `INCLUDE` starts a rule whose patterns run until the
//! next keyword; `MANGLED` right after the keyword matches the mangled name
//! (a CUDA kernel's symbol, say) instead of the display name. Patterns are
//! shell wildcards (`*`, `?`, `[a-z]`, `[!x]`; `\` escapes). Rules are
//! evaluated in order and the last one that matches decides; a region no
//! rule matches is recorded. `SCOREP_FILE_NAMES_BEGIN` blocks are accepted
//! and ignored: gputrace knows no source files of the regions it records.

use std::path::Path;

/// One rule: include or exclude the names its patterns match.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    exclude: bool,
    mangled: bool,
    patterns: Vec<String>,
}

/// A parsed filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    rules: Vec<Rule>,
}

/// A filter file that could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    #[error("cannot read filter file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("filter file {path}, line {line}: {problem}")]
    Syntax { path: String, line: usize, problem: String },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Regions,
    Files,
}

impl Filter {
    pub fn load(path: &Path) -> Result<Filter, FilterError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| FilterError::Io { path: name.clone(), source })?;
        Filter::parse(&text, &name)
    }

    /// Parses filter text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Filter, FilterError> {
        let mut rules: Vec<Rule> = Vec::new();
        let mut block = Block::None;
        let mut in_rule = false;
        for (i, raw_line) in text.lines().enumerate() {
            let err = |problem: String| FilterError::Syntax { path: origin.to_string(), line: i + 1, problem };
            let mut words = split_words(raw_line).into_iter().peekable();
            while let Some(word) = words.next() {
                match (block, word.as_str()) {
                    (Block::None, "SCOREP_REGION_NAMES_BEGIN") => block = Block::Regions,
                    (Block::None, "SCOREP_FILE_NAMES_BEGIN") => block = Block::Files,
                    (Block::None, w) => {
                        return Err(err(format!("'{w}' outside a BEGIN/END block")));
                    }
                    (Block::Regions, "SCOREP_REGION_NAMES_END") | (Block::Files, "SCOREP_FILE_NAMES_END") => {
                        block = Block::None;
                        in_rule = false;
                    }
                    (_, w @ ("SCOREP_REGION_NAMES_BEGIN" | "SCOREP_FILE_NAMES_BEGIN")) => {
                        return Err(err(format!("{w} inside another block")));
                    }
                    (_, w @ ("SCOREP_REGION_NAMES_END" | "SCOREP_FILE_NAMES_END")) => {
                        return Err(err(format!("{w} does not close the open block")));
                    }
                    (b, kw @ ("EXCLUDE" | "INCLUDE")) => {
                        let mangled = words.peek().is_some_and(|w| w == "MANGLED");
                        if mangled {
                            words.next();
                        }
                        if b == Block::Regions {
                            rules.push(Rule { exclude: kw == "EXCLUDE", mangled, patterns: Vec::new() });
                        }
                        in_rule = true;
                    }
                    (b, pattern) => {
                        if !in_rule {
                            return Err(err(format!("pattern '{pattern}' before EXCLUDE or INCLUDE")));
                        }
                        if b == Block::Regions {
                            rules.last_mut().expect("a rule is open").patterns.push(pattern.to_string());
                        }
                    }
                }
            }
        }
        if block != Block::None {
            return Err(FilterError::Syntax {
                path: origin.to_string(),
                line: text.lines().count(),
                problem: "block not closed (missing SCOREP_..._END)".into(),
            });
        }
        Ok(Filter { rules })
    }

    /// Whether the region `name` (with its `mangled` symbol, if it has one)
    /// is left out.
    pub fn excludes(&self, name: &str, mangled: Option<&str>) -> bool {
        let mut excluded = false;
        for rule in &self.rules {
            let subject = if rule.mangled { mangled.unwrap_or(name) } else { name };
            if rule.patterns.iter().any(|p| wildcard_match(p, subject)) {
                excluded = rule.exclude;
            }
        }
        excluded
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// Splits a line into words, dropping `#` comments and honouring `\`
/// escapes (an escaped character is kept, escaped, for the matcher).
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push('\\');
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '#' => break,
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Shell wildcard match: `*`, `?`, `[...]` with ranges and `!`/`^`
/// negation, `\` escapes.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = match_class(&p, pi, t[ti]) {
                        if matched {
                            pi = next;
                            ti += 1;
                            continue;
                        }
                    } else if t[ti] == '[' {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
                '\\' if pi + 1 < p.len() && p[pi + 1] == t[ti] => {
                    pi += 2;
                    ti += 1;
                    continue;
                }
                '\\' if pi + 1 < p.len() => {}
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `p[start] == '['`; returns
/// whether it matched and the index after the class, or `None` if the class
/// is not closed (then `[` is literal).
fn match_class(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        let lo = if p[i] == '\\' && i + 1 < p.len() {
            i += 1;
            p[i]
        } else {
            p[i]
        };
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if lo <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if lo == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("MPI_*", "MPI_Send"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("MPI_?send", "MPI_Isend"));
        assert!(!wildcard_match("MPI_?send", "MPI_Send"));
        assert!(wildcard_match("MPI_[IS]send", "MPI_Ssend"));
        assert!(!wildcard_match("MPI_[!IS]send", "MPI_Ssend"));
        assert!(wildcard_match("cuda[A-Z]*", "cudaMemcpy"));
        assert!(wildcard_match("a\\*b", "a*b"));
        assert!(!wildcard_match("a\\*b", "axb"));
        assert!(wildcard_match("*Comm*rank", "MPI_Comm_rank"));
        assert!(!wildcard_match("*Comm*rank", "MPI_Comm_ranks"));
    }

    #[test]
    fn last_matching_rule_wins() {
        let f = Filter::parse(
            "# comment\nSCOREP_REGION_NAMES_BEGIN\n  EXCLUDE *\n  INCLUDE MPI_Send MPI_Recv\n          MPI_Isend # tail\nSCOREP_REGION_NAMES_END\n",
            "test",
        )
        .unwrap();
        assert!(!f.excludes("MPI_Send", None));
        assert!(!f.excludes("MPI_Isend", None));
        assert!(f.excludes("MPI_Comm_rank", None));
    }

    #[test]
    fn mangled_rules_match_the_symbol() {
        let f = Filter::parse("SCOREP_REGION_NAMES_BEGIN\nEXCLUDE MANGLED _Z6kernel*\nSCOREP_REGION_NAMES_END", "t")
            .unwrap();
        assert!(f.excludes("kernel(float*)", Some("_Z6kernelPf")));
        assert!(!f.excludes("kernel(float*)", None));
    }

    #[test]
    fn file_blocks_are_accepted_and_ignored() {
        let f = Filter::parse("SCOREP_FILE_NAMES_BEGIN\n EXCLUDE */foo/*\nSCOREP_FILE_NAMES_END\n", "t").unwrap();
        assert!(f.is_empty());
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = Filter::parse("SCOREP_REGION_NAMES_BEGIN\n  MPI_Send\n", "f.filt").unwrap_err();
        assert_eq!(e.to_string(), "filter file f.filt, line 2: pattern 'MPI_Send' before EXCLUDE or INCLUDE");
        let e = Filter::parse("EXCLUDE x", "f").unwrap_err();
        assert!(e.to_string().contains("outside a BEGIN/END block"));
        let e = Filter::parse("SCOREP_REGION_NAMES_BEGIN\nEXCLUDE x\n", "f").unwrap_err();
        assert!(e.to_string().contains("not closed"));
    }
}
