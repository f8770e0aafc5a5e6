//! Helpers of the end-to-end tests: the built `gputrace` and its
//! libraries, test programs compiled with the real MPI compilers, runs
//! under `gputrace`, and the two independent readers of the archive
//! (`otf2-print` and the Python `otf2` module).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, Once, OnceLock};

use serde_json::Value;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The `gputrace` binary, with the MPI hooks, the CUDA agent and the NVTX
/// injection library built next to it (`cargo test` builds the binary but
/// not other packages' cdylibs).
pub fn gputrace() -> PathBuf {
    static BUILD: Once = Once::new();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_gputrace"));
    BUILD.call_once(|| {
        let release = bin.parent().unwrap().ends_with("release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace()).args([
            "build",
            "-q",
            "-p",
            "gputrace-mpi",
            "-p",
            "gputrace-mpi-mpich",
            "-p",
            "gputrace-cuda",
            "-p",
            "gputrace-nvtx",
        ]);
        if release {
            cmd.arg("--release");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "building the libraries failed: {}", String::from_utf8_lossy(&out.stderr));
    });
    bin
}

static SCRATCH: OnceLock<tempfile::TempDir> = OnceLock::new();
static COMPILED: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

pub fn scratch() -> &'static Path {
    SCRATCH.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// A fresh, not yet existing directory for an experiment.
pub fn fresh_dir(name: &str) -> PathBuf {
    let d = tempfile::Builder::new().prefix(name).tempdir_in(scratch()).unwrap().keep();
    std::fs::remove_dir(&d).unwrap();
    d
}

/// An experiment directory holding the raw streams of a synthetic job
/// (`raw::synthetic::write_job`) of `ranks` ranks, 8 to a simulated node,
/// each with an MPI and a CUDA stream, `steps` steps, its measured clock
/// offsets wrong by `offset_error`; and what the job holds.
pub fn synthetic_job(
    name: &str,
    ranks: u32,
    steps: u64,
    offset_error: (i64, i64),
) -> (PathBuf, raw::synthetic::JobCounts) {
    let dir = fresh_dir(name);
    let raw_dir = dir.join("raw");
    std::fs::create_dir_all(&raw_dir).unwrap();
    let job = raw::synthetic::Job { ranks, ranks_per_node: 8, iterations: steps, gpu: true, offset_error };
    let counts = raw::synthetic::write_job(&raw_dir, &job).unwrap();
    (dir, counts)
}

/// Whether a command exists (the MPI of a test may not be installed).
pub fn have(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {cmd}")).output().is_ok_and(|o| o.status.success())
}

/// Compiles `tests/programs/mpi/<source>` with `compiler`, once.
pub fn compile(compiler: &str, source: &str) -> PathBuf {
    compile_file(compiler, &workspace().join("tests/programs/mpi").join(source))
}

/// Compiles the C file `src` with `compiler`, once.
pub fn compile_file(compiler: &str, src: &Path) -> PathBuf {
    let source = src.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let key = format!("{compiler}:{}", src.display());
    let mut done = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = done.iter().find(|(k, _)| *k == key) {
        return p.clone();
    }
    let exe = scratch().join(format!("{}-{}", compiler.replace('.', "_"), source.replace('.', "_")));
    let out = Command::new(compiler).arg("-O1").arg("-o").arg(&exe).arg(src).output().unwrap();
    assert!(out.status.success(), "{compiler} {source}: {}", String::from_utf8_lossy(&out.stderr));
    done.push((key, exe.clone()));
    exe
}

/// The Open MPI tools: explicit names where Debian provides them, so that
/// a machine with MPICH as the default still runs Open MPI here.
pub fn openmpi() -> (&'static str, &'static str, &'static str) {
    if have("mpicc.openmpi") {
        ("mpicc.openmpi", "mpirun.openmpi", "mpif90.openmpi")
    } else {
        ("mpicc", "mpirun", "mpif90")
    }
}

/// Runs a command with the environment Open MPI needs as root.
pub fn run(cmd: &mut Command) -> Output {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUTRACE_") {
            cmd.env_remove(k);
        }
    }
    cmd.output().unwrap()
}

/// `gputrace ARGS` (analysis commands need no launcher environment).
pub fn gt(args: &[&str]) -> Output {
    run(Command::new(gputrace()).args(args))
}

/// `out`, which must have succeeded.
pub fn ok(out: Output) -> Output {
    assert!(out.status.success(), "exit {:?}: {}{}", out.status, text(&out.stdout), text(&out.stderr));
    out
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// For runs whose raw streams a test reads or merges again (gputrace
/// removes them after a verified merge).
pub const KEEP_RAW: (&str, &str) = ("GPUTRACE_KEEP_RAW", "true");

/// `gputrace -o dir <args>`.
pub fn trace(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(gputrace());
    cmd.arg("-o").arg(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Facts about an archive from the Python reader (tests/scripts/otf2_facts.py).
pub fn facts(anchor: &Path) -> Value {
    let out = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/scripts/otf2_facts.py"))
        .arg(anchor)
        .output()
        .unwrap();
    assert!(out.status.success(), "Python reader failed on {}: {}", anchor.display(), text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Event counts per type from `otf2-print`, the OTF2 library's own tool:
/// one event a line, its type in the first column (the lines under an
/// event, `ADDITIONAL ATTRIBUTES: ...`, are indented).
pub fn otf2_print_counts(anchor: &Path) -> HashMap<String, usize> {
    let out = Command::new("otf2-print").arg(anchor).output().unwrap();
    assert!(out.status.success(), "otf2-print failed: {}", text(&out.stderr));
    let mut counts = HashMap::new();
    for line in text(&out.stdout).lines() {
        if line.starts_with(' ') {
            continue;
        }
        let Some(word) = line.split_whitespace().next() else { continue };
        if word.chars().all(|c| c.is_ascii_uppercase() || c == '_') && line.len() > 40 {
            *counts.entry(word.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// "prog rank R: a=1 b=2" lines of a test program → per rank, per name.
pub fn program_counters(stdout: &str) -> HashMap<u32, HashMap<String, i64>> {
    let mut out = HashMap::new();
    for line in stdout.lines() {
        let Some((head, rest)) = line.split_once(':') else { continue };
        let Some(rank) = head.split_whitespace().last().and_then(|r| r.parse().ok()) else { continue };
        if !head.contains(" rank ") {
            continue;
        }
        let m: HashMap<String, i64> = rest
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
            .collect();
        out.insert(rank, m);
    }
    out
}

/// Number of events of type `ty` on rank `rank`, from the facts.
pub fn count(facts: &Value, rank: u32, ty: &str) -> i64 {
    facts["counts"][rank.to_string()][ty].as_i64().unwrap_or(0)
}

/// The messages of the facts as sorted (sender, receiver, comm, tag, bytes).
pub fn messages(facts: &Value, key: &str) -> Vec<(i64, i64, String, i64, i64)> {
    let mut v: Vec<_> = facts[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let a = m.as_array().unwrap();
            let (me, peer) = (a[0].as_i64().unwrap(), a[1].as_i64().unwrap_or(-1));
            // Sends are (sender, receiver); receives are (receiver, sender).
            let (s, r) = if key == "sends" { (me, peer) } else { (peer, me) };
            (s, r, a[2].as_str().unwrap().to_string(), a[3].as_i64().unwrap(), a[4].as_i64().unwrap())
        })
        .collect();
    v.sort();
    v
}

/// Every location's timestamps never decrease, and every Enter has its Leave.
pub fn assert_well_formed(facts: &Value) {
    for (loc, info) in facts["locations"].as_object().unwrap() {
        assert_eq!(info["monotonic"], true, "timestamps go back on location {loc}");
    }
    assert!(facts["unbalanced"].as_array().unwrap().is_empty(), "unbalanced regions: {}", facts["unbalanced"]);
}

/// Whether a tool a test needs is there. When it is not, the test is
/// skipped with a note, except under `CI=true`, where it fails: CI must
/// run every test.
pub fn required(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what} is missing (scripts/setup.sh installs it); under CI=true that fails the test"
    );
    eprintln!("note: {what} is missing (scripts/setup.sh installs it); test skipped");
    false
}

/// Where scripts/setup.sh keeps what it downloads and builds for the tests.
pub fn test_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
    base.join("gputrace-tests")
}

/// A tmpfs of `kib` KiB mounted on a fresh directory, unmounted on drop.
/// Mounting needs root: where it fails the test says so and is skipped,
/// except under `CI=true`, where it fails.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    pub fn mount(kib: u64) -> Option<Tmpfs> {
        Self::mount_with(&format!("size={kib}k"))
    }

    /// A tmpfs of `kib` KiB that holds at most `inodes` files and folders,
    /// its root included.
    pub fn mount_inodes(kib: u64, inodes: u64) -> Option<Tmpfs> {
        Self::mount_with(&format!("size={kib}k,nr_inodes={inodes}"))
    }

    fn mount_with(options: &str) -> Option<Tmpfs> {
        let dir = fresh_dir("tmpfs");
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]).arg(&dir).output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(dir)),
            other => {
                let why = match other {
                    Ok(o) => text(&o.stderr),
                    Err(e) => e.to_string(),
                };
                assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: cannot mount a tmpfs: {why}");
                eprintln!("note: cannot mount a tmpfs here ({}); test skipped", why.trim());
                None
            }
        }
    }

    /// Bytes still free.
    pub fn avail(&self) -> u64 {
        let c = std::ffi::CString::new(self.0.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a zeroed struct statvfs fills.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(c.as_ptr(), &mut st), 0);
            st.f_bavail as u64 * st.f_frsize as u64
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// Bytes of the files under `path`.
pub fn tree_size(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path).unwrap().map(|e| tree_size(&e.unwrap().path())).sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Copies the files of `from` (one level) into `to`, which is created.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Runs `cmd` like [`run`], failing the test (and killing it) if it takes
/// longer than `limit`: for what must never block.
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUTRACE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", text(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// What [`run_measured`] saw of a command: its output, wall time and
/// peak resident memory.
pub struct Measured {
    pub out: Output,
    pub wall: std::time::Duration,
    pub peak_kib: u64,
}

/// Runs `cmd` like [`run_within`], and measures its wall time and peak
/// RSS; past `limit` it is killed and the test fails, saying how far its
/// memory had grown.
///
/// The peak is the kernel's `ru_maxrss` of the command as a small process
/// forked it (tests/scripts/peak_rss.py, which reports it in a file): a
/// command forked by this test process itself would report *this*
/// process's resident size at the fork when larger (Linux keeps the old
/// image's high-water mark across exec), and the test process runs many
/// tests at once.
pub fn run_measured(cmd: &mut Command, limit: std::time::Duration) -> Measured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut wrapped = Command::new("/usr/bin/python3");
    wrapped.arg(workspace().join("tests/scripts/peak_rss.py")).arg(report.path()).arg(cmd.get_program());
    wrapped.args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    wrapped.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUTRACE_") && !cmd.get_envs().any(|(n, _)| n == k.as_str()) {
            wrapped.env_remove(k);
        }
    }
    // Its own process group: a command past the limit is killed with
    // whatever it started.
    wrapped.process_group(0);
    let start = std::time::Instant::now();
    let mut child = wrapped.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            // SAFETY: kill has no memory-safety preconditions; the group
            // is the wrapper's own.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!("still running after {limit:?}: {}", text(&stderr.join().unwrap()));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let wall = start.elapsed();
    let out = Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    let peak_kib = std::fs::read_to_string(report.path())
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("tests/scripts/peak_rss.py reported no peak: {}", text(&out.stderr)));
    Measured { out, wall, peak_kib }
}

/// `gputrace merge [--force] dir`.
pub fn merge(dir: &Path, force: bool) -> Output {
    let mut cmd = Command::new(gputrace());
    cmd.arg("merge");
    if force {
        cmd.arg("--force");
    }
    run(cmd.arg(dir))
}

/// The archive's files are gone (none half-written left behind).
pub fn assert_no_archive(dir: &Path) {
    for name in ["traces.otf2", "traces.def", "traces"] {
        assert!(dir.join(name).symlink_metadata().is_err(), "{} left behind", dir.join(name).display());
    }
}

/// A message as [`messages`] gives it: (sender, receiver, comm, tag, bytes).
pub type Message = (i64, i64, String, i64, i64);

/// What the two readers see in an archive: its messages and the event
/// counts `otf2-print` finds; the archive must be well formed.
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    pub sends: Vec<Message>,
    pub recvs: Vec<Message>,
    pub counts: Vec<(String, usize)>,
}

pub fn seen(anchor: &Path) -> Seen {
    let f = facts(anchor);
    assert_well_formed(&f);
    let mut counts: Vec<_> = otf2_print_counts(anchor).into_iter().collect();
    counts.sort();
    Seen { sends: messages(&f, "sends"), recvs: messages(&f, "recvs"), counts }
}

/// tests/gpu/check_archives.py (the GPU tests' checker) on `results`: every
/// check must pass; returns its report.
pub fn check_archives(results: &Path) -> String {
    let out = Command::new("/usr/bin/python3")
        .arg(workspace().join("tests/gpu/check_archives.py"))
        .arg(results)
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert!(out.status.success() && !report.contains("FAIL"), "{report}{}", text(&out.stderr));
    report
}

/// Each of `lines` is in the checker's `report` (check_archives already
/// failed on any FAIL line).
pub fn assert_reported(report: &str, lines: &[&str]) {
    for line in lines {
        assert!(report.contains(line), "{line}\n{report}");
    }
}

/// The header of a CUDA stream replayed from a capture, as the agent on
/// the GPU machine would have written it.
pub fn gpu_node_header(pid: u32, command: &str) -> raw::StreamHeader {
    raw::StreamHeader {
        producer: raw::Producer::Cuda,
        host: "gpu-node".into(),
        pid,
        process_start: 1,
        clock_domain: 7,
        monotonic_ns: 1,
        realtime_ns: 1_700_000_000_000_000_000,
        rank_hint: None,
        command: vec![command.into()],
    }
}

/// `source` (in tests/programs/mpi) built with `compiler` as the sampling
/// and unwinding tests need it: `-O2 -fomit-frame-pointer -g`, so that
/// the unwinder works from the binaries' CFI alone; built once.
pub fn compile_without_frame_pointers(compiler: &str, source: &str) -> PathBuf {
    let exe = scratch().join(format!("nofp-{}-{}", compiler.replace('.', "_"), source.replace('.', "_")));
    if !exe.exists() {
        let src = workspace().join("tests/programs/mpi").join(source);
        let out = Command::new(compiler)
            .args(["-O2", "-fomit-frame-pointer", "-g", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{compiler}: {}", String::from_utf8_lossy(&out.stderr));
    }
    exe
}
