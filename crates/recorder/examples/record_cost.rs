//! Benchmark of the recording hot path in isolation: what one traced
//! MPI_Send costs gputrace, without MPI's own noise: two clock reads and
//! three events (Enter and MpiSend staged into one buffer access before
//! the PMPI call, Leave in another after it), as the MPI hooks do it.
//! Prints ns per call.

use std::io::Write as _;
use std::time::Instant;

use raw::{Event, Message, Paradigm, Producer, RegionRole};
use recorder::Recorder;
use recorder::RecorderOptions;

fn main() {
    let dir = std::env::temp_dir().join(format!("gputrace-record-cost-{}", std::process::id()));
    let rec = match Recorder::create(&dir, Producer::Synthetic, RecorderOptions::default()) {
        Ok(rec) => rec,
        Err(e) => {
            eprintln!("record_cost: cannot create a stream in {}: {e}", dir.display());
            std::process::exit(1);
        }
    };
    let Some(region) = rec.region("MPI_Send", None, Paradigm::Mpi, RegionRole::Point2Point, "p2p") else {
        eprintln!("record_cost: the region could not be defined");
        std::process::exit(1);
    };
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5_000_000);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for i in 0..n {
            let t = gputrace_clock::now();
            let msg = Message { peer: 1, comm: 0, tag: 0, bytes: i & 7 };
            rec.record_many(&[(t, Event::Enter { region }), (t, Event::MpiSend(msg))]);
            rec.record(gputrace_clock::now(), &Event::Leave { region });
        }
        best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
    }
    rec.finish();
    let bytes = std::fs::metadata(rec.path()).map(|m| m.len()).unwrap_or(0);
    // A closed stdout (`| head`) is not an error of the benchmark.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "record_ns_per_call {best:.1} (best of 5 runs of {n} calls: 2 clock reads + 3 events in 2 accesses)"
    );
    let _ = writeln!(out, "raw_bytes_per_event {:.2}", bytes as f64 / (15 * n) as f64);
    let _ = std::fs::remove_dir_all(&dir);
}
