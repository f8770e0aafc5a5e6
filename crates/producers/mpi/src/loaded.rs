//! Finding symbols in libraries that are not in the global scope.
//!
//! A library that a program opens with `dlopen(RTLD_LOCAL)` — Python
//! loads every extension module so, and with mpi4py's module the libmpi
//! it links; Julia, R and plugin hosts do the same — is not searched by
//! `dlsym(RTLD_NEXT)` nor `dlsym(RTLD_DEFAULT)`. Its users' calls to
//! `MPI_*` still reach our wrappers: a `dlopen`ed object's references are
//! bound in the global scope first, where the preloaded wrappers are, and
//! in its own local scope (libmpi) only after. So a wrapper runs, and its
//! `PMPI_*` must be found where the global lookups cannot see.
//!
//! [`find`] looks in the objects where earlier symbols were found (the MPI
//! library, after the first one) and then in every loaded object: each is
//! reopened with `RTLD_NOLOAD` — which returns the loaded object's handle
//! and never loads anything — and searched with `dlsym` on that handle,
//! which covers the object and its dependencies. The object that defines
//! the symbol keeps the handle, so it stays loaded as long as we may call
//! into it (the addresses are cached). This library itself is never an
//! answer.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Handles (as `usize`) of the objects where [`find`] found a symbol.
static FOUND_IN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// The address of the symbol `name` (NUL-terminated) in a loaded object
/// other than this library; 0 when none defines it. Slow (a `dlopen` per
/// loaded object when the symbol is not in an object found before): for
/// the first resolution of a symbol only.
pub fn find(name: &str) -> usize {
    debug_assert!(name.ends_with('\0'));
    let c = name.as_ptr().cast::<c_char>();
    // The lock is never held across a dl* call: those take the loader's
    // lock, which a thread running a library constructor holds, and that
    // thread may be the next to come here.
    let known = FOUND_IN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for &h in &known {
        // SAFETY: `h` is a handle dlopen returned and that we never close;
        // `c` is NUL-terminated.
        let a = unsafe { libc::dlsym(h as *mut c_void, c) } as usize;
        if a != 0 && !is_ours(a) {
            return a;
        }
    }
    for path in loaded_objects() {
        let Some(h) = reopen(&path) else { continue };
        // SAFETY: `h` is a live handle; `c` is NUL-terminated.
        let a = unsafe { libc::dlsym(h, c) } as usize;
        // SAFETY: `h` came from our dlopen; closing it drops only the
        // reference that dlopen added.
        unsafe { libc::dlclose(h) };
        if a == 0 || is_ours(a) {
            continue;
        }
        if let Some(owner) = defining_object(a) {
            let mut found_in = FOUND_IN.lock().unwrap_or_else(|e| e.into_inner());
            if found_in.contains(&owner) {
                drop(found_in);
                // SAFETY: a second reference to an object we hold anyway.
                unsafe { libc::dlclose(owner as *mut c_void) };
            } else {
                found_in.push(owner);
            }
        }
        return a;
    }
    0
}

/// How many times objects have been loaded into the process so far
/// (glibc's `dlpi_adds`): a symbol missing everywhere needs looking for
/// again only after this changes.
pub fn generation() -> u64 {
    extern "C" fn first(info: *mut libc::dl_phdr_info, size: libc::size_t, data: *mut c_void) -> c_int {
        if size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) {
            // SAFETY: glibc passes a valid info of `size` bytes, which
            // covers `dlpi_adds`; `data` is our `u64`.
            unsafe { *data.cast::<u64>() = (*info).dlpi_adds };
        }
        1
    }
    let mut adds: u64 = 0;
    // SAFETY: the callback has the required signature and only writes
    // through `data`, which points to `adds`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut adds).cast()) };
    adds
}

/// The file names of the loaded objects, in load order, without the
/// program itself (whose name is empty, and which the global lookups
/// already search).
fn loaded_objects() -> Vec<CString> {
    extern "C" fn collect(info: *mut libc::dl_phdr_info, _: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: glibc passes a valid info; `data` is our Vec.
        let (name, names) = unsafe { ((*info).dlpi_name, &mut *data.cast::<Vec<CString>>()) };
        if !name.is_null() {
            // SAFETY: a NUL-terminated name that lives while we copy it.
            let name = unsafe { CStr::from_ptr(name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    // The names are copied out first: dlopen is not called while
    // dl_iterate_phdr holds the loader's list.
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: the callback matches the signature and only pushes to the
    // Vec `data` points to.
    unsafe { libc::dl_iterate_phdr(Some(collect), (&raw mut names).cast()) };
    names
}

/// The handle of the already loaded object `path`, if it is loaded.
fn reopen(path: &CStr) -> Option<*mut c_void> {
    // SAFETY: a NUL-terminated path; RTLD_NOLOAD never loads a new object
    // (so no constructor runs).
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    (!h.is_null()).then_some(h)
}

/// The handle of the object that contains the address `a`.
fn defining_object(a: usize) -> Option<usize> {
    let info = dl_info(a)?;
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is NUL-terminated and lives as long as
    // the object, which is loaded.
    reopen(unsafe { CStr::from_ptr(info.dli_fname) }).map(|h| h as usize)
}

fn dl_info(a: usize) -> Option<libc::Dl_info> {
    // SAFETY: Dl_info is plain data; dladdr fills it or returns 0.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be asked about.
    (unsafe { libc::dladdr(a as *const c_void, &mut info) } != 0).then_some(info)
}

/// Whether the address `a` lies in this library (our own `MPI_*`).
fn is_ours(a: usize) -> bool {
    static BASE: AtomicUsize = AtomicUsize::new(0);
    let mut base = BASE.load(Ordering::Relaxed);
    if base == 0 {
        base = dl_info(is_ours as *const () as usize).map_or(0, |i| i.dli_fbase as usize);
        BASE.store(base, Ordering::Relaxed);
    }
    base != 0 && dl_info(a).is_some_and(|i| i.dli_fbase as usize == base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_symbol_of_a_library_opened_local() {
        // zlib is no dependency of this test, so opened RTLD_LOCAL it is
        // out of the global scope, as mpi4py's libmpi is in Python.
        let name = c"zlibVersion";
        // SAFETY: NUL-terminated names; valid pseudo-handle.
        assert!(unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }.is_null(), "zlib is global here");
        // SAFETY: as above.
        let h = unsafe { libc::dlopen(c"libz.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "libz.so.1 is not installed");
        // SAFETY: as above.
        assert!(unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }.is_null());
        let a = find("zlibVersion\0");
        assert_ne!(a, 0);
        // SAFETY: as above.
        assert_eq!(a, unsafe { libc::dlsym(h, name.as_ptr()) } as usize);
        assert_eq!(find("zlibVersion\0"), a, "found again through the kept handle");
        assert_eq!(find("no_such_symbol_anywhere_at_all\0"), 0);
        assert!(generation() > 0);
        assert!(!is_ours(a));
        assert!(is_ours(find as *const () as usize));
    }
}
