//! `gputrace info config-vars`: the variable table, printed.

use std::io::{self, Write};

use config::{DEVELOPER_VARS, VARS, Var, VarType, hooks};

/// Writes the listing of every variable; `full` adds the long help, the
/// values of set-valued variables, the developer settings and the test
/// hooks.
pub fn config_vars(out: &mut impl Write, full: bool) -> io::Result<()> {
    for v in VARS {
        var(out, v, full)?;
    }
    if full {
        writeln!(out, "Developer settings:")?;
        for line in wrap(DEVELOPER_RULE, 80) {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
        for v in DEVELOPER_VARS {
            var(out, v, full)?;
        }
        writeln!(out, "Test hooks:")?;
        for line in wrap(HOOK_RULE, 80) {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
        for hook in hooks::ALL {
            writeln!(out, "{}", hook.name)?;
            writeln!(out, "      Read by: {}", hook.read_by)?;
            for line in wrap(hook.help, 72) {
                writeln!(out, "               {line}")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

fn var(out: &mut impl Write, v: &Var, full: bool) -> io::Result<()> {
    writeln!(out, "{}", v.name)?;
    writeln!(out, "  Description: {}", v.brief)?;
    writeln!(out, "         Type: {}", v.ty.name())?;
    let default = if v.default.is_empty() { "(empty)" } else { v.default };
    writeln!(out, "      Default: {default}")?;
    writeln!(out, "         Flag: {}", flag(v, "", ""))?;
    if full {
        for line in wrap(v.help, 72) {
            writeln!(out, "               {line}")?;
        }
        if let VarType::Choice(values) = v.ty {
            writeln!(out, "       Values:")?;
            for (name, help) in values {
                writeln!(out, "         {name:<14} {help}")?;
            }
        }
        if let VarType::Set(spec) = v.ty {
            writeln!(out, "       Values:")?;
            for line in wrap(SET_RULE, 72) {
                writeln!(out, "               {line}")?;
            }
            for (name, help) in spec.values() {
                writeln!(out, "         {name:<10} {help}")?;
            }
        }
    }
    writeln!(out)
}

/// A variable's flag as the listings show it, code between `open` and
/// `close`: a Boolean's flag takes no value and sets the opposite of the
/// default; the others take the variable's value.
fn flag(v: &Var, open: &str, close: &str) -> String {
    match v.ty {
        VarType::Bool => {
            let sets = if v.default == "true" { "false" } else { "true" };
            format!("{open}{}{close} (sets {open}{sets}{close})", v.flag)
        }
        _ => format!("{open}{}{close}", v.flag),
    }
}

/// How a set-valued variable is written, for the listing and the docs.
const SET_RULE: &str = "names separated by commas or spaces; an empty value is refused, and so is \
                        `none`/`no` (record nothing) with other names";

/// The heading of the developer settings.
const DEVELOPER_RULE: &str = "Checked and passed to the ranks like the variables above, for making \
                              test fixtures (docs/testing.md); tracing needs none of them.";

/// The heading of the test hooks.
const HOOK_RULE: &str = "Read by gputrace's own tests, not settings; outside GPUTRACE_* on purpose, so \
                         that gputrace neither checks them nor passes them to the launcher.";

/// `docs/configuration.md`: the same table, as Markdown (the doc test
/// keeps the file in step with it).
#[cfg(test)]
pub fn config_vars_markdown() -> String {
    let mut s = String::from(
        "# Configuration variables\n\n\
         Every knob of gputrace is an environment variable, and each is also a flag of\n\
         `gputrace` (`gputrace --help` lists them): the flag sets the variable for the\n\
         traced program as the environment would, and wins over it. `gputrace` checks\n\
         them all before the program starts: a bad value or an unknown `GPUTRACE_` name\n\
         stops it with one line naming the variable, the value and what is allowed (exit\n\
         status 2); a long value is shown once, cut to its first 80 characters and `…`.\n\
         Inside a traced process a bad value falls back to the default with a warning.\n\n\
         Sets (`GPUTRACE_MPI_ENABLE_GROUPS`, `GPUTRACE_CUDA_ENABLE`,\n\
         `GPUTRACE_NCCL_ENABLE`) take names separated by commas or spaces, in any case.\n\
         An empty value (`\"\"`, `,`) is refused like any other empty value, not read as\n\
         \"record nothing\": that is `none` (or `no`), which is refused together with\n\
         anything it contradicts (`none,p2p`, `all,no`). Each set's members are one enum\n\
         in `crates/config/src/vars.rs` (`MpiGroup`, `CudaSource`, `NcclLevel`), which the\n\
         producers test membership with.\n\n\
         This page is generated from the table in `crates/config/src/vars.rs`\n\
         (`UPDATE_DOCS=1 cargo test -p gputrace config_doc` rewrites it); `gputrace info\n\
         config-vars --full` prints the same.\n",
    );
    for v in VARS {
        s.push_str(&var_markdown(v));
    }
    s.push_str(&format!("\n# Developer settings\n\n{}\n", wrap(DEVELOPER_RULE, 80).join("\n")));
    for v in DEVELOPER_VARS {
        s.push_str(&var_markdown(v));
    }
    s.push_str(&format!(
        "\n# Test hooks\n\n{}\n\n| variable | read by | what it does |\n|---|---|---|\n",
        wrap(HOOK_RULE, 80).join("\n")
    ));
    for hook in hooks::ALL {
        s.push_str(&format!("| `{}` | {} | {} |\n", hook.name, hook.read_by, hook.help));
    }
    s
}

#[cfg(test)]
fn var_markdown(v: &Var) -> String {
    let default = if v.default.is_empty() { "(empty)".to_string() } else { format!("`{}`", v.default) };
    let mut s = format!(
        "\n## `{}`\n\n{}\n\n- Type: {}\n- Default: {default}\n- Flag: {}\n\n{}\n",
        v.name,
        v.brief,
        v.ty.name(),
        flag(v, "`", "`"),
        v.help
    );
    if let VarType::Choice(values) = v.ty {
        s.push_str("\n| value | meaning |\n|---|---|\n");
        for (name, help) in values {
            s.push_str(&format!("| `{name}` | {help} |\n"));
        }
    }
    if let VarType::Set(spec) = v.ty {
        s.push_str("\n| value | meaning |\n|---|---|\n");
        for (name, help) in spec.values() {
            s.push_str(&format!("| `{name}` | {help} |\n"));
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

    fn listing(full: bool) -> String {
        let mut out = Vec::new();
        config_vars(&mut out, full).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The block of `text` that describes `name`.
    fn section<'a>(text: &'a str, name: &str) -> &'a str {
        let start = text.find(&format!("{name}\n")).unwrap_or_else(|| panic!("{name} not listed"));
        let rest = &text[start..];
        &rest[..rest.find("\n\n").unwrap_or(rest.len())]
    }

    #[test]
    fn every_member_of_every_set_is_listed_under_its_variable() {
        let text = listing(true);
        let mut sets = 0;
        for v in VARS {
            let VarType::Set(spec) = v.ty else { continue };
            sets += 1;
            let block = section(&text, v.name);
            for (name, help) in spec.values() {
                assert!(
                    block.contains(&format!("\n         {name:<10} {help}\n"))
                        || block.ends_with(&format!("{name:<10} {help}")),
                    "{}: {name}",
                    v.name
                );
            }
        }
        assert_eq!(sets, 3);
        // The members are the enums'.
        for m in config::CudaSource::ALL {
            assert!(section(&text, "GPUTRACE_CUDA_ENABLE").contains(&format!(" {:<10} {}", m.name(), m.help())));
        }
    }

    #[test]
    fn every_variable_shows_its_flag() {
        let text = listing(false);
        for v in VARS {
            assert!(section(&text, v.name).contains(&format!("Flag: {}", v.flag)), "{}", v.name);
        }
        assert!(section(&text, "GPUTRACE_ENABLE_TRACING").contains("Flag: --no-trace (sets false)"));
        assert!(section(&text, "GPUTRACE_VERBOSE").contains("Flag: --verbose (sets true)"));
        assert!(section(&text, "GPUTRACE_CUDA_ENABLE").lines().any(|l| l.trim() == "Flag: --cuda"));
    }

    #[test]
    fn developer_settings_and_test_hooks_only_with_full() {
        let short = listing(false);
        let full = listing(true);
        for v in DEVELOPER_VARS {
            assert!(!short.contains(v.name), "{}", v.name);
            let flag = format!("Flag: {}", v.flag);
            assert!(section(&full, v.name).lines().any(|l| l.trim() == flag), "{}", v.name);
        }
        for hook in hooks::ALL {
            assert!(!short.contains(hook.name), "{}", hook.name);
            assert!(section(&full, hook.name).contains("Read by: "), "{}", hook.name);
        }
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
