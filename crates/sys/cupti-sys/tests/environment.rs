//! `SearchEnv::from_process` reads the variables it documents, and takes
//! the override from its caller, never from `GPUTRACE_CUPTI_LIB` (gputrace's
//! configuration parses that). Alone in its own test binary: it sets
//! process environment variables, which no other thread may read
//! meanwhile.

use std::path::{Path, PathBuf};

use cupti_sys::SearchEnv;

#[test]
fn from_process_reads_the_documented_variables() {
    let set = [
        ("GPUTRACE_CUPTI_LIB", "/from/the/environment/libcupti.so.12"),
        ("CUDA_HOME", "/opt/cuda"),
        ("CUDA_PATH", ""),
        ("VIRTUAL_ENV", "/venv"),
        ("CONDA_PREFIX", "/conda"),
        ("PYTHONPATH", "/a::/b"),
        ("HOME", "/home/user"),
    ];
    for (name, value) in set {
        // SAFETY: this is the only test in this binary, so no other thread
        // reads or writes the environment.
        unsafe { std::env::set_var(name, value) };
    }
    let env = SearchEnv::from_process(Some(Path::new("/x/libcupti.so.13")));
    assert_eq!(env.cupti_lib, Some(PathBuf::from("/x/libcupti.so.13")), "the caller's override");
    assert_eq!(env.cuda_home, Some(PathBuf::from("/opt/cuda")));
    assert_eq!(env.cuda_path, None, "an empty variable counts as unset");
    assert_eq!(env.virtual_env, Some(PathBuf::from("/venv")));
    assert_eq!(env.conda_prefix, Some(PathBuf::from("/conda")));
    assert_eq!(env.python_path, [PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(env.home, Some(PathBuf::from("/home/user")));
    assert_eq!(env.root, PathBuf::from("/"));

    // GPUTRACE_CUPTI_LIB is set, but the discovery does not read it.
    assert_eq!(SearchEnv::from_process(None).cupti_lib, None);
    // An empty override is no override, as an empty variable was.
    assert_eq!(SearchEnv::from_process(Some(Path::new(""))).cupti_lib, None);
}
