//! OTF2's collective callbacks over a [`Collectives`] implementation: what
//! `OTF2_MPI_Collectives.h` does over MPI, for an archive that several
//! processes write together. OTF2 hands every callback a typed element
//! count; here it becomes bytes, and the [`Collectives`] moves bytes.

use std::ffi::c_void;
use std::sync::Arc;

use otf2_sys as sys;

use crate::Collectives;

/// What OTF2 passes back to every callback: the implementation, boxed so
/// that one thin pointer reaches it.
pub(crate) struct UserData {
    pub(crate) comm: Arc<dyn Collectives>,
}

/// Bytes of one element of `ty`; 0 for a type OTF2 never sends.
fn size_of(ty: sys::OTF2_Type) -> usize {
    match u32::from(ty) {
        sys::OTF2_TYPE_UINT8 | sys::OTF2_TYPE_INT8 => 1,
        sys::OTF2_TYPE_UINT16 | sys::OTF2_TYPE_INT16 => 2,
        sys::OTF2_TYPE_UINT32 | sys::OTF2_TYPE_INT32 | sys::OTF2_TYPE_FLOAT => 4,
        sys::OTF2_TYPE_UINT64 | sys::OTF2_TYPE_INT64 | sys::OTF2_TYPE_DOUBLE => 8,
        _ => 0,
    }
}

fn code(ok: bool) -> sys::OTF2_CallbackCode {
    if ok { sys::OTF2_CALLBACK_SUCCESS } else { sys::OTF2_CALLBACK_ERROR }
}

/// # Safety
///
/// `user_data` is the live `UserData` of `register`.
unsafe fn comm<'a>(user_data: *mut c_void) -> &'a dyn Collectives {
    // SAFETY: the caller's contract; OTF2 keeps the pointer until release.
    unsafe { &*(*user_data.cast::<UserData>()).comm }
}

/// A byte slice of `len` bytes at `ptr`, empty for a null pointer or no
/// bytes.
///
/// # Safety
///
/// A non-null `ptr` points to `len` readable bytes for the call.
unsafe fn bytes<'a>(ptr: *const c_void, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// As [`bytes`], writable.
///
/// # Safety
///
/// A non-null `ptr` points to `len` writable bytes, not otherwise
/// referenced during the call.
unsafe fn bytes_mut<'a>(ptr: *mut c_void, len: usize) -> &'a mut [u8] {
    if ptr.is_null() || len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(ptr.cast(), len) }
}

/// OTF2's per-rank element counts (valid at the root only), as bytes.
///
/// # Safety
///
/// A non-null `counts` points to `size` counts.
unsafe fn counts_in_bytes(counts: *const u32, size: u32, elem: usize) -> Vec<usize> {
    if counts.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    let counts = unsafe { std::slice::from_raw_parts(counts, size as usize) };
    counts.iter().map(|&c| c as usize * elem).collect()
}

unsafe extern "C" fn release(
    user_data: *mut c_void,
    _global: *mut sys::OTF2_CollectiveContext,
    _local: *mut sys::OTF2_CollectiveContext,
) {
    // SAFETY: the Box leaked in `register`; OTF2 releases it once.
    drop(unsafe { Box::from_raw(user_data.cast::<UserData>()) });
}

unsafe extern "C" fn get_size(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    size: *mut u32,
) -> sys::OTF2_CallbackCode {
    if size.is_null() {
        return code(false);
    }
    // SAFETY: live user data; `size` is OTF2's output slot.
    unsafe { *size = comm(user_data).size() };
    code(true)
}

unsafe extern "C" fn get_rank(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    rank: *mut u32,
) -> sys::OTF2_CallbackCode {
    if rank.is_null() {
        return code(false);
    }
    // SAFETY: live user data; `rank` is OTF2's output slot.
    unsafe { *rank = comm(user_data).rank() };
    code(true)
}

unsafe extern "C" fn create_local_comm(
    _user_data: *mut c_void,
    _local: *mut *mut sys::OTF2_CollectiveContext,
    _global: *mut sys::OTF2_CollectiveContext,
    _global_rank: u32,
    _global_size: u32,
    _local_rank: u32,
    _local_size: u32,
    _file_number: u32,
    _number_of_files: u32,
) -> sys::OTF2_CallbackCode {
    // Only substrates that put several locations into one file (SION)
    // ask for local communicators; the archive uses POSIX files.
    code(false)
}

unsafe extern "C" fn free_local_comm(
    _user_data: *mut c_void,
    _local: *mut sys::OTF2_CollectiveContext,
) -> sys::OTF2_CallbackCode {
    code(true)
}

unsafe extern "C" fn barrier(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
) -> sys::OTF2_CallbackCode {
    // SAFETY: live user data.
    code(unsafe { comm(user_data) }.barrier())
}

unsafe extern "C" fn bcast(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    data: *mut c_void,
    elements: u32,
    ty: sys::OTF2_Type,
    root: u32,
) -> sys::OTF2_CallbackCode {
    let len = elements as usize * size_of(ty);
    // SAFETY: OTF2 passes `elements` elements of `ty` at `data` on every
    // rank; the user data is live.
    unsafe { code(comm(user_data).bcast(bytes_mut(data, len), root)) }
}

unsafe extern "C" fn gather(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    input: *const c_void,
    output: *mut c_void,
    elements: u32,
    ty: sys::OTF2_Type,
    root: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: live user data.
    let c = unsafe { comm(user_data) };
    let len = elements as usize * size_of(ty);
    let out_len = if c.rank() == root { len * c.size() as usize } else { 0 };
    // SAFETY: `elements` elements at `input` everywhere, `size` times as
    // many at `output` on the root (where only it is read).
    unsafe { code(c.gather(bytes(input, len), bytes_mut(output, out_len), root)) }
}

unsafe extern "C" fn gatherv(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    input: *const c_void,
    in_elements: u32,
    output: *mut c_void,
    out_elements: *const u32,
    ty: sys::OTF2_Type,
    root: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: live user data.
    let c = unsafe { comm(user_data) };
    let elem = size_of(ty);
    let counts =
        // SAFETY: at the root, OTF2 passes one count per rank.
        if c.rank() == root { unsafe { counts_in_bytes(out_elements, c.size(), elem) } } else { Vec::new() };
    let total = counts.iter().sum();
    // SAFETY: `in_elements` elements at `input`; at the root the counts'
    // sum at `output`.
    unsafe { code(c.gatherv(bytes(input, in_elements as usize * elem), bytes_mut(output, total), &counts, root)) }
}

unsafe extern "C" fn scatter(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    input: *const c_void,
    output: *mut c_void,
    elements: u32,
    ty: sys::OTF2_Type,
    root: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: live user data.
    let c = unsafe { comm(user_data) };
    let len = elements as usize * size_of(ty);
    let in_len = if c.rank() == root { len * c.size() as usize } else { 0 };
    // SAFETY: as for gather, the other way round.
    unsafe { code(c.scatter(bytes(input, in_len), bytes_mut(output, len), root)) }
}

unsafe extern "C" fn scatterv(
    user_data: *mut c_void,
    _context: *mut sys::OTF2_CollectiveContext,
    input: *const c_void,
    in_elements: *const u32,
    output: *mut c_void,
    out_elements: u32,
    ty: sys::OTF2_Type,
    root: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: live user data.
    let c = unsafe { comm(user_data) };
    let elem = size_of(ty);
    let counts =
        // SAFETY: at the root, OTF2 passes one count per rank.
        if c.rank() == root { unsafe { counts_in_bytes(in_elements, c.size(), elem) } } else { Vec::new() };
    let total = counts.iter().sum();
    // SAFETY: as for gatherv, the other way round.
    unsafe { code(c.scatterv(bytes(input, total), &counts, bytes_mut(output, out_elements as usize * elem), root)) }
}

pub(crate) static CALLBACKS: sys::OTF2_CollectiveCallbacks = sys::OTF2_CollectiveCallbacks {
    otf2_release: Some(release),
    otf2_get_size: Some(get_size),
    otf2_get_rank: Some(get_rank),
    otf2_create_local_comm: Some(create_local_comm),
    otf2_free_local_comm: Some(free_local_comm),
    otf2_barrier: Some(barrier),
    otf2_bcast: Some(bcast),
    otf2_gather: Some(gather),
    otf2_gatherv: Some(gatherv),
    otf2_scatter: Some(scatter),
    otf2_scatterv: Some(scatterv),
};

/// Registers the callbacks over `comm` on `archive`.
///
/// # Safety
///
/// `archive` is a live archive handle without collective callbacks yet.
pub(crate) unsafe fn register(archive: *mut sys::OTF2_Archive, comm: Arc<dyn Collectives>) -> sys::OTF2_ErrorCode {
    let user_data = Box::into_raw(Box::new(UserData { comm })).cast::<c_void>();
    // OTF2 only stores and passes the global context; it must not be
    // null, and the callbacks ignore it.
    let context = user_data.cast::<sys::OTF2_CollectiveContext>();
    // SAFETY: live archive (caller's contract); CALLBACKS is a static; the
    // user data stays valid until OTF2 calls `release`.
    let code = unsafe {
        sys::OTF2_Archive_SetCollectiveCallbacks(archive, &CALLBACKS, user_data, context, std::ptr::null_mut())
    };
    if code != sys::OTF2_SUCCESS {
        // SAFETY: OTF2 did not take it: still our Box.
        drop(unsafe { Box::from_raw(user_data.cast::<UserData>()) });
    }
    code
}
