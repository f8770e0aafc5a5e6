//! What recording one runtime call costs the calling thread on the
//! callback path (`GPUTRACE_CUDA_ENABLE=runtime`): the agent's work at the
//! call's entry and exit — two clock reads and two appends to the thread's
//! buffer — driven here without CUDA, through the same function CUPTI's
//! callback calls. CUPTI's own cost of invoking the callback is not in it.
//!
//! cargo run --release -p gputrace-cuda --example api_cost [CALLS]

use std::time::Instant;

use raw::Producer;
use recorder::{Recorder, RecorderOptions};

fn main() {
    let calls: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let dir = std::env::temp_dir().join(format!("gputrace-api-cost-{}", std::process::id()));
    let rec = match Recorder::create(&dir, Producer::Cuda, RecorderOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("api_cost: cannot create a stream in {}: {e}", dir.display());
            std::process::exit(1);
        }
    };
    let name = |_cbid: u32| Some("cudaLaunchKernel_v7000".to_string());
    let names = gputrace_cuda::launch_names::LaunchNames::new();
    let symbol = c"_Z12spin_foreverPVi";
    // One launch: with `named`, the kernel's name looked up (and put
    // before the Enter) as the agent does for every launch.
    let launch = |c: u32, named: bool| {
        // SAFETY: a static NUL-terminated string.
        let kernel = if named { unsafe { names.ids(&rec, symbol.as_ptr()) } } else { None };
        gputrace_cuda::api::record(&rec, 211, true, c, kernel, name);
        gputrace_cuda::api::record(&rec, 211, false, c, None, name);
    };
    // Warm up: the region, the name, the thread's buffer and its first slot.
    for c in 0..10_000u32 {
        launch(c, c % 2 == 0);
    }
    for named in [false, true] {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for c in 0..calls {
                launch(c as u32, named);
            }
            best = best.min(t.elapsed().as_nanos() as f64 / calls as f64);
        }
        let what = if named { "a launch naming its kernel" } else { "without the kernel's name" };
        println!("api_cost: {best:.1} ns per recorded call (entry and exit), {what}, best of 5 x {calls} calls");
    }
    rec.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
