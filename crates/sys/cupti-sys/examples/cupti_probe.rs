//! Prints where this crate looks for CUPTI, which library it loads, and
//! which record struct that library writes for each activity kind; with
//! a LIBRARY, that one instead of searching (as gputrace's
//! `GPUTRACE_CUPTI_LIB`):
//!
//! ```text
//! cargo run -p cupti-sys --example cupti_probe [LIBRARY]
//! ```

use std::process::ExitCode;

use cupti_sys::{Cupti, SearchEnv, candidates, common};

fn main() -> ExitCode {
    let library = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    let env = SearchEnv::from_process(library.as_deref());
    println!("driver CUDA version: {:?}", cupti_sys::driver_cuda_version());
    println!("candidates:");
    for candidate in candidates(&env) {
        let major = candidate.major.map_or("?".into(), |m| m.to_string());
        println!("  {:<9} {major:>2}  {}", format!("{:?}", candidate.origin), candidate.library.display());
    }
    let cupti = match Cupti::find_and_load_in(&env) {
        Ok(cupti) => cupti,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let version = cupti.version();
    println!("loaded {} from {}", version, cupti.path().display());
    println!("layout {:?}, newer than bindings: {}", version.layout(), version.is_newer_than_bindings());
    for (name, kind) in [
        ("CONCURRENT_KERNEL", common::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
        ("MEMCPY", common::CUPTI_ACTIVITY_KIND_MEMCPY),
        ("MEMCPY2", common::CUPTI_ACTIVITY_KIND_MEMCPY2),
        ("MEMSET", common::CUPTI_ACTIVITY_KIND_MEMSET),
        ("RUNTIME", common::CUPTI_ACTIVITY_KIND_RUNTIME),
        ("SYNCHRONIZATION", common::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
        ("NVLINK", common::CUPTI_ACTIVITY_KIND_NVLINK),
        ("DEVICE", common::CUPTI_ACTIVITY_KIND_DEVICE),
        ("CONTEXT", common::CUPTI_ACTIVITY_KIND_CONTEXT),
        ("MEMORY2", common::CUPTI_ACTIVITY_KIND_MEMORY2),
    ] {
        if let Some(record) = version.record_struct(kind) {
            println!("  {name:<18} {:<34} {:?} {} bytes", record.c_name(), record.layout(), record.size());
        }
    }
    let optional = [
        ("cuptiActivityRegisterTimestampCallback", cupti.activity_register_timestamp_callback.is_some()),
        ("cuptiActivityFlushPeriod", cupti.activity_flush_period.is_some()),
        ("cuptiGetStreamIdEx", cupti.get_stream_id_ex.is_some()),
        ("cuptiActivityEnableDriverApi", cupti.activity_enable_driver_api.is_some()),
        ("cuptiActivityEnableRuntimeApi", cupti.activity_enable_runtime_api.is_some()),
        ("cuptiActivityPushExternalCorrelationId", cupti.activity_push_external_correlation_id.is_some()),
    ];
    for (name, present) in optional {
        println!("  {name}: {}", if present { "present" } else { "absent" });
    }
    let mut now = 0;
    // SAFETY: cuptiGetTimestamp writes one u64 to a valid pointer.
    match cupti.check("cuptiGetTimestamp", unsafe { (cupti.get_timestamp)(&mut now) }) {
        Ok(()) => println!("cuptiGetTimestamp: {now} ns"),
        Err(error) => println!("{error}"),
    }
    ExitCode::SUCCESS
}
