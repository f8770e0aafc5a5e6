//! Test support shared by the flavour crates' integration tests: building
//! the test programs with an MPI's compiler wrappers, running them under
//! its launcher with the preload library, and reading the raw streams
//! back into a [`Trace`] that the checks walk.

#![allow(dead_code)]

pub mod checks;
mod required;
pub mod scenarios;

pub use required::required;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use raw::defs::expand_runs;
use raw::{CommDef, Definition, Event, RawFile};

/// An installed MPI and the library built for it.
#[derive(Debug)]
pub struct Flavour {
    pub name: &'static str,
    pub mpicc: &'static str,
    pub mpif90: &'static str,
    pub package: &'static str,
    pub library: &'static str,
    pub openmpi_launcher: bool,
}

pub const OPENMPI: Flavour = Flavour {
    name: "Open MPI",
    mpicc: "mpicc",
    mpif90: "mpif90",
    package: "gputrace-mpi",
    library: "libgputrace_mpi.so",
    openmpi_launcher: true,
};

pub const MPICH: Flavour = Flavour {
    name: "MPICH",
    mpicc: "mpicc.mpich",
    mpif90: "mpif90.mpich",
    package: "gputrace-mpi-mpich",
    library: "libgputrace_mpi_mpich.so",
    openmpi_launcher: false,
};

/// `tests/programs/mpi` of the workspace.
pub fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../../tests/programs/mpi")
}

/// The target directory the test binary runs from (`target/<profile>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test>-<hash>
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
static SCRATCH: OnceLock<tempfile::TempDir> = OnceLock::new();

fn scratch() -> &'static Path {
    SCRATCH.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

impl Flavour {
    /// Whether this MPI is installed; prints a note when it is not, and
    /// fails under `CI=true` ([`required`]).
    pub fn available(&self) -> bool {
        let ok = Command::new(self.mpicc).arg("-show").output().is_ok_and(|o| o.status.success());
        required(&format!("{} ({})", self.name, self.mpicc), ok)
    }

    /// The preload library, built (or brought up to date) once per test
    /// process: `cargo test` does not rebuild a cdylib for the package's
    /// integration tests, which cannot link to it.
    pub fn library(&self) -> PathBuf {
        static DONE: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let path = target_dir().join(self.library);
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        if !done.contains(&self.package) {
            let release = target_dir().ends_with("release");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "--quiet", "-p", self.package]);
            if release {
                cmd.arg("--release");
            }
            let built = cmd.status().is_ok_and(|s| s.success());
            assert!(built || path.exists(), "cannot build {}", self.package);
            if !built {
                eprintln!("note: cannot rebuild {}; testing the existing library", self.package);
            }
            done.push(self.package);
        }
        path
    }

    /// Compiles `tests/programs/mpi/<name>` (C or Fortran), once per test
    /// process.
    pub fn compile(&self, name: &str) -> PathBuf {
        let key = format!("{}:{name}", self.mpicc);
        let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = built.iter().find(|(k, _)| *k == key) {
            return p.clone();
        }
        let src = programs_dir().join(name);
        let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
        let exe = scratch().join(format!("{stem}.{}", self.mpicc));
        let fortran = name.ends_with(".f90");
        let compiler = if fortran { self.mpif90 } else { self.mpicc };
        let mut cmd = Command::new(compiler);
        cmd.arg("-O1").arg("-o").arg(&exe).arg(&src);
        if fortran {
            cmd.arg("-I").arg(programs_dir());
        } else {
            cmd.arg("-lpthread");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{compiler} {name} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        built.push((key, exe.clone()));
        exe
    }

    /// Runs `exe` on `np` ranks, traced into `dir` when given.
    pub fn run(&self, exe: &Path, np: usize, args: &[&str], dir: Option<&Path>, env: &[(&str, &str)]) -> Output {
        let mut vars: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if let Some(dir) = dir {
            vars.push(("LD_PRELOAD".into(), self.library().display().to_string()));
            vars.push(("GPUTRACE_EXPERIMENT_DIRECTORY".into(), dir.display().to_string()));
        }
        let mut cmd = if self.openmpi_launcher {
            let mut c = Command::new("mpirun");
            c.args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()]);
            for (k, v) in &vars {
                c.arg("-x").arg(format!("{k}={v}"));
            }
            c
        } else {
            let mut c = Command::new("mpiexec.mpich");
            c.args(["-n", &np.to_string()]);
            for (k, v) in &vars {
                c.args(["-genv", k, v]);
            }
            c
        };
        cmd.arg(exe).args(args);
        cmd.env_remove("LD_PRELOAD");
        cmd.output().unwrap()
    }

    /// Runs traced and untraced; asserts both succeed with the same
    /// stdout, and returns the trace and the stdout.
    pub fn traced(&self, program: &str, np: usize, args: &[&str], env: &[(&str, &str)]) -> (Trace, String) {
        let exe = self.compile(program);
        let plain = self.run(&exe, np, args, None, env);
        assert_success(&plain, program);
        let dir = tempfile::tempdir().unwrap();
        let traced = self.run(&exe, np, args, Some(dir.path()), env);
        assert_success(&traced, program);
        let (a, b) = (stdout(&plain), stdout(&traced));
        assert_eq!(a, b, "{program}: stdout differs with the preload");
        let trace = Trace::load(dir.path());
        assert_eq!(trace.streams.len(), np, "{program}: one MPI stream per rank");
        (trace, b)
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn assert_success(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One process's MPI stream, decoded.
#[derive(Debug)]
pub struct Stream {
    pub path: PathBuf,
    pub rank: u32,
    pub size: u32,
    pub comms: HashMap<u32, CommDef>,
    pub regions: HashMap<u32, (String, String)>,
    pub clock_syncs: Vec<(u64, i64, u64)>,
    pub ended: bool,
    /// (location, time, event), in file order per location.
    pub events: Vec<(u32, u64, Event)>,
    pub problems: usize,
}

impl Stream {
    pub fn open(path: &Path) -> Stream {
        let raw = RawFile::open(path).unwrap();
        let mut strings = HashMap::new();
        let mut s = Stream {
            path: path.to_path_buf(),
            rank: u32::MAX,
            size: 0,
            comms: HashMap::new(),
            regions: HashMap::new(),
            clock_syncs: Vec::new(),
            ended: false,
            events: Vec::new(),
            problems: raw.problems.len(),
        };
        for d in &raw.definitions {
            match d {
                Definition::String { id, value } => {
                    strings.insert(*id, value.clone());
                }
                Definition::Region { id, name, group, .. } => {
                    let name = strings.get(name).cloned().unwrap_or_default();
                    let group = strings.get(group).cloned().unwrap_or_default();
                    s.regions.insert(*id, (name, group));
                }
                Definition::MpiRank { rank, size } => (s.rank, s.size) = (*rank, *size),
                Definition::Comm(c) => {
                    s.comms.insert(c.id, c.clone());
                }
                Definition::ClockSync { local, offset, error } => s.clock_syncs.push((*local, *offset, *error)),
                Definition::StreamEnd { .. } => s.ended = true,
                Definition::CommName { id, name } => {
                    if let Some(c) = s.comms.get_mut(id) {
                        c.name = name.clone();
                    }
                }
                _ => {}
            }
        }
        let mut buf = Vec::new();
        for c in &raw.chunks {
            raw.read_payload(c, &mut buf).unwrap();
            s.events.extend(RawFile::events(c, &buf).map(|(t, e)| (c.header.location, t, e)));
        }
        s
    }

    /// The world rank of `peer` in communicator `comm`.
    pub fn world(&self, comm: u32, peer: u32) -> u32 {
        let c = &self.comms[&comm];
        expand_runs(&c.members)
            .nth(peer as usize)
            .unwrap_or_else(|| panic!("peer {peer} is outside communicator {c:?}"))
    }

    pub fn comm_key(&self, comm: u32) -> (u32, u64) {
        self.comms[&comm].key
    }

    /// The name of region `id`.
    pub fn region(&self, id: u32) -> &str {
        &self.regions[&id].0
    }

    /// How many events `f` accepts.
    pub fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|(_, _, e)| f(e)).count()
    }

    /// How many times the region named `name` was entered.
    pub fn entered(&self, name: &str) -> usize {
        self.count(|e| matches!(e, Event::Enter { region } if self.region(*region) == name))
    }
}

/// Every MPI stream of one run.
#[derive(Debug)]
pub struct Trace {
    pub streams: Vec<Stream>,
}

impl Trace {
    pub fn load(dir: &Path) -> Trace {
        let mut streams: Vec<Stream> = std::fs::read_dir(dir.join("raw"))
            .map(|rd| {
                rd.map(|e| e.unwrap().path())
                    .filter(|p| p.to_string_lossy().ends_with(".mpi.gtr"))
                    .map(|p| Stream::open(&p))
                    .collect()
            })
            .unwrap_or_default();
        streams.sort_by_key(|s| s.rank);
        Trace { streams }
    }

    pub fn rank(&self, r: u32) -> &Stream {
        self.streams.iter().find(|s| s.rank == r).unwrap()
    }
}

/// Parses the lines "<program> rank R: k=v k=v ..." into per-rank maps.
pub fn summary(stdout: &str) -> HashMap<u32, HashMap<String, i64>> {
    let mut out = HashMap::new();
    for line in stdout.lines() {
        let Some((head, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(rank) = head.split_whitespace().nth(2).and_then(|r| r.parse().ok()) else {
            continue;
        };
        let kv = rest
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
            .collect();
        out.insert(rank, kv);
    }
    out
}
