//! The experiment directory: where one traced run keeps its raw streams,
//! archive and summary. It is always new: gputrace never writes into, let
//! alone over, an existing one.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The layout of an experiment directory.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub dir: PathBuf,
}

/// Archive name inside the directory: `traces.otf2`, `traces.def`, `traces/`.
pub const ARCHIVE_NAME: &str = "traces";

impl Experiment {
    pub fn at(dir: &Path) -> Experiment {
        Experiment { dir: dir.to_path_buf() }
    }

    pub fn raw_dir(&self) -> PathBuf {
        self.dir.join("raw")
    }

    pub fn anchor(&self) -> PathBuf {
        self.dir.join(format!("{ARCHIVE_NAME}.otf2"))
    }

    pub fn summary(&self) -> PathBuf {
        self.dir.join("summary.txt")
    }

    /// Creates the directory the user asked for; it must not exist.
    pub fn create_requested(dir: &Path) -> Result<Experiment> {
        if dir.exists() {
            bail!(
                "experiment directory {} exists; gputrace never overwrites one: remove it or choose another \
                 (GPUTRACE_EXPERIMENT_DIRECTORY / -o)",
                dir.display()
            );
        }
        create(dir)
    }

    /// Creates `gputrace-<program>-<YYYYmmdd_HHMMSS>` in the working
    /// directory, adding `-2`, `-3`, ... if a run in the same second made one.
    pub fn create_default(program: &str) -> Result<Experiment> {
        let base = format!("gputrace-{}-{}", sanitize(program), local_timestamp());
        for n in 1.. {
            let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            let dir = PathBuf::from(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    std::fs::create_dir(dir.join("raw")).with_context(|| format!("cannot create {name}/raw"))?;
                    return Ok(Experiment { dir });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create experiment directory {name}"));
                }
            }
        }
        unreachable!("the loop returns")
    }
}

fn create(dir: &Path) -> Result<Experiment> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::create_dir(dir).with_context(|| format!("cannot create experiment directory {}", dir.display()))?;
    std::fs::create_dir(dir.join("raw")).with_context(|| format!("cannot create {}/raw", dir.display()))?;
    Ok(Experiment { dir: dir.to_path_buf() })
}

/// Keeps a program name usable in a directory name.
fn sanitize(program: &str) -> String {
    let base = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or("program");
    let clean: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.+".contains(c) { c } else { '_' }).collect();
    if clean.is_empty() { "program".into() } else { clean }
}

/// The local time as `YYYYmmdd_HHMMSS`.
pub fn local_timestamp() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only the
    // tm we pass; strftime writes at most buf.len() bytes into buf.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        let mut buf = [0u8; 32];
        let fmt = CString::new("%Y%m%d_%H%M%S").expect("no NUL");
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_and_stamped() {
        assert_eq!(sanitize("./bin/my app"), "my_app");
        assert_eq!(sanitize("/"), "program");
        let stamp = local_timestamp();
        assert_eq!(stamp.len(), 15, "{stamp}");
        assert_eq!(&stamp[8..9], "_");
    }

    #[test]
    fn an_existing_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Experiment::create_requested(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("never overwrites"), "{err}");
        let fresh = tmp.path().join("a/b");
        let e = Experiment::create_requested(&fresh).unwrap();
        assert!(e.raw_dir().is_dir());
    }
}
