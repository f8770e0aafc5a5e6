//! Per-thread scratch memory for the statuses and request copies that
//! wrappers substitute or save around a PMPI call.
//!
//! When the program passes `MPI_STATUS_IGNORE`, we still need the status
//! (the true source of an `MPI_ANY_SOURCE` receive, the byte count), so we
//! pass MPI our own. Allocating one per call would cost more than the rest
//! of the wrapper; a thread is inside at most one followed wrapper at a
//! time (the re-entry guard), so one buffer per thread is enough and stays
//! valid across the PMPI call.

use std::cell::{RefCell, UnsafeCell};

use crate::abi::{MpiAbi, assert_status_fits};
use crate::call::Call;

thread_local! {
    static MANY: UnsafeCell<Vec<u64>> = const { UnsafeCell::new(Vec::new()) };
    static KEYS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// This thread's array of `n` statuses, for the calls that complete
/// several; valid until the next call of this function on the thread.
pub fn statuses<A: MpiAbi>(n: usize) -> *mut A::Status {
    const { assert_status_fits::<A>() };
    let words = n.max(1) * std::mem::size_of::<A::Status>().div_ceil(8);
    MANY.try_with(|v| {
        // SAFETY: only the one wrapper running on this thread touches the
        // vector (re-entry guard), and no reference to it outlives this
        // closure.
        let v = unsafe { &mut *v.get() };
        if v.len() < words {
            v.resize(words, 0);
        }
        v.as_mut_ptr().cast::<A::Status>()
    })
    .unwrap_or(std::ptr::null_mut())
}

/// Takes this thread's key vector (emptied), to be handed back with
/// [`give_back_keys`] so that its allocation is reused.
pub fn take_keys() -> Vec<usize> {
    KEYS.try_with(|k| {
        let mut v = std::mem::take(&mut *k.borrow_mut());
        v.clear();
        v
    })
    .unwrap_or_default()
}

/// Returns a vector taken with [`take_keys`].
pub fn give_back_keys(v: Vec<usize>) {
    let _ = KEYS.try_with(|k| *k.borrow_mut() = v);
}

/// A status pointer the program passed, or, if it passed
/// `MPI_STATUS_IGNORE`, the thread's own ([`PerThread`](crate::call::PerThread)),
/// valid until the thread exits; the re-entry guard makes the call its
/// only user while a wrapper runs.
#[inline]
pub fn substitute_status<A: MpiAbi>(call: &Call, status: &mut *mut A::Status) -> *mut A::Status {
    const { assert_status_fits::<A>() };
    if *status == A::status_ignore() || status.is_null() {
        *status = call.per_thread().status.get().cast::<A::Status>();
    }
    *status
}

/// A status array the program passed, or ours for `n` if it passed
/// `MPI_STATUSES_IGNORE`.
pub fn substitute_statuses<A: MpiAbi>(statuses: &mut *mut A::Status, n: usize) -> *mut A::Status {
    if *statuses == A::statuses_ignore() || statuses.is_null() {
        let ours = self::statuses::<A>(n);
        if !ours.is_null() {
            *statuses = ours;
        }
    }
    *statuses
}
