//! Writes a synthetic experiment (an MPI ring of N ranks) for benchmarks:
//! `synth DIR RANKS ITERATIONS`; then `gputrace merge DIR`.

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, ranks, iterations] = &args[..] else {
        eprintln!("usage: synth DIR RANKS ITERATIONS");
        std::process::exit(2);
    };
    let raw = std::path::Path::new(dir).join("raw");
    std::fs::create_dir_all(&raw)?;
    let ranks: u32 = ranks.parse().expect("RANKS is a number");
    let iterations: u64 = iterations.parse().expect("ITERATIONS is a number");
    let counts = raw::synthetic::write_ring(&raw, ranks, iterations)?;
    println!("events {}", counts.events * u64::from(ranks));
    Ok(())
}
