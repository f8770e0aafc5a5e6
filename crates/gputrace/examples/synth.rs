//! Writes a synthetic experiment for benchmarks, then `gputrace merge DIR`:
//!
//! - `synth DIR RANKS ITERATIONS`: an MPI ring of RANKS processes on one
//!   host (`raw::synthetic::write_ring`);
//! - `synth DIR RANKS ITERATIONS job [RANKS_PER_NODE] [nogpu]`: a job as
//!   the MPI hooks and the CUDA agent would record it, RANKS_PER_NODE
//!   (default 8) ranks on each simulated node, every node with its own
//!   clock (`raw::synthetic::write_job`).
//!
//! Prints `events N` (and for a job: `sends`, `streams`, `locations`,
//! `nodes`).

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: synth DIR RANKS ITERATIONS [job [RANKS_PER_NODE] [nogpu]]");
        std::process::exit(2);
    };
    let (dir, ranks, iterations, rest) = match &args[..] {
        [_, dir, ranks, iterations, rest @ ..] => (dir, ranks, iterations, rest),
        _ => usage(),
    };
    let raw = std::path::Path::new(dir).join("raw");
    std::fs::create_dir_all(&raw)?;
    let Ok(ranks) = ranks.parse::<u32>() else { usage() };
    let Ok(iterations) = iterations.parse::<u64>() else { usage() };
    match rest {
        [] => {
            let counts = raw::synthetic::write_ring(&raw, ranks, iterations)?;
            println!("events {}", counts.events * u64::from(ranks));
        }
        [job, more @ ..] if job == "job" => {
            let ranks_per_node = match more.first().filter(|m| *m != "nogpu") {
                Some(n) => n.parse().unwrap_or_else(|_| usage()),
                None => 8,
            };
            let gpu = !more.iter().any(|m| m == "nogpu");
            let job = raw::synthetic::Job { ranks, ranks_per_node, iterations, gpu, offset_error: (0, 0) };
            let c = raw::synthetic::write_job(&raw, &job)?;
            println!(
                "events {} sends {} streams {} locations {} nodes {}",
                c.events, c.sends, c.streams, c.locations, c.nodes
            );
        }
        _ => usage(),
    }
    Ok(())
}
