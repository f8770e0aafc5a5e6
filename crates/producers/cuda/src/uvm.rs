//! The unified-memory counters (`uvm` in `GPUTRACE_CUDA_ENABLE`):
//! configuring CUPTI for them and enabling their records, at set-up or,
//! when CUPTI is not ready yet, at the first context (see
//! [`crate::memory`] for what their records become).

use recorder::diag;

use cupti_sys::{self as sys, Cupti};

/// Configures the unified-memory counters and enables their records;
/// false when CUPTI is not ready for them yet (and `early`: the caller
/// tries again later); any other failure is one warning.
pub(crate) fn start_uvm(cupti: &Cupti, early: bool) -> bool {
    let not_ready = |rc| early && rc == sys::CUPTI_ERROR_NOT_READY;
    match configure_uvm(cupti) {
        Ok(()) => {}
        Err((rc, _)) if not_ready(rc) => return false,
        Err((_, why)) => {
            diag::warn_once(&format!("unified memory is not traced: {why}"));
            return true;
        }
    }
    match cupti.enable_kind(sys::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
        Err(e) if not_ready(e.code) => false,
        Err(e) => {
            diag::warn_once(&format!("unified memory is not traced: {e}"));
            true
        }
        Ok(()) => true,
    }
}

/// Configures the unified-memory counters gputrace records (every one of
/// [`crate::memory::UVM_COUNTERS`], for all devices of the process).
fn configure_uvm(cupti: &Cupti) -> Result<(), (sys::CUptiResult, String)> {
    let mut config: Vec<sys::CUpti_ActivityUnifiedMemoryCounterConfig> = crate::memory::UVM_COUNTERS
        .iter()
        .map(|&(kind, ..)| sys::CUpti_ActivityUnifiedMemoryCounterConfig {
            scope: sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES,
            kind,
            deviceId: 0,
            enable: 1,
        })
        .collect();
    let Some(first) = cupti.configure_unified_memory(&mut config) else {
        return Err((
            sys::CUPTI_ERROR_NOT_SUPPORTED,
            "this CUPTI lacks cuptiActivityConfigureUnifiedMemoryCounter".into(),
        ));
    };
    let Err(e) = first else { return Ok(()) };
    // Some drivers refuse one counter (thrashing, DtoD): try the four that
    // matter alone.
    config.retain(|c| matches!(c.kind, 1..=4));
    match cupti.configure_unified_memory(&mut config) {
        Some(Ok(())) => Ok(()),
        _ => Err((e.code, e.to_string())),
    }
}
