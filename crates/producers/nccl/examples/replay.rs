//! Replays a capture into an experiment directory's `raw/`, as the plugin
//! would have written its stream, so that `gputrace merge` can be run on
//! it with the other streams of the same run:
//!
//! ```text
//! cargo run -p gputrace-nccl --example replay -- CAPTURE EXPERIMENT_DIR
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [capture, dir] = args.as_slice() else {
        eprintln!("usage: replay CAPTURE EXPERIMENT_DIR");
        std::process::exit(2);
    };
    let c = gputrace_nccl::Capture::load(std::path::Path::new(capture)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    match gputrace_nccl::replay(&c, std::path::Path::new(dir), c.header.clone()) {
        Ok(path) => println!("{}", path.display()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
