//! Point-to-point messages: the blocking sends and receives, matched
//! probes, and the start of non-blocking and persistent ones.
//!
//! Peers are ranks within the call's communicator and sizes are bytes.
//! A send is recorded at Enter (`count × MPI_Type_size`), a receive just
//! before Leave from its status — the only place where the true source
//! and tag of `MPI_ANY_SOURCE`/`MPI_ANY_TAG` and the delivered size are
//! known. Messages to or from `MPI_PROC_NULL` are not messages and are not
//! recorded. Non-blocking operations are followed only with the
//! `xnonblock` group.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Mutex;

use raw::{Event, Message};

use crate::abi::{Handle, MpiAbi};
use crate::call::{Call, Post};
use crate::comms::CommInfo;
use crate::requests::{self, Entry, Pending};
use crate::state::{self, Group};
use crate::{comms, pmpi, scratch};

/// The envelope of a send to `dest`, `None` for `MPI_PROC_NULL`.
#[inline]
fn envelope<A: MpiAbi>(
    call: &Call,
    count: c_int,
    datatype: A::Datatype,
    dest: c_int,
    tag: c_int,
    comm: A::Comm,
) -> Option<Message> {
    if dest == A::PROC_NULL || dest < 0 {
        return None;
    }
    let info = comms::lookup::<A>(call, comm)?;
    Some(Message { peer: info.peer(dest), comm: info.id, tag, bytes: pmpi::bytes_of::<A>(count, datatype) })
}

/// `MPI_Send`, `MPI_Ssend`, `MPI_Bsend`, `MPI_Rsend`.
#[inline]
pub fn send<A: MpiAbi>(call: &Call, count: c_int, datatype: A::Datatype, dest: c_int, tag: c_int, comm: A::Comm) {
    if let Some(m) = envelope::<A>(call, count, datatype, dest, tag, comm) {
        call.record(call.enter, &Event::MpiSend(m));
    }
}

/// Records a completed blocking receive from its status.
#[inline]
pub fn record_recv<A: MpiAbi>(call: &Call, comm: &CommInfo, status: &A::Status) {
    let source = A::status_source(status);
    if source == A::PROC_NULL || source < 0 {
        return;
    }
    let bytes = pmpi::received_bytes::<A>(status);
    call.record(
        call.now(),
        &Event::MpiRecv(Message { peer: comm.peer(source), comm: comm.id, tag: A::status_tag(status), bytes }),
    );
}

/// After a blocking receive: record it from the (possibly substituted)
/// status.
pub struct RecvPost<A: MpiAbi> {
    comm: Option<CommInfo>,
    status: *mut A::Status,
}

impl<A: MpiAbi> Post for RecvPost<A> {
    #[inline]
    fn post(self, call: &Call, rc: c_int) {
        if rc != A::SUCCESS || self.status.is_null() {
            return;
        }
        if let Some(comm) = self.comm {
            // SAFETY: MPI filled the status (ours or the caller's) of the
            // receive that just succeeded.
            record_recv::<A>(call, &comm, unsafe { &*self.status });
        }
    }
}

/// `MPI_Recv`.
#[inline]
pub fn recv<A: MpiAbi>(call: &Call, comm: A::Comm, status: &mut *mut A::Status) -> RecvPost<A> {
    RecvPost { status: scratch::substitute_status::<A>(call, status), comm: comms::lookup::<A>(call, comm) }
}

/// `MPI_Sendrecv`, `MPI_Sendrecv_replace`: both halves.
pub fn sendrecv<A: MpiAbi>(
    call: &Call,
    count: c_int,
    datatype: A::Datatype,
    dest: c_int,
    tag: c_int,
    comm: A::Comm,
    status: &mut *mut A::Status,
) -> RecvPost<A> {
    send::<A>(call, count, datatype, dest, tag, comm);
    recv::<A>(call, comm, status)
}

/// Matched messages (`MPI_Mprobe` → `MPI_Mrecv`) by message handle: the
/// receive names no communicator, the probe does.
static MESSAGES: Mutex<Option<HashMap<usize, CommInfo>>> = Mutex::new(None);

fn messages() -> std::sync::MutexGuard<'static, Option<HashMap<usize, CommInfo>>> {
    MESSAGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// After a matched probe: remember the message's communicator.
pub struct ProbePost<A: MpiAbi> {
    comm: Option<CommInfo>,
    flag: *const c_int,
    message: *const A::Message,
}

impl<A: MpiAbi> Post for ProbePost<A> {
    fn post(self, _: &Call, rc: c_int) {
        // SAFETY: the pointers are the caller's arguments, written by the
        // successful call.
        let (found, message) = unsafe { (self.flag.is_null() || *self.flag != 0, A::Message::read(self.message)) };
        if rc == A::SUCCESS
            && found
            && message != A::message_null()
            && let Some(comm) = self.comm
        {
            messages().get_or_insert_with(HashMap::new).insert(message.key(), comm);
        }
    }
}

/// `MPI_Mprobe`.
pub fn mprobe<A: MpiAbi>(call: &Call, comm: A::Comm, message: *mut A::Message) -> ProbePost<A> {
    improbe::<A>(call, comm, std::ptr::null(), message)
}

/// `MPI_Improbe`.
pub fn improbe<A: MpiAbi>(call: &Call, comm: A::Comm, flag: *const c_int, message: *mut A::Message) -> ProbePost<A> {
    ProbePost { comm: comms::lookup::<A>(call, comm), flag, message }
}

fn take_message<A: MpiAbi>(message: *const A::Message) -> Option<CommInfo> {
    if message.is_null() {
        return None;
    }
    // SAFETY: the caller's argument, read before MPI consumes it.
    let key = unsafe { A::Message::read(message) }.key();
    messages().as_mut()?.remove(&key)
}

/// `MPI_Mrecv`.
pub fn mrecv<A: MpiAbi>(call: &Call, message: *mut A::Message, status: &mut *mut A::Status) -> RecvPost<A> {
    RecvPost { comm: take_message::<A>(message), status: scratch::substitute_status::<A>(call, status) }
}

/// After the start of a non-blocking operation: track its request.
pub struct Track<A: MpiAbi> {
    request: *const A::Request,
    entry: Option<Entry>,
    /// Record `MpiIrecvRequest` once the request exists.
    irecv: bool,
}

impl<A: MpiAbi> Track<A> {
    fn none() -> Self {
        Track { request: std::ptr::null(), entry: None, irecv: false }
    }
}

impl<A: MpiAbi> Post for Track<A> {
    fn post(self, call: &Call, rc: c_int) {
        let Some(entry) = self.entry else { return };
        if rc != A::SUCCESS || self.request.is_null() {
            return;
        }
        if self.irecv {
            call.record(call.now(), &Event::MpiIrecvRequest { request: entry.id });
        }
        // SAFETY: the call succeeded and wrote the new request.
        let key = unsafe { A::Request::read(self.request) }.key();
        requests::insert(key, entry);
    }
}

/// `MPI_Imrecv`.
pub fn imrecv<A: MpiAbi>(_: &Call, message: *mut A::Message, request: *mut A::Request) -> Track<A> {
    match take_message::<A>(message) {
        Some(comm) if state::enabled(Group::Xnonblock) => recv_entry(&comm, request, false),
        _ => Track::none(),
    }
}

fn recv_entry<A: MpiAbi>(comm: &CommInfo, request: *const A::Request, persistent: bool) -> Track<A> {
    Track {
        request,
        entry: Some(Entry {
            id: if persistent { 0 } else { requests::next_id() },
            pending: Pending::Recv { comm: comm.id, remote_base: comm.remote_base },
            persistent,
            active: !persistent,
        }),
        irecv: !persistent,
    }
}

/// `MPI_Isend`, `MPI_Issend`, `MPI_Ibsend`, `MPI_Irsend`.
pub fn isend<A: MpiAbi>(
    call: &Call,
    count: c_int,
    datatype: A::Datatype,
    dest: c_int,
    tag: c_int,
    comm: A::Comm,
    request: *mut A::Request,
) -> Track<A> {
    if !state::enabled(Group::Xnonblock) {
        return Track::none();
    }
    let Some(msg) = envelope::<A>(call, count, datatype, dest, tag, comm) else {
        return Track::none();
    };
    let id = requests::next_id();
    call.record(call.enter, &Event::MpiIsend { msg, request: id });
    Track {
        request,
        entry: Some(Entry { id, pending: Pending::Send(msg), persistent: false, active: true }),
        irecv: false,
    }
}

/// `MPI_Irecv`.
pub fn irecv<A: MpiAbi>(call: &Call, source: c_int, comm: A::Comm, request: *mut A::Request) -> Track<A> {
    if !state::enabled(Group::Xnonblock) || source == A::PROC_NULL {
        return Track::none();
    }
    match comms::lookup::<A>(call, comm) {
        Some(info) => recv_entry(&info, request, false),
        None => Track::none(),
    }
}

/// `MPI_Send_init` and its kin: a persistent, inactive send.
pub fn send_init<A: MpiAbi>(
    call: &Call,
    count: c_int,
    datatype: A::Datatype,
    dest: c_int,
    tag: c_int,
    comm: A::Comm,
    request: *mut A::Request,
) -> Track<A> {
    if !state::enabled(Group::Xnonblock) {
        return Track::none();
    }
    match envelope::<A>(call, count, datatype, dest, tag, comm) {
        Some(msg) => Track {
            request,
            entry: Some(Entry { id: 0, pending: Pending::Send(msg), persistent: true, active: false }),
            irecv: false,
        },
        None => Track::none(),
    }
}

/// `MPI_Recv_init`: a persistent, inactive receive.
pub fn recv_init<A: MpiAbi>(call: &Call, source: c_int, comm: A::Comm, request: *mut A::Request) -> Track<A> {
    if !state::enabled(Group::Xnonblock) || source == A::PROC_NULL {
        return Track::none();
    }
    match comms::lookup::<A>(call, comm) {
        Some(info) => recv_entry(&info, request, true),
        None => Track::none(),
    }
}
