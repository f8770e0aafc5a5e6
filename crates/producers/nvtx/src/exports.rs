//! The symbols NVTX looks up — `InitializeInjectionNvtx2`, and for the
//! payload extension `InitializeInjectionNvtxExtension` — and the
//! functions this library puts in an NVTX instance's slots.
//!
//! This is the thin layer above [`abi`](crate::abi): it reads C memory
//! (strings, attribute structures) and nothing else; what an annotation
//! becomes is decided in [`annotations`](crate::annotations), through
//! [`live`](crate::live).

#![allow(non_snake_case)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::offset_of;

use crate::abi::{self, EventAttributes, ExtModuleInfo, GetExportTable, ResourceAttributes, core, core2, cuda, cudart};
use crate::annotations::{Attributes, Message, Payload};
use crate::live::{self, guarded};
use raw::CudaObject;
use recorder::guard::shield;

/// `wchar_t` on Linux.
type WChar = i32;

/// The longest wide string read (characters).
const MAX_WIDE: usize = 1 << 20;

/// The bytes of a C string; `None` for null.
///
/// # Safety
///
/// `p` is null or a NUL-terminated string.
unsafe fn c_bytes<'a>(p: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: per the contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// A wide (UTF-32) string as UTF-8, invalid code points replaced; empty
/// for null.
///
/// # Safety
///
/// `p` is null or a NUL-terminated `wchar_t` string.
unsafe fn wide(p: *const WChar) -> String {
    let mut out = String::new();
    if p.is_null() {
        return out;
    }
    for i in 0..MAX_WIDE {
        // SAFETY: the string is terminated, and we stop at the terminator.
        let c = unsafe { *p.add(i) };
        if c == 0 {
            break;
        }
        out.push(char::from_u32(c as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    out
}

/// A message union as `message_type` says; a wide message is converted
/// into `owned`.
///
/// # Safety
///
/// `message` is what the type says: a C string, a wide string, or one of
/// our registered-string handles (any number: it is looked up, never
/// dereferenced).
unsafe fn message<'a>(kind: i32, message: *const c_void, owned: &'a mut String) -> Message<'a> {
    match kind {
        // SAFETY: per the contract.
        abi::MESSAGE_ASCII => unsafe { c_bytes(message.cast()) }.map_or(Message::None, Message::Text),
        abi::MESSAGE_UNICODE => {
            // SAFETY: per the contract.
            *owned = unsafe { wide(message.cast()) };
            Message::Text(owned.as_bytes())
        }
        abi::MESSAGE_REGISTERED => Message::Registered(message as usize),
        _ => Message::None,
    }
}

/// Reads an event attribute structure, as far as its `size` says it goes,
/// and runs `f` with it.
///
/// # Safety
///
/// `p` is null or a valid `nvtxEventAttributes_t` of at least `size` bytes
/// whose message is what its type says.
unsafe fn with_attributes<R>(p: *const EventAttributes, f: impl FnOnce(&Attributes<'_>) -> R) -> R {
    let mut owned = String::new();
    if p.is_null() {
        return f(&Attributes::message(Message::None));
    }
    // SAFETY: per the contract; fields are read only below `size`.
    let a = unsafe { &*p };
    let size = usize::from(a.size);
    let has = |end: usize| size >= end;
    let mut attrs = Attributes::message(Message::None);
    if has(offset_of!(EventAttributes, category) + 4) {
        attrs.category = a.category;
    }
    if has(offset_of!(EventAttributes, color) + 4) && a.color_type == abi::COLOR_ARGB {
        attrs.color = Some(a.color);
    }
    if has(offset_of!(EventAttributes, payload) + 8) {
        let bits = a.payload;
        let low = bits as u32;
        if a.payload_type == abi::PAYLOAD_EXT && a.reserved0 >= 1 {
            // SAFETY: NVTX's payload extension: `payload` points to
            // `reserved0` payload data entries (the first is used).
            attrs.binary = unsafe { first_payload(bits as usize as *const abi::PayloadData, 1) };
        }
        attrs.payload = match a.payload_type {
            abi::PAYLOAD_U64 => Payload::Unsigned(bits),
            abi::PAYLOAD_I64 => Payload::Signed(bits as i64),
            abi::PAYLOAD_DOUBLE => Payload::Float(f64::from_bits(bits)),
            abi::PAYLOAD_U32 => Payload::Unsigned(u64::from(low)),
            abi::PAYLOAD_I32 => Payload::Signed(i64::from(low as i32)),
            abi::PAYLOAD_FLOAT => Payload::Float(f64::from(f32::from_bits(low))),
            _ => Payload::None,
        };
    }
    if has(offset_of!(EventAttributes, message) + 8) {
        // SAFETY: per the contract.
        attrs.message = unsafe { message(a.message_type, a.message, &mut owned) };
    }
    f(&attrs)
}

/// The first of `count` payload data entries at `p`: its schema id and
/// bytes.
///
/// # Safety
///
/// `p` is null or points to `count` valid `nvtxPayloadData_t`, each
/// pointing to its `size` bytes.
unsafe fn first_payload<'a>(p: *const abi::PayloadData, count: usize) -> Option<(u64, &'a [u8])> {
    if p.is_null() || count == 0 {
        return None;
    }
    // SAFETY: per the contract.
    let d = unsafe { &*p };
    if d.payload.is_null() || d.size == 0 || d.size > 4096 {
        return None;
    }
    // SAFETY: per the contract.
    Some((d.schema_id, unsafe { std::slice::from_raw_parts(d.payload.cast::<u8>(), d.size) }))
}

fn handle(h: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(h)
}

// ---- CORE ----

unsafe extern "C" fn mark_ex(attr: *const EventAttributes) {
    // SAFETY: NVTX passes the program's attributes.
    guarded((), |a| unsafe { with_attributes(attr, |x| a.mark(0, x)) });
}

unsafe extern "C" fn mark_a(text: *const c_char) {
    // SAFETY: NVTX passes the program's C string.
    let m = unsafe { c_bytes(text) }.map_or(Message::None, Message::Text);
    guarded((), |a| a.mark(0, &Attributes::message(m)));
}

unsafe extern "C" fn mark_w(text: *const WChar) {
    guarded((), |a| {
        // SAFETY: NVTX passes the program's wide string.
        let s = unsafe { wide(text) };
        a.mark(0, &Attributes::text(&s))
    });
}

unsafe extern "C" fn range_start_ex(attr: *const EventAttributes) -> u64 {
    // SAFETY: as `mark_ex`.
    guarded(0, |a| unsafe { with_attributes(attr, |x| a.range_start(0, x)) })
}

unsafe extern "C" fn range_start_a(text: *const c_char) -> u64 {
    // SAFETY: as `mark_a`.
    let m = unsafe { c_bytes(text) }.map_or(Message::None, Message::Text);
    guarded(0, |a| a.range_start(0, &Attributes::message(m)))
}

unsafe extern "C" fn range_start_w(text: *const WChar) -> u64 {
    guarded(0, |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(text) };
        a.range_start(0, &Attributes::text(&s))
    })
}

extern "C" fn range_end(id: u64) {
    guarded((), |a| a.range_end(id));
}

unsafe extern "C" fn range_push_ex(attr: *const EventAttributes) -> c_int {
    // SAFETY: as `mark_ex`.
    guarded(0, |a| unsafe { with_attributes(attr, |x| a.push(0, x)) })
}

unsafe extern "C" fn range_push_a(text: *const c_char) -> c_int {
    // SAFETY: as `mark_a`.
    let m = unsafe { c_bytes(text) }.map_or(Message::None, Message::Text);
    guarded(0, |a| a.push(0, &Attributes::message(m)))
}

unsafe extern "C" fn range_push_w(text: *const WChar) -> c_int {
    guarded(0, |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(text) };
        a.push(0, &Attributes::text(&s))
    })
}

extern "C" fn range_pop() -> c_int {
    guarded(-1, |a| a.pop(0))
}

unsafe extern "C" fn name_category_a(category: u32, name: *const c_char) {
    // SAFETY: as `mark_a`.
    let name = unsafe { c_bytes(name) }.unwrap_or_default();
    guarded((), |a| a.name_category(0, category, &String::from_utf8_lossy(name)));
}

unsafe extern "C" fn name_category_w(category: u32, name: *const WChar) {
    guarded((), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(name) };
        a.name_category(0, category, &s)
    });
}

unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    // SAFETY: as `mark_a`.
    let name = unsafe { c_bytes(name) }.unwrap_or_default();
    guarded((), |a| a.name_thread(tid, &String::from_utf8_lossy(name)));
}

unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const WChar) {
    guarded((), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(name) };
        a.name_thread(tid, &s)
    });
}

// ---- CUDA and CUDART (naming CUDA objects) ----

/// Names a CUDA object from an ASCII name.
unsafe fn name_cuda_a(kind: CudaObject, handle: u64, name: *const c_char) {
    // SAFETY: as `mark_a`.
    let name = unsafe { c_bytes(name) }.unwrap_or_default();
    guarded((), |a| a.name_cuda(kind, handle, &String::from_utf8_lossy(name)));
}

/// Names a CUDA object from a wide name.
unsafe fn name_cuda_w(kind: CudaObject, handle: u64, name: *const WChar) {
    guarded((), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(name) };
        a.name_cuda(kind, handle, &s)
    });
}

// A CUdevice is the device's ordinal (an int), as is the runtime's
// device; contexts and streams are pointers, passed as numbers.
unsafe extern "C" fn name_cu_device_a(device: c_int, name: *const c_char) {
    // SAFETY: NVTX's arguments.
    unsafe { name_cuda_a(CudaObject::Device, device as u64, name) }
}
unsafe extern "C" fn name_cu_device_w(device: c_int, name: *const WChar) {
    // SAFETY: NVTX's arguments.
    unsafe { name_cuda_w(CudaObject::Device, device as u64, name) }
}
unsafe extern "C" fn name_cu_context_a(context: *const c_void, name: *const c_char) {
    // SAFETY: NVTX's arguments; the handle is never dereferenced.
    unsafe { name_cuda_a(CudaObject::Context, context as u64, name) }
}
unsafe extern "C" fn name_cu_context_w(context: *const c_void, name: *const WChar) {
    // SAFETY: as above.
    unsafe { name_cuda_w(CudaObject::Context, context as u64, name) }
}
unsafe extern "C" fn name_cu_stream_a(stream: *const c_void, name: *const c_char) {
    // SAFETY: as above.
    unsafe { name_cuda_a(CudaObject::Stream, stream as u64, name) }
}
unsafe extern "C" fn name_cu_stream_w(stream: *const c_void, name: *const WChar) {
    // SAFETY: as above.
    unsafe { name_cuda_w(CudaObject::Stream, stream as u64, name) }
}

fn cuda_entries() -> [(usize, *const c_void); 6] {
    [
        (cuda::NAME_DEVICE_A, slot(name_cu_device_a as *const ())),
        (cuda::NAME_DEVICE_W, slot(name_cu_device_w as *const ())),
        (cuda::NAME_CONTEXT_A, slot(name_cu_context_a as *const ())),
        (cuda::NAME_CONTEXT_W, slot(name_cu_context_w as *const ())),
        (cuda::NAME_STREAM_A, slot(name_cu_stream_a as *const ())),
        (cuda::NAME_STREAM_W, slot(name_cu_stream_w as *const ())),
    ]
}

/// The runtime's device and stream names take the same arguments as the
/// driver's (`int`, `cudaStream_t` = `CUstream`).
fn cudart_entries() -> [(usize, *const c_void); 4] {
    [
        (cudart::NAME_DEVICE_A, slot(name_cu_device_a as *const ())),
        (cudart::NAME_DEVICE_W, slot(name_cu_device_w as *const ())),
        (cudart::NAME_STREAM_A, slot(name_cu_stream_a as *const ())),
        (cudart::NAME_STREAM_W, slot(name_cu_stream_w as *const ())),
    ]
}

// ---- CORE2 (domains) ----

unsafe extern "C" fn domain_mark_ex(domain: *const c_void, attr: *const EventAttributes) {
    // SAFETY: as `mark_ex`; the domain is looked up, never dereferenced.
    guarded((), |a| unsafe { with_attributes(attr, |x| a.mark(domain as usize, x)) });
}

unsafe extern "C" fn domain_range_start_ex(domain: *const c_void, attr: *const EventAttributes) -> u64 {
    // SAFETY: as `domain_mark_ex`.
    guarded(0, |a| unsafe { with_attributes(attr, |x| a.range_start(domain as usize, x)) })
}

extern "C" fn domain_range_end(_domain: *const c_void, id: u64) {
    guarded((), |a| a.range_end(id));
}

unsafe extern "C" fn domain_range_push_ex(domain: *const c_void, attr: *const EventAttributes) -> c_int {
    // SAFETY: as `domain_mark_ex`.
    guarded(0, |a| unsafe { with_attributes(attr, |x| a.push(domain as usize, x)) })
}

extern "C" fn domain_range_pop(domain: *const c_void) -> c_int {
    guarded(-1, |a| a.pop(domain as usize))
}

unsafe extern "C" fn domain_resource_create(domain: *const c_void, attr: *const ResourceAttributes) -> *mut c_void {
    let fallback = handle(usize::MAX);
    guarded(fallback, |a| {
        if attr.is_null() {
            return handle(a.resource_create(domain as usize, 0, 0, Message::None));
        }
        // SAFETY: NVTX passes the program's resource attributes, read
        // only below their `size`.
        let r = unsafe { &*attr };
        let size = usize::from(r.size);
        let mut owned = String::new();
        let (kind, id) = if size >= offset_of!(ResourceAttributes, identifier) + 8 {
            (r.identifier_type, r.identifier)
        } else {
            (0, 0)
        };
        let m = if size >= offset_of!(ResourceAttributes, message) + 8 {
            // SAFETY: as `message`.
            unsafe { message(r.message_type, r.message, &mut owned) }
        } else {
            Message::None
        };
        handle(a.resource_create(domain as usize, kind, id, m))
    })
}

extern "C" fn domain_resource_destroy(_resource: *mut c_void) {}

unsafe extern "C" fn domain_name_category_a(domain: *const c_void, category: u32, name: *const c_char) {
    // SAFETY: as `mark_a`.
    let name = unsafe { c_bytes(name) }.unwrap_or_default();
    guarded((), |a| a.name_category(domain as usize, category, &String::from_utf8_lossy(name)));
}

unsafe extern "C" fn domain_name_category_w(domain: *const c_void, category: u32, name: *const WChar) {
    guarded((), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(name) };
        a.name_category(domain as usize, category, &s)
    });
}

unsafe extern "C" fn domain_register_string_a(domain: *const c_void, text: *const c_char) -> *mut c_void {
    // SAFETY: as `mark_a`.
    let text = unsafe { c_bytes(text) }.unwrap_or_default();
    guarded(handle(0), |a| handle(a.register_string(domain as usize, &String::from_utf8_lossy(text))))
}

unsafe extern "C" fn domain_register_string_w(domain: *const c_void, text: *const WChar) -> *mut c_void {
    guarded(handle(0), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(text) };
        handle(a.register_string(domain as usize, &s))
    })
}

unsafe extern "C" fn domain_create_a(name: *const c_char) -> *mut c_void {
    // SAFETY: as `mark_a`.
    let name = unsafe { c_bytes(name) }.unwrap_or_default();
    guarded(handle(0), |a| handle(a.domain_create(&String::from_utf8_lossy(name))))
}

unsafe extern "C" fn domain_create_w(name: *const WChar) -> *mut c_void {
    guarded(handle(0), |a| {
        // SAFETY: as `mark_w`.
        let s = unsafe { wide(name) };
        handle(a.domain_create(&s))
    })
}

extern "C" fn domain_destroy(_domain: *const c_void) {}

/// `nvtxRangePushPayload` of the payload extension: a push/pop range
/// without a message, with the payload.
unsafe extern "C" fn range_push_payload(domain: *const c_void, data: *const abi::PayloadData, count: usize) -> c_int {
    guarded(0, |a| {
        let attrs = Attributes {
            // SAFETY: NVTX passes `count` payload data entries.
            binary: unsafe { first_payload(data, count) },
            ..Attributes::message(Message::None)
        };
        a.push(domain as usize, &attrs)
    })
}

/// `nvtxRangePopPayload` of the payload extension: a pop whose payload
/// NCCL gives at the end of `ncclCommInitRank` and the like.
unsafe extern "C" fn range_pop_payload(domain: *const c_void, data: *const abi::PayloadData, count: usize) -> c_int {
    // SAFETY: NVTX passes `count` payload data entries.
    guarded(-1, |a| a.pop_with(domain as usize, unsafe { first_payload(data, count) }))
}

/// `nvtxDomainIsEnabled` of the payload extension: whether annotations of
/// the domain are recorded (the Python `nvtx` package records nothing in
/// a domain that says no).
extern "C" fn domain_is_enabled(_domain: *const c_void) -> u8 {
    u8::from(live::on())
}

fn slot(f: *const ()) -> *const c_void {
    f.cast()
}

fn core_entries() -> [(usize, *const c_void); 15] {
    [
        (core::MARK_EX, slot(mark_ex as *const ())),
        (core::MARK_A, slot(mark_a as *const ())),
        (core::MARK_W, slot(mark_w as *const ())),
        (core::RANGE_START_EX, slot(range_start_ex as *const ())),
        (core::RANGE_START_A, slot(range_start_a as *const ())),
        (core::RANGE_START_W, slot(range_start_w as *const ())),
        (core::RANGE_END, slot(range_end as *const ())),
        (core::RANGE_PUSH_EX, slot(range_push_ex as *const ())),
        (core::RANGE_PUSH_A, slot(range_push_a as *const ())),
        (core::RANGE_PUSH_W, slot(range_push_w as *const ())),
        (core::RANGE_POP, slot(range_pop as *const ())),
        (core::NAME_CATEGORY_A, slot(name_category_a as *const ())),
        (core::NAME_CATEGORY_W, slot(name_category_w as *const ())),
        (core::NAME_OS_THREAD_A, slot(name_os_thread_a as *const ())),
        (core::NAME_OS_THREAD_W, slot(name_os_thread_w as *const ())),
    ]
}

fn core2_entries() -> [(usize, *const c_void); 14] {
    [
        (core2::DOMAIN_MARK_EX, slot(domain_mark_ex as *const ())),
        (core2::DOMAIN_RANGE_START_EX, slot(domain_range_start_ex as *const ())),
        (core2::DOMAIN_RANGE_END, slot(domain_range_end as *const ())),
        (core2::DOMAIN_RANGE_PUSH_EX, slot(domain_range_push_ex as *const ())),
        (core2::DOMAIN_RANGE_POP, slot(domain_range_pop as *const ())),
        (core2::DOMAIN_RESOURCE_CREATE, slot(domain_resource_create as *const ())),
        (core2::DOMAIN_RESOURCE_DESTROY, slot(domain_resource_destroy as *const ())),
        (core2::DOMAIN_NAME_CATEGORY_A, slot(domain_name_category_a as *const ())),
        (core2::DOMAIN_NAME_CATEGORY_W, slot(domain_name_category_w as *const ())),
        (core2::DOMAIN_REGISTER_STRING_A, slot(domain_register_string_a as *const ())),
        (core2::DOMAIN_REGISTER_STRING_W, slot(domain_register_string_w as *const ())),
        (core2::DOMAIN_CREATE_A, slot(domain_create_a as *const ())),
        (core2::DOMAIN_CREATE_W, slot(domain_create_w as *const ())),
        (core2::DOMAIN_DESTROY, slot(domain_destroy as *const ())),
    ]
}

/// NVTX's entry point: called by each NVTX instance of the process at its
/// first use. Returns 1 after filling the instance's CORE and CORE2
/// slots; 0 (the instance then stays silent and unloads us) when
/// recording is off or impossible.
///
/// # Safety
///
/// Called by NVTX with its export-table function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get: Option<GetExportTable>) -> c_int {
    let Some(get) = get else { return 0 };
    if !live::start() {
        return 0;
    }
    let filled = shield(|| {
        // SAFETY: `get` is the instance's, called during its
        // initialization; each entry has the signature of its slot.
        unsafe {
            abi::announce_version(get);
            let core = abi::fill_module(get, abi::MODULE_CORE, &core_entries());
            let core2 = abi::fill_module(get, abi::MODULE_CORE2, &core2_entries());
            // Absent in instances built without the CUDA headers: no matter.
            abi::fill_module(get, abi::MODULE_CUDA, &cuda_entries());
            abi::fill_module(get, abi::MODULE_CUDART, &cudart_entries());
            core || core2
        }
    });
    c_int::from(filled.unwrap_or(false))
}

/// The entry point of NVTX extensions: of the payload extension,
/// `nvtxDomainIsEnabled` is answered (yes, while recording), so that
/// tools that ask before annotating (the Python `nvtx` package) do
/// annotate, and `nvtxRangePushPayload`/`nvtxRangePopPayload` are ranges
/// like any push and pop (NCCL ends its `ncclCommInitRank` range with a
/// pop that carries a payload: unanswered, the range stayed open); the
/// extension's other functions are not recorded.
///
/// # Safety
///
/// Called by an NVTX extension with its module description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn InitializeInjectionNvtxExtension(info: *mut ExtModuleInfo) -> c_int {
    if info.is_null() || !live::start() {
        return 0;
    }
    let filled = shield(|| {
        // SAFETY: NVTX's module description, sized by its `struct_size`;
        // a segment's slots may be written during this call.
        unsafe {
            let info = &*info;
            if usize::from(info.struct_size) < offset_of!(ExtModuleInfo, get_export_function)
                || info.module_id != abi::EXT_PAYLOAD_MODULE
                || info.segments_count == 0
                || info.segments.is_null()
            {
                return false;
            }
            let segment = &*info.segments;
            if segment.slot_count <= abi::EXT_PAYLOAD_DOMAIN_IS_ENABLED || segment.function_slots.is_null() {
                return false;
            }
            let slots = segment.function_slots;
            *slots.add(abi::EXT_PAYLOAD_DOMAIN_IS_ENABLED) = domain_is_enabled as *const () as isize;
            *slots.add(abi::EXT_PAYLOAD_RANGE_PUSH) = range_push_payload as *const () as isize;
            *slots.add(abi::EXT_PAYLOAD_RANGE_POP) = range_pop_payload as *const () as isize;
            true
        }
    });
    c_int::from(filled.unwrap_or(false))
}
