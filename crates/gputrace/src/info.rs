//! `gputrace info config-vars`: the variable table, printed.

use std::io::{self, Write};

use config::{VARS, VarType};

/// Writes the listing of every variable; `full` adds the long help and the
/// values of set-valued variables.
pub fn config_vars(out: &mut impl Write, full: bool) -> io::Result<()> {
    for v in VARS {
        writeln!(out, "{}", v.name)?;
        writeln!(out, "  Description: {}", v.brief)?;
        writeln!(out, "         Type: {}", v.ty.name())?;
        let default = if v.default.is_empty() { "(empty)" } else { v.default };
        writeln!(out, "      Default: {default}")?;
        if full {
            for line in wrap(v.help, 72) {
                writeln!(out, "               {line}")?;
            }
            if let VarType::Set(values) = v.ty {
                writeln!(out, "       Values:")?;
                for line in wrap(SET_RULE, 72) {
                    writeln!(out, "               {line}")?;
                }
                for s in values {
                    writeln!(out, "         {:<10} {}", s.name, s.help)?;
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// How a set-valued variable is written, for the listing and the docs.
const SET_RULE: &str = "names separated by commas or spaces; an empty value is refused, and so is \
                        `none`/`no` (record nothing) with other names";

/// `docs/configuration.md`: the same table, as Markdown (the doc test
/// keeps the file in step with it).
#[cfg(test)]
pub fn config_vars_markdown() -> String {
    let mut s = String::from(
        "# Configuration variables\n\n\
         Every knob of gputrace is an environment variable, and most are also a flag of\n\
         `gputrace` (see `gputrace --help`). `gputrace` checks them all before the\n\
         program starts: a bad value or an unknown `GPUTRACE_` name stops it with one\n\
         line naming the variable, the value and what is allowed (exit status 2); a\n\
         long value is shown once, cut to its first 80 characters and `…`. Inside a\n\
         traced process a bad value falls back to the default with a warning.\n\n\
         Sets (`GPUTRACE_MPI_ENABLE_GROUPS`, `GPUTRACE_CUDA_ENABLE`,\n\
         `GPUTRACE_NCCL_ENABLE`) take names separated by commas or spaces. An empty\n\
         value (`\"\"`, `,`) is refused like any other empty value, not read as\n\
         \"record nothing\": that is `none` (or `no`), which is refused together with\n\
         anything it contradicts (`none,p2p`, `all,no`).\n\n\
         This page is generated from the table in `crates/config/src/vars.rs`\n\
         (`UPDATE_DOCS=1 cargo test -p gputrace config_doc` rewrites it); `gputrace info\n\
         config-vars --full` prints the same.\n",
    );
    for v in VARS {
        let default = if v.default.is_empty() { "(empty)".to_string() } else { format!("`{}`", v.default) };
        s.push_str(&format!(
            "\n## `{}`\n\n{}\n\n- Type: {}\n- Default: {default}\n\n{}\n",
            v.name,
            v.brief,
            v.ty.name(),
            v.help
        ));
        if let VarType::Set(values) = v.ty {
            s.push_str("\n| value | meaning |\n|---|---|\n");
            for sv in values {
                s.push_str(&format!("| `{}` | {} |\n", sv.name, sv.help));
            }
        }
    }
    s
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_listed_with_type_and_default() {
        let mut out = Vec::new();
        config_vars(&mut out, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        for v in VARS {
            assert!(text.contains(v.name), "{}", v.name);
        }
        assert!(text.contains("Default: 16M"));
        assert!(text.contains("xnonblock"));
    }

    #[test]
    fn config_doc_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
        let want = config_vars_markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(have == want, "docs/configuration.md is stale: run UPDATE_DOCS=1 cargo test -p gputrace config_doc");
    }
}
