//! Finds libotf2 and tells cargo how to link it.
//!
//! Static linking is preferred: the merge step runs on login nodes and
//! laptops where OTF2 is often not installed, so the `gputrace` binary
//! should carry OTF2 inside it. The shared library is used only where no
//! archive exists, or when `OTF2_STATIC=0` asks for it.
//!
//! Debian/Ubuntu ship the library as `libopen-trace-format2`, upstream
//! (and Spack, Score-P bundles) as `libotf2`; both names are tried.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const NAMES: [&str; 2] = ["open-trace-format2", "otf2"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=OTF2_LIB_DIR");
    println!("cargo:rerun-if-env-changed=OTF2_STATIC");

    let prefer_static = match env::var("OTF2_STATIC").as_deref() {
        Ok("0") | Ok("false") | Ok("no") => false,
        Ok(_) | Err(_) => true,
    };

    let (dirs, explicit) = match env::var_os("OTF2_LIB_DIR") {
        Some(dir) => (vec![PathBuf::from(dir)], true),
        None => (candidate_dirs(), false),
    };

    let Some((dir, name, is_static)) = find(&dirs, prefer_static) else {
        let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let hint = if explicit {
            "OTF2_LIB_DIR does not contain it"
        } else {
            "install OTF2 3.x (Debian/Ubuntu: libopen-trace-format2-dev) or set OTF2_LIB_DIR"
        };
        panic!("otf2-sys: no libotf2 / libopen-trace-format2 (.a or .so) in [{}]: {hint}", searched.join(", "));
    };

    println!("cargo:rustc-link-search=native={}", dir.display());
    if is_static {
        println!("cargo:rustc-link-lib=static={name}");
    } else {
        println!("cargo:rustc-link-lib=dylib={name}");
    }
    // For this crate's linkage test.
    println!("cargo:rustc-env=OTF2_SYS_LINKAGE={}", if is_static { "static" } else { "dylib" });
    // Exposed to dependents' build scripts as DEP_OTF2_LIB_DIR / _STATIC.
    println!("cargo:lib_dir={}", dir.display());
    println!("cargo:static={}", u8::from(is_static));
}

/// The first directory holding the library decides; inside it the static
/// archive wins unless the caller asked for the shared one.
fn find(dirs: &[PathBuf], prefer_static: bool) -> Option<(PathBuf, &'static str, bool)> {
    let order: [bool; 2] = if prefer_static { [true, false] } else { [false, true] };
    for dir in dirs {
        for is_static in order {
            for name in NAMES {
                let file = if is_static { format!("lib{name}.a") } else { format!("lib{name}.so") };
                if dir.join(file).is_file() {
                    return Some((dir.clone(), name, is_static));
                }
            }
        }
    }
    None
}

fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // An upstream install puts `otf2-config` on PATH; its --ldflags names
    // the library directory of exactly the OTF2 the user chose.
    if let Ok(out) = Command::new("otf2-config").arg("--ldflags").output()
        && out.status.success()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        dirs.extend(text.split_whitespace().filter_map(|flag| flag.strip_prefix("-L")).map(PathBuf::from));
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = match arch.as_str() {
        "x86" => "i386-linux-gnu".to_owned(),
        "arm" => "arm-linux-gnueabihf".to_owned(),
        other => format!("{other}-linux-gnu"),
    };
    for dir in [
        format!("/usr/lib/{multiarch}"),
        "/usr/local/lib".to_owned(),
        "/usr/local/lib64".to_owned(),
        "/usr/lib64".to_owned(),
        "/usr/lib".to_owned(),
        "/opt/otf2/lib".to_owned(),
    ] {
        let dir = PathBuf::from(dir);
        if Path::new(&dir).is_dir() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}
