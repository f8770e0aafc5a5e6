//! The TSC map of a host the `gputrace` command did not run on, shared by
//! that host's processes through the experiment directory.
//!
//! The command hands its map to the processes it starts on its own host;
//! on the other hosts of a job (cluster nodes, where mpirun or srun starts
//! the ranks) the first process to look calibrates, as the command would,
//! and publishes the map as `raw/timer-<domain>.tsc`, `<domain>` being the
//! host's clock domain ([`super::domain`], from its boot id) in hex. The
//! other processes of the host read that map, so that they all read one
//! clock, as MPI's clock synchronization (one offset per host) takes them
//! to. The merge reads only `*.gtr` files and passes over the map files.
//!
//! Publishing is a race that exactly one process wins: each contender
//! writes its map to a temporary file of its own and links it to the
//! map's name (`link(2)` fails with EEXIST when the name exists, on local
//! and network file systems alike; `renameat2(RENAME_NOREPLACE)` where the
//! file system has no hard links); the losers then read the winner's map.
//! Nothing here waits on another process, so nothing can hang.
//!
//! A map file is trusted only when it is a regular file (opened with
//! `O_NOFOLLOW | O_NONBLOCK`: a symbolic link is refused, a FIFO does not
//! block), short, complete (one line ending in a newline), tagged with
//! this host's domain, of a plausible frequency, and agreeing with
//! CLOCK_MONOTONIC now. Anything else is an [`Error`], which the caller
//! turns into one warning and clock_gettime.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
use super::monotonic;
use super::{Map, TICKS_PER_SECOND, hz_of};

/// The first word of a map file.
const MAGIC: &str = "gputrace-tsc-map";
/// The format of the line that follows it.
const VERSION: u32 = 1;
/// No map file is longer than this.
const MAX_LEN: u64 = 256;

/// Why a host's map could not be read or published.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the TSC map {path} is {what}, not a regular file")]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("cannot read the TSC map {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the TSC map {path} is not a map of this host's clock ({why})")]
    Invalid { path: PathBuf, why: String },
    #[error("cannot publish this host's TSC map in {dir}: {source}")]
    Publish { dir: PathBuf, source: std::io::Error },
    #[error("the TSC did not advance while it was calibrated")]
    Calibration,
}

/// The name of the map file of clock domain `domain`.
pub fn file_name(domain: u64) -> String {
    format!("timer-{domain:016x}.tsc")
}

/// Whether `name` is the name of a host's map file (for the cleanup of an
/// experiment directory).
pub fn is_map_file(name: &str) -> bool {
    name.strip_prefix("timer-")
        .and_then(|r| r.strip_suffix(".tsc"))
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The map of clock domain `domain` in `dir`: read from its file when the
/// file exists, else calibrated with `calibrate` and published, the map of
/// whichever process published first being returned to all.
pub fn load_or_publish(dir: &Path, domain: u64, calibrate: impl FnOnce() -> Map) -> Result<Map, Error> {
    let path = dir.join(file_name(domain));
    match read(&path, domain) {
        Err(Error::Read { source, .. }) if source.kind() == ErrorKind::NotFound => {}
        found => return found,
    }
    let map = calibrate();
    if map.mult == 0 {
        return Err(Error::Calibration);
    }
    publish(dir, &path, domain, map)
}

/// Reads and checks the map file at `path`.
pub fn read(path: &Path, domain: u64) -> Result<Map, Error> {
    let invalid = |why: &str| Error::Invalid { path: path.to_path_buf(), why: why.to_string() };
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => Error::NotRegular { path: path.to_path_buf(), what: "a symbolic link" },
            _ => Error::Read { path: path.to_path_buf(), source },
        })?;
    let meta = file.metadata().map_err(|source| Error::Read { path: path.to_path_buf(), source })?;
    if !meta.is_file() {
        return Err(Error::NotRegular { path: path.to_path_buf(), what: crate::file_kind(&meta) });
    }
    let mut text = Vec::new();
    file.take(MAX_LEN + 1).read_to_end(&mut text).map_err(|source| Error::Read { path: path.to_path_buf(), source })?;
    if text.len() as u64 > MAX_LEN {
        return Err(invalid("longer than a map"));
    }
    let text = std::str::from_utf8(&text).map_err(|_| invalid("not text"))?;
    let line = text.strip_suffix('\n').ok_or_else(|| invalid("cut short"))?;
    let map = parse(line, domain).map_err(invalid)?;
    plausible(&map).map_err(invalid)?;
    Ok(map)
}

fn parse(line: &str, domain: u64) -> Result<Map, &'static str> {
    let words: Vec<&str> = line.split(' ').collect();
    let [magic, version, dom, tsc0, ns0, mult] = words[..] else { return Err("not a map") };
    if magic != MAGIC || version.parse::<u32>() != Ok(VERSION) {
        return Err("not a map of this version");
    }
    if u64::from_str_radix(dom, 16).map_err(|_| "not a map")? != domain {
        return Err("the map of another host or boot");
    }
    let number = |w: &str| w.parse::<u64>().map_err(|_| "not a map");
    let map = Map { tsc0: number(tsc0)?, ns0: number(ns0)?, mult: number(mult)? };
    if map.mult == 0 {
        return Err("no frequency");
    }
    Ok(map)
}

fn render(map: &Map, domain: u64) -> String {
    format!("{MAGIC} {VERSION} {domain:016x} {} {} {}\n", map.tsc0, map.ns0, map.mult)
}

/// Whether `map` can be this host's: a TSC frequency of the last decades,
/// and the map's time now agreeing with CLOCK_MONOTONIC to 1 ms plus 100
/// ppm of the time since it was calibrated (a calibration is good to a few
/// ppm; a map of another clock is off by seconds).
fn plausible(map: &Map) -> Result<(), &'static str> {
    let hz = hz_of(map.mult);
    if !(100_000_000..100_000_000_000).contains(&hz) {
        return Err("an implausible TSC frequency");
    }
    let (tsc, mono) = super::tsc_pair();
    let delta = tsc.wrapping_sub(map.tsc0) as i64;
    let mapped = map.ns0 as i128 + ((i128::from(delta) * i128::from(map.mult)) >> 32);
    let age = mono.checked_sub(map.ns0).ok_or("calibrated in the future")?;
    let tolerance = TICKS_PER_SECOND / 1000 + age / 10_000;
    if mapped.abs_diff(i128::from(mono)) > u128::from(tolerance) {
        return Err("it disagrees with CLOCK_MONOTONIC");
    }
    Ok(())
}

static CONTENDER: AtomicU64 = AtomicU64::new(0);

/// Writes `map` to a temporary file of this process and links it to
/// `path` unless a map is there already; returns the map at `path`.
fn publish(dir: &Path, path: &Path, domain: u64, map: Map) -> Result<Map, Error> {
    let failed = |source| Error::Publish { dir: dir.to_path_buf(), source };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let (tmp, mut file) = temporary(dir, domain).map_err(failed)?;
    let written = file.write_all(render(&map, domain).as_bytes()).and_then(|()| file.flush());
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(failed(e));
    }
    let linked = link_no_replace(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        // The winner: its map is the host's.
        Ok(()) => Ok(map),
        // Another process won (or a link reported lost on a network file
        // system made it): its map is the host's.
        Err(e) => match read(path, domain) {
            Err(Error::Read { source, .. }) if source.kind() == ErrorKind::NotFound => Err(failed(e)),
            other => other,
        },
    }
}

/// A new file of this process (and thread) in `dir`, hidden from the
/// merge (it reads only `*.gtr`).
fn temporary(dir: &Path, domain: u64) -> std::io::Result<(PathBuf, File)> {
    loop {
        let n = CONTENDER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".timer-{domain:016x}.{}.{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            // Left by an earlier process of the same pid: take the next.
            Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Gives `from` the name `to` unless `to` exists (then an AlreadyExists
/// error): a hard link, or a rename that does not replace where the file
/// system has no hard links.
fn link_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS)) => {
            use std::os::unix::ffi::OsStrExt;
            let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes());
            let (Ok(from_c), Ok(to_c)) = (c(from), c(to)) else { return Err(e) };
            // SAFETY: two NUL-terminated paths; renameat2 only reads them.
            let rc = unsafe {
                libc::renameat2(libc::AT_FDCWD, from_c.as_ptr(), libc::AT_FDCWD, to_c.as_ptr(), libc::RENAME_NOREPLACE)
            };
            if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn calibrated() -> Map {
        super::super::calibrate(Duration::from_millis(1))
    }

    fn usable() -> bool {
        super::super::tsc_for_tests()
    }

    const DOMAIN: u64 = 0x0123_4567_89ab_cdef;

    #[test]
    fn map_file_names() {
        assert_eq!(file_name(DOMAIN), "timer-0123456789abcdef.tsc");
        assert!(is_map_file(&file_name(DOMAIN)));
        assert!(!is_map_file("timer-0123.tsc"));
        assert!(!is_map_file("host.1.mpi.gtr"));
        assert!(!is_map_file(".timer-0123456789abcdef.1.0.tmp"));
    }

    #[test]
    fn the_first_publishes_and_the_next_reads_it() {
        if !usable() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let first = load_or_publish(&raw, DOMAIN, calibrated).unwrap();
        let second = load_or_publish(&raw, DOMAIN, || panic!("a second calibration")).unwrap();
        assert_eq!(first, second);
        // One file, no temporary left.
        let names: Vec<_> =
            std::fs::read_dir(&raw).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, [file_name(DOMAIN)]);
        // Another domain (another host) has a map of its own.
        let other = load_or_publish(&raw, DOMAIN + 1, calibrated).unwrap();
        assert_ne!(other, first);
    }

    #[test]
    fn threads_racing_all_get_the_winners_map() {
        if !usable() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let n = 16;
        let barrier = std::sync::Barrier::new(n);
        let maps: Vec<Map> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    s.spawn(|| {
                        // Each calibrates its own (different) map; they
                        // all publish at once.
                        let mine = calibrated();
                        barrier.wait();
                        load_or_publish(&raw, DOMAIN, || mine).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(maps.iter().all(|m| *m == maps[0]), "{maps:?}");
        assert_eq!(read(&raw.join(file_name(DOMAIN)), DOMAIN).unwrap(), maps[0]);
        assert_eq!(std::fs::read_dir(&raw).unwrap().count(), 1, "temporaries left");
    }

    /// The child of [`processes_racing_all_get_the_winners_map`]: publishes
    /// in the directory it is given and prints the map it got.
    #[test]
    fn racing_child() {
        let Some(dir) = std::env::var_os("_GPUTRACE_TEST_RACE_DIR") else { return };
        let mine = calibrated();
        // Start together: wait for the time the parent set.
        let start: u64 = std::env::var("_GPUTRACE_TEST_RACE_AT").unwrap().parse().unwrap();
        while monotonic() < start {
            std::hint::spin_loop();
        }
        let map = load_or_publish(Path::new(&dir), DOMAIN, || mine).unwrap();
        // On a line of its own (libtest's "test ... " precedes it).
        println!("\nmap {}", render(&map, DOMAIN).trim());
    }

    #[test]
    fn processes_racing_all_get_the_winners_map() {
        if !usable() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let at = monotonic() + 300_000_000;
        let children: Vec<_> = (0..8)
            .map(|_| {
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "host_map::tests::racing_child", "--nocapture", "--test-threads=1"])
                    .env("_GPUTRACE_TEST_RACE_DIR", &raw)
                    .env("_GPUTRACE_TEST_RACE_AT", at.to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let maps: Vec<String> = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().unwrap();
                assert!(out.status.success());
                let text = String::from_utf8(out.stdout).unwrap();
                text.lines().find_map(|l| l.strip_prefix("map ")).expect("the child printed its map").to_string()
            })
            .collect();
        assert_eq!(maps.len(), 8);
        assert!(maps.iter().all(|m| *m == maps[0]), "{maps:?}");
        let file = std::fs::read_to_string(raw.join(file_name(DOMAIN))).unwrap();
        assert_eq!(file.trim(), maps[0]);
        assert_eq!(std::fs::read_dir(&raw).unwrap().count(), 1, "temporaries left");
    }

    /// What `load_or_publish` says of a map file made by `make`; nothing
    /// is calibrated.
    fn refused(make: impl FnOnce(&Path)) -> Error {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(DOMAIN));
        make(&path);
        load_or_publish(dir.path(), DOMAIN, || panic!("calibrated over a map file")).unwrap_err()
    }

    #[test]
    fn bad_map_files_are_refused_without_hanging() {
        let invalid = |e: Error, why: &str| match e {
            Error::Invalid { why: w, .. } => assert!(w.contains(why), "{w}"),
            e => panic!("{e}"),
        };
        invalid(refused(|p| std::fs::write(p, "").unwrap()), "cut short");
        invalid(refused(|p| std::fs::write(p, format!("{MAGIC} 1 {DOMAIN:016x} 12 34")).unwrap()), "cut short");
        invalid(refused(|p| std::fs::write(p, format!("{MAGIC} 1 {DOMAIN:016x} 12 34\n")).unwrap()), "not a map");
        invalid(refused(|p| std::fs::write(p, "garbage\n").unwrap()), "not a map");
        invalid(refused(|p| std::fs::write(p, vec![b'7'; 4096]).unwrap()), "longer");
        invalid(refused(|p| std::fs::write(p, b"\xff\xfe\n").unwrap()), "not text");
        invalid(refused(|p| std::fs::write(p, format!("{MAGIC} 9 {DOMAIN:016x} 1 2 3\n")).unwrap()), "version");
        invalid(
            refused(|p| std::fs::write(p, format!("{MAGIC} 1 {:016x} 1 2 3\n", DOMAIN + 1)).unwrap()),
            "another host",
        );
        invalid(refused(|p| std::fs::write(p, format!("{MAGIC} 1 {DOMAIN:016x} 1 2 0\n")).unwrap()), "frequency");
        // 1 tick = 2³² ns: 0.23 Hz.
        invalid(
            refused(|p| std::fs::write(p, format!("{MAGIC} 1 {DOMAIN:016x} 1 2 {}\n", 1u64 << 63)).unwrap()),
            "frequency",
        );
        if usable() {
            // A real calibration, moved 10 s: another clock.
            let mut m = calibrated();
            m.ns0 -= 10 * TICKS_PER_SECOND;
            invalid(refused(|p| std::fs::write(p, render(&m, DOMAIN)).unwrap()), "disagrees");
            let mut m = calibrated();
            m.ns0 += 10 * TICKS_PER_SECOND;
            invalid(refused(|p| std::fs::write(p, render(&m, DOMAIN)).unwrap()), "future");
        }
        let not_regular = |e: Error, what: &str| match e {
            Error::NotRegular { what: w, .. } => assert_eq!(w, what),
            e => panic!("{e}"),
        };
        not_regular(refused(|p| std::fs::create_dir(p).unwrap()), "a directory");
        // A FIFO with no writer: opening it must not wait for one.
        not_regular(
            refused(|p| {
                let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }),
            "a FIFO",
        );
        // A link, even to a good map, is not followed.
        if usable() {
            not_regular(
                refused(|p| {
                    let target = p.with_extension("target");
                    std::fs::write(&target, render(&calibrated(), DOMAIN)).unwrap();
                    std::os::unix::fs::symlink(&target, p).unwrap();
                }),
                "a symbolic link",
            );
        }
        not_regular(refused(|p| std::os::unix::fs::symlink("/nonexistent", p).unwrap()), "a symbolic link");
    }

    #[test]
    fn a_directory_that_cannot_be_written_is_an_error() {
        if !usable() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // A file where the directory should be: nothing can be made there.
        let blocked = dir.path().join("exp");
        std::fs::write(&blocked, "").unwrap();
        let e = load_or_publish(&blocked.join("raw"), DOMAIN, calibrated).unwrap_err();
        assert!(matches!(&e, Error::Read { source, .. } if source.raw_os_error() == Some(libc::ENOTDIR)), "{e}");
    }

    /// A tmpfs of `kib` KiB mounted (read-only with `ro`) under a fresh
    /// directory: `None` where this process cannot mount (not root), which
    /// fails under CI=true.
    struct Tmpfs(tempfile::TempDir);

    impl Tmpfs {
        fn mount(options: &str) -> Option<Tmpfs> {
            let dir = tempfile::tempdir().unwrap();
            let ok = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", options, "tmpfs"])
                .arg(dir.path())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: cannot mount a tmpfs");
                eprintln!("note: cannot mount a tmpfs here; test skipped");
                return None;
            }
            Some(Tmpfs(dir))
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0.path()).status();
        }
    }

    #[test]
    fn a_full_or_read_only_file_system_is_an_error() {
        if !usable() {
            return;
        }
        let Some(read_only) = Tmpfs::mount("size=64k,ro") else { return };
        let e = load_or_publish(read_only.0.path(), DOMAIN, calibrated).unwrap_err();
        assert!(matches!(&e, Error::Publish { source, .. } if source.raw_os_error() == Some(libc::EROFS)), "{e}");
        let Some(full) = Tmpfs::mount("size=4k") else { return };
        // Fill it: the temporary file's one line finds no room.
        let mut filler = File::create(full.0.path().join("filler")).unwrap();
        while filler.write_all(&[0u8; 512]).and_then(|()| filler.flush()).is_ok() {}
        let _ = filler.sync_all();
        let e = load_or_publish(full.0.path(), DOMAIN, calibrated).unwrap_err();
        assert!(matches!(&e, Error::Publish { source, .. } if source.raw_os_error() == Some(libc::ENOSPC)), "{e}");
        let names: Vec<_> =
            std::fs::read_dir(full.0.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, ["filler"], "no temporary left on a full disk");
    }
}
