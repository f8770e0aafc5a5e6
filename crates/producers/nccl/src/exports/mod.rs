//! The symbols NCCL looks up — `ncclProfiler_v6` down to `ncclProfiler_v1`,
//! newest first — and the conversion of each version's descriptors and
//! state arguments into the plugin's own [`model`](crate::model).
//!
//! This is the thin layer above [`abi`](crate::abi): it reads C memory and
//! nothing else; what an event means is decided once, in
//! [`profiler`](crate::profiler), through [`live`](crate::live).

#![allow(non_upper_case_globals)]

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::abi::*;
use crate::live;
use crate::model::{Descr, InitArgs, NvtxPayload, NvtxRange, Start, Sym};

const NAME: &CStr = c"gputrace";

mod descr;

use descr::{descr_v1, descr_v2, descr_v3, descr_v4, descr_v5, descr_v6, opt_string, state_v1, state_v4};

/// # Safety
///
/// `d` is null or NCCL's descriptor; read through `convert`.
unsafe fn start_with<D>(d: *const D, parent: impl Fn(&D) -> (usize, i32), convert: unsafe fn(&D) -> Descr) -> Start {
    // SAFETY: per the contract.
    match unsafe { d.as_ref() } {
        Some(d) => {
            let (parent, rank) = parent(d);
            // SAFETY: per the contract.
            Start { descr: unsafe { convert(d) }, parent, rank }
        }
        None => Start { descr: Descr::Unsupported { type_bits: 0 }, parent: 0, rank: 0 },
    }
}

macro_rules! entry_points {
    ($start:ident, $state:ident, $descr_ty:ty, $convert:ident, $args_ty:ty, $state_conv:ident) => {
        unsafe extern "C" fn $start(ctx: *mut c_void, handle: *mut *mut c_void, d: *mut $descr_ty) -> NcclResult {
            // SAFETY: NCCL passes a valid out-pointer and its descriptor.
            unsafe {
                live::start(ctx, handle, || {
                    start_with(d.cast_const(), |d: &$descr_ty| (d.parentObj as usize, d.rank), $convert)
                })
            }
        }

        unsafe extern "C" fn $state(handle: *mut c_void, code: c_int, args: *mut $args_ty) -> NcclResult {
            // SAFETY: NCCL passes one of our handles and its arguments.
            unsafe { live::state(handle, || $state_conv(code, args.cast_const())) }
        }
    };
}

entry_points!(start_v1, state_v1_fn, EventDescr_v1, descr_v1, EventStateArgs_v1, state_v1);
entry_points!(start_v2, state_v2_fn, EventDescr_v2, descr_v2, EventStateArgs_v1, state_v1);
entry_points!(start_v3, state_v3_fn, EventDescr_v3, descr_v3, EventStateArgs_v1, state_v1);
entry_points!(start_v4, state_v4_fn, EventDescr_v4, descr_v4, EventStateArgs_v4, state_v4);
entry_points!(start_v5, state_v5_fn, EventDescr_v5, descr_v5, EventStateArgs_v4, state_v4);
entry_points!(start_v6, state_v6_fn, EventDescr_v6, descr_v6, EventStateArgs_v4, state_v4);

unsafe extern "C" fn stop(handle: *mut c_void) -> NcclResult {
    // SAFETY: NCCL passes one of our handles, once.
    unsafe { live::stop(handle) }
}

unsafe extern "C" fn finalize(ctx: *mut c_void) -> NcclResult {
    live::finalize(ctx)
}

unsafe extern "C" fn init_v1(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: NCCL passes valid out-pointers.
    unsafe { live::init(ctx, mask, || InitArgs { version: 1, ..InitArgs::default() }) }
}

unsafe extern "C" fn init_v2(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: as above.
    unsafe { live::init(ctx, mask, || InitArgs { version: 2, ..InitArgs::default() }) }
}

unsafe extern "C" fn init_v3(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: as above.
    unsafe { live::init(ctx, mask, || InitArgs { version: 3, ..InitArgs::default() }) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v4(
    ctx: *mut *mut c_void,
    mask: *mut c_int,
    comm_name: *const c_char,
    comm_hash: u64,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: NCCL passes valid out-pointers and a NUL-terminated name or
    // null.
    unsafe {
        live::init(ctx, mask, || InitArgs {
            version: 4,
            comm_id: Some(comm_hash),
            name: opt_string(comm_name),
            n_nodes: Some(n_nodes),
            nranks: Some(nranks),
            rank: Some(rank),
        })
    }
}

/// v5 and v6 take the same arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn init_api(
    version: u32,
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe {
        live::init(ctx, mask, || InitArgs {
            version,
            comm_id: Some(comm_id),
            name: opt_string(comm_name),
            n_nodes: Some(n_nodes),
            nranks: Some(nranks),
            rank: Some(rank),
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v5(
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe { init_api(5, ctx, comm_id, mask, comm_name, n_nodes, nranks, rank) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v6(
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe { init_api(6, ctx, comm_id, mask, comm_name, n_nodes, nranks, rank) }
}

/// NCCL 2.29 and later.
#[unsafe(no_mangle)]
pub static ncclProfiler_v6: Profiler_v6 = Profiler_v6 {
    name: NAME.as_ptr(),
    init: init_v6,
    startEvent: start_v6,
    stopEvent: stop,
    recordEventState: state_v6_fn,
    finalize,
};

/// NCCL 2.28.
#[unsafe(no_mangle)]
pub static ncclProfiler_v5: Profiler_v5 = Profiler_v5 {
    name: NAME.as_ptr(),
    init: init_v5,
    startEvent: start_v5,
    stopEvent: stop,
    recordEventState: state_v5_fn,
    finalize,
};

/// NCCL 2.27.
#[unsafe(no_mangle)]
pub static ncclProfiler_v4: Profiler_v4 = Profiler_v4 {
    name: NAME.as_ptr(),
    init: init_v4,
    startEvent: start_v4,
    stopEvent: stop,
    recordEventState: state_v4_fn,
    finalize,
};

/// NCCL 2.26.
#[unsafe(no_mangle)]
pub static ncclProfiler_v3: Profiler_v3 = Profiler_v3 {
    name: NAME.as_ptr(),
    init: init_v3,
    startEvent: start_v3,
    stopEvent: stop,
    recordEventState: state_v3_fn,
    finalize,
};

/// NCCL 2.24 and 2.25.
#[unsafe(no_mangle)]
pub static ncclProfiler_v2: Profiler_v2 = Profiler_v2 {
    name: NAME.as_ptr(),
    init: init_v2,
    startEvent: start_v2,
    stopEvent: stop,
    recordEventState: state_v2_fn,
    finalize,
};

/// NCCL 2.23.
#[unsafe(no_mangle)]
pub static ncclProfiler_v1: Profiler_v1 = Profiler_v1 {
    name: NAME.as_ptr(),
    init: init_v1,
    startEvent: start_v1,
    stopEvent: stop,
    recordEventState: state_v1_fn,
    finalize,
};

// ---- NCCL's NVTX ranges, from gputrace's NVTX library ----
//
// NCCL annotates its API functions with NVTX ranges (domain "NCCL").
// gputrace's NVTX library, which receives them, finds these three
// functions (it opens this library by the path in NCCL_PROFILER_PLUGIN)
// and hands the ranges over instead of recording them itself, so that
// the plugin records each call once, as the user made it
// (`docs/nccl.md`, *NCCL's NVTX ranges*).

/// 1 when the plugin records: the NVTX library then hands NCCL's ranges
/// over; 0 and it records them itself.
#[unsafe(no_mangle)]
pub extern "C" fn gputrace_nccl_nvtx_recording() -> c_int {
    c_int::from(live::nvtx_recording())
}

/// Reads a payload: `schema_id` and `size` bytes at `data`.
///
/// # Safety
///
/// `data` is null or points to `size` readable bytes.
unsafe fn nvtx_payload(schema_id: u64, data: *const c_void, size: usize) -> Option<NvtxPayload> {
    if data.is_null() || size == 0 || size > 4096 {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    NvtxPayload::decode(schema_id, bytes)
}

/// One of NCCL's NVTX ranges begins on the calling thread: its message
/// (`len` bytes of UTF-8 at `name`) and its payload (`schema_id`, `size`
/// bytes at `data`; null when it has none).
///
/// # Safety
///
/// `name` points to `len` readable bytes; `data` is null or points to
/// `size` readable bytes; both for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gputrace_nccl_nvtx_push(
    name: *const c_char,
    len: usize,
    schema_id: u64,
    data: *const c_void,
    size: usize,
) {
    live::nvtx_push(|| {
        let text: &[u8] = if name.is_null() {
            &[]
        } else {
            // SAFETY: per the contract.
            unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) }
        };
        // SAFETY: per the contract.
        let payload = unsafe { nvtx_payload(schema_id, data, size) };
        NvtxRange { name: Sym::from_bytes(text), payload }
    });
}

/// The innermost of NCCL's NVTX ranges on the calling thread ends, with
/// the payload NCCL gave at its end (null: none).
///
/// # Safety
///
/// `data` is null or points to `size` readable bytes for the duration of
/// the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gputrace_nccl_nvtx_pop(schema_id: u64, data: *const c_void, size: usize) {
    // SAFETY: per the contract.
    live::nvtx_pop(|| unsafe { nvtx_payload(schema_id, data, size) });
}
