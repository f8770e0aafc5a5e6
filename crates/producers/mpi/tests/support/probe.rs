//! The ABI probe: compiles a C program with an MPI flavour's `mpicc` that
//! evaluates C expressions (sizes, offsets, constants, handle addresses)
//! and compares each with the value the Rust definitions give. This is
//! how the flavour crates are "built against" the installed MPI: a
//! mismatch fails the test and names the value.

use std::fmt::Write;
use std::process::Command;

#[path = "required.rs"]
mod required;
pub use required::required;

/// Compiles and runs the probe; panics listing every mismatch. Skips, with
/// a note on stderr, when `mpicc` is not installed (fails under `CI=true`).
pub fn check(mpicc: &str, checks: &[(String, i64)]) {
    let present = Command::new(mpicc).arg("-show").output().is_ok_and(|o| o.status.success());
    if !required(&format!("{mpicc} (for the ABI probe)"), present) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = String::from(
        "#define _GNU_SOURCE\n#include <mpi.h>\n#include <dlfcn.h>\n#include <stddef.h>\n\
         #include <stdint.h>\n#include <stdio.h>\n\
         static int bad;\n\
         static void check(const char *what, long long c, long long rust) {\n\
           if (c != rust) { printf(\"MISMATCH %s: C %lld, Rust %lld\\n\", what, c, rust); bad++; }\n\
         }\n\
         int main(void) {\n",
    );
    for (expr, value) in checks {
        let quoted = expr.replace('\\', "\\\\").replace('"', "\\\"");
        writeln!(c, "  check(\"{quoted}\", (long long)({expr}), {value}LL);").unwrap();
    }
    c.push_str("  printf(\"checked %d\\n\", ");
    writeln!(c, "{});\n  return bad != 0;\n}}", checks.len()).unwrap();
    let src = dir.path().join("probe.c");
    let exe = dir.path().join("probe");
    std::fs::write(&src, c).unwrap();
    let out = Command::new(mpicc).arg(&src).arg("-o").arg(&exe).arg("-ldl").output().unwrap();
    assert!(out.status.success(), "{mpicc} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ABI mismatch:\n{stdout}");
    assert!(stdout.contains(&format!("checked {}", checks.len())), "{stdout}");
}
