//! Two calls of the CUDA driver the agent makes itself: a device's UUID
//! by its ordinal (`cuDeviceGet`, `cuDeviceGetUuid_v2`), for NVML, which
//! knows GPUs by UUID and not by CUDA ordinal (`CUDA_VISIBLE_DEVICES`
//! renumbers them). The driver is the one already in the process: it is
//! what loaded the agent (`RTLD_NOLOAD`; nothing is loaded here).

use std::ffi::c_int;

use libloading::os::unix::{Library, RTLD_NOW};

/// `CUresult` (0 is `CUDA_SUCCESS`).
type CuResult = c_int;
type DeviceGetFn = unsafe extern "C" fn(*mut c_int, c_int) -> CuResult;
type DeviceGetUuidFn = unsafe extern "C" fn(*mut [u8; 16], c_int) -> CuResult;

/// `dlopen`'s RTLD_NOLOAD: the library only if it is loaded already.
const RTLD_NOLOAD: c_int = 4;

/// The UUID of the GPU with CUDA ordinal `ordinal`, from the driver
/// loaded in this process; `None` where there is none or it fails.
///
/// Call it off CUPTI's callbacks and off the program's threads: it is a
/// driver API call, which CUPTI records like any other (the agent leaves
/// its own threads' calls out of the trace).
pub fn device_uuid(ordinal: u32) -> Option<[u8; 16]> {
    // SAFETY: RTLD_NOLOAD opens nothing new: it returns the driver that
    // is already loaded (and initialized: it loaded the agent), whose
    // initializers have run.
    let lib = unsafe { Library::open(Some("libcuda.so.1"), RTLD_NOW | RTLD_NOLOAD) }.ok()?;
    // SAFETY: the types are those cuda.h declares for these symbols
    // (CUdevice is an int; CUuuid is 16 bytes).
    let (get, uuid) = unsafe {
        (*lib.get::<DeviceGetFn>(b"cuDeviceGet\0").ok()?, *lib.get::<DeviceGetUuidFn>(b"cuDeviceGetUuid_v2\0").ok()?)
    };
    let mut device: c_int = 0;
    // SAFETY: `device` is writable; an out-of-range ordinal is an error
    // return, not undefined behaviour.
    if unsafe { get(&mut device, c_int::try_from(ordinal).ok()?) } != 0 {
        return None;
    }
    let mut out = [0u8; 16];
    // SAFETY: `out` is 16 writable bytes, a CUuuid.
    (unsafe { uuid(&mut out, device) } == 0).then_some(out)
}
