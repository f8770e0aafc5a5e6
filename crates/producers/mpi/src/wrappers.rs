//! The macros that turn the signature list into exported C wrappers.
//!
//! [`define_wrappers!`](crate::define_wrappers), invoked once in a flavour
//! crate with its [`MpiAbi`](crate::MpiAbi), expands the list in
//! [`functions`](crate::functions) into a module holding one
//! `#[unsafe(no_mangle)] pub unsafe extern "C" fn MPI_*` per function and
//! one [`FnInfo`](crate::call::FnInfo) static per function in its `info`
//! submodule (shared with the Fortran wrappers). Each wrapper:
//!
//! 1. resolves `PMPI_*` (once, see [`pmpi`](crate::pmpi)); where no
//!    loaded library defines it nor `MPI_*`, returns an error at once;
//! 2. asks [`Call::begin`](crate::call::Call::begin) whether to follow the
//!    call — if not, calls PMPI with the program's arguments and returns;
//! 3. runs its hook's pre-call part, shielded from panics; the hook may
//!    substitute an argument (our status for `MPI_STATUS_IGNORE`);
//! 4. calls PMPI exactly once;
//! 5. runs the hook's post-call part and records Leave.
//!
//! `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize` and `MPI_Abort` are
//! marked `lifecycle::` in the list and call into
//! [`lifecycle`](crate::lifecycle) instead.

/// Expands one entry of the signature list; used by
/// [`define_wrappers!`](crate::define_wrappers) only.
#[doc(hidden)]
#[macro_export]
macro_rules! __wrapper {
    ($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty => lifecycle :: $hook:ident ()) => {
        #[doc = concat!("`", stringify!($name), "`, starting or ending the recording.")]
        ///
        /// # Safety
        ///
        /// As for the MPI function: called by the program with valid
        /// arguments.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            static SYMBOL: $crate::pmpi::Symbol =
                $crate::pmpi::Symbol::new(concat!("P", stringify!($name), "\0"));
            // SAFETY: PMPI_x has the C signature of MPI_x.
            let pmpi: Option<unsafe extern "C" fn($($ty),*) -> $ret> = unsafe { SYMBOL.get() };
            let Some(pmpi) = pmpi else {
                return <$ret as $crate::pmpi::Unavailable>::unavailable::<Abi>();
            };
            $crate::lifecycle::$hook::<Abi>(&info::$name, move || {
                // SAFETY: the program's own arguments, passed on unchanged.
                unsafe { pmpi($($arg),*) }
            })
        }
    };
    ($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty
        => $module:ident :: $hook:ident ($($harg:tt)*)) => {
        #[doc = concat!("`", stringify!($name), "`, recorded.")]
        ///
        /// # Safety
        ///
        /// As for the MPI function: called by the program with valid
        /// arguments.
        #[unsafe(no_mangle)]
        #[allow(unused_mut, clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($(mut $arg: $ty),*) -> $ret {
            static SYMBOL: $crate::pmpi::Symbol =
                $crate::pmpi::Symbol::new(concat!("P", stringify!($name), "\0"));
            // SAFETY: PMPI_x has the C signature of MPI_x.
            let pmpi: Option<unsafe extern "C" fn($($ty),*) -> $ret> = unsafe { SYMBOL.get() };
            let Some(pmpi) = pmpi else {
                return <$ret as $crate::pmpi::Unavailable>::unavailable::<Abi>();
            };
            let Some(call) = $crate::call::Call::begin(&info::$name) else {
                // SAFETY: the program's own arguments, passed on unchanged.
                return unsafe { pmpi($($arg),*) };
            };
            let hook = call.pre(|call| $crate::hooks::$module::$hook::<Abi>(call, $($harg)*));
            // SAFETY: the program's arguments; a hook only ever replaces a
            // status the program ignores by a valid one of ours.
            let ret = unsafe { pmpi($($arg),*) };
            call.finish(hook, $crate::call::ReturnCode::code(ret));
            ret
        }
    };
}

/// Expands the signature list for one ABI; used by
/// [`define_wrappers!`](crate::define_wrappers) only.
#[doc(hidden)]
#[macro_export]
macro_rules! __wrappers {
    ($abi:path; $(
        [$group:ident $role:ident $follow:ident]
        $name:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty
        => $module:ident :: $hook:ident ($($harg:tt)*);
    )*) => {
        /// The exported `MPI_*` wrappers and their descriptions.
        #[allow(non_snake_case, non_upper_case_globals, dead_code)]
        pub mod mpi_wrappers {
            use ::std::ffi::{c_char, c_int, c_void};
            use $crate::abi::{Aint, Count, Offset};

            pub type Abi = $abi;
            type Comm = <Abi as $crate::MpiAbi>::Comm;
            type Datatype = <Abi as $crate::MpiAbi>::Datatype;
            type Request = <Abi as $crate::MpiAbi>::Request;
            type Op = <Abi as $crate::MpiAbi>::Op;
            type Group = <Abi as $crate::MpiAbi>::Group;
            type Win = <Abi as $crate::MpiAbi>::Win;
            type File = <Abi as $crate::MpiAbi>::File;
            type Info = <Abi as $crate::MpiAbi>::Info;
            type Errhandler = <Abi as $crate::MpiAbi>::Errhandler;
            type Message = <Abi as $crate::MpiAbi>::Message;
            type Status = <Abi as $crate::MpiAbi>::Status;

            /// One description per wrapped function, named as it.
            pub mod info {
                $(
                    pub static $name: $crate::call::FnInfo = $crate::call::FnInfo::new(
                        stringify!($name),
                        $crate::state::Group::$group,
                        ::raw::RegionRole::$role,
                        $crate::call::Follow::$follow,
                    );
                )*
            }

            /// Every wrapped function's description.
            pub static ALL: &[&$crate::call::FnInfo] = &[$(&info::$name),*];

            $(
                $crate::__wrapper! {
                    $name ($($arg : $ty),*) -> $ret => $module :: $hook ($($harg)*)
                }
            )*
        }
    };
}
