//! Chunk memory for OTF2's write buffers, with a budget per buffer.
//!
//! Without memory callbacks OTF2 lets each writer's buffer grow to 128 MiB
//! before it flushes: a 10-million-event location would sit in memory
//! whole. With these callbacks each buffer may hold [`BUFFER_BUDGET`]
//! bytes of chunks; when it asks for one more, `allocate` returns null,
//! which makes OTF2 flush the buffer to its file (the pre-flush callback
//! always agrees), release the chunks through `free_all`, and ask again.
//! Memory stays bounded by the budget times the buffers open at once
//! (one event writer, plus a definition writer at close), and the file is
//! written in budget-sized pieces.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::ptr::{self, NonNull};

use otf2_sys as sys;

/// Bytes of chunks one buffer may hold before OTF2 must flush it.
pub(crate) const BUFFER_BUDGET: u64 = 16 * 1024 * 1024;

/// OTF2 writes whole records into chunks; cache-line alignment is more
/// than any record field needs.
const CHUNK_ALIGN: usize = 64;

/// The chunks of one buffer; OTF2 keeps the pointer in its per-buffer data.
struct ChunkPool {
    layout: Layout,
    chunks: Vec<NonNull<u8>>,
}

impl ChunkPool {
    fn release_chunks(&mut self) {
        for chunk in self.chunks.drain(..) {
            // SAFETY: every chunk was allocated in `allocate` with this
            // pool's layout and is released once (drained).
            unsafe { alloc::dealloc(chunk.as_ptr(), self.layout) };
        }
    }
}

unsafe extern "C" fn allocate(
    _user_data: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    chunk_size: u64,
) -> *mut c_void {
    if per_buffer.is_null() || chunk_size == 0 {
        return ptr::null_mut();
    }
    // SAFETY: OTF2 passes a writable slot, null until we store our pool.
    let slot = unsafe { &mut *per_buffer };
    if slot.is_null() {
        let Ok(size) = usize::try_from(chunk_size) else {
            return ptr::null_mut();
        };
        let Ok(layout) = Layout::from_size_align(size, CHUNK_ALIGN) else {
            return ptr::null_mut();
        };
        let pool = Box::new(ChunkPool { layout, chunks: Vec::new() });
        *slot = Box::into_raw(pool).cast();
    }
    // SAFETY: the slot holds the pool made above or by an earlier call for
    // this buffer; OTF2 uses one buffer from one thread at a time.
    let pool = unsafe { &mut *slot.cast::<ChunkPool>() };
    let max_chunks = (BUFFER_BUDGET / chunk_size).max(2);
    if pool.chunks.len() as u64 >= max_chunks {
        // Over budget: null tells OTF2 to flush this buffer and free it.
        return ptr::null_mut();
    }
    // SAFETY: the layout has a non-zero size.
    let Some(chunk) = NonNull::new(unsafe { alloc::alloc(pool.layout) }) else {
        return ptr::null_mut();
    };
    pool.chunks.push(chunk);
    chunk.as_ptr().cast()
}

unsafe extern "C" fn free_all(
    _user_data: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    last: bool,
) {
    if per_buffer.is_null() {
        return;
    }
    // SAFETY: OTF2 passes the slot `allocate` filled (or left null).
    let slot = unsafe { &mut *per_buffer };
    if slot.is_null() {
        return;
    }
    let pool = slot.cast::<ChunkPool>();
    // SAFETY: the slot holds the pool Box made in `allocate`.
    unsafe { (*pool).release_chunks() };
    if last {
        // SAFETY: OTF2 closes the buffer; the pool is dropped once and the
        // slot cleared so nothing can reach it again.
        drop(unsafe { Box::from_raw(pool) });
        *slot = ptr::null_mut();
    }
}

pub(crate) static MEMORY_CALLBACKS: sys::OTF2_MemoryCallbacks =
    sys::OTF2_MemoryCallbacks { otf2_allocate: Some(allocate), otf2_free_all: Some(free_all) };

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_refuses_past_its_budget_and_frees() {
        let mut slot: *mut c_void = ptr::null_mut();
        let chunk = 4 * 1024 * 1024;
        let budget = (BUFFER_BUDGET / chunk) as usize;
        // SAFETY: the calls follow OTF2's protocol on one slot.
        unsafe {
            for _ in 0..budget {
                assert!(!allocate(ptr::null_mut(), 0, 0, &mut slot, chunk).is_null());
            }
            assert!(allocate(ptr::null_mut(), 0, 0, &mut slot, chunk).is_null());
            free_all(ptr::null_mut(), 0, 0, &mut slot, false);
            assert!(!allocate(ptr::null_mut(), 0, 0, &mut slot, chunk).is_null());
            free_all(ptr::null_mut(), 0, 0, &mut slot, true);
        }
        assert!(slot.is_null());
    }
}
