//! The experiment directory: where one traced run keeps its raw streams,
//! archive and summary. It is always new: gputrace never writes into, let
//! alone over, an existing one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The layout of an experiment directory.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub dir: PathBuf,
}

/// Archive name inside the directory: `traces.otf2`, `traces.def`, `traces/`.
pub const ARCHIVE_NAME: &str = "traces";

/// The Cube profile's file name inside the directory.
pub const PROFILE_NAME: &str = "profile.cubex";

impl Experiment {
    pub fn at(dir: &Path) -> Experiment {
        Experiment { dir: dir.to_path_buf() }
    }

    pub fn raw_dir(&self) -> PathBuf {
        self.dir.join("raw")
    }

    pub fn summary(&self) -> PathBuf {
        self.dir.join("summary.txt")
    }

    /// The Cube profile.
    pub fn profile(&self) -> PathBuf {
        self.dir.join(PROFILE_NAME)
    }

    /// Creates the directory the user asked for; it must not exist.
    pub fn create_requested(dir: &Path) -> Result<Experiment> {
        if dir.symlink_metadata().is_ok() {
            bail!(
                "experiment directory {} exists; gputrace never overwrites one: remove it or choose another \
                 (GPUTRACE_EXPERIMENT_DIRECTORY / -o)",
                show_path(dir)
            );
        }
        create(dir)
    }

    /// Creates `gputrace-<program>-<YYYYmmdd_HHMMSS>` in the working
    /// directory, adding `-2`, `-3`, ... if a run in the same second made
    /// one. The program's name is cut to [`PROGRAM_IN_NAME`] characters, so
    /// that any legal program name makes a legal directory name.
    pub fn create_default(program: &str) -> Result<Experiment> {
        Self::create_default_in(Path::new(""), program)
    }

    /// [`create_default`](Self::create_default) in `parent`.
    fn create_default_in(parent: &Path, program: &str) -> Result<Experiment> {
        let base = format!("gputrace-{}-{}", sanitize(program), local_timestamp());
        for n in 1.. {
            let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            let dir = parent.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    std::fs::create_dir(dir.join("raw"))
                        .with_context(|| format!("cannot create {}/raw", dir.display()))?;
                    return Ok(Experiment { dir });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create experiment directory {}", dir.display()));
                }
            }
        }
        unreachable!("the loop returns")
    }
}

fn create(dir: &Path) -> Result<Experiment> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", show_path(parent)))?;
    }
    std::fs::create_dir(dir).with_context(|| format!("cannot create experiment directory {}", show_path(dir)))?;
    std::fs::create_dir(dir.join("raw")).with_context(|| format!("cannot create {}/raw", show_path(dir)))?;
    Ok(Experiment { dir: dir.to_path_buf() })
}

/// At most this many characters of the program's name go into the default
/// directory name: with `gputrace-`, the time stamp and a `-N` suffix it
/// stays far below the 255 bytes a file name may have.
pub const PROGRAM_IN_NAME: usize = 64;

/// Keeps a program name usable in a directory name.
fn sanitize(program: &str) -> String {
    let base = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or("program");
    let clean: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.+".contains(c) { c } else { '_' })
        .take(PROGRAM_IN_NAME)
        .collect();
    if clean.is_empty() { "program".into() } else { clean }
}

/// A path as messages show it: whole up to 160 characters, otherwise its
/// first 80 and last 40 around `…` (a huge bad value is not repeated in
/// full).
pub fn show_path(path: &Path) -> String {
    let text = path.display().to_string();
    let n = text.chars().count();
    if n <= 160 {
        return text;
    }
    let head: String = text.chars().take(80).collect();
    let tail: String = text.chars().skip(n - 40).collect();
    format!("{head}…{tail}")
}

/// The local time as `YYYYmmdd_HHMMSS`, in the zone `TZ` or
/// `/etc/localtime` names (UTC where neither says one).
pub fn local_timestamp() -> String {
    stamp(&jiff::Zoned::now())
}

fn stamp(time: &jiff::Zoned) -> String {
    time.strftime("%Y%m%d_%H%M%S").to_string()
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
    fn stamps_are_local_time() {
        let t: jiff::Timestamp = "2024-03-05T23:07:08Z".parse().unwrap();
        let india = jiff::tz::TimeZone::fixed(jiff::tz::Offset::from_seconds(5 * 3600 + 1800).unwrap());
        assert_eq!(stamp(&t.to_zoned(india)), "20240306_043708");
        assert_eq!(stamp(&t.to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(-8)))), "20240305_150708");
    }

    #[test]
    fn the_stamp_agrees_with_date() {
        // date(1) reads TZ and /etc/localtime through the C library, as
        // the libc code this replaced did.
        let date = || {
            let out = std::process::Command::new("date").arg("+%Y%m%d_%H%M%S").output().unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        let before = date();
        let stamp = local_timestamp();
        let after = date();
        assert!(before <= stamp && stamp <= after, "{before} <= {stamp} <= {after}");
    }

    #[test]
    fn a_long_program_name_makes_a_legal_directory_name() {
        let program = format!("/usr/bin/{}", "p".repeat(240));
        let name = sanitize(&program);
        assert_eq!(name, "p".repeat(PROGRAM_IN_NAME));
        let tmp = tempfile::tempdir().unwrap();
        let e = Experiment::create_default_in(tmp.path(), &program).unwrap();
        assert!(e.raw_dir().is_dir());
        let made = e.dir.file_name().unwrap().to_str().unwrap();
        assert!(made.starts_with(&format!("gputrace-{name}-")), "{made}");
        // The same second again: the suffixed name is legal too.
        let again = Experiment::create_default_in(tmp.path(), &program).unwrap();
        assert!(again.raw_dir().is_dir());
    }

    #[test]
    fn long_paths_are_shown_cut() {
        let long = PathBuf::from(format!("/data/{}/exp", "d".repeat(5000)));
        let shown = show_path(&long);
        assert_eq!(shown.chars().count(), 121);
        assert!(shown.starts_with("/data/ddd") && shown.ends_with("ddd/exp") && shown.contains('…'));
        assert_eq!(show_path(Path::new("/tmp/x")), "/tmp/x");
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
