//! The merge runs in a child process, so that libotf2 failing cannot take
//! gputrace down.
//!
//! libotf2 does not survive a write that fails: with the disk full while
//! the archive is written, it crashed gputrace at 9 of 10 fill levels
//! (SIGSEGV, or glibc's "double free" abort, inside
//! `OTF2_Archive_CloseEvtWriter` → `OTF2_Buffer_Delete` → `fwrite`)
//! without returning an error code or calling its error callback first.
//! Its POSIX substrate has no hook through which we could do the writing
//! ourselves, and checking free space beforehand cannot be exact (how much
//! OTF2 writes is only known once it has), nor can it see another process
//! filling the disk meanwhile. So the whole merge (reading the streams,
//! writing the archive, the summary that reads it back) runs in a worker,
//! `gputrace __merge-worker DIR`, and gputrace itself only waits for it.
//! Whatever libotf2 does, gputrace survives it: it removes the
//! half-written archive, keeps the raw streams, prints one line that
//! names the disk when the disk is full, and returns the traced program's
//! exit code.
//!
//! The worker's lines (warnings, progress, summary) go to a copy of
//! gputrace's stderr handed to it as `--messages-fd`; its own stderr, where
//! the C library writes its last words ("double free detected"), is a pipe
//! to gputrace, which keeps it out of the terminal (shown with
//! `GPUTRACE_VERBOSE`). A failure is told to gputrace as one line on the
//! worker's stdout and an exit status ([`Failure`]).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Result, anyhow};
use config::Config;

use crate::experiment::{ARCHIVE_NAME, Experiment};
use crate::request::{AfterRun, Request};
use crate::trace::Settings;

/// The hidden subcommand that runs the worker.
pub const WORKER_COMMAND: &str = "__merge-worker";

/// Worker exit statuses beyond 0 (merged) and 1 (another error).
mod status {
    pub const USAGE: i32 = 2;
    pub const NOTHING_RECORDED: i32 = 3;
    pub const NOTHING_TO_MERGE: i32 = 4;
    pub const NO_SPACE: i32 = 5;
    /// Merged (the archive is complete), but the profile could not be
    /// written.
    pub const PROFILE: i32 = 6;
}

/// At most this much of the worker's stderr is kept.
const STDERR_KEPT: usize = 64 << 10;

/// Free space below which a failed archive write is blamed on the disk:
/// OTF2 writes in chunks of at most 4 MiB (its definition chunks), so a
/// write failed for lack of space left less than that.
const FULL_BELOW: u64 = 5 << 20;

/// The worker found nothing to merge (no raw stream, or none that makes
/// an archive): bad input, exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// No raw stream at all: the program recorded nothing.
    #[error("{0}")]
    NothingRecorded(String),
    #[error("{0}")]
    NothingToMerge(String),
}

/// The archive could not be written because the disk is full.
#[derive(Debug)]
pub struct DiskFull(pub String);

impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DiskFull {}

/// Merges `experiment` in a worker process and prints its summary, the
/// worker getting the settings' pairs as its environment. Errors are one line
/// each: [`Refused`] (nothing to merge), [`DiskFull`], or what
/// else stopped the worker.
pub fn merge(
    experiment: &Experiment,
    settings: &Settings,
    force: bool,
    not_traced: &[merge::NotTraced],
    after_run: AfterRun,
) -> Result<()> {
    let archive_existed = archive_exists(&experiment.dir);
    let (status, reason, junk) = run_worker(experiment, settings.pairs(), force, not_traced, after_run)?;
    let status = status.map_err(|e| anyhow!("waiting for the merge: {e}"))?;
    if status.success() {
        return Ok(());
    }
    if settings.config().verbose && !junk.is_empty() {
        for l in String::from_utf8_lossy(&junk).lines() {
            say!("[gputrace] merge worker: {l}");
        }
    }
    let code = status.code();
    match code {
        Some(status::NOTHING_RECORDED) => return Err(Refused::NothingRecorded(reason).into()),
        Some(status::NOTHING_TO_MERGE) => return Err(Refused::NothingToMerge(reason).into()),
        Some(status::USAGE) => return Err(crate::UsageError(reason).into()),
        // The archive is whole: nothing to remove. A profile that cannot
        // be written where it goes is bad output (2), a full disk is not.
        Some(status::PROFILE) => {
            let e = anyhow!(reason.clone());
            return Err(if is_no_space(&e) { e } else { crate::UsageError(reason).into() });
        }
        _ => {}
    }
    // The worker failed while the archive may be half written. Look at
    // the disk before removing anything: the half-written files are what
    // filled it.
    let disk = disk_of(&experiment.dir);
    let full =
        code == Some(status::NO_SPACE) || disk.as_ref().is_some_and(|d| d.avail < FULL_BELOW || d.out_of_inodes());
    if !archive_existed || force {
        let _ = merge::remove_archive(&experiment.dir, ARCHIVE_NAME);
    }
    let retry = format!("`gputrace merge {}` tries again", experiment.dir.display());
    if full {
        let (mount, why) = match &disk {
            Some(d) => (d.mount.display().to_string(), d.why_full()),
            None => (experiment.dir.display().to_string(), "is full".to_string()),
        };
        return Err(DiskFull(format!(
            "the archive could not be written: the disk mounted at {mount} {why}; the half-written \
             archive was removed and the raw streams are kept in {}: free some space, then {retry}",
            experiment.raw_dir().display()
        ))
        .into());
    }
    let kept = "the half-written archive was removed and the raw streams are kept";
    match (code, status.signal()) {
        (_, Some(sig @ (libc::SIGINT | libc::SIGTERM | libc::SIGHUP | libc::SIGQUIT))) => {
            Err(anyhow!("the merge was stopped ({}); {kept}: {retry}", gputrace_summary::signal_name(sig as u32)))
        }
        (_, Some(sig)) => Err(anyhow!(
            "the archive could not be written: the OTF2 library crashed ({}); {kept}: {retry}",
            gputrace_summary::signal_name(sig as u32)
        )),
        (Some(_), _) if !reason.is_empty() => Err(anyhow!(reason)),
        (code, _) => Err(anyhow!("the merge failed (exit status {code:?}); the raw streams are kept: {retry}")),
    }
}

/// Starts the worker on `experiment` and waits for it: its exit status,
/// the line it printed on failure, and (the start of) its stderr.
fn run_worker(
    experiment: &Experiment,
    settings: &[(String, String)],
    force: bool,
    not_traced: &[merge::NotTraced],
    after_run: AfterRun,
) -> Result<(std::io::Result<std::process::ExitStatus>, String, Vec<u8>)> {
    // A copy of our stderr for the worker's lines, inherited across exec
    // (no close-on-exec) and closed here once the worker runs.
    // SAFETY: fcntl(F_DUPFD) on a descriptor that may be closed is an
    // error return, never UB.
    let messages = unsafe { libc::fcntl(crate::say::fd(), libc::F_DUPFD, 10) };
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg(WORKER_COMMAND).arg("--messages-fd").arg(messages.to_string());
    if force {
        cmd.arg("--force");
    }
    for n in not_traced {
        cmd.arg("--not-traced").arg(format!("{}:{}", n.what.title(), n.why));
    }
    cmd.args(after_run.args());
    cmd.arg("--").arg(&experiment.dir);
    for (k, v) in settings {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let spawned = cmd.spawn();
    if messages >= 0 {
        // SAFETY: our own descriptor from fcntl above, closed once.
        unsafe { libc::close(messages) };
    }
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return Err(anyhow!("cannot start the merge: {e}; the raw streams are kept")),
    };
    let mut stderr = child.stderr.take().expect("piped");
    let collector = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let room = STDERR_KEPT.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        kept
    });
    let mut reason = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut reason);
    }
    let status = child.wait();
    let junk = collector.join().unwrap_or_default();
    let reason = reason.trim().to_string();
    Ok((status, reason, junk))
}

/// `gputrace __merge-worker DIR`: the merge and its summary, in the
/// worker. Returns the worker's exit status; a failure is also one line on
/// stdout for the parent.
pub fn worker(dir: &Path, force: bool, messages_fd: i32, not_traced: &[String], after_run: AfterRun) -> i32 {
    crate::say::set_fd(messages_fd);
    let settings = crate::cli::env_settings();
    let fail = |e: &anyhow::Error, status: i32| {
        let line = format!("{e:#}").replace('\n', "; ");
        crate::say::write_all(libc::STDOUT_FILENO, line.as_bytes());
        status
    };
    // gputrace checked the settings (and the filter file, which the merge
    // does not read and the program may have removed since) already.
    let config = match Config::from_pairs(&settings) {
        Ok(c) => c,
        Err(errors) => {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            return fail(&anyhow!(lines.join("; ")), status::USAGE);
        }
    };
    crate::say::init_tracing(config.verbose);
    let mut request = Request::new(Experiment::at(dir), &config, force, after_run);
    request.not_traced = not_traced.iter().filter_map(|a| parse_not_traced(a)).collect();
    let experiment = &request.experiment;
    let options = request.options();
    let observer = crate::progress::Shown::default();
    // The Cube profile is built in the merge's own pass.
    let mut profile = request.profile();
    let merged = match profile.as_mut() {
        Some(p) => merge::merge_with(&options, &observer, p),
        None => merge::merge(&options, &observer),
    };
    match merged {
        Ok(mut summary) => {
            let failed = request.write_profile(&mut summary, profile.as_mut());
            request.report(&summary, !observer.warned() && failed.is_none());
            match failed {
                None => 0,
                Some(e) => {
                    let kept = match &summary.archive {
                        Some((anchor, _)) => format!("the archive {} is complete", anchor.display()),
                        None => format!(
                            "the raw streams are kept: `gputrace merge {}` tries again",
                            experiment.dir.display()
                        ),
                    };
                    fail(&anyhow!("the profile could not be written: {e}; {kept}"), status::PROFILE)
                }
            }
        }
        Err(e @ merge::Error::NothingRecorded { .. }) => fail(&e.into(), status::NOTHING_RECORDED),
        Err(e @ merge::Error::NothingToMerge { .. }) => fail(&e.into(), status::NOTHING_TO_MERGE),
        Err(merge::Error::ArchiveExists(dir)) => fail(
            &anyhow!(
                "{} already holds an archive: `gputrace merge --force {}` replaces it",
                dir.display(),
                dir.display()
            ),
            status::USAGE,
        ),
        Err(e @ merge::Error::Archive { .. }) => {
            let e = anyhow::Error::new(e).context(format!(
                "the archive could not be written; the raw streams are kept: `gputrace merge {}` tries again",
                experiment.dir.display()
            ));
            fail(&e, if is_no_space(&e) { status::NO_SPACE } else { 1 })
        }
        Err(e) => {
            let e = anyhow::Error::new(e);
            fail(&e, if is_no_space(&e) { status::NO_SPACE } else { 1 })
        }
    }
}

/// `CUDA:why` (as [`run_worker`] passes what was not traced) → the fact.
fn parse_not_traced(arg: &str) -> Option<merge::NotTraced> {
    let (what, why) = arg.split_once(':')?;
    let what = raw::source::by_name(what)?.producer;
    Some(merge::NotTraced { what, why: why.to_string(), processes: 0 })
}

/// Whether an error comes from a full disk (or quota).
fn is_no_space(e: &anyhow::Error) -> bool {
    let io = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|code| code == libc::ENOSPC || code == libc::EDQUOT)
    });
    let text = format!("{e:#}");
    io || ["ENOSPC", "EDQUOT", "No space left on device", "Disk quota exceeded"].iter().any(|s| text.contains(s))
}

fn archive_exists(dir: &Path) -> bool {
    let name = ARCHIVE_NAME;
    [format!("{name}.otf2"), format!("{name}.def"), name.to_string()]
        .iter()
        .any(|n| dir.join(n).symlink_metadata().is_ok())
}

/// The file system a path is on: where it is mounted, its space and its
/// inodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    pub mount: PathBuf,
    /// Bytes an unprivileged writer may still use.
    pub avail: u64,
    pub total: u64,
    /// Inodes (files) an unprivileged writer may still create, and all of
    /// them; `inodes` is 0 where the file system does not count them.
    pub inodes_avail: u64,
    pub inodes: u64,
}

impl Disk {
    /// Whether the disk can take no new file: no inode left (of a file
    /// system that counts them).
    pub fn out_of_inodes(&self) -> bool {
        self.inodes > 0 && self.inodes_avail == 0
    }

    /// What is wrong with it, after "the disk mounted at M", for a write
    /// that failed for lack of room: `has no free inodes left (all 3 are
    /// used)`, `is full (1.2 MiB free of 64 MiB)`. Where there is room of
    /// both kinds now (the merge removes its half-written files before it
    /// is looked at), the scarcer of the two is blamed: inodes where fewer
    /// than 65,536 are free and a smaller share of them than of the space.
    pub fn why_full(&self) -> String {
        let space = || {
            format!("{} free of {}", report::numbers::human_bytes(self.avail), report::numbers::human_bytes(self.total))
        };
        let share = |free: u64, all: u64| free as f64 / all.max(1) as f64;
        let inodes_scarcer = self.inodes > 0
            && self.inodes_avail < 65_536
            && share(self.inodes_avail, self.inodes) < share(self.avail, self.total);
        if self.out_of_inodes() {
            format!("has no free inodes left (all {} are used)", self.inodes)
        } else if self.avail < FULL_BELOW || !inodes_scarcer {
            format!("is full ({})", space())
        } else {
            format!(
                "has no free inodes left ({} of {} are free once the half-written files are removed; {})",
                self.inodes_avail,
                self.inodes,
                space()
            )
        }
    }
}

/// Why no file can be created in `dir` now, if none can: a probe file is
/// created and removed. For a run that recorded nothing: the processes'
/// streams may simply have found no room.
pub fn cannot_create_in(dir: &Path) -> Option<String> {
    let probe = dir.join(format!(".gputrace-probe.{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => {
            let why = match disk_of(dir) {
                Some(d) if d.out_of_inodes() || d.avail == 0 => {
                    format!("the disk mounted at {} {}", d.mount.display(), d.why_full())
                }
                _ => e.to_string(),
            };
            Some(why)
        }
    }
}

/// The disk holding `path` (which must exist).
pub fn disk_of(path: &Path) -> Option<Disk> {
    use std::os::unix::fs::MetadataExt;
    let path = std::fs::canonicalize(path).ok()?;
    let dev = std::fs::metadata(&path).ok()?.dev();
    // The mount point: the highest ancestor on the same device.
    let mut mount = path.clone();
    while let Some(parent) = mount.parent() {
        match std::fs::metadata(parent) {
            Ok(m) if m.dev() == dev => mount = parent.to_path_buf(),
            _ => break,
        }
    }
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())).ok()?;
    // SAFETY: `c` is NUL-terminated; statvfs writes only the struct we pass.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let frsize = st.f_frsize as u64;
    Some(Disk {
        mount,
        avail: st.f_bavail as u64 * frsize,
        total: st.f_blocks as u64 * frsize,
        inodes_avail: st.f_favail as u64,
        inodes: st.f_files as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_of_a_path_is_its_mount_point() {
        let d = disk_of(Path::new("/proc/self")).unwrap();
        assert_eq!(d.mount, Path::new("/proc"));
        let root = disk_of(Path::new("/")).unwrap();
        assert_eq!(root.mount, Path::new("/"));
        assert!(root.total > 0);
    }

    #[test]
    fn a_disk_out_of_room_blames_the_scarcer_of_space_and_inodes() {
        let disk = |avail: u64, inodes_avail: u64, inodes: u64| {
            Disk { mount: "/d".into(), avail: avail << 20, total: 64 << 20, inodes_avail, inodes }.why_full()
        };
        assert_eq!(disk(64, 0, 3), "has no free inodes left (all 3 are used)");
        assert_eq!(disk(1, 2, 7), "is full (1.0 MiB free of 64.0 MiB)");
        assert!(disk(64, 2, 7).starts_with("has no free inodes left (2 of 7 are free once"));
        // Space freed by the removed archive, inodes plenty: the space.
        assert_eq!(disk(20, 1_000_000, 1_000_010), "is full (20.0 MiB free of 64.0 MiB)");
        assert_eq!(disk(20, 100, 1_000_000).split(" (").next(), Some("has no free inodes left"));
        // A file system that does not count inodes.
        assert_eq!(disk(20, 0, 0), "is full (20.0 MiB free of 64.0 MiB)");
    }

    #[test]
    fn no_space_is_recognised_in_any_layer() {
        let io = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert!(is_no_space(&anyhow::Error::new(io).context("writing")));
        assert!(is_no_space(&anyhow!("OTF2_Archive_Close failed: ENOSPC (No space left on device)")));
        assert!(!is_no_space(&anyhow!("OTF2_Archive_Close failed: INVALID_ARGUMENT")));
    }
}
