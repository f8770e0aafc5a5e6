//! MPICH's ABI (and that of its derivatives: Intel MPI, MVAPICH, Cray
//! MPICH): handles are `int`s with fixed values for the predefined ones
//! (`MPI_COMM_WORLD` is `0x44000000`), and `MPI_Status` is `{count_lo,
//! count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR}`.
//!
//! By-value handles are [`IntHandle`]s, register-wide, so that this
//! library preloaded by mistake into an Open MPI program passes Open
//! MPI's pointer handles through intact after its warning.
//!
//! Every value here is compared with the installed `mpi.h` by a probe
//! compiled with `mpicc.mpich` (the test below).

use std::ffi::{c_int, c_void};

use gputrace_mpi_core::{IntHandle, MpiAbi};

/// `MPI_Status` of MPICH 3 and 4.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

/// MPICH.
#[derive(Debug)]
pub enum Mpich {}

pub const COMM_WORLD: c_int = 0x4400_0000;
pub const COMM_SELF: c_int = 0x4400_0001;
pub const COMM_NULL: c_int = 0x0400_0000;
pub const REQUEST_NULL: c_int = 0x2c00_0000;
pub const MESSAGE_NULL: c_int = 0x2c00_0000;
pub const BYTE: c_int = 0x4c00_010d;

/// A symbol only MPICH-derived libraries define.
const MPICH_SYMBOL: &str = "MPIR_Err_return_comm\0";
/// A symbol only Open MPI defines.
const OPENMPI_SYMBOL: &str = "ompi_mpi_comm_world\0";

// SAFETY: the types and values below are MPICH's, as the probe test
// checks against `mpi.h`.
unsafe impl MpiAbi for Mpich {
    const NAME: &'static str = "MPICH";

    type Comm = IntHandle;
    type Datatype = IntHandle;
    type Request = IntHandle;
    type Op = IntHandle;
    type Group = IntHandle;
    type Win = IntHandle;
    type File = gputrace_mpi_core::ObjectHandle;
    type Info = IntHandle;
    type Errhandler = IntHandle;
    type Message = IntHandle;
    type Status = Status;

    const ANY_SOURCE: c_int = -2;
    const ANY_TAG: c_int = -1;
    const PROC_NULL: c_int = -1;
    const ROOT: c_int = -3;
    const UNDEFINED: c_int = -32766;
    const ERR_OTHER: c_int = 15;

    fn detect() -> Result<(), String> {
        if gputrace_mpi_core::pmpi::lookup_object(OPENMPI_SYMBOL) != 0 {
            return Err("this process's MPI is Open MPI".into());
        }
        if gputrace_mpi_core::pmpi::lookup(MPICH_SYMBOL) == 0 {
            return Err("this process's MPI is not MPICH-based (no MPIR_ symbols)".into());
        }
        Ok(())
    }

    fn comm_world() -> IntHandle {
        IntHandle::new(COMM_WORLD)
    }
    fn comm_self() -> IntHandle {
        IntHandle::new(COMM_SELF)
    }
    fn comm_null() -> IntHandle {
        IntHandle::new(COMM_NULL)
    }
    fn request_null() -> IntHandle {
        IntHandle::new(REQUEST_NULL)
    }
    fn message_null() -> IntHandle {
        IntHandle::new(MESSAGE_NULL)
    }
    fn byte() -> IntHandle {
        IntHandle::new(BYTE)
    }

    fn status_ignore() -> *mut Status {
        std::ptr::without_provenance_mut(1)
    }
    fn statuses_ignore() -> *mut Status {
        std::ptr::without_provenance_mut(1)
    }
    fn in_place() -> *const c_void {
        std::ptr::without_provenance(usize::MAX)
    }

    #[inline]
    fn status_source(s: &Status) -> c_int {
        s.source
    }
    #[inline]
    fn status_tag(s: &Status) -> c_int {
        s.tag
    }
    /// Bytes, split over `count_lo` and the upper 31 bits of
    /// `count_hi_and_cancelled` (its lowest bit is the cancelled flag), as
    /// MPICH's `MPIR_STATUS_GET_COUNT` reads them.
    #[inline]
    fn status_bytes(s: &Status) -> u64 {
        u64::from(s.count_lo as u32) | (u64::from(s.count_hi_and_cancelled as u32 >> 1) << 32)
    }
}

#[cfg(test)]
#[path = "../../tests/support/probe.rs"]
mod probe;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn abi_matches_the_installed_mpi_h() {
        let checks: Vec<(String, i64)> = vec![
            ("sizeof(MPI_Status)".into(), size_of::<Status>() as i64),
            ("offsetof(MPI_Status, MPI_SOURCE)".into(), offset_of!(Status, source) as i64),
            ("offsetof(MPI_Status, MPI_TAG)".into(), offset_of!(Status, tag) as i64),
            ("offsetof(MPI_Status, MPI_ERROR)".into(), offset_of!(Status, error) as i64),
            ("sizeof(MPI_Comm)".into(), size_of::<c_int>() as i64),
            ("sizeof(MPI_Request)".into(), size_of::<c_int>() as i64),
            ("sizeof(MPI_Datatype)".into(), size_of::<c_int>() as i64),
            ("sizeof(MPI_Message)".into(), size_of::<c_int>() as i64),
            ("sizeof(MPI_File)".into(), size_of::<gputrace_mpi_core::ObjectHandle>() as i64),
            ("sizeof(MPI_Aint)".into(), size_of::<gputrace_mpi_core::abi::Aint>() as i64),
            ("sizeof(MPI_Offset)".into(), size_of::<gputrace_mpi_core::abi::Offset>() as i64),
            ("sizeof(MPI_Count)".into(), size_of::<gputrace_mpi_core::abi::Count>() as i64),
            ("sizeof(MPI_Fint)".into(), size_of::<gputrace_mpi_core::abi::Fint>() as i64),
            ("MPI_ANY_SOURCE".into(), Mpich::ANY_SOURCE.into()),
            ("MPI_ANY_TAG".into(), Mpich::ANY_TAG.into()),
            ("MPI_PROC_NULL".into(), Mpich::PROC_NULL.into()),
            ("MPI_ROOT".into(), Mpich::ROOT.into()),
            ("MPI_UNDEFINED".into(), Mpich::UNDEFINED.into()),
            ("MPI_SUCCESS".into(), Mpich::SUCCESS.into()),
            ("MPI_ERR_OTHER".into(), Mpich::ERR_OTHER.into()),
            ("MPI_COMM_WORLD".into(), COMM_WORLD.into()),
            ("MPI_COMM_SELF".into(), COMM_SELF.into()),
            ("MPI_COMM_NULL".into(), COMM_NULL.into()),
            ("MPI_REQUEST_NULL".into(), REQUEST_NULL.into()),
            ("MPI_MESSAGE_NULL".into(), MESSAGE_NULL.into()),
            ("MPI_BYTE".into(), BYTE.into()),
            ("(intptr_t)MPI_STATUS_IGNORE".into(), Mpich::status_ignore() as i64),
            ("(intptr_t)MPI_STATUSES_IGNORE".into(), Mpich::statuses_ignore() as i64),
            ("(intptr_t)MPI_IN_PLACE".into(), Mpich::in_place() as i64),
        ];
        probe::check("mpicc.mpich", &checks);
    }
}
