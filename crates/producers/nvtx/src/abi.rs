//! The C side of NVTX's injection interface, declared from the NVTX v3
//! headers (`nvToolsExt.h`, `nvtxDetail/nvtxTypes.h`, and for the payload
//! extension `nvtxExtTypes.h` and `nvToolsExtPayload.h`): the export
//! tables an NVTX instance hands its injection library, the ids of the
//! function slots the library fills, and the structures the annotation
//! calls pass. Declarations only; the one place that writes C memory is
//! [`fill_module`].

use std::ffi::{c_int, c_uint, c_void};

/// `NvtxGetExportTableFunc_t`: what an NVTX instance passes to
/// `InitializeInjectionNvtx2`.
pub type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;

/// `NVTX_ETID_CALLBACKS`: the table whose `GetModuleFunctionTable` hands
/// out a module's function slots.
pub const ETID_CALLBACKS: u32 = 1;
/// `NVTX_ETID_VERSIONINFO`.
pub const ETID_VERSIONINFO: u32 = 3;

/// `NVTX_CB_MODULE_CORE`: marks, ranges, categories and thread names of
/// the default domain.
pub const MODULE_CORE: c_int = 1;
/// `NVTX_CB_MODULE_CORE2`: the domain variants, registered strings,
/// resources.
pub const MODULE_CORE2: c_int = 5;
/// `NVTX_CB_MODULE_CUDA`: naming driver-API objects (`nvtxNameCuDevice`,
/// `nvtxNameCuContext`, `nvtxNameCuStream`, `nvtxNameCuEvent`, A and W).
pub const MODULE_CUDA: c_int = 2;
/// `NVTX_CB_MODULE_CUDART`: naming runtime objects (`nvtxNameCudaDevice`,
/// `nvtxNameCudaStream`, `nvtxNameCudaEvent`, A and W).
pub const MODULE_CUDART: c_int = 4;

/// `NvtxCallbackIdCuda`: slot indices of the CUDA module.
pub mod cuda {
    pub const NAME_DEVICE_A: usize = 1;
    pub const NAME_DEVICE_W: usize = 2;
    pub const NAME_CONTEXT_A: usize = 3;
    pub const NAME_CONTEXT_W: usize = 4;
    pub const NAME_STREAM_A: usize = 5;
    pub const NAME_STREAM_W: usize = 6;
}

/// `NvtxCallbackIdCudaRt`: slot indices of the CUDART module.
pub mod cudart {
    pub const NAME_DEVICE_A: usize = 1;
    pub const NAME_DEVICE_W: usize = 2;
    pub const NAME_STREAM_A: usize = 3;
    pub const NAME_STREAM_W: usize = 4;
}

/// `NvtxCallbackIdCore`: slot indices of the CORE module.
pub mod core {
    pub const MARK_EX: usize = 1;
    pub const MARK_A: usize = 2;
    pub const MARK_W: usize = 3;
    pub const RANGE_START_EX: usize = 4;
    pub const RANGE_START_A: usize = 5;
    pub const RANGE_START_W: usize = 6;
    pub const RANGE_END: usize = 7;
    pub const RANGE_PUSH_EX: usize = 8;
    pub const RANGE_PUSH_A: usize = 9;
    pub const RANGE_PUSH_W: usize = 10;
    pub const RANGE_POP: usize = 11;
    pub const NAME_CATEGORY_A: usize = 12;
    pub const NAME_CATEGORY_W: usize = 13;
    pub const NAME_OS_THREAD_A: usize = 14;
    pub const NAME_OS_THREAD_W: usize = 15;
}

/// `NvtxCallbackIdCore2`: slot indices of the CORE2 module.
pub mod core2 {
    pub const DOMAIN_MARK_EX: usize = 1;
    pub const DOMAIN_RANGE_START_EX: usize = 2;
    pub const DOMAIN_RANGE_END: usize = 3;
    pub const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub const DOMAIN_RANGE_POP: usize = 5;
    pub const DOMAIN_RESOURCE_CREATE: usize = 6;
    pub const DOMAIN_RESOURCE_DESTROY: usize = 7;
    pub const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub const DOMAIN_NAME_CATEGORY_W: usize = 9;
    pub const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub const DOMAIN_CREATE_A: usize = 12;
    pub const DOMAIN_CREATE_W: usize = 13;
    pub const DOMAIN_DESTROY: usize = 14;
}

/// A module's function table: an array of pointers to the instance's
/// function-pointer slots (`NvtxFunctionTable`, `NvtxFunctionPointer**`).
pub type FunctionTable = *mut *mut *const c_void;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub struct ExportTableCallbacks {
    pub struct_size: usize,
    pub get_module_function_table:
        Option<unsafe extern "C" fn(module: c_int, out_table: *mut FunctionTable, out_size: *mut c_uint) -> c_int>,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
pub struct ExportTableVersionInfo {
    pub struct_size: usize,
    /// The NVTX API version of the instance.
    pub version: u32,
    pub reserved0: u32,
    pub set_injection_nvtx_version: Option<unsafe extern "C" fn(version: u32)>,
}

/// The NVTX API version this library implements (`NVTX_VERSION`).
pub const NVTX_VERSION: u32 = 3;

/// `nvtxColorType_t`: `NVTX_COLOR_ARGB`.
pub const COLOR_ARGB: i32 = 1;

/// `nvtxMessageType_t`.
pub const MESSAGE_ASCII: i32 = 1;
pub const MESSAGE_UNICODE: i32 = 2;
pub const MESSAGE_REGISTERED: i32 = 3;

/// `nvtxPayloadType_t`.
pub const PAYLOAD_U64: i32 = 1;
pub const PAYLOAD_I64: i32 = 2;
pub const PAYLOAD_DOUBLE: i32 = 3;
pub const PAYLOAD_U32: i32 = 4;
pub const PAYLOAD_I32: i32 = 5;
pub const PAYLOAD_FLOAT: i32 = 6;

/// `nvtxEventAttributes_v2`: 48 bytes. The payload union is kept as its
/// eight bytes (32-bit members in the low four, little-endian); the
/// message union as one pointer (a C string, a `wchar_t` string or a
/// registered string handle, as `message_type` says).
#[repr(C)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    pub message_type: i32,
    pub message: *const c_void,
}

/// `nvtxResourceGenericType_t`: `NVTX_RESOURCE_TYPE_GENERIC_THREAD_NATIVE`
/// (class GENERIC = 1 in the high 16 bits, index 3): the identifier is an
/// OS thread id.
pub const RESOURCE_THREAD_NATIVE: i32 = (1 << 16) | 3;

/// `nvtxResourceAttributes_v0`: 32 bytes.
#[repr(C)]
pub struct ResourceAttributes {
    pub version: u16,
    pub size: u16,
    pub identifier_type: i32,
    /// The identifier union (`pValue` or `ullValue`).
    pub identifier: u64,
    pub message_type: i32,
    pub message: *const c_void,
}

/// The payload extension's module id (`NVTX_EXT_PAYLOAD_MODULEID`).
pub const EXT_PAYLOAD_MODULE: u16 = 2;
/// Its slot of `nvtxDomainIsEnabled` (`NVTX3EXT_CBID_nvtxDomainIsEnabled`).
pub const EXT_PAYLOAD_DOMAIN_IS_ENABLED: usize = 7;

/// Its slots of `nvtxRangePushPayload` and `nvtxRangePopPayload`
/// (`NVTX3EXT_CBID_*`): NCCL ends `ncclCommInitRank` and the other
/// functions that know their communicator only at the end with a pop that
/// carries the payload, and a pop that is not answered leaves the range
/// open.
pub const EXT_PAYLOAD_RANGE_PUSH: usize = 3;
pub const EXT_PAYLOAD_RANGE_POP: usize = 4;

/// `NVTX_PAYLOAD_TYPE_EXT`: the attributes' payload is a pointer to
/// `reserved0` `nvtxPayloadData_t`.
pub const PAYLOAD_EXT: i32 = 0xDFBD_0009_u32 as i32;

/// `nvtxPayloadData_t`: a schema id and `size` bytes at `payload`.
#[repr(C)]
pub struct PayloadData {
    pub schema_id: u64,
    pub size: usize,
    pub payload: *const c_void,
}

/// `nvtxExtModuleSegment_t`.
#[repr(C)]
pub struct ExtModuleSegment {
    pub segment_id: usize,
    pub slot_count: usize,
    pub function_slots: *mut isize,
}

/// `nvtxExtModuleInfo_t`: what an extension passes to
/// `InitializeInjectionNvtxExtension`.
#[repr(C)]
pub struct ExtModuleInfo {
    pub nvtx_ver: u16,
    pub struct_size: u16,
    pub module_id: u16,
    pub compat_id: u16,
    pub segments_count: usize,
    pub segments: *mut ExtModuleSegment,
    pub get_export_function: *const c_void,
    pub ext_info: *const c_void,
}

/// Fills `module`'s slots with `entries` (slot index, function), those the
/// instance has; false when the instance offers no such table.
///
/// # Safety
///
/// `get` is the export-table function an NVTX instance passed to
/// `InitializeInjectionNvtx2`, called during that initialization; each
/// entry's function has the C signature NVTX declares for its slot.
pub unsafe fn fill_module(get: GetExportTable, module: c_int, entries: &[(usize, *const c_void)]) -> bool {
    // SAFETY: `get` is NVTX's, per the contract; it returns null or its
    // static table.
    let callbacks = unsafe { get(ETID_CALLBACKS) }.cast::<ExportTableCallbacks>();
    if callbacks.is_null() {
        return false;
    }
    // SAFETY: a non-null callbacks table is NVTX's static struct, whose
    // first field says how large it is.
    let callbacks = unsafe { &*callbacks };
    if callbacks.struct_size < std::mem::size_of::<ExportTableCallbacks>() {
        return false;
    }
    let Some(get_table) = callbacks.get_module_function_table else { return false };
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: NVTX's function, with valid out-pointers.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(index, function) in entries {
        if index >= size as usize {
            continue;
        }
        // SAFETY: the table has `size` + 1 entries (index 0 unused), each
        // null or the address of one of the instance's function-pointer
        // slots, which NVTX lets the injection write during its
        // initialization (the instance reads them only afterwards).
        unsafe {
            let slot = *table.add(index);
            if !slot.is_null() {
                *slot = function;
            }
        }
    }
    true
}

/// Tells the instance which NVTX version this library implements.
///
/// # Safety
///
/// As [`fill_module`].
pub unsafe fn announce_version(get: GetExportTable) {
    // SAFETY: as in `fill_module`.
    let info = unsafe { get(ETID_VERSIONINFO) }.cast::<ExportTableVersionInfo>();
    if info.is_null() {
        return;
    }
    // SAFETY: NVTX's static struct, sized by its first field.
    let info = unsafe { &*info };
    if info.struct_size >= std::mem::size_of::<ExportTableVersionInfo>()
        && let Some(set) = info.set_injection_nvtx_version
    {
        // SAFETY: NVTX's function, taking a version number.
        unsafe { set(NVTX_VERSION) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_headers() {
        assert_eq!(std::mem::size_of::<EventAttributes>(), 48);
        assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<ResourceAttributes>(), 32);
        assert_eq!(std::mem::offset_of!(ResourceAttributes, message), 24);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
        assert_eq!(std::mem::size_of::<ExtModuleInfo>(), 40);
    }
}
