//! The Pthread locking callbacks of `OTF2_Pthread_Locks.h`, in Rust.
//!
//! That header defines `OTF2_Pthread_Archive_SetLockingCallbacks` and
//! `OTF2_Pthread_Reader_SetLockingCallbacks` as `static` functions, so they
//! are compiled into each C program that includes it and exported by no
//! library: bindgen cannot bind them. An archive or reader used from more
//! than one thread needs locking callbacks; these two functions register the
//! same pthread-mutex based ones, with the same contract as the header's.

use std::ffi::c_void;

use crate::{
    OTF2_Archive, OTF2_Archive_SetLockingCallbacks, OTF2_CALLBACK_ERROR, OTF2_CALLBACK_SUCCESS, OTF2_CallbackCode,
    OTF2_ERROR_INVALID_ARGUMENT, OTF2_ErrorCode, OTF2_Lock, OTF2_LockingCallbacks, OTF2_Reader,
    OTF2_Reader_SetLockingCallbacks, OTF2_SUCCESS,
};

/// What OTF2 hands back to every callback as `userData`.
struct UserData {
    mutex_attribute: *const libc::pthread_mutexattr_t,
}

/// The object behind an `OTF2_Lock`. OTF2 only stores and passes the
/// pointer; its layout is ours to choose.
struct PthreadLock {
    mutex: libc::pthread_mutex_t,
}

unsafe extern "C" fn release(user_data: *mut c_void) {
    // SAFETY: `user_data` is the Box leaked in `register`; OTF2 calls
    // release exactly once, when the archive or reader is closed.
    let user_data = unsafe { Box::from_raw(user_data.cast::<UserData>()) };
    if !user_data.mutex_attribute.is_null() {
        // SAFETY: the caller of the Set function handed us ownership of
        // an initialized attribute, as the C header documents.
        unsafe {
            libc::pthread_mutexattr_destroy(user_data.mutex_attribute.cast_mut());
        }
    }
}

unsafe extern "C" fn create(user_data: *mut c_void, lock: *mut OTF2_Lock) -> OTF2_CallbackCode {
    if lock.is_null() {
        return OTF2_CALLBACK_ERROR;
    }
    // SAFETY: `user_data` is the live Box from `register`.
    let attribute = unsafe { (*user_data.cast::<UserData>()).mutex_attribute };
    let object = Box::into_raw(Box::new(PthreadLock {
        // Overwritten by pthread_mutex_init below before any use.
        mutex: libc::PTHREAD_MUTEX_INITIALIZER,
    }));
    // SAFETY: `object` is a fresh, exclusively owned allocation, and
    // `attribute` is null or an initialized attribute.
    let err = unsafe { libc::pthread_mutex_init(&raw mut (*object).mutex, attribute) };
    if err != 0 {
        // SAFETY: `object` came from Box::into_raw just above.
        drop(unsafe { Box::from_raw(object) });
        return OTF2_CALLBACK_ERROR;
    }
    // SAFETY: `lock` is non-null and points to OTF2's output slot.
    unsafe { *lock = object.cast() };
    OTF2_CALLBACK_SUCCESS
}

unsafe extern "C" fn destroy(_user_data: *mut c_void, lock: OTF2_Lock) -> OTF2_CallbackCode {
    if lock.is_null() {
        return OTF2_CALLBACK_ERROR;
    }
    let object = lock.cast::<PthreadLock>();
    // SAFETY: every OTF2_Lock OTF2 hands us was made by `create`; OTF2
    // destroys each one once, while it is unlocked.
    let err = unsafe { libc::pthread_mutex_destroy(&raw mut (*object).mutex) };
    // SAFETY: as above, `object` is the Box from `create`.
    drop(unsafe { Box::from_raw(object) });
    if err == 0 { OTF2_CALLBACK_SUCCESS } else { OTF2_CALLBACK_ERROR }
}

unsafe extern "C" fn lock(_user_data: *mut c_void, lock: OTF2_Lock) -> OTF2_CallbackCode {
    if lock.is_null() {
        return OTF2_CALLBACK_ERROR;
    }
    // SAFETY: `lock` was made by `create` and is not yet destroyed.
    let err = unsafe { libc::pthread_mutex_lock(&raw mut (*lock.cast::<PthreadLock>()).mutex) };
    if err == 0 { OTF2_CALLBACK_SUCCESS } else { OTF2_CALLBACK_ERROR }
}

unsafe extern "C" fn unlock(_user_data: *mut c_void, lock: OTF2_Lock) -> OTF2_CallbackCode {
    if lock.is_null() {
        return OTF2_CALLBACK_ERROR;
    }
    // SAFETY: `lock` was made by `create` and is held by this thread.
    let err = unsafe { libc::pthread_mutex_unlock(&raw mut (*lock.cast::<PthreadLock>()).mutex) };
    if err == 0 { OTF2_CALLBACK_SUCCESS } else { OTF2_CALLBACK_ERROR }
}

static CALLBACKS: OTF2_LockingCallbacks = OTF2_LockingCallbacks {
    otf2_release: Some(release),
    otf2_create: Some(create),
    otf2_destroy: Some(destroy),
    otf2_lock: Some(lock),
    otf2_unlock: Some(unlock),
};

/// Leaks the user data, lets `set` register it, and takes it back if OTF2
/// refused (then OTF2 will never call `release`).
fn register(
    mutex_attribute: *const libc::pthread_mutexattr_t,
    set: impl FnOnce(*mut c_void) -> OTF2_ErrorCode,
) -> OTF2_ErrorCode {
    let user_data = Box::into_raw(Box::new(UserData { mutex_attribute })).cast::<c_void>();
    let code = set(user_data);
    if code != OTF2_SUCCESS {
        // SAFETY: OTF2 did not take the pointer; it is still our Box.
        drop(unsafe { Box::from_raw(user_data.cast::<UserData>()) });
    }
    code
}

/// Registers pthread-mutex locking callbacks on a writing archive, like the
/// function of the same name in `OTF2_Pthread_Locks.h`.
///
/// # Safety
///
/// `archive` must be null or a live archive handle. `mutex_attribute` must
/// be null or an initialized attribute that outlives the archive; on
/// success OTF2 destroys it when the archive is closed.
#[allow(non_snake_case)]
pub unsafe fn OTF2_Pthread_Archive_SetLockingCallbacks(
    archive: *mut OTF2_Archive,
    mutex_attribute: *const libc::pthread_mutexattr_t,
) -> OTF2_ErrorCode {
    if archive.is_null() {
        return OTF2_ERROR_INVALID_ARGUMENT;
    }
    register(mutex_attribute, |user_data| {
        // SAFETY: `archive` is live (caller's contract); CALLBACKS is a
        // static, and `user_data` stays valid until `release`.
        unsafe { OTF2_Archive_SetLockingCallbacks(archive, &CALLBACKS, user_data) }
    })
}

/// Registers pthread-mutex locking callbacks on a reader, like the function
/// of the same name in `OTF2_Pthread_Locks.h`.
///
/// # Safety
///
/// As for [`OTF2_Pthread_Archive_SetLockingCallbacks`], with a reader.
#[allow(non_snake_case)]
pub unsafe fn OTF2_Pthread_Reader_SetLockingCallbacks(
    reader: *mut OTF2_Reader,
    mutex_attribute: *const libc::pthread_mutexattr_t,
) -> OTF2_ErrorCode {
    if reader.is_null() {
        return OTF2_ERROR_INVALID_ARGUMENT;
    }
    register(mutex_attribute, |user_data| {
        // SAFETY: as in the archive variant.
        unsafe { OTF2_Reader_SetLockingCallbacks(reader, &CALLBACKS, user_data) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    #[test]
    fn lock_lifecycle() {
        let user_data = Box::into_raw(Box::new(UserData { mutex_attribute: ptr::null() })).cast::<c_void>();
        let mut handle: OTF2_Lock = ptr::null_mut();
        // SAFETY: the calls follow OTF2's protocol: create, lock, unlock,
        // destroy, release, each on the objects made just before.
        unsafe {
            assert_eq!(create(user_data, &mut handle), OTF2_CALLBACK_SUCCESS);
            assert!(!handle.is_null());
            assert_eq!(lock(user_data, handle), OTF2_CALLBACK_SUCCESS);
            assert_eq!(unlock(user_data, handle), OTF2_CALLBACK_SUCCESS);
            assert_eq!(destroy(user_data, handle), OTF2_CALLBACK_SUCCESS);
            assert_eq!(lock(user_data, ptr::null_mut()), OTF2_CALLBACK_ERROR);
            release(user_data);
        }
    }

    #[test]
    fn null_handles_are_rejected() {
        // SAFETY: null is the documented invalid-argument case.
        let code = unsafe { OTF2_Pthread_Archive_SetLockingCallbacks(ptr::null_mut(), ptr::null()) };
        assert_eq!(code, OTF2_ERROR_INVALID_ARGUMENT);
    }
}
