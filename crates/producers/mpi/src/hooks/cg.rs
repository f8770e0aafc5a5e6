//! Communicator creation and destruction: every call that makes a new
//! communicator registers it (see [`comms`](crate::comms)), and
//! `MPI_Comm_free`/`MPI_Comm_disconnect` forget it. These hooks run even
//! when their group is off: without them no message on a derived
//! communicator could be attributed.

use std::ffi::{CStr, c_char, c_int, c_void};

use raw::Definition;

use crate::abi::{Handle, MpiAbi};
use crate::call::{Call, Post};
use crate::requests::{self, Deferred, Entry, Pending};
use crate::{comms, pmpi};

/// After a creator: register the new communicator.
pub struct Created<A: MpiAbi> {
    parent: A::Comm,
    newcomm: *const A::Comm,
}

impl<A: MpiAbi> Post for Created<A> {
    fn post(self, call: &Call, rc: c_int) {
        if rc != A::SUCCESS || self.newcomm.is_null() {
            return;
        }
        // SAFETY: the successful call wrote the new handle.
        let comm = unsafe { A::Comm::read(self.newcomm) };
        comms::register_new::<A>(call.rec, comm, Some(self.parent), None);
    }
}

/// `MPI_Comm_dup`, `MPI_Comm_split`, `MPI_Cart_create`, ...: `parent` is
/// the communicator the new one derives from.
pub fn created<A: MpiAbi>(_: &Call, parent: A::Comm, newcomm: *mut A::Comm) -> Created<A> {
    Created { parent, newcomm }
}

/// After `MPI_Comm_free`: forget the handle.
pub struct Freed(Option<usize>);

impl Post for Freed {
    fn post(self, _: &Call, rc: c_int) {
        if let Some(key) = self.0
            && rc == 0
        {
            comms::forget(key);
        }
    }
}

/// `MPI_Comm_free`, `MPI_Comm_disconnect`.
#[allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "called only by the wrappers, with the program's own argument, valid by MPI's contract"
)]
pub fn free<A: MpiAbi>(_: &Call, comm: *mut A::Comm) -> Freed {
    // SAFETY: the caller's handle, read before MPI nulls it.
    Freed((!comm.is_null()).then(|| unsafe { A::Comm::read(comm) }.key()))
}

/// After `MPI_Comm_set_name`: the name goes to the communicator's
/// definition, so that the archive shows the program's names.
pub struct Named<A: MpiAbi> {
    comm: A::Comm,
    name: Option<String>,
}

impl<A: MpiAbi> Post for Named<A> {
    fn post(self, call: &Call, rc: c_int) {
        let Some(name) = self.name.filter(|n| !n.is_empty()) else { return };
        if rc == A::SUCCESS
            && let Some(info) = comms::lookup::<A>(call, self.comm)
        {
            call.rec.define(&Definition::CommName { id: info.id, name });
        }
    }
}

/// `MPI_Comm_set_name`.
#[allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "called only by the wrappers, with the program's own argument, valid by MPI's contract"
)]
pub fn named<A: MpiAbi>(_: &Call, comm: A::Comm, name: *const c_char) -> Named<A> {
    // SAFETY: MPI requires a NUL-terminated string; read before the call.
    let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned());
    Named { comm, name }
}

/// The state of an `MPI_Comm_idup` until its request completes: the
/// sequence number travels by a non-blocking broadcast over the parent,
/// started right after the idup on every member, so that completing it
/// never waits for a process that has not reached its own wait yet.
struct Idup<A: MpiAbi> {
    seq: Box<u64>,
    bcast: A::Request,
    parent: A::Comm,
    newcomm: usize,
}

/// After `MPI_Comm_idup`: start agreeing on the key and track the request.
pub struct IdupStarted<A: MpiAbi> {
    parent: A::Comm,
    newcomm: *mut A::Comm,
    request: *const A::Request,
}

impl<A: MpiAbi> Post for IdupStarted<A> {
    fn post(self, call: &Call, rc: c_int) {
        if rc != A::SUCCESS || self.request.is_null() || self.newcomm.is_null() {
            return;
        }
        let Some(info) = comms::lookup::<A>(call, self.parent) else {
            return;
        };
        let mut idup = Idup::<A> {
            seq: Box::new(if info.rank == 0 { comms::next_seq() } else { 0 }),
            bcast: A::request_null(),
            parent: self.parent,
            newcomm: self.newcomm as usize,
        };
        let agreed = info.remote_size.is_none() && {
            let seq: *mut u64 = &mut *idup.seq;
            // SAFETY: the box outlives the broadcast (it is waited for
            // before the box is dropped); every member of the parent
            // starts this broadcast right after the same idup.
            let rc = unsafe { pmpi::ibcast::<A>(seq.cast::<c_void>(), 8, A::byte(), 0, self.parent, &mut idup.bcast) };
            rc == A::SUCCESS
        };
        // SAFETY: the successful call wrote the request.
        let key = unsafe { A::Request::read(self.request) }.key();
        let finish = move |rec: &recorder::Recorder| {
            let mut idup = idup;
            // An intercommunicator's sides cannot agree without blocking
            // here; its key is then this process's own (documented).
            let seq = if agreed {
                // SAFETY: our own broadcast request; the status is ignored.
                unsafe { pmpi::wait::<A>(&mut idup.bcast, A::status_ignore()) };
                *idup.seq
            } else {
                (1 << 62) | comms::next_seq()
            };
            // SAFETY: MPI wrote the new handle when the idup completed;
            // the program keeps the variable alive until then.
            let comm = unsafe { A::Comm::read(idup.newcomm as *const A::Comm) };
            comms::register_new::<A>(rec, comm, Some(idup.parent), Some(seq));
        };
        requests::insert(
            key,
            Entry {
                id: requests::next_id(),
                pending: Pending::Deferred(Deferred(Box::new(finish))),
                persistent: false,
                active: true,
            },
        );
    }
}

/// `MPI_Comm_idup`.
pub fn idup<A: MpiAbi>(_: &Call, parent: A::Comm, newcomm: *mut A::Comm, request: *mut A::Request) -> IdupStarted<A> {
    IdupStarted { parent, newcomm, request }
}
