//! NCCL's own ranges, handed to gputrace's NCCL plugin.
//!
//! NCCL annotates its API functions with push/pop ranges in an NVTX
//! domain named "NCCL" (`ncclAllReduce`, `ncclGroupStart`,
//! `ncclCommInitRank`, ...), with a payload that gives the communicator's
//! hash and the call's bytes. The NCCL plugin records the same calls
//! from NCCL's profiler events; recorded here too, every call would be
//! there twice, and the two could not nest (NCCL starts a group's
//! profiler event inside the group's first call). So when the plugin
//! records, the ranges of the "NCCL" domain are handed to it — it
//! records each call once, as the user made it, with what the ranges
//! add (`ncclGroupStart`, collectives of count 0, which NCCL reports no
//! profiler event for, `ncclAlltoAll` as one call) — and nothing of that
//! domain is recorded here. Without the plugin (`GPUTRACE_NCCL_ENABLE=no`,
//! or another plugin named by `NCCL_PROFILER_PLUGIN`) they are ordinary
//! NVTX ranges of domain NCCL.
//!
//! The plugin is found through `NCCL_PROFILER_PLUGIN` (gputrace sets it to
//! the plugin's full path), opened once — NCCL's own `dlopen` of the same
//! path later gets the same library — and asked whether it records.

use std::ffi::{CString, c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;

/// The plugin's library name: only gputrace's plugin is opened.
const PLUGIN: &str = "libgputrace_nccl.so";

type Recording = extern "C" fn() -> c_int;
type Push = unsafe extern "C" fn(*const c_char, usize, u64, *const c_void, usize);
type Pop = unsafe extern "C" fn(u64, *const c_void, usize);

/// The plugin's entry points for NCCL's ranges.
#[derive(Clone, Copy, Debug)]
pub struct NcclPlugin {
    push: Push,
    pop: Pop,
}

/// A range's payload as NCCL gives it: the schema id and the bytes.
pub type Binary<'a> = Option<(u64, &'a [u8])>;

impl NcclPlugin {
    /// The plugin, if it is gputrace's and records.
    pub fn find(config: &config::Config) -> Option<NcclPlugin> {
        if config.nccl_enable.is_empty() {
            return None;
        }
        let path = std::env::var_os("NCCL_PROFILER_PLUGIN")?;
        let p = std::path::Path::new(&path);
        if !p.is_absolute() || p.file_name().is_none_or(|n| n.as_bytes() != PLUGIN.as_bytes()) {
            return None;
        }
        let c = CString::new(path.as_bytes()).ok()?;
        // SAFETY: a NUL-terminated path to gputrace's plugin, which starts
        // nothing when loaded (it starts at its first call).
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return None;
        }
        let sym = |name: &std::ffi::CStr| {
            // SAFETY: `h` is a live handle (never closed: the plugin is
            // linked -z nodelete); `name` is NUL-terminated.
            let f = unsafe { libc::dlsym(h, name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        let (recording, push, pop) =
            (sym(c"gputrace_nccl_nvtx_recording")?, sym(c"gputrace_nccl_nvtx_push")?, sym(c"gputrace_nccl_nvtx_pop")?);
        // SAFETY: the plugin defines these symbols with these signatures
        // (crates/producers/nccl/src/exports/mod.rs).
        let (recording, push, pop) = unsafe {
            (
                std::mem::transmute::<*mut c_void, Recording>(recording),
                std::mem::transmute::<*mut c_void, Push>(push),
                std::mem::transmute::<*mut c_void, Pop>(pop),
            )
        };
        (recording() == 1).then_some(NcclPlugin { push, pop })
    }

    /// A range of the domain begins on the calling thread.
    pub fn push(&self, name: &[u8], payload: Binary<'_>) {
        let (schema, data, size) = raw_payload(payload);
        // SAFETY: the pointers are valid for the call's duration.
        unsafe { (self.push)(name.as_ptr().cast(), name.len(), schema, data, size) }
    }

    /// The innermost range of the domain on the calling thread ends.
    pub fn pop(&self, payload: Binary<'_>) {
        let (schema, data, size) = raw_payload(payload);
        // SAFETY: as in `push`.
        unsafe { (self.pop)(schema, data, size) }
    }
}

fn raw_payload(payload: Binary<'_>) -> (u64, *const c_void, usize) {
    match payload {
        Some((schema, data)) => (schema, data.as_ptr().cast(), data.len()),
        None => (0, std::ptr::null(), 0),
    }
}
