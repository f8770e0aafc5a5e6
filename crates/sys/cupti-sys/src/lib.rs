//! Raw FFI bindings to CUPTI, the CUDA Profiling Tools Interface, for CUDA
//! 12.x and 13.x, with the library opened at run time.
//!
//! - [`v12_9`], [`v13_0`], [`v13_5`]: bindgen output for the CUPTI headers
//!   of those releases (activity records, enums, callback structs, the
//!   functions gputrace calls), one file each, committed; `generate.sh`
//!   regenerates them from NVIDIA's PyPI wheels. Building needs no CUDA.
//! - The crate root re-exports [`common`]: what is the same in every
//!   release (function types, callback structs, enum constants), generated
//!   from the newest headers. Enum values never changed between releases
//!   (a test checks); newer ones are simply refused by an older library.
//!   Enums are plain integer constants, never Rust enums, so a value from a
//!   newer CUPTI is just a number.
//! - [`Cupti`]: the library, `dlopen`ed by [`Cupti::load`] or found by
//!   [`Cupti::find_and_load`] (see [`discover`]), with a pointer to each
//!   function.
//! - The calls gputrace makes, as methods of [`Cupti`] returning a
//!   `Result` (`calls.rs`): safe where the arguments are values, `unsafe`
//!   where they are driver handles.
//! - [`CuptiVersion`]: the loaded release, the [`Layout`] (generated module)
//!   that matches it, and per activity kind the [`RecordStruct`] to cast a
//!   record to.
//!
//! Records: cast a `CUpti_Activity *` from `cuptiActivityGetNextRecord` to
//! the struct [`CuptiVersion::record_struct`] names, from the module
//! [`RecordStruct::layout`] names; it differs between releases.
//!
//! The bindings assume 64-bit Linux (checked by the layout assertions that
//! bindgen put in each generated file).
//!
//! FFI only: depends on no gputrace crate; the CUDA producer is its only
//! user.

#![deny(unsafe_op_in_unsafe_fn)]

macro_rules! generated {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[allow(
            non_camel_case_types,
            non_snake_case,
            non_upper_case_globals,
            dead_code,
            missing_docs,
            // Each module declares the same CUPTI functions with its own
            // (nominally distinct, identically laid out) types; none is
            // linked or called: `Cupti` holds pointers from dlsym.
            clashing_extern_declarations,
            unsafe_op_in_unsafe_fn,
            clippy::all,
            // bindgen's bitfield accessors: generated, not ours to comment.
            clippy::undocumented_unsafe_blocks,
            clippy::missing_safety_doc
        )]
        pub mod $name;
    };
}

generated! {
    /// Bindings from the CUPTI 12.9 update 1 headers (`CUPTI_API_VERSION`
    /// 28, wheel `nvidia-cuda-cupti-cu12` 12.9.79): the record structs every
    /// 12.x library writes.
    v12_9
}
generated! {
    /// Bindings from the CUPTI 13.0 update 1 headers (`CUPTI_API_VERSION`
    /// 130001, wheel `nvidia-cuda-cupti` 13.0.85), the GPU machine's
    /// release: `CUpti_ActivityKernel10`, and `Memcpy6`/`Memset4` with
    /// `isDeviceLaunched`.
    v13_0
}
generated! {
    /// Bindings from the CUPTI 13.5 headers (`CUPTI_API_VERSION` 130500,
    /// wheel `nvidia-cuda-cupti` 13.5.25): adds `Kernel11`…`Kernel13`,
    /// `Memcpy7`, `Memset5`, `Device6`, `Context4`, `NvLink5`.
    v13_5
}
generated! {
    /// The version-independent part, from the 13.5 headers: function
    /// prototypes, callback structs (`CUpti_CallbackData`,
    /// `CUpti_ResourceData`, `CUpti_SynchronizeData`), handles and enum
    /// constants. Re-exported at the crate root. `*_COUNT`/`*_SIZE`
    /// sentinels are 13.5's; older libraries stop earlier.
    common
}

mod calls;
pub mod discover;
pub mod driver;
mod elf;
mod error;
mod library;
mod version;

pub use calls::Subscriber;
pub use common::*;
pub use discover::{Candidate, Origin, SearchEnv, candidates, driver_cuda_version};
pub use error::{CuptiError, LoadError, UnsupportedVersion};
pub use library::Cupti;
pub use version::{CuptiVersion, Layout, RecordStruct};
