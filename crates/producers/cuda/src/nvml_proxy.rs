//! NVML asked from another process: the traced program's process never
//! loads NVML because of gputrace.
//!
//! NVML is not safe to call from two threads of one process at once.
//! NCCL serializes its own calls with a lock of its own, which the agent's
//! sampler cannot take; while the sampler read NVLink counters every 10 ms,
//! NCCL's topology detection (`nvmlDeviceGetFieldValues` for each NVLink's
//! state, at communicator creation) sometimes got failures, missed links
//! and built fewer channels (16 → 8 or 2 on 4 × H200, PCI instead of
//! NVLink): a traced NCCL job moved its data differently from an untraced
//! one. So the sampler asks a server process, `gputrace-nvml`, installed
//! next to the agent, which owns NVML; requests and answers are lines on
//! its standard input and output:
//!
//! ```text
//! server: ready                    | err <why NVML is not available>
//! client: open <UUID>          →   ok <device number>      | err <why>
//! client: nvlink <device>      →   ok <KiB sent> <KiB received> | err <why>
//! client: gpu <device> <mask>  →   ok <six readings>       | err <why>
//! ```
//!
//! A reading is a number, `u` (the GPU does not support it, or bit `i` of
//! the mask asked not for it) or `f` (it failed this time), in the order
//! of [`crate::gpu_metrics::METRICS`]. The server ends when its input ends:
//! when the traced process exits, whatever way. It is not the program's
//! child: the process the agent starts starts the server and exits at
//! once, so that a program waiting for any child of its own never meets
//! it. Text lines and no serde: a few requests per GPU and sample period.

use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use nvml_sys::{ALL_LINKS, Device, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, Nvml};

use crate::gpu_metrics::{Reading, Readings};

/// File name of the server, next to the agent's library.
pub const SERVER: &str = "gputrace-nvml";

/// The argument that makes `gputrace-nvml` serve rather than start the
/// server and exit.
pub const SERVE_ARG: &str = "--serve";

/// Why NVML could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot find {SERVER} next to the CUDA agent ({0})")]
    NoServer(String),
    #[error("cannot start {0}: {1}")]
    Start(PathBuf, io::Error),
    #[error("{SERVER}: {0}")]
    Server(String),
    #[error("{SERVER} ended or answered nonsense: {0}")]
    Broken(String),
}

/// The client end: the sampler's connection to its server.
/// A socket rather than pipes: a write to a server that is gone fails
/// with an error (std sends with `MSG_NOSIGNAL`) instead of raising
/// SIGPIPE in the program.
pub struct Remote {
    /// The socket, read through the buffer and written to directly.
    socket: BufReader<UnixStream>,
    line: String,
    /// Why the server cannot be asked any more (it ended, or answered
    /// nonsense), once it cannot.
    broken: Option<String>,
}

/// How long an answer may take: NVML's start on a machine whose GPUs
/// are not kept initialized takes seconds; an answer that never comes
/// must not hold the program at its exit (the sampler is joined there).
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

impl Remote {
    /// Starts the server next to the agent and waits until NVML is open
    /// in it (tens of milliseconds), on the calling thread.
    pub fn start() -> Result<Remote, ProxyError> {
        Remote::start_at(server_path()?)
    }

    /// Starts the server at `path` (tests start the one they built).
    pub fn start_at(path: PathBuf) -> Result<Remote, ProxyError> {
        let broken = |e: io::Error| ProxyError::Start(path.clone(), e);
        let (ours, theirs) = UnixStream::pair().map_err(broken)?;
        ours.set_read_timeout(Some(PATIENCE)).map_err(broken)?;
        let theirs_in = theirs.try_clone().map_err(broken)?;
        let mut cmd = Command::new(&path);
        cmd.arg(std::process::id().to_string());
        cmd.stdin(Stdio::from(OwnedFd::from(theirs_in)))
            .stdout(Stdio::from(OwnedFd::from(theirs)))
            .stderr(Stdio::null());
        // The server must not be traced itself.
        for var in raw::source::loader_variables() {
            cmd.env_remove(var);
        }
        let mut starter = cmd.spawn().map_err(broken)?;
        // The command's copies of the server's end are closed now: only
        // the server holds it, and its end is the answers' end.
        drop(cmd);
        // The starter exits as soon as the server runs: reaped here, so
        // that no child of ours is left for the program to meet.
        let _ = starter.wait();
        let mut remote = Remote { socket: BufReader::new(ours), line: String::new(), broken: None };
        match remote.answer()? {
            Answer::Ready => Ok(remote),
            Answer::Err(why) => Err(ProxyError::Server(why)),
            Answer::Ok(_) => Err(ProxyError::Broken("an answer before any request".into())),
        }
    }

    /// The server's number for the GPU with this NVML UUID.
    pub fn open(&mut self, uuid: &str) -> Result<u32, ProxyError> {
        let words = self.ask(&format!("open {uuid}"))?;
        parse_one(&words)
    }

    /// NVLink throughput counters of `device`, all links: KiB sent and
    /// received since the driver started counting.
    pub fn nvlink(&mut self, device: u32) -> Result<(u64, u64), ProxyError> {
        match self.ask(&format!("nvlink {device}"))?.as_slice() {
            [tx, rx] => Ok((number(tx)?, number(rx)?)),
            other => Err(ProxyError::Broken(format!("nvlink answer {other:?}"))),
        }
    }

    /// One round of GPU metrics of `device`; those whose bit in `wanted`
    /// is clear are not asked (and come back unsupported).
    pub fn gpu(&mut self, device: u32, wanted: u8) -> Result<Readings, ProxyError> {
        let words = self.ask(&format!("gpu {device} {wanted}"))?;
        decode_readings(&words)
    }

    /// Why the server cannot be asked any more, if it cannot.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn ask(&mut self, request: &str) -> Result<Vec<String>, ProxyError> {
        if let Some(why) = &self.broken {
            return Err(ProxyError::Broken(why.clone()));
        }
        // One write of the whole line.
        let answer = self
            .socket
            .get_ref()
            .write_all(format!("{request}\n").as_bytes())
            .map_err(|e| ProxyError::Broken(e.to_string()))
            .and_then(|()| self.answer())
            .and_then(|a| match a {
                Answer::Ok(words) => Ok(words),
                Answer::Err(why) => Err(ProxyError::Server(why)),
                Answer::Ready => Err(ProxyError::Broken("ready again".into())),
            });
        if let Err(ProxyError::Broken(why)) = &answer {
            self.broken = Some(why.clone());
        }
        answer
    }

    fn answer(&mut self) -> Result<Answer, ProxyError> {
        self.line.clear();
        match self.socket.read_line(&mut self.line) {
            Ok(0) => Err(ProxyError::Broken("no answer".into())),
            Ok(_) => parse_answer(self.line.trim_end()),
            Err(e) => Err(ProxyError::Broken(e.to_string())),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Ready,
    Ok(Vec<String>),
    Err(String),
}

fn parse_answer(line: &str) -> Result<Answer, ProxyError> {
    let (head, rest) = line.split_once(' ').unwrap_or((line, ""));
    match head {
        "ready" => Ok(Answer::Ready),
        "ok" => Ok(Answer::Ok(rest.split_whitespace().map(str::to_owned).collect())),
        "err" => Ok(Answer::Err(rest.to_owned())),
        _ => Err(ProxyError::Broken(format!("answer {line:?}"))),
    }
}

fn number(word: &str) -> Result<u64, ProxyError> {
    word.parse().map_err(|_| ProxyError::Broken(format!("{word:?} is no number")))
}

fn parse_one(words: &[String]) -> Result<u32, ProxyError> {
    match words {
        [n] => n.parse().map_err(|_| ProxyError::Broken(format!("device {n:?}"))),
        other => Err(ProxyError::Broken(format!("open answer {other:?}"))),
    }
}

fn encode_reading(r: Reading) -> String {
    match r {
        Reading::Value(v) => v.to_string(),
        Reading::Unsupported => "u".into(),
        Reading::Failed => "f".into(),
    }
}

fn decode_readings(words: &[String]) -> Result<Readings, ProxyError> {
    if words.len() != 6 {
        return Err(ProxyError::Broken(format!("gpu answer {words:?}")));
    }
    let mut out = [Reading::Failed; 6];
    for (slot, w) in out.iter_mut().zip(words) {
        *slot = match w.as_str() {
            "u" => Reading::Unsupported,
            "f" => Reading::Failed,
            n => Reading::Value(number(n)?),
        };
    }
    Ok(Readings(out))
}

/// Where the server is: next to the agent's library (found by an address
/// inside it).
fn server_path() -> Result<PathBuf, ProxyError> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr reads the address of a function of this library and
    // fills `info`; the file name it points to lives as long as the
    // library is loaded (and is copied at once).
    let found = unsafe { libc::dladdr(server_path as *const libc::c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return Err(ProxyError::NoServer("dladdr found no file for the agent".into()));
    }
    // SAFETY: a NUL-terminated string from dladdr, see above.
    let lib = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let lib = PathBuf::from(std::ffi::OsStr::from_bytes(lib.to_bytes()));
    let path = lib.parent().map(|d| d.join(SERVER)).unwrap_or_else(|| PathBuf::from(SERVER));
    if path.is_file() { Ok(path) } else { Err(ProxyError::NoServer(path.display().to_string())) }
}

/// The server: answers requests on `input` with NVML until the input
/// ends, or until process `client` is gone (looked at every second: a
/// child the client forked may hold its end of the socket open). NVML
/// that cannot be opened is said once (`err …`) and ends it.
pub fn serve(input: UnixStream, mut output: impl Write, client: Option<u32>) -> io::Result<()> {
    let nvml = match Nvml::open() {
        Ok(n) => n,
        Err(e) => return writeln!(output, "err {e}").and_then(|()| output.flush()),
    };
    writeln!(output, "ready")?;
    output.flush()?;
    input.set_read_timeout(Some(std::time::Duration::from_secs(1)))?;
    // Alive: there, and not a zombie (state `Z` after the command's `)`).
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    };
    let mut input = BufReader::new(input);
    let mut devices: Vec<Device> = Vec::new();
    let mut line = String::new();
    loop {
        // A read that times out keeps what it read of the line in `line`.
        match input.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if client.is_some_and(|pid| !alive(pid)) {
                    return Ok(());
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let answer = answer(&nvml, &mut devices, line.trim_end());
        line.clear();
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
}

fn answer(nvml: &Nvml, devices: &mut Vec<Device>, line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let device = |w: &str| w.parse::<usize>().ok().and_then(|i| devices.get(i).copied());
    match words.as_slice() {
        ["open", uuid] => match nvml.device_by_uuid(uuid) {
            Ok(d) => {
                devices.push(d);
                format!("ok {}", devices.len() - 1)
            }
            Err(e) => format!("err {e}"),
        },
        ["nvlink", d] => {
            let Some(d) = device(d) else { return format!("err no device {d}") };
            let fields = [
                (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ALL_LINKS),
                (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ALL_LINKS),
            ];
            match nvml.field_values(d, &fields) {
                Ok(v) => match (v[0].as_u64(), v[1].as_u64()) {
                    (Some(tx), Some(rx)) => format!("ok {tx} {rx}"),
                    _ => "err no NVLink throughput counters".into(),
                },
                Err(e) => format!("err {e}"),
            }
        }
        ["gpu", d, mask] => {
            let Some(d) = device(d) else { return format!("err no device {d}") };
            let Ok(mask) = mask.parse::<u8>() else { return format!("err bad mask {mask}") };
            let r = read_gpu(nvml, d, |i| mask & (1 << i) != 0);
            let words: Vec<String> = r.0.iter().map(|r| encode_reading(*r)).collect();
            format!("ok {}", words.join(" "))
        }
        _ => format!("err unknown request {line:?}"),
    }
}

/// One round of GPU metrics of `d`, the metrics `wanted` says.
fn read_gpu(nvml: &Nvml, d: Device, wanted: impl Fn(usize) -> bool) -> Readings {
    fn skipped<T>() -> Result<T, nvml_sys::NvmlError> {
        Err(nvml_sys::NvmlError::Call("skipped", nvml_sys::NVML_ERROR_NOT_SUPPORTED))
    }
    Readings::from_nvml(
        if wanted(0) || wanted(1) { nvml.utilization(d) } else { skipped() },
        if wanted(2) { nvml.memory(d) } else { skipped() },
        if wanted(3) { nvml.sm_clock(d) } else { skipped() },
        if wanted(4) { nvml.power(d) } else { skipped() },
        if wanted(5) { nvml.temperature(d) } else { skipped() },
    )
}

/// `gputrace-nvml [--serve] [PID]`'s main: without [`SERVE_ARG`], starts
/// the server (the same binary with it and PID, on the same standard
/// input and output) and exits, so that the server is nobody's child;
/// with it, serves (standard input must be the socket) until the input
/// ends or process PID is gone.
pub fn server_main() -> std::process::ExitCode {
    use std::os::fd::AsFd;
    use std::process::ExitCode;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serving = args.first().is_some_and(|a| a == SERVE_ARG);
    let client = args.iter().skip(usize::from(serving)).find_map(|a| a.parse::<u32>().ok());
    if serving {
        let Ok(socket) = io::stdin().as_fd().try_clone_to_owned() else { return ExitCode::FAILURE };
        let code = match serve(UnixStream::from(socket), io::stdout().lock(), client) {
            Ok(()) => 0,
            Err(_) => 1,
        };
        // Gone at once, without running NVML's teardown at exit (every
        // answer was flushed; nothing else is left to write): on 4 × H200
        // the servers of a 4-rank job were still there when gputrace
        // returned, and gone a second later.
        // SAFETY: _exit ends the process; no Rust state needs dropping.
        unsafe { libc::_exit(code) }
    }
    let Ok(me) = std::env::current_exe() else { return ExitCode::FAILURE };
    let mut server = Command::new(me);
    server.arg(SERVE_ARG).args(client.map(|p| p.to_string())).stderr(Stdio::null());
    match server.spawn() {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            // The client reads this as the server's first line.
            println!("err cannot start the server: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_cross_the_pipe_unchanged() {
        let r = Readings([
            Reading::Value(42),
            Reading::Unsupported,
            Reading::Value(u64::MAX),
            Reading::Failed,
            Reading::Value(0),
            Reading::Unsupported,
        ]);
        let words: Vec<String> = r.0.iter().map(|r| encode_reading(*r)).collect();
        assert_eq!(words.join(" "), format!("42 u {} f 0 u", u64::MAX));
        assert_eq!(decode_readings(&words).unwrap(), r);
        assert!(decode_readings(&words[..5]).is_err());
        assert!(decode_readings(&["1", "2", "3", "4", "5", "x"].map(String::from)).is_err());
    }

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer("ready").unwrap(), Answer::Ready);
        assert_eq!(parse_answer("ok 1 2").unwrap(), Answer::Ok(vec!["1".into(), "2".into()]));
        assert_eq!(parse_answer("err no GPU here").unwrap(), Answer::Err("no GPU here".into()));
        assert!(parse_answer("").is_err());
        assert!(parse_answer("maybe").is_err());
    }
}
