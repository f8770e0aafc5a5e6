//! The only place this crate calls OTF2: thin wrappers that own the raw
//! handles, turn return codes into [`Error`]s, and convert between OTF2's
//! C types and this crate's typed values. Every other module is safe code.
//!
//! Every call follows one shape, `check(name, unsafe { sys::X(..) })?`,
//! after libsqlite3-sys/rusqlite. OTF2 reports *why* a call failed through
//! a process-wide error callback (and prints to stderr when none is set);
//! [`install_error_callback`] replaces the printing with a thread-local
//! record that [`check`] attaches to the error it returns.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::Path;
use std::sync::Once;

use otf2_sys as sys;

use crate::error::{Error, Result};

pub(crate) mod archive;
pub(crate) mod attributes;
pub(crate) mod collectives;
pub(crate) mod events;
pub(crate) mod global_defs;
mod memory;
pub(crate) mod reader;
mod reader_defs;
pub(crate) mod reader_events;

/// At most this many reports are kept between two failures: OTF2 reports
/// a failure once per layer it passes (file, buffer, archive), and the
/// innermost report says what went wrong, the outermost where.
const MAX_REPORTS: usize = 8;

thread_local! {
    /// OTF2's (code, message) reports on this thread since the last
    /// failure was turned into an error. OTF2 calls the error callback on
    /// the thread of the failing call, so a thread-local pairs each failure
    /// with its own reports.
    static REPORTS: RefCell<Vec<(sys::OTF2_ErrorCode, String)>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" {
    // The callback's `va_list` is `*mut __va_list_tag` on x86_64, the ABI
    // the bindings were generated for; vsnprintf takes it the same way.
    fn vsnprintf(buffer: *mut c_char, size: usize, format: *const c_char, args: *mut sys::__va_list_tag) -> c_int;
}

unsafe extern "C" fn on_error(
    _user_data: *mut c_void,
    _file: *const c_char,
    _line: u64,
    function: *const c_char,
    code: sys::OTF2_ErrorCode,
    format: *const c_char,
    args: *mut sys::__va_list_tag,
) -> sys::OTF2_ErrorCode {
    let mut buffer = [0u8; 1024];
    let mut message = String::new();
    if !format.is_null() {
        // SAFETY: `format` and `args` are the printf pair OTF2 built for
        // this call; vsnprintf writes at most `buffer.len()` bytes,
        // NUL-terminated.
        let written = unsafe { vsnprintf(buffer.as_mut_ptr().cast(), buffer.len(), format, args) };
        if written > 0 {
            let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
            message = String::from_utf8_lossy(&buffer[..end]).into_owned();
        }
    }
    if message.is_empty() && !function.is_null() {
        // SAFETY: OTF2 passes `__func__`, a static NUL-terminated string.
        let function = unsafe { CStr::from_ptr(function) }.to_string_lossy();
        message = format!("failed in {function}");
    }
    // try_with/try_borrow_mut: never panic inside a C callback, even during
    // thread teardown or a re-entrant report.
    let _ = REPORTS.try_with(|reports| {
        if let Ok(mut reports) = reports.try_borrow_mut() {
            // Keep the innermost report (the cause) and the newest.
            if reports.len() == MAX_REPORTS {
                reports.pop();
            }
            reports.push((code, message));
        }
    });
    code
}

/// Routes OTF2's error reports into [`check`]'s errors instead of stderr.
/// Process-wide and idempotent; called before any archive or reader opens.
pub(crate) fn install_error_callback() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: `on_error` matches OTF2_ErrorCallback and ignores its
        // user data, so a null pointer is fine.
        unsafe {
            sys::OTF2_Error_RegisterCallback(Some(on_error), std::ptr::null_mut());
        }
    });
}

/// `Ok(())` for `OTF2_SUCCESS`, else the error for `code` raised by
/// `operation`.
#[inline(always)]
pub(crate) fn check(operation: &'static str, code: sys::OTF2_ErrorCode) -> Result<()> {
    if code == sys::OTF2_SUCCESS { Ok(()) } else { Err(error(operation, code)) }
}

/// Builds the error for a failed call, with the reports OTF2 made about
/// it (innermost cause first).
#[cold]
#[inline(never)]
pub(crate) fn error(operation: &'static str, code: sys::OTF2_ErrorCode) -> Error {
    let reports = take_reports();
    // Reports that do not end in this very code belong to something else.
    let message = match reports.last() {
        Some((last, _)) if *last == code => {
            // The innermost report (the cause) and the outermost (what it
            // broke); the layers in between repeat them.
            let mut texts: Vec<String> = reports.iter().map(|(_, text)| text.clone()).collect();
            // The cause's own code, where it is not the call's (a POSIX
            // failure's errno, ENOSPC say, under INTEGRITY_FAULT): the text
            // alone often names only the file.
            if let (Some((cause, _)), Some(text)) = (reports.first(), texts.first_mut())
                && *cause != code
            {
                // SAFETY: accepts any code; returns a static string.
                let name = static_str(unsafe { sys::OTF2_Error_GetName(*cause) });
                // SAFETY: as above.
                let description = static_str(unsafe { sys::OTF2_Error_GetDescription(*cause) });
                text.push_str(&format!(" ({name}: {description})"));
            }
            texts.retain(|text| !text.is_empty());
            match texts.as_slice() {
                [] => None,
                [only] => Some(only.clone()),
                [first, .., last] => Some(format!("{first} ... {last}")),
            }
        }
        _ => None,
    };
    Error::Otf2 {
        operation,
        code,
        name: static_str(
            // SAFETY: accepts any code; returns a static string.
            unsafe { sys::OTF2_Error_GetName(code) },
        ),
        description: static_str(
            // SAFETY: as above.
            unsafe { sys::OTF2_Error_GetDescription(code) },
        ),
        message,
    }
}

fn take_reports() -> Vec<(sys::OTF2_ErrorCode, String)> {
    REPORTS
        .try_with(|reports| reports.try_borrow_mut().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default())
        .unwrap_or_default()
}

/// The error for a call that returned a null handle: the code is the one
/// OTF2 last reported, or a generic failure if it reported nothing.
#[cold]
pub(crate) fn null_error(operation: &'static str) -> Error {
    let code = REPORTS
        .try_with(|reports| reports.try_borrow().ok().and_then(|r| r.last().map(|(c, _)| *c)))
        .ok()
        .flatten()
        .unwrap_or(sys::OTF2_ERROR_PROCESSED_WITH_FAULTS);
    error(operation, code)
}

/// Forgets reports of earlier failures that were not turned into errors,
/// before a call whose failure is signalled by a null return.
pub(crate) fn clear_reports() {
    drop(take_reports());
}

/// A C string for a path; paths on Linux are bytes, so nothing is lost.
pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains a NUL byte"),
    })
}

/// A static C string from OTF2 as `&'static str`.
fn static_str(ptr: *const c_char) -> &'static str {
    if ptr.is_null() {
        return "?";
    }
    // SAFETY: OTF2_Error_GetName/GetDescription return pointers into
    // static tables of the library, valid for the life of the process.
    unsafe { CStr::from_ptr(ptr) }.to_str().unwrap_or("?")
}

/// A C string read from OTF2 (definition strings), copied out.
///
/// # Safety
///
/// `ptr` must be null or a NUL-terminated string valid for this call.
pub(crate) unsafe fn copy_str(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_maps_codes() {
        install_error_callback();
        assert!(check("x", sys::OTF2_SUCCESS).is_ok());
        let err = check("OTF2_Foo", sys::OTF2_ERROR_INVALID_ARGUMENT).unwrap_err();
        assert_eq!(err.otf2_code(), Some(sys::OTF2_ERROR_INVALID_ARGUMENT));
        let text = err.to_string();
        assert!(text.starts_with("OTF2_Foo failed: INVALID_ARGUMENT"), "{text}");
    }
}
