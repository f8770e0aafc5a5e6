//! Calling the MPI library: symbols resolved at run time, and the few
//! `PMPI_*` calls the core makes on its own behalf.
//!
//! Nothing here is linked against libmpi. A preloaded library is loaded
//! into every process that inherits `LD_PRELOAD` — shells, launchers,
//! compilers the program runs — and Rust links cdylibs with `-z now`, so an
//! undefined `PMPI_Send` would stop such processes from starting. Each
//! symbol is therefore looked up the first time it is called and cached in
//! an atomic; afterwards a call costs one relaxed load more than a direct
//! call. The lookup ([`lookup`]) asks `dlsym` with `RTLD_NEXT`, then with
//! `RTLD_DEFAULT` (a library that was not preloaded), then searches the
//! loaded objects one by one ([`loaded`](crate::loaded)): an MPI library
//! opened with `RTLD_LOCAL`, as Python opens mpi4py's, is in none of the
//! global scope's lists.
//!
//! No lookup failure stops the program. Where the MPI library has no
//! `PMPI_x`, the wrapper calls its `MPI_x` (not ours) instead; where no
//! loaded object defines either, the program cannot have reached the MPI
//! library through this call (it found our symbol by `dlsym` in a process
//! without MPI), and the wrapper returns `MPI_ERR_OTHER` (0.0 for
//! `MPI_Wtime` and `MPI_Wtick`) without recording anything. Each case
//! prints one warning per process.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::abi::{Count, Handle, MpiAbi};
use crate::loaded;

/// A C symbol of the MPI library, resolved on first use.
#[derive(Debug)]
pub struct Symbol {
    /// NUL-terminated.
    name: &'static str,
    addr: AtomicUsize,
    /// 1 + [`loaded::generation`] when no loaded object defined the symbol
    /// (nor its `MPI_x` stand-in); 0 before such a failure. The slow
    /// search is repeated only once more objects have been loaded.
    missing_at: AtomicU64,
}

impl Symbol {
    /// `name` must end with a NUL byte.
    pub const fn new(name: &'static str) -> Self {
        let b = name.as_bytes();
        assert!(!b.is_empty() && b[b.len() - 1] == 0, "symbol names end with NUL");
        Symbol { name, addr: AtomicUsize::new(0), missing_at: AtomicU64::new(0) }
    }

    /// The name, without the NUL.
    pub fn name(&self) -> &'static str {
        &self.name[..self.name.len() - 1]
    }

    /// The address of the symbol — or, for a `PMPI_x` (`pmpi_x_`) that no
    /// loaded object defines, of the MPI library's own `MPI_x` (`mpi_x_`)
    /// — or `None` when neither is defined.
    #[inline]
    pub fn address(&self) -> Option<usize> {
        match self.addr.load(Ordering::Relaxed) {
            0 => self.resolve(),
            a => Some(a),
        }
    }

    #[cold]
    fn resolve(&self) -> Option<usize> {
        let generation = loaded::generation();
        if self.missing_at.load(Ordering::Relaxed) == generation + 1 {
            return None;
        }
        let mut a = lookup(self.name);
        if a == 0
            && let Some(plain) = unprofiled_name(self.name)
        {
            a = lookup_other(plain);
            if a != 0 {
                warn_once_per_process(
                    &NO_PMPI_WARNED,
                    &format!(
                        "this process's MPI library does not define {} (no profiling interface): \
                         gputrace calls its {} instead, and so for any other such function",
                        self.name(),
                        &plain[..plain.len() - 1]
                    ),
                );
            }
        }
        if a == 0 {
            self.missing_at.store(generation + 1, Ordering::Relaxed);
            let plain = unprofiled_name(self.name).map_or(self.name(), |p| &p[..p.len() - 1]);
            warn_once_per_process(
                &NOTHING_WARNED,
                &format!(
                    "no loaded library defines {} (nor {plain}): calls of {plain} return an error \
                     without reaching MPI, and nothing is recorded (is an MPI library loaded?)",
                    self.name(),
                ),
            );
            return None;
        }
        self.addr.store(a, Ordering::Relaxed);
        Some(a)
    }

    /// The symbol as a function pointer of type `F` (see
    /// [`address`](Self::address)); `None`, after one warning per
    /// process, when no loaded object defines it.
    ///
    /// # Safety
    ///
    /// `F` must be an `unsafe extern "C" fn` type with the symbol's C
    /// signature.
    #[inline]
    pub unsafe fn get<F: Copy>(&self) -> Option<F> {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
        let a = self.address()?;
        // SAFETY: `a` is the non-null address of the function the caller
        // vouches has signature `F` (an `MPI_x` has its `PMPI_x`'s), and
        // `F` is a pointer-sized fn pointer.
        Some(unsafe { std::mem::transmute_copy::<usize, F>(&a) })
    }
}

static NO_PMPI_WARNED: AtomicBool = AtomicBool::new(false);
static NOTHING_WARNED: AtomicBool = AtomicBool::new(false);

/// Prints `message` if `flag` was not yet set: one line per process and
/// kind of failure, however many symbols fail.
fn warn_once_per_process(flag: &AtomicBool, message: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        recorder::diag::warn(message);
    }
}

/// `MPI_x\0` for `PMPI_x\0`, `mpi_x_\0` for `pmpi_x_\0`; `None` for
/// other names.
fn unprofiled_name(name: &'static str) -> Option<&'static str> {
    let rest = name.strip_prefix('P').or_else(|| name.strip_prefix('p'))?;
    (rest.starts_with("MPI_") || rest.starts_with("mpi_")).then_some(rest)
}

/// What a wrapper returns when no loaded object defines the function it
/// wraps: an error code, never a call.
pub trait Unavailable {
    fn unavailable<A: MpiAbi>() -> Self;
}

impl Unavailable for c_int {
    // Cold and out of line: it must not weigh on the wrappers' hot path.
    #[cold]
    #[inline(never)]
    fn unavailable<A: MpiAbi>() -> Self {
        A::ERR_OTHER
    }
}

impl Unavailable for f64 {
    #[cold]
    #[inline(never)]
    fn unavailable<A: MpiAbi>() -> Self {
        0.0
    }
}

/// The address of a data object of the MPI library (a predefined handle's
/// object), 0 when undefined. `name` must end with a NUL byte.
///
/// Unlike functions, objects must be looked up from the start of the
/// global scope (`RTLD_DEFAULT`): a program that refers to
/// `MPI_COMM_WORLD` holds a *copy* of `ompi_mpi_comm_world` (a copy
/// relocation) that the library itself then uses, and `RTLD_NEXT` would
/// find the library's unused original instead. Only executables have copy
/// relocations, and an executable's references bind in the global scope:
/// an MPI library outside it (opened `RTLD_LOCAL`) has only shared-object
/// users, which refer to its original through their GOT; so the loaded
/// objects are searched after `RTLD_DEFAULT`, for that original.
pub fn lookup_object(name: &str) -> usize {
    debug_assert!(name.ends_with('\0'));
    // SAFETY: NUL-terminated name; RTLD_DEFAULT is a valid pseudo-handle.
    let global = (unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast::<c_char>()) }) as usize;
    if global != 0 { global } else { loaded::find(name) }
}

/// `dlsym` with `RTLD_NEXT`, then `RTLD_DEFAULT`, then the search of the
/// loaded objects; 0 when undefined. `name` must end with a NUL byte.
pub fn lookup(name: &str) -> usize {
    debug_assert!(name.ends_with('\0'));
    let c = name.as_ptr().cast::<c_char>();
    // SAFETY: `c` is NUL-terminated; dlsym accepts the two pseudo-handles.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, c) };
    if !next.is_null() {
        return next as usize;
    }
    // SAFETY: as above.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c) };
    if !global.is_null() {
        return global as usize;
    }
    loaded::find(name)
}

/// Like [`lookup`] for a name this library defines too (`MPI_x`): never
/// ours, so `RTLD_DEFAULT`, which finds ours first, is skipped.
fn lookup_other(name: &str) -> usize {
    debug_assert!(name.ends_with('\0'));
    // SAFETY: NUL-terminated name; RTLD_NEXT is a valid pseudo-handle.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast::<c_char>()) };
    if next.is_null() { loaded::find(name) } else { next as usize }
}

/// Declares generic wrappers for `PMPI_*` functions the core calls itself.
macro_rules! pmpi {
    ($( fn $rust:ident = $sym:literal ( $($arg:ident : $ty:ty),* ); )*) => {$(
        #[doc = concat!("`", $sym, "`.")]
        ///
        /// # Safety
        ///
        /// MPI must be initialized and the arguments valid for the call.
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $rust<A: MpiAbi>($($arg: $ty),*) -> c_int {
            static SYMBOL: Symbol = Symbol::new(concat!($sym, "\0"));
            // SAFETY: the type is the C signature of the named function in
            // the ABI `A` that the caller's process uses.
            let f: Option<unsafe extern "C" fn($($ty),*) -> c_int> = unsafe { SYMBOL.get() };
            let Some(f) = f else { return A::ERR_OTHER };
            // SAFETY: the caller guarantees valid arguments.
            unsafe { f($($arg),*) }
        }
    )*};
}

pmpi! {
    fn comm_rank = "PMPI_Comm_rank"(comm: A::Comm, rank: *mut c_int);
    fn comm_size = "PMPI_Comm_size"(comm: A::Comm, size: *mut c_int);
    fn comm_remote_size = "PMPI_Comm_remote_size"(comm: A::Comm, size: *mut c_int);
    fn comm_test_inter = "PMPI_Comm_test_inter"(comm: A::Comm, flag: *mut c_int);
    fn comm_group = "PMPI_Comm_group"(comm: A::Comm, group: *mut A::Group);
    fn comm_remote_group = "PMPI_Comm_remote_group"(comm: A::Comm, group: *mut A::Group);
    fn comm_dup = "PMPI_Comm_dup"(comm: A::Comm, newcomm: *mut A::Comm);
    fn comm_free = "PMPI_Comm_free"(comm: *mut A::Comm);
    fn group_size = "PMPI_Group_size"(group: A::Group, size: *mut c_int);
    fn group_free = "PMPI_Group_free"(group: *mut A::Group);
    fn group_translate_ranks = "PMPI_Group_translate_ranks"(
        a: A::Group, n: c_int, ranks: *const c_int, b: A::Group, out: *mut c_int
    );
    fn type_size_x = "PMPI_Type_size_x"(datatype: A::Datatype, size: *mut Count);
    fn test_cancelled = "PMPI_Test_cancelled"(status: *const A::Status, flag: *mut c_int);
    fn bcast = "PMPI_Bcast"(buf: *mut c_void, count: c_int, datatype: A::Datatype, root: c_int, comm: A::Comm);
    fn ibcast = "PMPI_Ibcast"(
        buf: *mut c_void, count: c_int, datatype: A::Datatype, root: c_int, comm: A::Comm,
        request: *mut A::Request
    );
    fn wait = "PMPI_Wait"(request: *mut A::Request, status: *mut A::Status);
    fn send = "PMPI_Send"(
        buf: *const c_void, count: c_int, datatype: A::Datatype, dest: c_int, tag: c_int, comm: A::Comm
    );
    fn recv = "PMPI_Recv"(
        buf: *mut c_void, count: c_int, datatype: A::Datatype, source: c_int, tag: c_int,
        comm: A::Comm, status: *mut A::Status
    );
    fn allgather = "PMPI_Allgather"(
        sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: A::Datatype, comm: A::Comm
    );
    fn scatter = "PMPI_Scatter"(
        sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype, recvbuf: *mut c_void,
        recvcount: c_int, recvtype: A::Datatype, root: c_int, comm: A::Comm
    );
}

/// The rank of this process in `comm`, or `None` on error.
pub fn rank_in<A: MpiAbi>(comm: A::Comm) -> Option<c_int> {
    let mut r = -1;
    // SAFETY: called inside a wrapper, with MPI initialized; `r` is writable.
    (unsafe { comm_rank::<A>(comm, &mut r) } == A::SUCCESS).then_some(r)
}

/// The size of `comm`, or `None` on error.
pub fn size_of<A: MpiAbi>(comm: A::Comm) -> Option<c_int> {
    let mut n = -1;
    // SAFETY: as in `rank_in`.
    (unsafe { comm_size::<A>(comm, &mut n) } == A::SUCCESS).then_some(n)
}

/// The remote group's size of an intercommunicator, `None` for an
/// intracommunicator.
pub fn remote_size_of<A: MpiAbi>(comm: A::Comm) -> Option<c_int> {
    let mut inter = 0;
    // SAFETY: as in `rank_in`.
    if unsafe { comm_test_inter::<A>(comm, &mut inter) } != A::SUCCESS || inter == 0 {
        return None;
    }
    let mut n = 0;
    // SAFETY: as in `rank_in`.
    (unsafe { comm_remote_size::<A>(comm, &mut n) } == A::SUCCESS).then_some(n)
}

/// The size in bytes of `count` elements of `datatype` (0 for a bad type).
#[inline]
pub fn bytes_of<A: MpiAbi>(count: c_int, datatype: A::Datatype) -> u64 {
    if count <= 0 {
        return 0;
    }
    u64::try_from(count).unwrap_or(0) * type_size::<A>(datatype)
}

/// `PMPI_Type_size_x`, 0 for an invalid or undefined size.
#[inline]
pub fn type_size<A: MpiAbi>(datatype: A::Datatype) -> u64 {
    let mut size: Count = 0;
    // SAFETY: `size` is writable; an invalid type makes MPI return an
    // error (or call the error handler, as the program's own call would).
    let rc = unsafe { type_size_x::<A>(datatype, &mut size) };
    if rc == A::SUCCESS { u64::try_from(size).unwrap_or(0) } else { 0 }
}

/// The bytes a completed receive delivered, from its status (read from
/// the status itself: see [`MpiAbi::status_bytes`]).
#[inline]
pub fn received_bytes<A: MpiAbi>(status: &A::Status) -> u64 {
    A::status_bytes(status)
}

/// Whether the request that filled `status` was cancelled.
pub fn was_cancelled<A: MpiAbi>(status: &A::Status) -> bool {
    let mut flag = 0;
    // SAFETY: `status` was filled by a completion call.
    let rc = unsafe { test_cancelled::<A>(status, &mut flag) };
    rc == A::SUCCESS && flag != 0
}

/// Whether `comm` is the null communicator.
#[inline]
pub fn is_null_comm<A: MpiAbi>(comm: A::Comm) -> bool {
    comm.key() == A::comm_null().key()
}
