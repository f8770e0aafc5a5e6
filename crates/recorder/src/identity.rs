//! Who we are: host, process and thread identity as the raw streams record
//! it.

use raw::{Producer, StreamHeader};

/// The host name (`gethostname`), or "localhost".
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its full length; gethostname
    // NUL-terminates within it or truncates.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The kernel thread id of the calling thread.
pub fn thread_id() -> u32 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u32
}

/// The start time of this process in clock ticks after boot: field 22 of
/// `/proc/self/stat`, read after the closing parenthesis of the command
/// name (which may itself contain spaces and parentheses).
pub fn process_start_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0;
    };
    // Fields after the name start at field 3 (state); starttime is field 22.
    after.split_whitespace().nth(19).and_then(|f| f.parse().ok()).unwrap_or(0)
}

/// The clock domain of this host (see [`gputrace_clock::domain`]).
pub fn clock_domain() -> u64 {
    gputrace_clock::domain()
}

/// The calling thread's name (`/proc/thread-self/comm`).
pub fn thread_name() -> String {
    std::fs::read_to_string("/proc/thread-self/comm").map(|s| s.trim_end().to_string()).unwrap_or_default()
}

/// The program and its arguments (`/proc/self/cmdline`).
pub fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Environment variables in which launchers announce a process's rank,
/// most specific first.
pub const RANK_VARIABLES: &[&str] =
    &["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID", "ALPS_APP_PE", "RANK"];

/// The rank a launcher announced, if any.
pub fn rank_hint() -> Option<u32> {
    RANK_VARIABLES.iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// The stream header of this process for `producer`.
pub fn stream_header(producer: Producer) -> StreamHeader {
    let (monotonic_ns, realtime_ns) = gputrace_clock::paired_readings();
    StreamHeader {
        producer,
        host: hostname(),
        pid: std::process::id(),
        process_start: process_start_ticks(),
        clock_domain: clock_domain(),
        monotonic_ns,
        realtime_ns,
        rank_hint: rank_hint(),
        command: command_line(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_plausible() {
        assert!(!hostname().is_empty());
        assert!(process_start_ticks() > 0);
        assert!(thread_id() > 0);
        assert!(!command_line().is_empty());
        assert_eq!(clock_domain(), clock_domain());
        assert_ne!(clock_domain(), 0);
    }
}
