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
//!
//! Released chunks go to a small process-wide cache ([`CACHE_BYTES`])
//! that the next buffer takes them from: an archive of thousands of
//! locations opens and closes a writer per location, and handing each
//! buffer's 1 MiB chunk back to `malloc` and asking again made glibc keep
//! the freed chunks in a growing heap (its mmap threshold rises after the
//! first free), so the merge's resident memory grew with the number of
//! locations although it used ~15 MiB; it also faulted in fresh pages for
//! every location.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use otf2_sys as sys;

/// Bytes of chunks one buffer may hold before OTF2 must flush it: two
/// of its 1 MiB event chunks. Small, so that the chunks it flushed come
/// back from the cache already faulted in: with 16 MiB a 12 MiB location
/// zeroed 12 MiB of fresh pages (a merge of 1.2 M events 58 ms, 29 MiB;
/// with 2 MiB 51 ms, 15 MiB).
pub(crate) const BUFFER_BUDGET: u64 = 2 * 1024 * 1024;

/// OTF2 writes whole records into chunks; cache-line alignment is more
/// than any record field needs.
const CHUNK_ALIGN: usize = 64;

/// Bytes of released chunks kept for reuse, process-wide.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// A released chunk and the layout it was allocated with.
struct Cached(Layout, NonNull<u8>);

// SAFETY: a cached chunk is memory no buffer uses; whoever pops it owns it.
unsafe impl Send for Cached {}

static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());

fn cache() -> std::sync::MutexGuard<'static, Vec<Cached>> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A chunk of `layout`: a cached one, or newly allocated (null if that fails).
fn take_chunk(layout: Layout) -> *mut u8 {
    let mut c = cache();
    if let Some(i) = c.iter().rposition(|k| k.0 == layout) {
        return c.swap_remove(i).1.as_ptr();
    }
    drop(c);
    // SAFETY: the layout has a non-zero size (checked by the caller).
    unsafe { alloc::alloc(layout) }
}

/// Gives back a chunk allocated with `layout`: to the cache while it has
/// room, else to the allocator.
///
/// # Safety
///
/// `chunk` came from [`take_chunk`] with `layout` and is not used again.
unsafe fn give_chunk(layout: Layout, chunk: NonNull<u8>) {
    let mut c = cache();
    let held: usize = c.iter().map(|k| k.0.size()).sum();
    if held + layout.size() <= CACHE_BYTES {
        c.push(Cached(layout, chunk));
        return;
    }
    drop(c);
    // SAFETY: the caller's promise: allocated with `layout`, unused.
    unsafe { alloc::dealloc(chunk.as_ptr(), layout) };
}

/// The chunks of one buffer; OTF2 keeps the pointer in its per-buffer data.
struct ChunkPool {
    layout: Layout,
    chunks: Vec<NonNull<u8>>,
}

impl ChunkPool {
    fn release_chunks(&mut self) {
        for chunk in self.chunks.drain(..) {
            // SAFETY: every chunk was taken in `allocate` with this pool's
            // layout and is released once (drained).
            unsafe { give_chunk(self.layout, chunk) };
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
    let Some(chunk) = NonNull::new(take_chunk(pool.layout)) else {
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
        // OTF2's event chunk size; a buffer holds at least two chunks.
        let chunk = 1024 * 1024;
        let budget = (BUFFER_BUDGET / chunk).max(2) as usize;
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
