//! Completing requests: the wait and test families, `MPI_Start(all)` and
//! `MPI_Request_free`.
//!
//! A completion call overwrites each completed request handle with
//! `MPI_REQUEST_NULL`, so the handles are copied before the PMPI call; it
//! may be given `MPI_STATUS(ES)_IGNORE`, so we pass our own statuses (the
//! source, tag and size of a receive are only in the status). After the
//! call, each completed request that we track becomes its completion
//! event: `MpiIsendComplete`, `MpiIrecv` (from the status),
//! `MpiRequestCancelled`, or `NonBlockingCollectiveComplete`; with the
//! `xreqtest` group a test that finds a request unfinished records
//! `MpiRequestTest`. All of this is skipped at the cost of one atomic load
//! when no request is tracked.

use std::ffi::c_int;

use raw::{Event, Message};

use crate::abi::{Handle, MpiAbi};
use crate::call::{Call, Post};
use crate::requests::{self, Pending};
use crate::state::{self, Group};
use crate::{pmpi, scratch};

/// Records the completion of the request that had `key`, from `status`.
pub fn completed<A: MpiAbi>(call: &Call, key: usize, status: &A::Status) {
    if key == A::request_null().key() {
        return;
    }
    let Some(done) = requests::complete(key) else {
        return;
    };
    let t = call.now();
    let request = done.id;
    let p2p = matches!(done.pending, Pending::Send(_) | Pending::Recv { .. });
    if p2p && pmpi::was_cancelled::<A>(status) {
        call.record(t, &Event::MpiRequestCancelled { request });
        return;
    }
    match done.pending {
        Pending::Send(_) => call.record(t, &Event::MpiIsendComplete { request }),
        Pending::Recv { comm, remote_base } => {
            let source = A::status_source(status);
            if source == A::PROC_NULL || source < 0 {
                return;
            }
            let msg = Message {
                peer: (source as u32).wrapping_add(remote_base),
                comm,
                tag: A::status_tag(status),
                bytes: pmpi::received_bytes::<A>(status),
            };
            call.record(t, &Event::MpiIrecv { msg, request });
        }
        Pending::Collective(coll) => {
            call.record(t, &Event::NonBlockingCollectiveComplete { coll, request });
        }
        Pending::Deferred(d) => (d.0)(call.rec),
    }
}

/// Records that a test found the request with `key` unfinished.
fn tested(call: &Call, key: usize) {
    if let Some(request) = requests::peek_active(key) {
        call.record(call.now(), &Event::MpiRequestTest { request });
    }
}

/// Copies `n` request handles' keys.
fn save_keys<A: MpiAbi>(n: c_int, requests: *const A::Request) -> Vec<usize> {
    let mut keys = scratch::take_keys();
    if !requests.is_null() {
        for i in 0..n.max(0) as usize {
            // SAFETY: the caller's array holds `n` requests.
            keys.push(unsafe { A::Request::read_at(requests, i) }.key());
        }
    }
    keys
}

/// Which completion call, and where its results are.
enum Outcome {
    /// All requests completed when rc is success (`MPI_Waitall`), or when
    /// the flag is set (`MPI_Testall`).
    All { flag: *const c_int },
    /// The one at `*index` (`MPI_Waitany`, `MPI_Testany`, `MPI_Wait`,
    /// `MPI_Test` with index null meaning 0).
    One { index: *const c_int, flag: *const c_int },
    /// `*outcount` of them, at `indices` (`MPI_Waitsome`, `MPI_Testsome`).
    Some { outcount: *const c_int, indices: *const c_int },
}

/// After a completion call: turns the completed requests into events.
pub struct Completion<A: MpiAbi> {
    keys: Vec<usize>,
    statuses: *const A::Status,
    outcome: Outcome,
    is_test: bool,
}

impl<A: MpiAbi> Completion<A> {
    fn new(n: c_int, requests: *const A::Request, statuses: *const A::Status, outcome: Outcome, is_test: bool) -> Self {
        Completion { keys: save_keys::<A>(n, requests), statuses, outcome, is_test }
    }
}

/// Reads an int the call wrote; null reads as `default`.
fn read(p: *const c_int, default: c_int) -> c_int {
    if p.is_null() {
        default
    } else {
        // SAFETY: a pointer argument of the completed call, written by it.
        unsafe { *p }
    }
}

impl<A: MpiAbi> Post for Completion<A> {
    fn post(self, call: &Call, rc: c_int) {
        let keys = &self.keys;
        let status = |i: usize| {
            // SAFETY: the status array (ours or the caller's) has one
            // entry per request (per completed one for the *some calls),
            // written by the successful call.
            unsafe { &*self.statuses.add(i) }
        };
        let reqtest = self.is_test && state::enabled(Group::Xreqtest);
        if rc == A::SUCCESS && !self.statuses.is_null() {
            match self.outcome {
                Outcome::All { flag } => {
                    if read(flag, 1) != 0 {
                        for (i, k) in keys.iter().enumerate() {
                            completed::<A>(call, *k, status(i));
                        }
                    } else if reqtest {
                        keys.iter().for_each(|k| tested(call, *k));
                    }
                }
                Outcome::One { index, flag } => {
                    let i = read(index, 0);
                    if read(flag, 1) != 0 && i != A::UNDEFINED && i >= 0 {
                        if let Some(k) = keys.get(i as usize) {
                            completed::<A>(call, *k, status(0));
                        }
                    } else if reqtest {
                        keys.iter().for_each(|k| tested(call, *k));
                    }
                }
                Outcome::Some { outcount, indices } => {
                    let n = read(outcount, A::UNDEFINED);
                    if n == A::UNDEFINED {
                        // No active request was given.
                    } else if n > 0 {
                        for j in 0..n as usize {
                            // SAFETY: `indices` holds `n` entries written
                            // by the call.
                            let i = unsafe { *indices.add(j) };
                            if let Some(k) = usize::try_from(i).ok().and_then(|i| keys.get(i)) {
                                completed::<A>(call, *k, status(j));
                            }
                        }
                    } else if reqtest {
                        keys.iter().for_each(|k| tested(call, *k));
                    }
                }
            }
        }
        scratch::give_back_keys(self.keys);
    }
}

/// `MPI_Wait`.
pub fn wait<A: MpiAbi>(call: &Call, request: *mut A::Request, status: &mut *mut A::Status) -> Option<Completion<A>> {
    one::<A>(call, request, std::ptr::null(), status, false)
}

/// `MPI_Test`.
pub fn test<A: MpiAbi>(
    call: &Call,
    request: *mut A::Request,
    flag: *mut c_int,
    status: &mut *mut A::Status,
) -> Option<Completion<A>> {
    one::<A>(call, request, flag, status, true)
}

fn one<A: MpiAbi>(
    call: &Call,
    request: *mut A::Request,
    flag: *const c_int,
    status: &mut *mut A::Status,
    is_test: bool,
) -> Option<Completion<A>> {
    if !requests::any() {
        return None;
    }
    let statuses = scratch::substitute_status::<A>(call, status);
    let outcome = Outcome::One { index: std::ptr::null(), flag };
    Some(Completion::new(1, request, statuses, outcome, is_test))
}

/// `MPI_Waitany` and `MPI_Testany` (`flag` null for the wait).
pub fn any<A: MpiAbi>(
    call: &Call,
    count: c_int,
    requests: *mut A::Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: &mut *mut A::Status,
) -> Option<Completion<A>> {
    if !requests::any() {
        return None;
    }
    let statuses = scratch::substitute_status::<A>(call, status);
    let outcome = Outcome::One { index, flag };
    Some(Completion::new(count, requests, statuses, outcome, !flag.is_null()))
}

/// `MPI_Waitall` and `MPI_Testall` (`flag` null for the wait).
pub fn all<A: MpiAbi>(
    _: &Call,
    count: c_int,
    requests: *mut A::Request,
    flag: *mut c_int,
    statuses: &mut *mut A::Status,
) -> Option<Completion<A>> {
    if !requests::any() {
        return None;
    }
    let s = scratch::substitute_statuses::<A>(statuses, count.max(0) as usize);
    let outcome = Outcome::All { flag };
    Some(Completion::new(count, requests, s, outcome, !flag.is_null()))
}

/// `MPI_Waitsome` and `MPI_Testsome`.
pub fn some<A: MpiAbi>(
    _: &Call,
    incount: c_int,
    requests: *mut A::Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: &mut *mut A::Status,
    is_test: bool,
) -> Option<Completion<A>> {
    if !requests::any() {
        return None;
    }
    let s = scratch::substitute_statuses::<A>(statuses, incount.max(0) as usize);
    let outcome = Outcome::Some { outcount, indices };
    Some(Completion::new(incount, requests, s, outcome, is_test))
}

/// After `MPI_Start(all)`: activate the persistent requests.
pub struct Started {
    keys: Vec<usize>,
}

impl Post for Started {
    fn post(self, call: &Call, rc: c_int) {
        if rc == 0 {
            for k in &self.keys {
                match requests::start(*k) {
                    Some((request, Pending::Send(msg))) => {
                        call.record(call.now(), &Event::MpiIsend { msg, request });
                    }
                    Some((request, Pending::Recv { .. })) => {
                        call.record(call.now(), &Event::MpiIrecvRequest { request });
                    }
                    _ => {}
                }
            }
        }
        scratch::give_back_keys(self.keys);
    }
}

/// `MPI_Start`.
pub fn start<A: MpiAbi>(call: &Call, request: *mut A::Request) -> Option<Started> {
    startall::<A>(call, 1, request)
}

/// `MPI_Startall`.
pub fn startall<A: MpiAbi>(_: &Call, count: c_int, requests: *mut A::Request) -> Option<Started> {
    // Outside the recording window a persistent request starts unrecorded
    // (and stays inactive in the table: its completion is not recorded).
    (requests::any() && recorder::window::on()).then(|| Started { keys: save_keys::<A>(count, requests) })
}

/// After `MPI_Request_free`: forget the request.
pub struct Freed(usize);

impl Post for Freed {
    fn post(self, _: &Call, rc: c_int) {
        if rc == 0 {
            requests::free(self.0);
        }
    }
}

/// `MPI_Request_free`.
#[allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "called only by the wrappers, with the program's own argument, valid by MPI's contract"
)]
pub fn request_free<A: MpiAbi>(_: &Call, request: *mut A::Request) -> Option<Freed> {
    if request.is_null() || !requests::any() {
        return None;
    }
    // SAFETY: the caller's request, read before MPI nulls it.
    Some(Freed(unsafe { A::Request::read(request) }.key()))
}
