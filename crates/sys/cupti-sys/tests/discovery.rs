//! The candidate list, on a fake file-system tree: which libraries are
//! found, in which order, and how the driver's CUDA major reorders them.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use cupti_sys::{Candidate, Cupti, LoadError, Origin, SearchEnv, candidates};

/// A fake tree: every file is a few bytes, not a library.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree { dir: tempfile::tempdir().unwrap() }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn file(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"fake").unwrap();
        path
    }

    fn link(&self, relative: &str, target: &str) -> PathBuf {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, &path).unwrap();
        path
    }

    fn env(&self) -> SearchEnv {
        SearchEnv { root: self.path("root"), ..SearchEnv::default() }
    }
}

/// Each candidate as `origin major name`, names relative to the tree.
fn listing(tree: &Tree, found: &[Candidate]) -> Vec<String> {
    found
        .iter()
        .map(|c| {
            let name = c.library.strip_prefix(tree.dir.path()).unwrap_or(&c.library);
            let major = c.major.map_or("-".to_string(), |m| m.to_string());
            format!("{:?} {major} {}", c.origin, name.display())
        })
        .collect()
}

/// A machine with two toolkits, pip wheels in several Pythons, a conda
/// environment, a virtual environment and PYTHONPATH.
fn populated() -> (Tree, SearchEnv) {
    let tree = Tree::new();
    // CUDA 12.9: CUPTI in extras/, the versioned file plus its links.
    tree.file("root/usr/local/cuda-12.9/extras/CUPTI/lib64/libcupti.so.2025.2.1");
    tree.link("root/usr/local/cuda-12.9/extras/CUPTI/lib64/libcupti.so.12", "libcupti.so.2025.2.1");
    tree.link("root/usr/local/cuda-12.9/extras/CUPTI/lib64/libcupti.so", "libcupti.so.12");
    // CUDA 13.0: CUPTI under targets/, and /usr/local/cuda pointing there.
    tree.file("root/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13");
    tree.link("root/usr/local/cuda", "cuda-13.0");
    // An unrelated directory and file that must not match.
    tree.file("root/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13");
    tree.file("root/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti_static.a");
    // A toolkit named by CUDA_HOME, outside /usr/local.
    tree.file("opt/cuda-12.6/extras/CUPTI/lib64/libcupti.so.2024.3.2");
    // pip wheels.
    tree.file("venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
    tree.file("root/usr/local/lib/python3.10/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
    tree.file("root/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcupti.so.13");
    tree.file("root/usr/lib/python3/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
    tree.file("pythonpath/nvidia/cuda_cupti/lib/libcupti.so.12");
    tree.file("home/.local/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
    // conda: the cuda-cupti package, and a wheel in its Python.
    tree.file("conda/lib/libcupti.so.12");
    tree.file("conda/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");

    let env = SearchEnv {
        cuda_home: Some(tree.path("opt/cuda-12.6")),
        virtual_env: Some(tree.path("venv")),
        conda_prefix: Some(tree.path("conda")),
        python_path: vec![tree.path("pythonpath"), tree.path("absent")],
        home: Some(tree.path("home")),
        ..tree.env()
    };
    (tree, env)
}

const DISCOVERY_ORDER: [&str; 15] = [
    "CudaHome 12 opt/cuda-12.6/extras/CUPTI/lib64/libcupti.so.2024.3.2",
    "Toolkit 13 root/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
    "Toolkit 12 root/usr/local/cuda-12.9/extras/CUPTI/lib64/libcupti.so",
    "Loader - libcupti.so",
    "Loader 13 libcupti.so.13",
    "Loader 12 libcupti.so.12",
    "Conda 12 conda/lib/libcupti.so.12",
    "Python 12 pythonpath/nvidia/cuda_cupti/lib/libcupti.so.12",
    "Python 13 venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13",
    "Python 13 conda/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13",
    "Python 13 home/.local/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13",
    "Python 13 root/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcupti.so.13",
    "Python 12 root/usr/local/lib/python3.10/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
    "Python 12 root/usr/lib/python3/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
    // (cuda-13.0 is /usr/local/cuda, listed once; cuda-12.9's three names
    // are one file, listed once.)
    "",
];

#[test]
fn finds_toolkits_then_loader_names_then_python_wheels() {
    let (tree, env) = populated();
    let expected: Vec<&str> = DISCOVERY_ORDER.iter().copied().filter(|l| !l.is_empty()).collect();
    assert_eq!(listing(&tree, &candidates(&env)), expected);
}

#[test]
fn the_driver_major_moves_matching_libraries_first_and_newer_ones_last() {
    let (tree, mut env) = populated();
    env.driver_major = Some(12);
    let found = listing(&tree, &candidates(&env));
    let majors: Vec<&str> = found.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    // All 12s first (in discovery order), then unknown, then 13s (newer
    // than the driver: they would not initialize).
    assert_eq!(majors, ["12", "12", "12", "12", "12", "12", "12", "-", "13", "13", "13", "13", "13", "13"]);
    assert_eq!(found[0], DISCOVERY_ORDER[0]);
    assert_eq!(found[1], DISCOVERY_ORDER[2]);

    env.driver_major = Some(13);
    let found = listing(&tree, &candidates(&env));
    assert_eq!(found[0], DISCOVERY_ORDER[1]);
    assert_eq!(found[1], "Loader 13 libcupti.so.13");
    // Older majors keep their place after the matching ones.
    assert_eq!(found[6], DISCOVERY_ORDER[0]);
}

#[test]
fn cuda_path_is_searched_after_cuda_home() {
    let tree = Tree::new();
    tree.file("a/targets/sbsa-linux/lib/libcupti.so.13");
    tree.file("b/extras/CUPTI/lib64/libcupti.so.12");
    let env = SearchEnv { cuda_home: Some(tree.path("b")), cuda_path: Some(tree.path("a")), ..tree.env() };
    let found = listing(&tree, &candidates(&env));
    assert_eq!(
        found[..2],
        ["CudaHome 12 b/extras/CUPTI/lib64/libcupti.so.12", "CudaPath 13 a/targets/sbsa-linux/lib/libcupti.so.13"]
    );
}

#[test]
fn versioned_toolkits_are_searched_newest_first() {
    let tree = Tree::new();
    for version in ["12.4", "12.10", "13.0", "12.9"] {
        tree.file(&format!("root/usr/local/cuda-{version}/extras/CUPTI/lib64/libcupti.so.1"));
    }
    let found = listing(&tree, &candidates(&tree.env()));
    let dirs: Vec<&str> = found
        .iter()
        .filter_map(|l| l.strip_prefix("Toolkit 1 root/usr/local/"))
        .map(|l| l.split('/').next().unwrap())
        .collect();
    assert_eq!(dirs, ["cuda-13.0", "cuda-12.10", "cuda-12.9", "cuda-12.4"]);
}

#[test]
fn an_empty_machine_still_offers_the_loader_names() {
    let tree = Tree::new();
    assert_eq!(
        listing(&tree, &candidates(&tree.env())),
        ["Loader - libcupti.so", "Loader 13 libcupti.so.13", "Loader 12 libcupti.so.12"]
    );
}

#[test]
fn the_override_is_the_only_candidate() {
    let (tree, mut env) = populated();
    env.cupti_lib = Some(tree.path("custom/libcupti.so.13"));
    env.driver_major = Some(12);
    let found = candidates(&env);
    assert_eq!(listing(&tree, &found), ["Override 13 custom/libcupti.so.13"]);
    assert_eq!(found[0].origin, Origin::Override);
}

#[test]
fn a_broken_override_is_an_error_and_nothing_else_is_tried() {
    let tree = Tree::new();
    let library = tree.file("custom/libcupti.so");
    let env = SearchEnv { cupti_lib: Some(library.clone()), ..tree.env() };
    let err = Cupti::find_and_load_in(&env).unwrap_err();
    match &err {
        LoadError::Override { path, source } => {
            assert_eq!(path, &library);
            assert!(matches!(**source, LoadError::Open { .. }), "{source:?}");
        }
        other => panic!("expected Override, got {other:?}"),
    }
    assert!(err.to_string().starts_with("GPUTRACE_CUPTI_LIB="), "{err}");
}

#[test]
fn when_nothing_loads_the_error_lists_what_was_tried() {
    let (tree, env) = populated();
    // Fake files never load, and this test machine has no libcupti on the
    // loader's path.
    if Cupti::load("libcupti.so").is_ok() {
        skip_for_real_library();
        return;
    }
    let err = Cupti::find_and_load_in(&env).unwrap_err();
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(tried.len(), candidates(&env).len());
    let text = err.to_string();
    assert!(text.contains("opt/cuda-12.6/extras/CUPTI/lib64/libcupti.so.2024.3.2"), "{text}");
    assert!(text.contains("cannot open libcupti.so.13"), "{text}");
    assert!(text.contains("GPUTRACE_CUPTI_LIB"), "{text}");
    drop(tree);
}

#[test]
fn libraries_newer_than_the_driver_are_not_opened() {
    if Cupti::load("libcupti.so").is_ok() {
        skip_for_real_library();
        return;
    }
    let (_tree, mut env) = populated();
    env.driver_major = Some(12);
    let LoadError::NotFound { tried } = Cupti::find_and_load_in(&env).unwrap_err() else {
        panic!("expected NotFound");
    };
    let skipped: Vec<&LoadError> =
        tried.iter().filter(|e| matches!(e, LoadError::NewerThanDriver { major: 13, driver: 12, .. })).collect();
    assert_eq!(skipped.len(), 6, "{tried:?}");
    // They come last, after everything that was actually opened.
    assert!(tried[tried.len() - 6..].iter().all(|e| matches!(e, LoadError::NewerThanDriver { .. })));
    assert!(skipped[0].to_string().ends_with("is CUPTI 13.x but the driver supports CUDA 12.x only; not tried"));
}

/// Where a real libcupti is on the loader's path the fake tree cannot be
/// tested: a note, except under `CI=true`, where it fails (CI's machine
/// has none there; scripts/setup.sh keeps its copies elsewhere).
fn skip_for_real_library() {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "a real libcupti.so is on the loader's path; under CI=true that fails the test"
    );
    eprintln!("note: a real libcupti.so is on the loader's path; test skipped");
}
