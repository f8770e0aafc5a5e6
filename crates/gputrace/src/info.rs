//! `gputrace info config-vars`: the variable table, printed.

use std::io::{self, Write};

use tracer::config::{VARS, VarType};

/// Writes the listing of every variable; `full` adds the long help and the
/// values of set-valued variables.
pub fn config_vars(out: &mut impl Write, full: bool) -> io::Result<()> {
    for v in VARS {
        writeln!(out, "{}", v.name)?;
        writeln!(out, "  Description: {}", v.brief)?;
        writeln!(out, "         Type: {}", v.ty.name())?;
        let default = if v.default.is_empty() {
            "(empty)"
        } else {
            v.default
        };
        writeln!(out, "      Default: {default}")?;
        if full {
            for line in wrap(v.help, 72) {
                writeln!(out, "               {line}")?;
            }
            if let VarType::Set(values) = v.ty {
                writeln!(out, "       Values:")?;
                for s in values {
                    writeln!(out, "         {:<10} {}", s.name, s.help)?;
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
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
}
