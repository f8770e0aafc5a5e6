//! Fortran wrappers for Open MPI.
//!
//! Open MPI's Fortran bindings (`mpif.h`, `use mpi`, `use mpi_f08`) call
//! `PMPI_*` directly, so a Fortran program's calls never reach the C
//! wrappers. These wrappers export the Fortran names — `mpi_send_`,
//! `mpi_send__`, `mpi_send` and `MPI_SEND`, covering every name-mangling
//! convention — call Open MPI's own Fortran binding (`pmpi_send_`) with
//! the program's arguments unchanged, and convert handles to C
//! (`PMPI_Comm_f2c`, ...) only to record, through the same hooks and
//! region descriptions as the C wrappers. A status the program ignores
//! (`MPI_STATUS_IGNORE` is the address of `mpi_fortran_status_ignore_`)
//! is replaced by one of ours.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use gputrace_mpi_core::abi::Fint;
use gputrace_mpi_core::call::{Call, FnInfo, Post};
use gputrace_mpi_core::hooks::{cg, coll, p2p, wait};
use gputrace_mpi_core::pmpi::{Symbol, lookup_object};
use gputrace_mpi_core::{MpiAbi, ObjectHandle, comms, lifecycle};

use crate::OpenMpi;
use crate::abi::Status;
use crate::mpi_wrappers::info;

/// `MPI_STATUS_SIZE` of Open MPI's Fortran bindings (checked by a test).
pub const STATUS_SIZE: usize = 6;

type F = *const Fint;

/// Declares the C conversion functions the wrappers use.
macro_rules! f2c {
    ($($name:ident = $sym:literal ($arg:ty) -> $ret:ty;)*) => {$(
        #[inline]
        fn $name(x: $arg) -> $ret {
            static SYMBOL: Symbol = Symbol::new(concat!($sym, "\0"));
            // SAFETY: the C signature of the named Open MPI function.
            let f: Option<unsafe extern "C" fn($arg) -> $ret> = unsafe { SYMBOL.get() };
            // Without the conversion, the handle is one no lookup knows.
            let Some(f) = f else { return ObjectHandle(std::ptr::null_mut()) };
            // SAFETY: conversions accept any Fortran handle value.
            unsafe { f(x) }
        }
    )*};
}

f2c! {
    comm = "PMPI_Comm_f2c"(Fint) -> ObjectHandle;
    datatype = "PMPI_Type_f2c"(Fint) -> ObjectHandle;
    request = "PMPI_Request_f2c"(Fint) -> ObjectHandle;
}

/// Reads a Fortran integer argument.
#[inline]
fn v(p: F) -> Fint {
    // SAFETY: Fortran passes every argument by reference; the wrappers
    // only read the ones MPI defines as input integers.
    unsafe { *p }
}

/// The C status of a Fortran status array.
fn status_f2c(f: *const Fint) -> Status {
    static SYMBOL: Symbol = Symbol::new("PMPI_Status_f2c\0");
    // SAFETY: `int MPI_Status_f2c(const MPI_Fint *, MPI_Status *)`.
    let conv: Option<unsafe extern "C" fn(*const Fint, *mut Status) -> c_int> = unsafe { SYMBOL.get() };
    let mut s = Status { source: 0, tag: 0, error: 0, cancelled: 0, ucount: 0 };
    let Some(conv) = conv else { return s };
    // SAFETY: `f` holds STATUS_SIZE integers written by MPI.
    unsafe { conv(f, &mut s) };
    s
}

/// The addresses Fortran's special arguments may have, under each
/// mangling: `MPI_STATUS_IGNORE`, `MPI_STATUSES_IGNORE`, `MPI_IN_PLACE`
/// (Open MPI makes them common blocks). Looked up once: `dlsym` is far
/// too slow for every call.
fn specials() -> &'static [[usize; 3]; 3] {
    static SPECIALS: OnceLock<[[usize; 3]; 3]> = OnceLock::new();
    SPECIALS.get_or_init(|| {
        ["status_ignore", "statuses_ignore", "in_place"].map(|what| {
            [
                format!("mpi_fortran_{what}_\0"),
                format!("mpi_fortran_{what}__\0"),
                format!("MPI_FORTRAN_{}\0", what.to_uppercase()),
            ]
            .map(|name| lookup_object(&name))
        })
    })
}

fn is_special(p: *const c_void, which: usize) -> bool {
    p as usize != 0 && specials()[which].contains(&(p as usize))
}

/// Whether `p` is Fortran's `MPI_STATUS_IGNORE` (or, with `plural`,
/// `MPI_STATUSES_IGNORE`).
fn ignored(p: *const Fint, plural: bool) -> bool {
    is_special(p.cast(), usize::from(plural))
}

/// A sendbuf as the C hooks see it: Fortran's `MPI_IN_PLACE` becomes C's.
fn buffer(p: *const c_void) -> *const c_void {
    if is_special(p, 2) { OpenMpi::in_place() } else { p }
}

/// Follows one Fortran call: `pre` before, `pmpi` (the Fortran binding,
/// called exactly once), the hook's post with the call's `ierr`.
#[inline]
fn follow<H: Post>(info: &'static FnInfo, ierr: *mut Fint, pre: impl FnOnce(&Call) -> H, pmpi: impl FnOnce()) {
    follow_then(info, ierr, pre, pmpi, || ());
}

/// Like [`follow`], with `then` run right after the binding — only when
/// the call is followed — to convert what it returned (a new request or
/// communicator) for the hook's post.
#[inline]
fn follow_then<H: Post>(
    info: &'static FnInfo,
    ierr: *mut Fint,
    pre: impl FnOnce(&Call) -> H,
    pmpi: impl FnOnce(),
    then: impl FnOnce(),
) {
    let Some(call) = Call::begin(info) else {
        return pmpi();
    };
    let hook = call.pre(pre);
    pmpi();
    let rc = if ierr.is_null() { 0 } else { v(ierr) };
    if rc == 0 {
        gputrace_mpi_core::call::shielded(then);
    }
    call.finish(hook, rc);
}

/// After a Fortran receive: record it from the status MPI wrote.
struct FortranRecv {
    comm: ObjectHandle,
    status: *const Fint,
}

impl Post for FortranRecv {
    fn post(self, call: &Call, rc: c_int) {
        if rc != 0 {
            return;
        }
        if let Some(info) = comms::lookup::<OpenMpi>(call, self.comm) {
            p2p::record_recv::<OpenMpi>(call, &info, &status_f2c(self.status));
        }
    }
}

/// Defines the four exported names of one Fortran function, all calling
/// `$imp`, and `$imp` itself with the PMPI binding in scope as `pmpi`.
macro_rules! fortran {
    (@export $imp:ident ($($arg:ident : $ty:ty),*) $name:expr) => {
        const _: () = {
            /// A Fortran MPI entry point, recorded.
            ///
            /// # Safety
            ///
            /// Called by Fortran with MPI's arguments, all by reference.
            #[unsafe(export_name = $name)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn wrapper($($arg: $ty),*) {
                $imp($($arg),*)
            }
        };
    };
    (@unavailable ierr $ierr:ident) => {
        if !$ierr.is_null() {
            // SAFETY: the program's error argument, by reference.
            unsafe { *$ierr = <OpenMpi as MpiAbi>::ERR_OTHER };
        }
    };
    (@unavailable $other:ident $arg:ident) => {};
    ($(
        $lower:literal $upper:literal $imp:ident = $pmpi:literal as $pm:ident
            ( $($arg:ident : $ty:ty),* ) $body:block
    )*) => {$(
        #[allow(clippy::too_many_arguments)]
        fn $imp($($arg: $ty),*) {
            static PMPI: Symbol = Symbol::new(concat!($pmpi, "\0"));
            // SAFETY: Open MPI's Fortran binding takes the same arguments
            // (all by reference) as the wrapper.
            let pmpi: Option<unsafe extern "C" fn($($ty),*)> = unsafe { PMPI.get() };
            let Some(pmpi) = pmpi else {
                // No binding to call: the call fails, as C's does.
                $(fortran!(@unavailable $arg $arg);)*
                return;
            };
            #[allow(unused_variables)]
            let $pm = move || {
                // SAFETY: the program's own arguments, passed on unchanged.
                unsafe { pmpi($($arg),*) }
            };
            $body
        }
        fortran!(@export $imp ($($arg: $ty),*) concat!($lower, "_"));
        fortran!(@export $imp ($($arg: $ty),*) concat!($lower, "__"));
        fortran!(@export $imp ($($arg: $ty),*) $lower);
        fortran!(@export $imp ($($arg: $ty),*) $upper);
    )*};
}

type Buf = *const c_void;
type Out = *mut Fint;

fortran! {
    "mpi_init" "MPI_INIT" init = "pmpi_init_" as pmpi (ierr: Out) {
        lifecycle::init::<OpenMpi>(&info::MPI_Init, || { pmpi(); v(ierr) });
    }
    "mpi_init_thread" "MPI_INIT_THREAD" init_thread = "pmpi_init_thread_" as pmpi (required: F, provided: Out, ierr: Out) {
        lifecycle::init::<OpenMpi>(&info::MPI_Init_thread, || { pmpi(); v(ierr) });
    }
    "mpi_finalize" "MPI_FINALIZE" finalize = "pmpi_finalize_" as pmpi (ierr: Out) {
        lifecycle::finalize::<OpenMpi>(&info::MPI_Finalize, || { pmpi(); v(ierr) });
    }
    "mpi_abort" "MPI_ABORT" abort = "pmpi_abort_" as pmpi (c: F, code: F, ierr: Out) {
        lifecycle::abort::<OpenMpi>(&info::MPI_Abort, || { pmpi(); v(ierr) });
    }
    "mpi_comm_rank" "MPI_COMM_RANK" comm_rank = "pmpi_comm_rank_" as pmpi (c: F, rank: Out, ierr: Out) {
        follow(&info::MPI_Comm_rank, ierr, |_| (), pmpi);
    }
    "mpi_comm_size" "MPI_COMM_SIZE" comm_size = "pmpi_comm_size_" as pmpi (c: F, size: Out, ierr: Out) {
        follow(&info::MPI_Comm_size, ierr, |_| (), pmpi);
    }
    "mpi_send" "MPI_SEND" send = "pmpi_send_" as pmpi (b: Buf, n: F, t: F, dest: F, tag: F, c: F, ierr: Out) {
        follow(&info::MPI_Send, ierr, |call| p2p::send::<OpenMpi>(call, v(n), datatype(v(t)), v(dest), v(tag), comm(v(c))), pmpi);
    }
    "mpi_ssend" "MPI_SSEND" ssend = "pmpi_ssend_" as pmpi (b: Buf, n: F, t: F, dest: F, tag: F, c: F, ierr: Out) {
        follow(&info::MPI_Ssend, ierr, |call| p2p::send::<OpenMpi>(call, v(n), datatype(v(t)), v(dest), v(tag), comm(v(c))), pmpi);
    }
    "mpi_recv" "MPI_RECV" recv = "pmpi_recv_" as pmpi (b: Buf, n: F, t: F, src: F, tag: F, c: F, st: Out, ierr: Out) {
        let mut own = [0 as Fint; STATUS_SIZE];
        let st = if ignored(st, false) { own.as_mut_ptr() } else { st };
        let args = (b, n, t, src, tag, c, st, ierr);
        follow(&info::MPI_Recv, ierr, |_| FortranRecv { comm: comm(v(c)), status: st }, move || {
            // SAFETY: the program's arguments, `st` possibly ours.
            unsafe { recv_pmpi(args) }
        });
    }
    "mpi_sendrecv" "MPI_SENDRECV" sendrecv = "pmpi_sendrecv_" as pmpi (
        sb: Buf, sn: F, st_: F, dest: F, stag: F, rb: Buf, rn: F, rt: F, src: F, rtag: F, c: F,
        st: Out, ierr: Out
    ) {
        let mut own = [0 as Fint; STATUS_SIZE];
        let status = if ignored(st, false) { own.as_mut_ptr() } else { st };
        let args = (sb, sn, st_, dest, stag, rb, rn, rt, src, rtag, c, status, ierr);
        follow(&info::MPI_Sendrecv, ierr, |call| {
            p2p::send::<OpenMpi>(call, v(sn), datatype(v(st_)), v(dest), v(stag), comm(v(c)));
            FortranRecv { comm: comm(v(c)), status }
        }, move || {
            // SAFETY: the program's arguments, the status possibly ours.
            unsafe { sendrecv_pmpi(args) }
        });
    }
    "mpi_isend" "MPI_ISEND" isend = "pmpi_isend_" as pmpi (b: Buf, n: F, t: F, dest: F, tag: F, c: F, r: Out, ierr: Out) {
        let mut creq = OpenMpi::request_null();
        let creq: *mut ObjectHandle = &mut creq;
        follow_then(&info::MPI_Isend, ierr, |call| {
            p2p::isend::<OpenMpi>(call, v(n), datatype(v(t)), v(dest), v(tag), comm(v(c)), creq)
        }, pmpi, || {
            // SAFETY: our local; the call wrote the Fortran request.
            unsafe { *creq = request(v(r)) };
        });
    }
    "mpi_irecv" "MPI_IRECV" irecv = "pmpi_irecv_" as pmpi (b: Buf, n: F, t: F, src: F, tag: F, c: F, r: Out, ierr: Out) {
        let mut creq = OpenMpi::request_null();
        let creq: *mut ObjectHandle = &mut creq;
        follow_then(&info::MPI_Irecv, ierr, |call| {
            p2p::irecv::<OpenMpi>(call, v(src), comm(v(c)), creq)
        }, pmpi, || {
            // SAFETY: as in isend.
            unsafe { *creq = request(v(r)) };
        });
    }
    "mpi_wait" "MPI_WAIT" wait = "pmpi_wait_" as pmpi (r: Out, st: Out, ierr: Out) {
        completion(&info::MPI_Wait, 1, r, std::ptr::null_mut(), st, false, ierr, |st| {
            // SAFETY: the program's arguments, the status possibly ours.
            unsafe { wait_pmpi((r, st, ierr)) }
        });
    }
    "mpi_test" "MPI_TEST" test = "pmpi_test_" as pmpi (r: Out, flag: Out, st: Out, ierr: Out) {
        completion(&info::MPI_Test, 1, r, flag, st, false, ierr, |st| {
            // SAFETY: as in wait.
            unsafe { test_pmpi((r, flag, st, ierr)) }
        });
    }
    "mpi_waitall" "MPI_WAITALL" waitall = "pmpi_waitall_" as pmpi (n: F, r: Out, st: Out, ierr: Out) {
        completion(&info::MPI_Waitall, v(n), r, std::ptr::null_mut(), st, true, ierr, |st| {
            // SAFETY: as in wait.
            unsafe { waitall_pmpi((n, r, st, ierr)) }
        });
    }
    "mpi_barrier" "MPI_BARRIER" barrier = "pmpi_barrier_" as pmpi (c: F, ierr: Out) {
        follow(&info::MPI_Barrier, ierr, |call| coll::barrier::<OpenMpi>(call, comm(v(c))), pmpi);
    }
    "mpi_bcast" "MPI_BCAST" bcast = "pmpi_bcast_" as pmpi (b: Buf, n: F, t: F, root: F, c: F, ierr: Out) {
        follow(&info::MPI_Bcast, ierr, |call| coll::bcast::<OpenMpi>(call, v(n), datatype(v(t)), v(root), comm(v(c))), pmpi);
    }
    "mpi_reduce" "MPI_REDUCE" reduce = "pmpi_reduce_" as pmpi (sb: Buf, rb: Buf, n: F, t: F, op: F, root: F, c: F, ierr: Out) {
        follow(&info::MPI_Reduce, ierr, |call| coll::reduce::<OpenMpi>(call, buffer(sb), v(n), datatype(v(t)), v(root), comm(v(c))), pmpi);
    }
    "mpi_allreduce" "MPI_ALLREDUCE" allreduce = "pmpi_allreduce_" as pmpi (sb: Buf, rb: Buf, n: F, t: F, op: F, c: F, ierr: Out) {
        follow(&info::MPI_Allreduce, ierr, |call| coll::allreduce::<OpenMpi>(call, buffer(sb), v(n), datatype(v(t)), comm(v(c))), pmpi);
    }
    "mpi_gather" "MPI_GATHER" gather = "pmpi_gather_" as pmpi (sb: Buf, sn: F, st: F, rb: Buf, rn: F, rt: F, root: F, c: F, ierr: Out) {
        follow(&info::MPI_Gather, ierr, |call| coll::gather::<OpenMpi>(call, buffer(sb), v(sn), datatype(v(st)), v(rn), datatype(v(rt)), v(root), comm(v(c))), pmpi);
    }
    "mpi_scatter" "MPI_SCATTER" scatter = "pmpi_scatter_" as pmpi (sb: Buf, sn: F, st: F, rb: Buf, rn: F, rt: F, root: F, c: F, ierr: Out) {
        follow(&info::MPI_Scatter, ierr, |call| coll::scatter::<OpenMpi>(call, v(sn), datatype(v(st)), buffer(rb), v(rn), datatype(v(rt)), v(root), comm(v(c))), pmpi);
    }
    "mpi_allgather" "MPI_ALLGATHER" allgather = "pmpi_allgather_" as pmpi (sb: Buf, sn: F, st: F, rb: Buf, rn: F, rt: F, c: F, ierr: Out) {
        follow(&info::MPI_Allgather, ierr, |call| coll::allgather::<OpenMpi>(call, buffer(sb), v(sn), datatype(v(st)), v(rn), datatype(v(rt)), comm(v(c))), pmpi);
    }
    "mpi_alltoall" "MPI_ALLTOALL" alltoall = "pmpi_alltoall_" as pmpi (sb: Buf, sn: F, st: F, rb: Buf, rn: F, rt: F, c: F, ierr: Out) {
        follow(&info::MPI_Alltoall, ierr, |call| coll::alltoall::<OpenMpi>(call, buffer(sb), v(sn), datatype(v(st)), v(rn), datatype(v(rt)), comm(v(c))), pmpi);
    }
    "mpi_comm_dup" "MPI_COMM_DUP" comm_dup = "pmpi_comm_dup_" as pmpi (c: F, newcomm: Out, ierr: Out) {
        created(&info::MPI_Comm_dup, c, newcomm, ierr, pmpi);
    }
    "mpi_comm_split" "MPI_COMM_SPLIT" comm_split = "pmpi_comm_split_" as pmpi (c: F, color: F, key: F, newcomm: Out, ierr: Out) {
        created(&info::MPI_Comm_split, c, newcomm, ierr, pmpi);
    }
    "mpi_comm_free" "MPI_COMM_FREE" comm_free = "pmpi_comm_free_" as pmpi (c: Out, ierr: Out) {
        follow(&info::MPI_Comm_free, ierr, |call| {
            let mut cc = comm(v(c));
            cg::free::<OpenMpi>(call, &mut cc)
        }, pmpi);
    }
}

/// Calls of the bindings whose status argument a wrapper may replace.
macro_rules! with_status {
    ($($name:ident = $sym:literal ($($arg:ident : $ty:ty),*);)*) => {$(
        /// # Safety
        ///
        /// Valid Fortran arguments for the binding.
        unsafe fn $name(args: ($($ty,)*)) {
            static PMPI: Symbol = Symbol::new(concat!($sym, "\0"));
            // SAFETY: the binding's signature.
            let f: Option<unsafe extern "C" fn($($ty),*)> = unsafe { PMPI.get() };
            // The wrapper that calls this resolved the same binding
            // before: it is defined.
            let Some(f) = f else { return };
            let ($($arg,)*) = args;
            // SAFETY: the caller's guarantee.
            unsafe { f($($arg),*) }
        }
    )*};
}

with_status! {
    recv_pmpi = "pmpi_recv_"(b: Buf, n: F, t: F, s: F, g: F, c: F, st: Out, e: Out);
    sendrecv_pmpi = "pmpi_sendrecv_"(
        b: Buf, n: F, t: F, d: F, g: F, rb: Buf, rn: F, rt: F, s: F, rg: F, c: F, st: Out, e: Out
    );
    wait_pmpi = "pmpi_wait_"(r: Out, st: Out, e: Out);
    test_pmpi = "pmpi_test_"(r: Out, f: Out, st: Out, e: Out);
    waitall_pmpi = "pmpi_waitall_"(n: F, r: Out, st: Out, e: Out);
}

/// A Fortran completion call: the requests' C keys saved before, our
/// statuses if the program ignores them, completions recorded after.
#[allow(clippy::too_many_arguments)]
fn completion(
    info: &'static FnInfo,
    n: Fint,
    reqs: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
    plural: bool,
    ierr: *mut Fint,
    pmpi: impl FnOnce(*mut Fint),
) {
    let n = n.max(0) as usize;
    let mut own = vec![0 as Fint; STATUS_SIZE * n.max(1)];
    let statuses = if ignored(statuses, plural) { own.as_mut_ptr() } else { statuses };
    let pre = move |_: &Call| {
        let keys: Vec<usize> = (0..n)
            .map(|i| {
                // SAFETY: the program's array of `n` Fortran requests.
                let r = unsafe { *reqs.add(i) };
                gputrace_mpi_core::Handle::key(request(r))
            })
            .collect();
        Completion(Box::new(move |call: &Call, rc: c_int| {
            // SAFETY: `flag`, when given, was written by the call.
            let complete = rc == 0 && (flag.is_null() || unsafe { *flag } != 0);
            if complete {
                for (i, key) in keys.iter().enumerate() {
                    // SAFETY: one status per request, written by the call.
                    let s = status_f2c(unsafe { statuses.add(i * STATUS_SIZE) });
                    wait::completed::<OpenMpi>(call, *key, &s);
                }
            }
        }))
    };
    follow(info, ierr, pre, || pmpi(statuses));
}

/// What to do after a completion call, given its return code.
type AfterCompletion<'a> = Box<dyn FnOnce(&Call, c_int) + 'a>;

struct Completion<'a>(AfterCompletion<'a>);

impl Post for Completion<'_> {
    fn post(self, call: &Call, rc: c_int) {
        (self.0)(call, rc);
    }
}

/// A Fortran communicator creator: registers the new communicator.
fn created(info: &'static FnInfo, parent: F, newcomm: Out, ierr: Out, pmpi: impl FnOnce()) {
    let mut c = OpenMpi::comm_null();
    let c_ptr: *mut ObjectHandle = &mut c;
    follow_then(
        info,
        ierr,
        |call| cg::created::<OpenMpi>(call, comm(v(parent)), c_ptr),
        pmpi,
        // SAFETY: our local; the call wrote the Fortran handle.
        || unsafe { *c_ptr = comm(v(newcomm)) },
    );
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    #[test]
    fn status_size_matches_mpif_h() {
        let present = Command::new("mpif90").arg("-show").output().is_ok_and(|o| o.status.success());
        if !crate::abi::probe::required("mpif90 (for the Fortran ABI probe)", present) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("probe.f90");
        std::fs::write(&src, "program p\ninclude 'mpif.h'\nprint '(I0)', MPI_STATUS_SIZE\nend program\n").unwrap();
        let exe = dir.path().join("probe");
        let ok = Command::new("mpif90").arg(&src).arg("-o").arg(&exe).status().unwrap();
        assert!(ok.success());
        let out = Command::new(&exe).output().unwrap();
        let size: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(size, super::STATUS_SIZE);
    }
}
