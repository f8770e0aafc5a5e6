//! Open MPI's ABI: handles are pointers to predefined library objects
//! (`MPI_COMM_WORLD` is `&ompi_mpi_comm_world`), and `MPI_Status` is
//! `{MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled, _ucount}`.
//!
//! The predefined objects are looked up with `dlsym` at `MPI_Init` (the
//! library is not linked against libmpi); their presence is also how we
//! recognize Open MPI. Every value here is compared with the installed
//! `mpi.h` by a probe compiled with `mpicc` (the tests below).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use gputrace_mpi_core::{MpiAbi, ObjectHandle};

/// `MPI_Status` of Open MPI 4 and 5.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Status {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    pub cancelled: c_int,
    pub ucount: usize,
}

/// Open MPI.
#[derive(Debug)]
pub enum OpenMpi {}

/// The predefined handles the core uses: (name in `mpi.h`, the library
/// object it is the address of).
pub const PREDEFINED: [(&str, &str); 6] = [
    ("MPI_COMM_WORLD", "ompi_mpi_comm_world\0"),
    ("MPI_COMM_SELF", "ompi_mpi_comm_self\0"),
    ("MPI_COMM_NULL", "ompi_mpi_comm_null\0"),
    ("MPI_REQUEST_NULL", "ompi_request_null\0"),
    ("MPI_MESSAGE_NULL", "ompi_message_null\0"),
    ("MPI_BYTE", "ompi_mpi_byte\0"),
];

const WORLD: usize = 0;
const SELF: usize = 1;
const COMM_NULL: usize = 2;
const REQUEST_NULL: usize = 3;
const MESSAGE_NULL: usize = 4;
const BYTE: usize = 5;

static OBJECTS: [AtomicUsize; PREDEFINED.len()] = [const { AtomicUsize::new(0) }; PREDEFINED.len()];

#[inline]
fn object(i: usize) -> ObjectHandle {
    ObjectHandle(OBJECTS[i].load(Ordering::Relaxed) as *mut c_void)
}

// SAFETY: the types and values below are Open MPI's, as the probe test
// checks against `mpi.h`.
unsafe impl MpiAbi for OpenMpi {
    const NAME: &'static str = "Open MPI";

    type Comm = ObjectHandle;
    type Datatype = ObjectHandle;
    type Request = ObjectHandle;
    type Op = ObjectHandle;
    type Group = ObjectHandle;
    type Win = ObjectHandle;
    type File = ObjectHandle;
    type Info = ObjectHandle;
    type Errhandler = ObjectHandle;
    type Message = ObjectHandle;
    type Status = Status;

    const ANY_SOURCE: c_int = -1;
    const ANY_TAG: c_int = -1;
    const PROC_NULL: c_int = -2;
    const ROOT: c_int = -4;
    const UNDEFINED: c_int = -32766;
    const ERR_OTHER: c_int = 16;

    fn detect() -> Result<(), String> {
        for (i, (_, symbol)) in PREDEFINED.iter().enumerate() {
            let a = gputrace_mpi_core::pmpi::lookup_object(symbol);
            if a == 0 {
                return Err(format!(
                    "this process's MPI does not define {} (not Open MPI)",
                    symbol.trim_end_matches('\0')
                ));
            }
            OBJECTS[i].store(a, Ordering::Relaxed);
        }
        Ok(())
    }

    fn comm_world() -> ObjectHandle {
        object(WORLD)
    }
    fn comm_self() -> ObjectHandle {
        object(SELF)
    }
    fn comm_null() -> ObjectHandle {
        object(COMM_NULL)
    }
    fn request_null() -> ObjectHandle {
        object(REQUEST_NULL)
    }
    fn message_null() -> ObjectHandle {
        object(MESSAGE_NULL)
    }
    fn byte() -> ObjectHandle {
        object(BYTE)
    }

    fn status_ignore() -> *mut Status {
        std::ptr::null_mut()
    }
    fn statuses_ignore() -> *mut Status {
        std::ptr::null_mut()
    }
    fn in_place() -> *const c_void {
        std::ptr::without_provenance(1)
    }

    #[inline]
    fn status_source(s: &Status) -> c_int {
        s.source
    }
    #[inline]
    fn status_tag(s: &Status) -> c_int {
        s.tag
    }
    /// `_ucount`: bytes (ompi_status_public_t, Open MPI 4 and 5).
    #[inline]
    fn status_bytes(s: &Status) -> u64 {
        s.ucount as u64
    }
}

#[cfg(test)]
#[path = "../../tests/support/probe.rs"]
pub(crate) mod probe;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn abi_matches_the_installed_mpi_h() {
        let mut checks: Vec<(String, i64)> = vec![
            ("sizeof(MPI_Status)".into(), size_of::<Status>() as i64),
            ("offsetof(MPI_Status, MPI_SOURCE)".into(), offset_of!(Status, source) as i64),
            ("offsetof(MPI_Status, MPI_TAG)".into(), offset_of!(Status, tag) as i64),
            ("offsetof(MPI_Status, MPI_ERROR)".into(), offset_of!(Status, error) as i64),
            ("sizeof(MPI_Comm)".into(), size_of::<ObjectHandle>() as i64),
            ("sizeof(MPI_Request)".into(), size_of::<ObjectHandle>() as i64),
            ("sizeof(MPI_Datatype)".into(), size_of::<ObjectHandle>() as i64),
            ("sizeof(MPI_Message)".into(), size_of::<ObjectHandle>() as i64),
            ("sizeof(MPI_Aint)".into(), size_of::<gputrace_mpi_core::abi::Aint>() as i64),
            ("sizeof(MPI_Offset)".into(), size_of::<gputrace_mpi_core::abi::Offset>() as i64),
            ("sizeof(MPI_Count)".into(), size_of::<gputrace_mpi_core::abi::Count>() as i64),
            ("sizeof(MPI_Fint)".into(), size_of::<gputrace_mpi_core::abi::Fint>() as i64),
            ("MPI_ANY_SOURCE".into(), OpenMpi::ANY_SOURCE.into()),
            ("MPI_ANY_TAG".into(), OpenMpi::ANY_TAG.into()),
            ("MPI_PROC_NULL".into(), OpenMpi::PROC_NULL.into()),
            ("MPI_ROOT".into(), OpenMpi::ROOT.into()),
            ("MPI_UNDEFINED".into(), OpenMpi::UNDEFINED.into()),
            ("MPI_SUCCESS".into(), OpenMpi::SUCCESS.into()),
            ("MPI_ERR_OTHER".into(), OpenMpi::ERR_OTHER.into()),
            ("(intptr_t)MPI_STATUS_IGNORE".into(), OpenMpi::status_ignore() as i64),
            ("(intptr_t)MPI_STATUSES_IGNORE".into(), OpenMpi::statuses_ignore() as i64),
            ("(intptr_t)MPI_IN_PLACE".into(), OpenMpi::in_place() as i64),
        ];
        for (name, symbol) in PREDEFINED {
            let symbol = symbol.trim_end_matches('\0');
            checks.push((format!("(char *)({name}) - (char *)dlsym(RTLD_DEFAULT, \"{symbol}\")"), 0));
        }
        probe::check("mpicc", &checks);
    }
}
