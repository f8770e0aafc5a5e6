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

/// A stand-in server (a shell script that answers as `gputrace-nvml`
/// does, detached the same way) for the client's side of the protocol,
/// which the CI machine cannot reach with real NVML.
fn stand_in(body: &str) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sh");
    // A background list reads /dev/null unless told otherwise: its input
    // is the socket, as the real server's is.
    std::fs::write(&path, format!("#!/bin/sh\nexec 3<&0\n( {body} ) <&3 &\nexit 0\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

#[test]
fn the_client_reads_every_kind_of_answer() {
    let (_dir, server) = stand_in(
        "echo ready; read l; echo 'ok 0'; read l; echo 'ok 123 456'; read l; echo 'ok 1 u f 4 5 6'; \
         read l; echo 'err no device 9'",
    );
    let mut remote = Remote::start_at(server).unwrap();
    assert_eq!(remote.open("GPU-00000000-0000-0000-0000-000000000000").unwrap(), 0);
    assert_eq!(remote.nvlink(0).unwrap(), (123, 456));
    let r = remote.gpu(0, 0b11_1101).unwrap();
    use gputrace_cuda::gpu_metrics::Reading::*;
    assert_eq!(r.0, [Value(1), Unsupported, Failed, Value(4), Value(5), Value(6)]);
    match remote.nvlink(9) {
        Err(ProxyError::Server(why)) => assert_eq!(why, "no device 9"),
        other => panic!("{other:?}"),
    }
    // An error answer is the server's word, not a broken server.
    assert!(remote.broken().is_none());
}

/// Run again as a child with SIGPIPE at its default action, as in a C
/// program (Rust programs ignore it): a write to a server that is gone
/// must be an error there too, not the signal that kills the program.
#[test]
fn a_server_that_ends_is_broken_for_good_without_a_signal() {
    const CHILD: &str = "GPUTRACE_TEST_NVML_PROXY_CHILD";
    if std::env::var_os(CHILD).is_some() {
        // SAFETY: setting a signal's disposition to its default, before
        // any thread of this child's own is started.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let (_dir, server) = stand_in("echo ready");
        let mut remote = Remote::start_at(server).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(matches!(remote.open("GPU-x"), Err(ProxyError::Broken(_))));
        assert!(remote.broken().is_some());
        assert!(matches!(remote.nvlink(0), Err(ProxyError::Broken(_))));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_server_that_ends_is_broken_for_good_without_a_signal", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), None, "killed by a signal: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn nonsense_from_a_server_is_an_error() {
    let (_dir, server) = stand_in("echo hello");
    match Remote::start_at(server) {
        Err(ProxyError::Broken(why)) => assert!(why.contains("hello"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted a server that did not say ready"),
    }
}
