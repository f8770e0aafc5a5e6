//! Running the traced command: the launcher (or program) with the ranks'
//! environment, stdin/stdout/stderr passed through, signals forwarded, and
//! its exit status turned into ours.
//!
//! The command ends with gputrace: it is started with a parent-death
//! signal (SIGTERM), so that gputrace killed outright (`kill -9`, the OOM
//! killer) stops the job as Ctrl-C would. The launcher's SIGTERM is what
//! `timeout` or Slurm send it: mpirun and Hydra stop their ranks with it,
//! and the ranks write out their buffers before they end; what they
//! recorded is then merged with `gputrace merge DIR`.

pub mod launcher;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::origin::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

pub use launcher::{Launcher, MpiFlavor};

/// The command could not be started at all (exit status 127, as a shell
/// says for a command it cannot find).
#[derive(Debug)]
pub struct CannotStart(pub String);

impl std::fmt::Display for CannotStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CannotStart {}

/// A command ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub argv: Vec<OsString>,
    /// Variables set for the launched command.
    pub env: Vec<(String, OsString)>,
    /// Watch the command for a hang (`GPUTRACE_HANG_TIMEOUT`): stop it or
    /// write a snapshot when its processes record nothing for a while.
    pub watch: Option<Watch>,
}

/// The hang watchdog's setting: the raw streams to watch, how long they
/// may record no MPI or NCCL event and no GPU work end, and what then: stop the command, or
/// (`snapshot` and `keep_running`) write a snapshot and let it run.
/// SIGUSR1 to gputrace writes a snapshot too, instead of being forwarded.
#[derive(Clone)]
pub struct Watch {
    pub raw_dir: std::path::PathBuf,
    pub timeout: Duration,
    pub keep_running: bool,
    /// Writes a snapshot; its argument says why (`hang`, `SIGUSR1`).
    pub snapshot: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("raw_dir", &self.raw_dir)
            .field("timeout", &self.timeout)
            .field("keep_running", &self.keep_running)
            .finish_non_exhaustive()
    }
}

/// How long a stopped command has between SIGTERM and SIGKILL: longer
/// than a rank's guardian takes to seal its streams (2 s) and a launcher
/// to stop its ranks.
const KILL_AFTER: Duration = Duration::from_secs(15);

/// Runs `plan` to completion and returns the exit code to report: the
/// command's own, or 128 + the signal that killed it, as shells do.
pub fn run(plan: &Plan) -> Result<i32> {
    let mut cmd = Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..]);
    for (k, v) in &plan.env {
        cmd.env(k, v);
    }
    end_with_gputrace(&mut cmd);
    // Installed before the child starts so that no signal slips by.
    let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2])
        .context("cannot install signal handlers")?;
    let handle = signals.handle();
    let mut child =
        cmd.spawn().map_err(|e| CannotStart(format!("cannot start {}: {e}", plan.argv[0].to_string_lossy())))?;
    let pid = child.id() as libc::pid_t;
    let snapshot = plan.watch.as_ref().map(|w| Arc::clone(&w.snapshot));
    let forwarder = std::thread::spawn(move || {
        for origin in signals.forever() {
            if let Some(snapshot) = snapshot.as_ref().filter(|_| origin.signal == SIGUSR1) {
                snapshot("SIGUSR1");
                continue;
            }
            // The terminal sends SIGINT/SIGQUIT to the whole foreground
            // process group, the child included; forwarding those would
            // deliver them twice (and make mpirun abort hard).
            let from_terminal = matches!(origin.cause, Cause::Kernel);
            if from_terminal && matches!(origin.signal, SIGINT | SIGQUIT) {
                continue;
            }
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, origin.signal) };
        }
    });
    let ended = Arc::new(AtomicBool::new(false));
    let watchdog = plan.watch.clone().map(|w| {
        let ended = Arc::clone(&ended);
        std::thread::spawn(move || watch(&w, pid, &ended))
    });
    let status = child.wait().context("waiting for the traced command")?;
    ended.store(true, Ordering::SeqCst);
    handle.close();
    let _ = forwarder.join();
    if let Some(w) = watchdog {
        let _ = w.join();
    }
    Ok(exit_code(status))
}

/// The hang watchdog: polls the events committed to the MPI and NCCL
/// streams and the GPU work the CUDA streams say ended (chunk headers,
/// commit words and the CUDA streams' definitions, `raw::progress`); when
/// none was added for `w.timeout` after the first, says so and stops the
/// command `pid` (SIGTERM, SIGKILL after [`KILL_AFTER`]), or writes a
/// snapshot and waits for the streams to move again. Returns when the
/// command ended.
fn watch(w: &Watch, pid: libc::pid_t, ended: &AtomicBool) {
    let poll = (w.timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(2));
    let (mut seen, mut since) = (0u64, Instant::now());
    let mut stopped: Option<Instant> = None;
    let mut reported = false;
    while !ended.load(Ordering::SeqCst) {
        // Short naps: the command's end is seen at once (the poll is at
        // least 100 ms).
        std::thread::sleep(Duration::from_millis(50));
        match stopped {
            None => {}
            Some(at) if at.elapsed() >= KILL_AFTER => {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return;
            }
            Some(_) => continue,
        }
        if since.elapsed() < poll && seen > 0 {
            continue;
        }
        let now = raw::progress::progress_in_dir(&w.raw_dir);
        if now != seen {
            (seen, since, reported) = (now, Instant::now(), false);
            continue;
        }
        if seen > 0 && since.elapsed() >= w.timeout && !reported {
            let what = if w.keep_running { "writing a snapshot, the job runs on" } else { "stopping the job" };
            say!(
                "[gputrace] hang: no MPI or NCCL call recorded and no GPU work ended in any process for {:.0} s (GPUTRACE_HANG_TIMEOUT); {what}",
                since.elapsed().as_secs_f64()
            );
            if w.keep_running {
                // One snapshot per hang: the next after the streams moved.
                reported = true;
                (w.snapshot)("hang");
                continue;
            }
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            stopped = Some(Instant::now());
        }
    }
}

/// Has the process `cmd` starts receive SIGTERM when gputrace ends without
/// waiting for it (killed by SIGKILL, say). The parent-death signal is
/// sent when the *thread* that forked the child ends: gputrace starts its
/// commands from the main thread, which lives as long as the process.
pub fn end_with_gputrace(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let gputrace = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (prctl, getppid), allocating
    // nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // gputrace ended before the signal was asked for: nobody
            // would send it, and nobody waits for the command.
            if libc::getppid() != gputrace {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw::{ChunkKind, Definition, Event, EventsEncoder, LocationKind, Producer, StreamFile, StreamHeader};

    /// Writes `events` of `location` as one whole chunk, as the CUDA agent
    /// writes GPU activity and metric samples.
    fn batch(stream: &StreamFile, location: u32, time: u64, event: Event) {
        let (mut enc, mut payload) = (EventsEncoder::default(), Vec::new());
        enc.put(&mut payload, time, &event);
        stream.write_chunk(ChunkKind::Events, Some(enc.span(location)), &payload).unwrap();
    }

    #[test]
    fn the_watchdog_takes_ended_gpu_work_for_progress_and_metric_samples_not() {
        // A CUDA-only process: kernels end every 100 ms for 1.5 s, then the
        // GPU hangs while its metrics go on being sampled. With a 0.5 s
        // timeout the job is stopped after 2 s, not before.
        let dir = tempfile::tempdir().unwrap();
        let header = StreamHeader {
            producer: Producer::Cuda,
            host: "h".into(),
            pid: 1,
            process_start: 1,
            clock_domain: 1,
            monotonic_ns: 1,
            realtime_ns: 1,
            rank_hint: None,
            command: vec!["spin".into()],
        };
        let stream =
            StreamFile::create(&dir.path().join(raw::stream_file_name("h", 1, Producer::Cuda)), &header).unwrap();
        let mut defs = Vec::new();
        Definition::String { id: 1, value: "GPU".into() }.encode(&mut defs);
        let gpu = LocationKind::GpuStream { device: 0, context: 1, stream: 7 };
        Definition::Location { id: 1, kind: gpu, name: 1 }.encode(&mut defs);
        Definition::Location { id: 2, kind: LocationKind::DeviceMetrics { device: 0 }, name: 1 }.encode(&mut defs);
        stream.write_chunk(ChunkKind::Definitions, None, &defs).unwrap();
        let mut child = Command::new("sleep").arg("60").spawn().unwrap();
        let w = Watch {
            raw_dir: dir.path().to_path_buf(),
            timeout: Duration::from_millis(500),
            keep_running: false,
            snapshot: Arc::new(|_: &str| {}),
        };
        let ended = Arc::new(AtomicBool::new(false));
        let pid = child.id() as libc::pid_t;
        let dog = {
            let ended = Arc::clone(&ended);
            std::thread::spawn(move || watch(&w, pid, &ended))
        };
        let start = Instant::now();
        let mut t = 0u64;
        let stopped = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break (start.elapsed(), status);
            }
            t += 1;
            if start.elapsed() < Duration::from_millis(1500) {
                batch(&stream, 1, t, Event::Enter { region: 1 });
            }
            batch(&stream, 2, t, Event::Metric { metric: 1, value: t });
            assert!(start.elapsed() < Duration::from_secs(20), "never stopped");
            std::thread::sleep(Duration::from_millis(100));
        };
        ended.store(true, Ordering::SeqCst);
        dog.join().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(stopped.1.signal(), Some(libc::SIGTERM), "{stopped:?}");
        assert!(stopped.0 >= Duration::from_millis(1900), "stopped while kernels still ended: {stopped:?}");
        assert!(stopped.0 < Duration::from_millis(4500), "the metric samples kept it running: {stopped:?}");
    }
}
