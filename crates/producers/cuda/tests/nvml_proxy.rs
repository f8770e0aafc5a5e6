//! The NVML server (`gputrace-nvml`), started as the agent starts it. On
//! a machine without the NVIDIA driver (CI) it says why NVML is not there
//! and ends; the client gets that reason, and no process is left.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gputrace_cuda::nvml_proxy::{ProxyError, Remote};

fn server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gputrace-nvml"))
}

/// Processes whose program is the server.
fn servers_running() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.split(|b| *b == 0).next().is_some_and(|a| a.ends_with(b"gputrace-nvml")))
        .count()
}

#[test]
fn without_a_driver_the_server_says_why_and_ends() {
    if std::path::Path::new("/dev/nvidiactl").exists() {
        return;
    }
    let started = Instant::now();
    match Remote::start_at(server()) {
        Err(ProxyError::Server(why)) => assert!(why.contains("libnvidia-ml.so.1"), "{why}"),
        Err(e) => panic!("not the server's reason: {e}"),
        Ok(_) => panic!("NVML opened on a machine without the driver"),
    }
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The server ended by itself (it is nobody's child: nothing to reap).
    let deadline = Instant::now() + Duration::from_secs(5);
    while servers_running() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(servers_running(), 0);
}

#[test]
fn a_server_that_is_not_there_is_an_error_not_a_hang() {
    match Remote::start_at(PathBuf::from("/nonexistent/gputrace-nvml")) {
        Err(ProxyError::Start(path, _)) => assert_eq!(path, PathBuf::from("/nonexistent/gputrace-nvml")),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("started a server that does not exist"),
    }
}
