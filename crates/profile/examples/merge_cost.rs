//! What the profile costs the merge: merges an experiment's raw streams
//! into a scratch archive, alternately without and with the profile sink
//! (and writing profile.cubex), and prints the times (minimum and median
//! of the runs) and the peak RSS.
//!
//! `cargo run --release -p gputrace-profile --example merge_cost -- DIR [RUNS [plain|profile]]`
//! (DIR holds raw/, as `examples/synth` of gputrace makes it; the last
//! argument runs one of the two only, for a profiler). `JOBS=N` merges on
//! N threads (default 1).

use std::path::Path;
use std::time::{Duration, Instant};

struct Quiet;

impl merge::Observer for Quiet {
    fn warning(&self, _: &str) {}
}

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    format!("min {:.3} s  median {:.3} s", v[0].as_secs_f64(), v[v.len() / 2].as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: merge_cost DIR [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let modes: &[bool] = match args.get(3).map(String::as_str) {
        Some("plain") => &[false],
        Some("profile") => &[true],
        _ => &[false, true],
    };
    let raw_dir = Path::new(dir).join("raw");
    let scratch = tempfile::tempdir_in(dir).expect("a scratch directory in DIR");
    let (mut plain, mut profiled, mut written) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    let mut paths = 0;
    for _ in 0..runs {
        for &with_profile in modes {
            let target = merge::Target { dir: scratch.path(), name: "traces", force: true };
            let options = merge::Options {
                raw_dir: &raw_dir,
                archive: Some(target),
                not_traced: &[],
                program_ended: None,
                running: false,
                mpi_complete: true,
                max_correction_messages: merge::correct::MAX_MESSAGES,
                jobs: std::env::var("JOBS").ok().and_then(|j| j.parse().ok()).unwrap_or(1),
            };
            let start = Instant::now();
            if with_profile {
                let mut p = profile::Profile::new();
                let s = merge::merge_with(&options, &Quiet, &mut p).expect("merge");
                profiled.push(start.elapsed());
                let w = Instant::now();
                p.write_to(&scratch.path().join("profile.cubex")).expect("profile");
                written.push(w.elapsed());
                events = s.counts.events;
                paths = p.call_paths();
            } else {
                merge::merge(&options, &Quiet).expect("merge");
                plain.push(start.elapsed());
            }
        }
    }
    // SAFETY: getrusage fills the struct it is given.
    let rss = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_maxrss
    };
    println!("{events} events, {paths} call paths, {runs} runs each");
    if !plain.is_empty() {
        println!("  merge                      {}", stats(plain));
    }
    if !profiled.is_empty() {
        println!("  merge with the profile     {}", stats(profiled));
        println!("  writing profile.cubex      {}", stats(written));
    }
    println!("  peak RSS {:.1} MiB", rss as f64 / 1024.0);
}
