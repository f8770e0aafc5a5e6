//! Where to look for libcupti. [`candidates`] turns a [`SearchEnv`] (the
//! environment variables that matter, a file-system root, the driver's CUDA
//! major) into the ordered list of libraries to try, without loading any;
//! [`Cupti::find_and_load`] tries them in turn.
//!
//! The order: the library the caller names (gputrace's
//! `GPUTRACE_CUPTI_LIB`, parsed by its configuration, not here), alone
//! when given; the toolkit in use
//! (`$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`, then `/usr/local/cuda-*`
//! newest first), in each `extras/CUPTI/lib64/libcupti.so*` (CUDA 12) and
//! `targets/*/lib/libcupti.so*` (CUDA 13); the dynamic loader's search path
//! (`libcupti.so`, `.13`, `.12`); conda's `$CONDA_PREFIX/lib`; then the
//! copies pip installs, `nvidia/cu13/lib/libcupti.so.13` and
//! `nvidia/cuda_cupti/lib/libcupti.so.12`, in each Python package directory
//! (`$VIRTUAL_ENV`, `$CONDA_PREFIX`, `$PYTHONPATH`, `~/.local`,
//! `/usr/local/lib/python3*`, `/usr/lib/python3*`).
//!
//! When the driver's CUDA major is known, candidates of that major move to
//! the front and candidates newer than the driver (which would fail to
//! initialize) to the back; the rest keep their order. A candidate's major
//! comes from its ELF SONAME, else from its name or its directory
//! (`cuda-12.9`, `cu13`).

use std::cmp::Reverse;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{Cupti, LoadError, elf};

/// The environment [`candidates`] searches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// A library to use instead of searching (gputrace passes its
    /// `GPUTRACE_CUPTI_LIB`).
    pub cupti_lib: Option<PathBuf>,
    /// `CUDA_HOME`.
    pub cuda_home: Option<PathBuf>,
    /// `CUDA_PATH`.
    pub cuda_path: Option<PathBuf>,
    /// `VIRTUAL_ENV`.
    pub virtual_env: Option<PathBuf>,
    /// `CONDA_PREFIX`.
    pub conda_prefix: Option<PathBuf>,
    /// `PYTHONPATH`, split.
    pub python_path: Vec<PathBuf>,
    /// `HOME`, for `~/.local/lib/python3*/site-packages`.
    pub home: Option<PathBuf>,
    /// Prefix of the fixed locations (`/usr/local/cuda`, `/usr/lib/python3*`):
    /// `/`, or a fake tree in tests.
    pub root: PathBuf,
    /// The CUDA major the driver supports (`cuDriverGetVersion` / 1000).
    pub driver_major: Option<u32>,
}

impl SearchEnv {
    /// `cupti_lib` (the caller's override, `None` to search), the
    /// process's environment variables (the toolkit's and Python's, listed
    /// above; no variable of gputrace's own), `/` as the root, and the
    /// driver's CUDA major from [`driver_cuda_version`].
    pub fn from_process(cupti_lib: Option<&Path>) -> SearchEnv {
        let var = |name| std::env::var_os(name).filter(|value| !value.is_empty());
        let path = |name| var(name).map(PathBuf::from);
        SearchEnv {
            cupti_lib: cupti_lib.filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf),
            cuda_home: path("CUDA_HOME"),
            cuda_path: path("CUDA_PATH"),
            virtual_env: path("VIRTUAL_ENV"),
            conda_prefix: path("CONDA_PREFIX"),
            python_path: var("PYTHONPATH")
                .map(|paths| std::env::split_paths(&paths).filter(|p| !p.as_os_str().is_empty()).collect())
                .unwrap_or_default(),
            home: path("HOME"),
            root: PathBuf::from("/"),
            driver_major: driver_cuda_version().map(|version| version / 1000),
        }
    }
}

/// Where a candidate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The caller's override (`GPUTRACE_CUPTI_LIB`).
    Override,
    /// Under `$CUDA_HOME`.
    CudaHome,
    /// Under `$CUDA_PATH`.
    CudaPath,
    /// Under `/usr/local/cuda` or `/usr/local/cuda-*`.
    Toolkit,
    /// A bare name for the dynamic loader to search.
    Loader,
    /// `$CONDA_PREFIX/lib`.
    Conda,
    /// A pip-installed `nvidia-cuda-cupti` wheel.
    Python,
}

/// A library to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// A path, or for [`Origin::Loader`] a bare name.
    pub library: PathBuf,
    /// Where it was found.
    pub origin: Origin,
    /// Its CUDA major, when the SONAME, name or directory tells.
    pub major: Option<u32>,
}

const LOADER_NAMES: [&str; 3] = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"];
const PIP_LIBS: [&str; 2] = ["nvidia/cu13/lib/libcupti.so.13", "nvidia/cuda_cupti/lib/libcupti.so.12"];

/// The libraries to try, in order (see the module docs). Only existing
/// files are listed, each once, except the override and the loader names,
/// which are listed as given.
pub fn candidates(env: &SearchEnv) -> Vec<Candidate> {
    if let Some(path) = &env.cupti_lib {
        return vec![Candidate { library: path.clone(), origin: Origin::Override, major: file_major(path) }];
    }

    let mut found = Vec::new();
    let mut toolkits: Vec<(PathBuf, Origin)> = Vec::new();
    toolkits.extend(env.cuda_home.iter().map(|p| (p.clone(), Origin::CudaHome)));
    toolkits.extend(env.cuda_path.iter().map(|p| (p.clone(), Origin::CudaPath)));
    let usr_local = env.root.join("usr/local");
    toolkits.push((usr_local.join("cuda"), Origin::Toolkit));
    let mut versioned = matching_dirs(&usr_local, "cuda-");
    versioned.sort_by_key(|dir| Reverse(version_suffix(dir, "cuda-")));
    toolkits.extend(versioned.into_iter().map(|dir| (dir, Origin::Toolkit)));
    for (root, origin) in toolkits {
        let mut dirs = vec![root.join("extras/CUPTI/lib64")];
        dirs.extend(matching_dirs(&root.join("targets"), "").into_iter().map(|t| t.join("lib")));
        for dir in dirs {
            for file in libcupti_files(&dir) {
                push_file(&mut found, file, origin);
            }
        }
    }

    for name in LOADER_NAMES {
        found.push(Candidate { library: PathBuf::from(name), origin: Origin::Loader, major: elf::cupti_major(name) });
    }

    if let Some(prefix) = &env.conda_prefix {
        for file in libcupti_files(&prefix.join("lib")) {
            push_file(&mut found, file, Origin::Conda);
        }
    }
    for site in python_dirs(env) {
        for lib in PIP_LIBS {
            let file = site.join(lib);
            if file.is_file() {
                push_file(&mut found, file, Origin::Python);
            }
        }
    }

    if let Some(driver) = env.driver_major {
        // Stable: within a rank the discovery order stays.
        found.sort_by_key(|c| match c.major {
            Some(major) if major == driver => 0,
            Some(major) if major > driver => 2,
            _ => 1,
        });
    }
    found
}

impl Cupti {
    /// Finds and loads CUPTI for this process: `cupti_lib` if given
    /// (gputrace's `GPUTRACE_CUPTI_LIB`, and nothing else: a library the
    /// user named is not silently replaced); else a libcupti the process has loaded already; else the
    /// first of [`candidates`] that loads, skipping those of a CUDA major
    /// newer than the driver's. The error lists every library tried and why
    /// it failed.
    ///
    /// Opening a candidate runs its `cuptiGetVersion`. A CUPTI newer than
    /// the driver may crash there (13.2.86 does where no driver is
    /// installed): the driver check above keeps other majors away, but a
    /// newer minor of the same major cannot be told apart before loading.
    pub fn find_and_load(cupti_lib: Option<&Path>) -> Result<Cupti, LoadError> {
        Cupti::find_and_load_in(&SearchEnv::from_process(cupti_lib))
    }

    /// [`find_and_load`](Self::find_and_load) with a given environment.
    pub fn find_and_load_in(env: &SearchEnv) -> Result<Cupti, LoadError> {
        if let Some(path) = &env.cupti_lib {
            return Cupti::load(path)
                .map_err(|source| LoadError::Override { path: path.clone(), source: Box::new(source) });
        }
        for name in LOADER_NAMES.iter().rev() {
            if let Ok(cupti) = Cupti::load_if_loaded(name) {
                return Ok(cupti);
            }
        }
        let mut tried = Vec::new();
        for candidate in candidates(env) {
            if let (Some(major), Some(driver)) = (candidate.major, env.driver_major)
                && major > driver
            {
                tried.push(LoadError::NewerThanDriver {
                    library: candidate.library.to_string_lossy().into_owned(),
                    major,
                    driver,
                });
                continue;
            }
            match Cupti::load(&candidate.library) {
                Ok(cupti) => return Ok(cupti),
                Err(error) => tried.push(error),
            }
        }
        Err(LoadError::NotFound { tried })
    }
}

/// The CUDA version the installed driver supports (`cuDriverGetVersion`,
/// 13000 for 13.0), or `None` without a driver. Opens `libcuda.so.1` but
/// does not initialize CUDA; the library stays loaded.
pub fn driver_cuda_version() -> Option<u32> {
    type GetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int;
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: libcuda's initializers only set up its own state; CUDA stays
    // uninitialized until cuInit.
    let lib = unsafe { Library::open(Some("libcuda.so.1"), RTLD_NOW | RTLD_LOCAL) }.ok()?;
    // SAFETY: the type is cuda.h's `CUresult cuDriverGetVersion(int *)`.
    let get = *unsafe { lib.get::<GetVersion>(b"cuDriverGetVersion\0") }.ok()?;
    let mut version = 0;
    // SAFETY: writes one int to a valid pointer; needs no cuInit.
    let result = unsafe { get(&mut version) };
    // Unloading a driver library is not worth the risk; keep it.
    let _handle = lib.into_raw();
    (result == 0 && version > 0).then(|| version.unsigned_abs())
}

/// Subdirectories of `dir` whose name starts with `prefix`, sorted.
fn matching_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The numbers after `prefix` in a directory name: `cuda-12.9` → [12, 9],
/// `python3.11` → [3, 11]; anything that is not a number sorts first.
fn version_suffix(dir: &Path, prefix: &str) -> Vec<u32> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_prefix(prefix).unwrap_or("").split('.').map_while(|part| part.parse().ok()).collect()
}

/// Files in `dir` named `libcupti.so*`, sorted by name.
fn libcupti_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("libcupti.so"))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Appends `file` unless a path to the same file is listed already.
fn push_file(found: &mut Vec<Candidate>, file: PathBuf, origin: Origin) {
    let real = fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
    let same = |c: &Candidate| {
        c.origin != Origin::Loader && fs::canonicalize(&c.library).unwrap_or_else(|_| c.library.clone()) == real
    };
    if !found.iter().any(same) {
        let major = file_major(&file);
        found.push(Candidate { library: file, origin, major });
    }
}

/// A library file's CUDA major: its SONAME, its name, the name it links
/// to, or a `cuda-12.9` / `cu13` directory on its real path.
fn file_major(file: &Path) -> Option<u32> {
    let real = fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    elf::soname(&real)
        .as_deref()
        .and_then(elf::cupti_major)
        .or_else(|| elf::cupti_major(&file.to_string_lossy()))
        .or_else(|| elf::cupti_major(&real.to_string_lossy()))
        .or_else(|| {
            real.ancestors().find_map(|dir| {
                let name = dir.file_name()?.to_str()?;
                let digits = name.strip_prefix("cuda-").or_else(|| name.strip_prefix("cu"))?;
                let major: String = digits.chars().take_while(char::is_ascii_digit).collect();
                let rest = &digits[major.len()..];
                if major.is_empty() || !(rest.is_empty() || rest.starts_with('.')) {
                    return None;
                }
                major.parse().ok()
            })
        })
}

/// Python package directories in `sys.path` order: `$PYTHONPATH`, the
/// active virtual or conda environment, the user's, then the system's.
fn python_dirs(env: &SearchEnv) -> Vec<PathBuf> {
    let mut dirs = env.python_path.clone();
    let mut installs = |lib: PathBuf, names: &[&str]| {
        let mut pythons = matching_dirs(&lib, "python3");
        pythons.sort_by_key(|dir| Reverse(version_suffix(dir, "python")));
        for python in pythons {
            dirs.extend(names.iter().map(|name| python.join(name)));
        }
    };
    for prefix in [&env.virtual_env, &env.conda_prefix].into_iter().flatten() {
        installs(prefix.join("lib"), &["site-packages"]);
    }
    if let Some(home) = &env.home {
        installs(home.join(".local/lib"), &["site-packages"]);
    }
    installs(env.root.join("usr/local/lib"), &["dist-packages", "site-packages"]);
    installs(env.root.join("usr/lib"), &["dist-packages", "site-packages"]);
    dirs
}
