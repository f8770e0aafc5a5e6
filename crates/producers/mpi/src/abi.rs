//! What the core needs to know about one MPI implementation's ABI.
//!
//! Open MPI and MPICH agree on every function's C signature up to the
//! types of handles and of `MPI_Status`, and disagree on those and on the
//! values of the constants. [`MpiAbi`] collects exactly these differences,
//! so that everything else — the wrappers, request tracking, byte counts,
//! communicator keys, clock sync — is written once, generic over it. Each
//! flavour crate implements it and checks its values against its `mpi.h`
//! with a probe compiled by that implementation's `mpicc`.

use std::ffi::{c_int, c_void};
use std::hash::Hash;

/// An MPI handle (`MPI_Comm`, `MPI_Request`, ...): an `int` in MPICH, a
/// pointer in Open MPI. The core only compares handles and uses them as
/// table keys, so all it needs is a lossless conversion to and from
/// `usize`.
pub trait Handle: Copy + Eq + Hash + Send + Sync + std::fmt::Debug + 'static {
    /// The handle's bits as a table key.
    fn key(self) -> usize;
    /// The handle whose key is `key`.
    fn from_key(key: usize) -> Self;

    /// Reads the `i`-th handle of a C array of handles.
    ///
    /// # Safety
    ///
    /// `base` must point to at least `i + 1` handles of the C type.
    #[inline]
    unsafe fn read_at(base: *const Self, i: usize) -> Self {
        // SAFETY: the caller guarantees the element exists.
        unsafe { *base.add(i) }
    }

    /// Reads a handle the program passed by pointer.
    ///
    /// # Safety
    ///
    /// `p` must point to a handle of the C type.
    #[inline]
    unsafe fn read(p: *const Self) -> Self {
        // SAFETY: as for `read_at`.
        unsafe { Self::read_at(p, 0) }
    }
}

impl Handle for c_int {
    #[inline]
    fn key(self) -> usize {
        self as u32 as usize
    }
    #[inline]
    fn from_key(key: usize) -> Self {
        key as u32 as c_int
    }
}

/// An `int` handle (MPICH) held in a full register's width.
///
/// In the wrapper signatures a by-value handle argument is read as 64
/// bits and passed on as 64 bits, so that a library built for `int`
/// handles, preloaded by mistake into a process whose MPI uses pointers,
/// passes those pointers through intact (it warns and records nothing).
/// Only the low 32 bits are the handle: equality and keys ignore the rest,
/// and handles read through pointers are read as 32-bit ints.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct IntHandle(pub u64);

impl IntHandle {
    pub const fn new(v: c_int) -> Self {
        IntHandle(v as u32 as u64)
    }

    /// The handle's value.
    pub const fn value(self) -> c_int {
        self.0 as u32 as c_int
    }
}

impl PartialEq for IntHandle {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl Eq for IntHandle {}

impl Hash for IntHandle {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value().hash(state);
    }
}

impl Handle for IntHandle {
    #[inline]
    fn key(self) -> usize {
        self.value() as u32 as usize
    }
    #[inline]
    fn from_key(key: usize) -> Self {
        IntHandle(key as u32 as u64)
    }
    #[inline]
    unsafe fn read_at(base: *const Self, i: usize) -> Self {
        // SAFETY: the C array holds `int`s; the caller guarantees the
        // element exists.
        IntHandle::new(unsafe { *base.cast::<c_int>().add(i) })
    }
}

/// A handle that is a pointer to an opaque object (Open MPI). Threads may
/// share it: it is only ever passed back to MPI, never dereferenced here.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectHandle(pub *mut c_void);

// SAFETY: the pointer is an opaque token that only MPI dereferences; MPI
// handles may be used from any thread (the MPI standard leaves thread
// safety of the objects to MPI itself).
unsafe impl Send for ObjectHandle {}
// SAFETY: as above.
unsafe impl Sync for ObjectHandle {}

impl Handle for ObjectHandle {
    #[inline]
    fn key(self) -> usize {
        self.0 as usize
    }
    #[inline]
    fn from_key(key: usize) -> Self {
        ObjectHandle(key as *mut c_void)
    }
}

/// One MPI implementation's ABI.
///
/// # Safety
///
/// The types must have exactly the size and layout of their C
/// counterparts in the implementation's `mpi.h`, and the constants and
/// accessors its values: the wrappers pass these types to the C library
/// unchecked.
pub unsafe trait MpiAbi: Sized + 'static {
    /// The implementation, as the warning for a wrong one names it.
    const NAME: &'static str;

    type Comm: Handle;
    type Datatype: Handle;
    type Request: Handle;
    type Op: Handle;
    type Group: Handle;
    type Win: Handle;
    type File: Handle;
    type Info: Handle;
    type Errhandler: Handle;
    type Message: Handle;
    /// `MPI_Status`: plain data, at most [`MAX_STATUS_BYTES`] bytes and
    /// 8-byte aligned at most (checked at compile time where used).
    type Status: Copy + Send + 'static;

    const ANY_SOURCE: c_int;
    const ANY_TAG: c_int;
    const PROC_NULL: c_int;
    const ROOT: c_int;
    const UNDEFINED: c_int;
    const SUCCESS: c_int = 0;
    /// `MPI_ERR_OTHER`: what a wrapper returns when no loaded library
    /// defines its function.
    const ERR_OTHER: c_int;
    /// `MPI_IDENT` and `MPI_CONGRUENT` from `MPI_Comm_compare`.
    const IDENT: c_int = 0;

    /// Whether the process's MPI library is of this flavour; `Err` says
    /// what was found instead. Called once, at `MPI_Init`, before any
    /// other method; it also resolves the predefined handles where they
    /// are addresses of library objects.
    fn detect() -> Result<(), String>;

    fn comm_world() -> Self::Comm;
    fn comm_self() -> Self::Comm;
    fn comm_null() -> Self::Comm;
    fn request_null() -> Self::Request;
    fn message_null() -> Self::Message;
    /// `MPI_BYTE`: byte counts are taken with it, so that no datatype the
    /// user may free has to be kept.
    fn byte() -> Self::Datatype;

    fn status_ignore() -> *mut Self::Status;
    fn statuses_ignore() -> *mut Self::Status;
    fn in_place() -> *const c_void;

    fn status_source(s: &Self::Status) -> c_int;
    fn status_tag(s: &Self::Status) -> c_int;
    /// The bytes a completed receive delivered, as the library keeps them
    /// in the status (what `MPI_Get_count` with `MPI_BYTE` divides by 1):
    /// read from the status rather than through a PMPI call on every
    /// receive.
    fn status_bytes(s: &Self::Status) -> u64;
}

/// The room reserved per substituted status; every known `MPI_Status` is
/// 20 to 24 bytes.
pub const MAX_STATUS_BYTES: usize = 64;

/// Compile-time proof that `A::Status` fits the room the core reserves.
pub(crate) const fn assert_status_fits<A: MpiAbi>() {
    assert!(std::mem::size_of::<A::Status>() <= MAX_STATUS_BYTES);
    assert!(std::mem::align_of::<A::Status>() <= 8);
}

/// Handle types the wrapper signatures are written with; the cdylib that
/// expands [`define_wrappers!`](crate::define_wrappers) brings them into
/// scope for its ABI.
pub type Aint = isize;
pub type Offset = i64;
pub type Count = i64;
pub type Fint = c_int;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_handles_round_trip_negative_values() {
        for h in [0, -1, 0x4400_0000, i32::MIN] {
            assert_eq!(c_int::from_key(h.key()), h);
        }
        let p = ObjectHandle(0x1234 as *mut c_void);
        assert_eq!(ObjectHandle::from_key(p.key()), p);
    }
}
