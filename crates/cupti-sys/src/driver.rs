//! The two CUDA driver functions the agent needs beside CUPTI: a device's
//! handle by ordinal and its UUID (to find the same GPU in NVML). The
//! agent runs inside a process whose libcuda loaded it, so the symbols are
//! looked up in the process, never linked.

use std::ffi::{c_int, c_void};

type DeviceGetFn = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type DeviceGetUuidFn = unsafe extern "C" fn(*mut [u8; 16], c_int) -> c_int;

fn symbol(name: &[u8]) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym with RTLD_DEFAULT only reads it.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) }
}

/// The UUID of the CUDA device with this ordinal, from the libcuda already
/// loaded in the process; `None` if there is none or the call fails.
pub fn device_uuid(ordinal: u32) -> Option<[u8; 16]> {
    let get = symbol(b"cuDeviceGet\0");
    let mut uuid_fn = symbol(b"cuDeviceGetUuid_v2\0");
    if uuid_fn.is_null() {
        uuid_fn = symbol(b"cuDeviceGetUuid\0");
    }
    if get.is_null() || uuid_fn.is_null() {
        return None;
    }
    // SAFETY: both symbols are libcuda's functions of these C prototypes
    // (`CUresult cuDeviceGet(CUdevice*, int)`, `CUresult
    // cuDeviceGetUuid_v2(CUuuid*, CUdevice)`; CUdevice and CUresult are
    // ints, CUuuid 16 bytes).
    let (get, uuid_fn) = unsafe {
        (
            std::mem::transmute::<*mut c_void, DeviceGetFn>(get),
            std::mem::transmute::<*mut c_void, DeviceGetUuidFn>(uuid_fn),
        )
    };
    let mut dev: c_int = 0;
    let mut uuid = [0u8; 16];
    // SAFETY: the out-pointers are valid for writes of their types.
    let ok = unsafe { get(&mut dev, ordinal as c_int) == 0 && uuid_fn(&mut uuid, dev) == 0 };
    ok.then_some(uuid)
}
