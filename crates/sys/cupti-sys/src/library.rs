//! The CUPTI library opened at run time: [`Cupti`] holds a pointer to each
//! CUPTI function gputrace calls, looked up with `dlsym`, plus the
//! library's [`CuptiVersion`]. Nothing links against libcupti, so a binary
//! built with this crate starts where CUDA is absent.
//!
//! The function types are written once, in the table at the bottom, and
//! checked at compile time against the prototypes bindgen generated from
//! the 13.5 headers (`common.rs`); `tests/prototypes.rs` checks that the
//! 12.9, 13.0 and 13.5 headers declare them identically, and they were
//! identical in every header from 11.8 to 13.5 when generated.

use std::ffi::{CStr, OsStr, c_char, c_void};
use std::path::{Path, PathBuf};

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

use crate::common::*;
use crate::{CuptiError, CuptiVersion, LoadError, elf};

/// Declares [`Cupti`], its loader and the prototype check from one table:
/// `field = symbol: (argument types)`, required ones first, then those that
/// older CUPTI releases lack.
macro_rules! cupti_functions {
    (
        required { $( $(#[$rdoc:meta])* $rfield:ident = $rsym:ident ( $($rarg:ty),* ); )* }
        optional { $( $(#[$odoc:meta])* $ofield:ident = $osym:ident ( $($oarg:ty),* ); )* }
    ) => {
        /// A loaded CUPTI library: one function pointer per CUPTI function
        /// gputrace uses, named after it (`activity_enable` is
        /// `cuptiActivityEnable`); optional ones are `None` where the
        /// library predates them.
        ///
        /// Calling one is `unsafe`: the caller upholds CUPTI's contract for
        /// it (valid pointers, callbacks that do not unwind). Pass the result
        /// to [`Cupti::check`].
        ///
        /// The library is never unloaded, even when the `Cupti` is dropped:
        /// CUPTI starts threads and calls back into the program, and
        /// unloading it under them would crash the program. The pointers are
        /// therefore valid for the rest of the process.
        #[derive(Clone)]
        pub struct Cupti {
            $(
                $(#[$rdoc])*
                #[doc = concat!("\n\n`", stringify!($rsym), "`")]
                pub $rfield: unsafe extern "C" fn($($rarg),*) -> CUptiResult,
            )*
            $(
                $(#[$odoc])*
                #[doc = concat!("\n\n`", stringify!($osym), "`, if the library has it")]
                pub $ofield: Option<unsafe extern "C" fn($($oarg),*) -> CUptiResult>,
            )*
            version: CuptiVersion,
            path: PathBuf,
        }

        struct Functions {
            $( $rfield: unsafe extern "C" fn($($rarg),*) -> CUptiResult, )*
            $( $ofield: Option<unsafe extern "C" fn($($oarg),*) -> CUptiResult>, )*
        }

        fn functions(lib: &Library, library: &str) -> Result<Functions, LoadError> {
            Ok(Functions {
                $(
                    // SAFETY: the type is the one the CUPTI headers declare
                    // for this symbol (checked by `_prototypes_match`).
                    $rfield: *unsafe {
                        lib.get::<unsafe extern "C" fn($($rarg),*) -> CUptiResult>(
                            concat!(stringify!($rsym), "\0").as_bytes(),
                        )
                    }
                    .map_err(|source| LoadError::MissingSymbol {
                        library: library.to_owned(),
                        symbol: stringify!($rsym),
                        source,
                    })?,
                )*
                $(
                    // SAFETY: as above.
                    $ofield: unsafe {
                        lib.get::<unsafe extern "C" fn($($oarg),*) -> CUptiResult>(
                            concat!(stringify!($osym), "\0").as_bytes(),
                        )
                    }
                    .ok()
                    .map(|symbol| *symbol),
                )*
            })
        }

        impl Cupti {
            fn assemble(f: Functions, version: CuptiVersion, path: PathBuf) -> Cupti {
                Cupti {
                    $( $rfield: f.$rfield, )*
                    $( $ofield: f.$ofield, )*
                    version,
                    path,
                }
            }
        }

        /// Fails to compile if a type in the table differs from the
        /// generated prototype. Generic and never instantiated, so it names
        /// the `extern` declarations without linking against them.
        #[allow(dead_code, clippy::extra_unused_type_parameters)]
        fn _prototypes_match<T>() {
            $( let _: unsafe extern "C" fn($($rarg),*) -> CUptiResult = $rsym; )*
            $( let _: unsafe extern "C" fn($($oarg),*) -> CUptiResult = $osym; )*
        }
    };
}

cupti_functions! {
    required {
        get_version = cuptiGetVersion(*mut u32);
        get_result_string = cuptiGetResultString(CUptiResult, *mut *const c_char);
        subscribe = cuptiSubscribe(*mut CUpti_SubscriberHandle, CUpti_CallbackFunc, *mut c_void);
        unsubscribe = cuptiUnsubscribe(CUpti_SubscriberHandle);
        enable_domain = cuptiEnableDomain(u32, CUpti_SubscriberHandle, CUpti_CallbackDomain);
        enable_callback = cuptiEnableCallback(
            u32, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId
        );
        get_callback_name = cuptiGetCallbackName(CUpti_CallbackDomain, u32, *mut *const c_char);
        activity_register_callbacks = cuptiActivityRegisterCallbacks(
            CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc
        );
        activity_enable = cuptiActivityEnable(CUpti_ActivityKind);
        activity_disable = cuptiActivityDisable(CUpti_ActivityKind);
        activity_flush_all = cuptiActivityFlushAll(u32);
        activity_get_next_record = cuptiActivityGetNextRecord(
            *mut u8, usize, *mut *mut CUpti_Activity
        );
        activity_get_num_dropped_records = cuptiActivityGetNumDroppedRecords(
            CUcontext, u32, *mut usize
        );
        activity_set_attribute = cuptiActivitySetAttribute(
            CUpti_ActivityAttribute, *mut usize, *mut c_void
        );
        get_timestamp = cuptiGetTimestamp(*mut u64);
        finalize = cuptiFinalize();
        get_device_id = cuptiGetDeviceId(CUcontext, *mut u32);
        get_context_id = cuptiGetContextId(CUcontext, *mut u32);
    }
    optional {
        /// Since CUDA 11.6.
        activity_register_timestamp_callback = cuptiActivityRegisterTimestampCallback(
            CUpti_TimestampCallbackFunc
        );
        activity_flush_period = cuptiActivityFlushPeriod(u32);
        get_stream_id_ex = cuptiGetStreamIdEx(CUcontext, CUstream, u8, *mut u32);
        /// CUPTI's id of a graph node, the one its work's records carry.
        get_graph_node_id = cuptiGetGraphNodeId(CUgraphNode, *mut u64);
        /// Since CUDA 12.5 (checked in the 12.0–12.6 libraries).
        activity_enable_driver_api = cuptiActivityEnableDriverApi(CUpti_CallbackId, u8);
        /// Since CUDA 12.5 (checked in the 12.0–12.6 libraries).
        activity_enable_runtime_api = cuptiActivityEnableRuntimeApi(CUpti_CallbackId, u8);
        activity_push_external_correlation_id = cuptiActivityPushExternalCorrelationId(
            CUpti_ExternalCorrelationKind, u64
        );
        activity_pop_external_correlation_id = cuptiActivityPopExternalCorrelationId(
            CUpti_ExternalCorrelationKind, *mut u64
        );
        /// Which thread id API records carry (`pthread_self()` by default;
        /// gputrace asks for the kernel's tid).
        set_thread_id_type = cuptiSetThreadIdType(CUpti_ActivityThreadIdType);
        /// Which unified-memory counters `UNIFIED_MEMORY_COUNTER` records
        /// report; called before that kind is enabled.
        activity_configure_unified_memory_counter = cuptiActivityConfigureUnifiedMemoryCounter(
            *mut CUpti_ActivityUnifiedMemoryCounterConfig, u32
        );
    }
}

impl Cupti {
    /// Opens the CUPTI library at `library` (a path, or a bare name such as
    /// `libcupti.so.13` that the dynamic loader searches for), looks up its
    /// functions and reads its version.
    ///
    /// Fails if it cannot be opened, lacks a required function, cannot tell
    /// its version, or is a version these bindings do not describe (see
    /// [`CuptiVersion::from_api`]); a refused library is unloaded again.
    pub fn load(library: impl AsRef<OsStr>) -> Result<Cupti, LoadError> {
        // RTLD_NOW reports unresolved symbols here rather than at the first
        // call; RTLD_LOCAL keeps CUPTI's symbols out of the program's
        // namespace.
        Cupti::open(library.as_ref(), RTLD_NOW | RTLD_LOCAL)
    }

    /// Like [`load`](Self::load), but only if the process has already
    /// loaded a library of that name or SONAME (`libcupti.so.12` brought in
    /// by the program, e.g. PyTorch's profiler): a second, different CUPTI
    /// in one process would fight the first over its callbacks.
    pub fn load_if_loaded(library: impl AsRef<OsStr>) -> Result<Cupti, LoadError> {
        Cupti::open(library.as_ref(), RTLD_NOW | RTLD_LOCAL | libc::RTLD_NOLOAD)
    }

    fn open(library: &OsStr, flags: std::ffi::c_int) -> Result<Cupti, LoadError> {
        let name = library.to_string_lossy().into_owned();
        // SAFETY: opening runs the library's initializers; libcupti's only
        // set up its own state.
        let lib = unsafe { Library::open(Some(library), flags) }
            .map_err(|source| LoadError::Open { library: name.clone(), source })?;
        let functions = functions(&lib, &name)?;

        let mut api = 0;
        // SAFETY: cuptiGetVersion writes one u32 to a valid pointer.
        let result = unsafe { (functions.get_version)(&mut api) };
        if result != CUPTI_SUCCESS {
            let source = error(functions.get_result_string, "cuptiGetVersion", result);
            return Err(LoadError::Version { library: name, source });
        }
        // The file that actually provides the functions: the one the loader
        // found for a bare name, or one already loaded under that SONAME.
        let path = loaded_path(functions.get_version as *const c_void).unwrap_or_else(|| PathBuf::from(library));
        let soname_major = elf::soname(&path).as_deref().and_then(elf::cupti_major).or_else(|| elf::cupti_major(&name));
        let version = CuptiVersion::from_api(api, soname_major)
            .map_err(|source| LoadError::Unsupported { library: name, source })?;

        // Never unloaded; see the type's docs.
        let _handle = lib.into_raw();
        Ok(Cupti::assemble(functions, version, path))
    }

    /// The library's version.
    pub fn version(&self) -> CuptiVersion {
        self.version
    }

    /// The file the functions come from, as the loader reports it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Ok` for `CUPTI_SUCCESS`, else a [`CuptiError`] naming `function`
    /// and the result: `cupti.check("cuptiActivityEnable", unsafe {
    /// (cupti.activity_enable)(kind) })?`.
    pub fn check(&self, function: &'static str, result: CUptiResult) -> Result<(), CuptiError> {
        if result == CUPTI_SUCCESS { Ok(()) } else { Err(error(self.get_result_string, function, result)) }
    }

    /// The library's name for a result code (`"CUPTI_ERROR_INVALID_KIND"`),
    /// if it knows it.
    pub fn result_string(&self, result: CUptiResult) -> Option<&CStr> {
        result_string(self.get_result_string, result)
    }

    /// CUPTI's name of callback `cbid` of `domain`
    /// (`"cudaLaunchKernel_v7000"`), if it names one.
    pub fn callback_name(&self, domain: CUpti_CallbackDomain, cbid: u32) -> Option<&CStr> {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuptiGetCallbackName writes one pointer to a valid
        // location.
        let rc = unsafe { (self.get_callback_name)(domain, cbid, &mut name) };
        // SAFETY: on success `name` is a NUL-terminated string CUPTI keeps
        // for the life of the library, which `self` holds loaded.
        (rc == CUPTI_SUCCESS && !name.is_null()).then(|| unsafe { CStr::from_ptr(name) })
    }
}

impl std::fmt::Debug for Cupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cupti").field("path", &self.path).field("version", &self.version).finish_non_exhaustive()
    }
}

type ResultStringFn = unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult;

fn result_string<'a>(get: ResultStringFn, result: CUptiResult) -> Option<&'a CStr> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: cuptiGetResultString writes one pointer to a valid location.
    let ok = unsafe { get(result, &mut text) } == CUPTI_SUCCESS;
    // SAFETY: on success CUPTI returns a NUL-terminated string in its own
    // static data, which stays mapped (the library is never unloaded).
    (ok && !text.is_null()).then(|| unsafe { CStr::from_ptr(text) })
}

fn error(get: ResultStringFn, function: &'static str, code: CUptiResult) -> CuptiError {
    CuptiError { function, code, name: result_string(get, code).map(|name| name.to_string_lossy().into_owned()) }
}

/// The path of the loaded object that contains `address`.
fn loaded_path(address: *const c_void) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only writes `info`.
    if unsafe { libc::dladdr(address, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded and filled `info`.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader,
    // valid while the object stays loaded; it is copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(name.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_open_error_naming_it() {
        let err = Cupti::load("/nonexistent/libcupti.so.13").unwrap_err();
        assert!(matches!(err, LoadError::Open { .. }), "{err:?}");
        assert!(err.to_string().starts_with("cannot open /nonexistent/libcupti.so.13: "), "{err}");
    }

    #[test]
    fn a_library_that_is_not_cupti_lacks_its_functions() {
        // libc is loaded and lacks every cupti* symbol.
        let err = Cupti::load("libc.so.6").unwrap_err();
        match err {
            LoadError::MissingSymbol { symbol, .. } => assert_eq!(symbol, "cuptiGetVersion"),
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
    }
}
