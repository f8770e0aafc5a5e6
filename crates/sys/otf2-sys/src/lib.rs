//! Raw FFI bindings to OTF2 3.x, the Open Trace Format 2 library.
//!
//! `bindings.rs` is bindgen output for `otf2/otf2.h` (the archive, reader,
//! writer and callback APIs, the attribute list, id maps, and every enum
//! constant), committed so that a build needs neither bindgen nor libclang;
//! `generate.sh` regenerates it. The OTF2 headers declare most enum types as
//! `typedef uint8_t OTF2_X` plus an anonymous enum of values, so the values
//! appear here as plain constants (`OTF2_TYPE_UINT64`) of the enum's C type
//! and need an `as OTF2_Type` at the use site.
//!
//! The `OTF2_UNDEFINED_*` markers carry the C cast's type
//! (`OTF2_UNDEFINED_LOCATION: OTF2_LocationRef = u64::MAX`).
//!
//! `OTF2_Pthread_Locks.h` defines its functions `static` in the header, so
//! no library exports them; [`pthread_locks`] provides the same two entry
//! points in Rust. `OTF2_MPI_Collectives.h` (static too, and needing
//! `mpi.h`) is not bound.
//!
//! The build script links libotf2 statically when an archive is found, so a
//! binary using this crate runs where OTF2 is not installed; see `build.rs`
//! for `OTF2_LIB_DIR` and `OTF2_STATIC`.
//!
//! The bindings were generated on x86_64 Linux; every OTF2 type is
//! fixed-width, so they hold for any LP64 Linux except the `va_list` in
//! `OTF2_ErrorCallback`, which is ABI-specific.
//!
//! FFI only: depends on no gputrace crate; the `otf2` crate is its only
//! user, and nothing that runs inside a traced process may link it.

#![deny(unsafe_op_in_unsafe_fn)]

#[allow(non_camel_case_types, non_snake_case, non_upper_case_globals, unsafe_op_in_unsafe_fn, clippy::all)]
mod bindings {
    include!("bindings.rs");
}

pub use bindings::*;

pub mod pthread_locks;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn links_and_names_errors() {
        // SAFETY: OTF2_Error_GetName accepts any code and returns a static,
        // NUL-terminated string.
        let name = unsafe { CStr::from_ptr(OTF2_Error_GetName(OTF2_ERROR_INVALID_ARGUMENT)) };
        assert_eq!(name.to_str().unwrap(), "INVALID_ARGUMENT");
    }

    #[test]
    fn undefined_markers_have_the_cast_type() {
        assert_eq!(OTF2_UNDEFINED_LOCATION, u64::MAX);
        assert_eq!(OTF2_UNDEFINED_STRING, u32::MAX);
        assert_eq!(OTF2_UNDEFINED_TYPE, u8::MAX);
        assert_eq!(OTF2_CHUNK_SIZE_EVENTS_DEFAULT, 1024 * 1024);
    }
}
