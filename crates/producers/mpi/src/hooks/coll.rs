//! Collective operations, blocking and non-blocking.
//!
//! Bytes are computed before the PMPI call, from the arguments (with
//! `MPI_IN_PLACE` known only then), by the formulas of
//! [`coll_bytes`](crate::coll_bytes). A blocking collective records
//! `MpiCollectiveBegin` at Enter and `MpiCollectiveEnd` before Leave; a
//! non-blocking one records `NonBlockingCollectiveRequest` and its request
//! is completed by the wait/test family, which records
//! `NonBlockingCollectiveComplete` with the same numbers (`xnonblock`).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, OnceLock};

use raw::{Collective, CollectiveOp, Event};

use crate::abi::{Handle, MpiAbi};
use crate::call::{Call, Post};
use crate::coll_bytes::{self as b, Bytes, Ctx, Side};
use crate::requests::{self, Entry, Pending};
use crate::state::{self, Group};
use crate::{comms, pmpi};

/// What a collective is about to do, before the call.
struct Shape {
    op: CollectiveOp,
    comm: u32,
    root: Option<u32>,
    bytes: Bytes,
}

impl Shape {
    fn collective(&self) -> Collective {
        Collective { op: self.op, comm: self.comm, root: self.root, sent: self.bytes.0, received: self.bytes.1 }
    }
}

/// The communicator's context and this process's side for `root`, and
/// the root as recorded: the given rank on an intracommunicator; on an
/// intercommunicator (whose definition lists both groups) this process's
/// own place when it is the root (`MPI_ROOT`), none for `MPI_PROC_NULL`,
/// else the remote root's place.
fn context<A: MpiAbi>(call: &Call, comm: A::Comm, root: Option<c_int>) -> Option<(u32, Ctx, Side, Option<u32>)> {
    let info = comms::lookup::<A>(call, comm)?;
    let ctx = Ctx {
        me: info.rank.max(0) as u64,
        n: info.size.max(1) as u64,
        remote: info.remote_size.map(|r| r.max(0) as u64),
    };
    let (side, recorded) = match (root, info.remote_size) {
        (None, _) => (Side::Member, None),
        (Some(r), None) if r == info.rank => (Side::Root, Some(r as u32)),
        (Some(r), None) => (Side::Member, u32::try_from(r).ok()),
        (Some(r), Some(_)) if r == A::ROOT => (Side::Root, Some(info.own())),
        (Some(r), Some(_)) if r == A::PROC_NULL => (Side::Idle, None),
        (Some(r), Some(_)) => (Side::Member, Some(info.peer(r))),
    };
    Some((info.id, ctx, side, recorded))
}

fn block<A: MpiAbi>(count: c_int, datatype: A::Datatype) -> u64 {
    pmpi::bytes_of::<A>(count, datatype)
}

/// Per-rank blocks of a v-variant: `n` counts of one type. A process
/// whose counts are not significant (a non-root) passes null.
fn blocks<A: MpiAbi>(counts: *const c_int, n: u64, datatype: A::Datatype) -> Vec<u64> {
    if counts.is_null() {
        return Vec::new();
    }
    let size = pmpi::type_size::<A>(datatype);
    (0..n as usize)
        // SAFETY: MPI requires the counts array to have one entry per
        // process of the (remote) group where it is significant.
        .map(|i| u64::try_from(unsafe { *counts.add(i) }).unwrap_or(0) * size)
        .collect()
}

/// Per-rank blocks of alltoallw: one type per rank.
fn typed_blocks<A: MpiAbi>(counts: *const c_int, types: *const A::Datatype, n: u64) -> Vec<u64> {
    if counts.is_null() || types.is_null() {
        return Vec::new();
    }
    (0..n as usize)
        .map(|i| {
            // SAFETY: as in `blocks`, with one type per entry.
            let (c, t) = unsafe { (*counts.add(i), A::Datatype::read_at(types, i)) };
            block::<A>(c, t)
        })
        .collect()
}

fn in_place<A: MpiAbi>(buf: *const c_void) -> bool {
    buf == A::in_place()
}

/// With the flight recorder, the attribute that numbers each blocking
/// collective in its communicator's order (string id of its name), and
/// the collectives started so far per communicator: the recorder gives
/// back the oldest events, so the analysis cannot count them from the
/// start. Off otherwise (the lock and the extra event are not paid).
static NUMBERING: OnceLock<(u32, Mutex<HashMap<u32, u64>>)> = OnceLock::new();

/// The attribute's name in the archive.
pub const SEQUENCE: &str = "GPUTRACE::COLLECTIVE_NUMBER";

/// Numbers the collectives from now on (`GPUTRACE_FLIGHT_RECORDER`).
pub fn number_collectives(rec: &recorder::Recorder) {
    let name = rec.intern(SEQUENCE);
    let _ = NUMBERING.set((name, Mutex::new(HashMap::new())));
}

/// The number of the collective started now on `comm` (from 0), when
/// collectives are numbered.
fn next_number(comm: u32) -> Option<(u32, u64)> {
    let (name, counts) = NUMBERING.get()?;
    let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
    let n = counts.entry(comm).or_insert(0);
    *n += 1;
    Some((*name, *n - 1))
}

/// After a blocking collective: record its end (numbered, see
/// [`NUMBERING`]).
pub struct End(Option<(Collective, Option<(u32, u64)>)>);

impl Post for End {
    fn post(self, call: &Call, _: c_int) {
        if let Some((c, number)) = self.0 {
            let t = call.now();
            if let Some((name, value)) = number {
                call.record(t, &Event::Attribute { name, value });
            }
            call.record(t, &Event::MpiCollectiveEnd(c));
        }
    }
}

fn blocking(call: &Call, shape: Option<Shape>) -> End {
    let Some(shape) = shape else { return End(None) };
    call.record(call.enter, &Event::MpiCollectiveBegin);
    End(Some((shape.collective(), next_number(shape.comm))))
}

/// After a non-blocking collective's start: track its request.
pub struct Started<A: MpiAbi> {
    request: *const A::Request,
    entry: Option<Entry>,
}

impl<A: MpiAbi> Post for Started<A> {
    fn post(self, _: &Call, rc: c_int) {
        if let Some(entry) = self.entry
            && rc == A::SUCCESS
            && !self.request.is_null()
        {
            // SAFETY: the call succeeded and wrote the request.
            requests::insert(unsafe { A::Request::read(self.request) }.key(), entry);
        }
    }
}

fn nonblocking<A: MpiAbi>(call: &Call, shape: Option<Shape>, request: *mut A::Request) -> Started<A> {
    // It takes its place in the communicator's order when it starts; its
    // completion carries no number (the analysis counts on from the last).
    if let Some(s) = &shape {
        next_number(s.comm);
    }
    let entry = shape.filter(|_| state::enabled(Group::Xnonblock)).map(|s| {
        let id = requests::next_id();
        call.record(call.enter, &Event::NonBlockingCollectiveRequest { request: id });
        Entry { id, pending: Pending::Collective(s.collective()), persistent: false, active: true }
    });
    Started { request, entry }
}

/// Defines the blocking hook, the non-blocking hook and the shape of one
/// collective.
macro_rules! collectives {
    ($(
        $blocking:ident / $nonblocking:ident ($call:ident, $($arg:ident : $ty:ty),*) $body:block
    )*) => {$(
        #[doc = concat!("`MPI_", stringify!($blocking), "`.")]
        #[allow(clippy::too_many_arguments)]
        pub fn $blocking<A: MpiAbi>($call: &Call, $($arg: $ty),*) -> End {
            let shape = (|| -> Option<Shape> { $body })();
            blocking($call, shape)
        }

        #[doc = concat!("`MPI_", stringify!($nonblocking), "`.")]
        #[allow(clippy::too_many_arguments)]
        pub fn $nonblocking<A: MpiAbi>(
            $call: &Call, $($arg: $ty,)* request: *mut A::Request
        ) -> Started<A> {
            let shape = (|| -> Option<Shape> { $body })();
            nonblocking::<A>($call, shape, request)
        }
    )*};
}

use CollectiveOp as Op;

collectives! {
    barrier / ibarrier (call, comm: A::Comm) {
        let (comm, _, _, _) = context::<A>(call, comm, None)?;
        Some(Shape { op: Op::Barrier, comm, root: None, bytes: (0, 0) })
    }
    bcast / ibcast (call, count: c_int, datatype: A::Datatype, root: c_int, comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let x = block::<A>(count, datatype);
        Some(Shape { op: Op::Bcast, comm, root, bytes: b::one_to_all(ctx, side, false, x, x) })
    }
    reduce / ireduce (call, sendbuf: *const c_void, count: c_int, datatype: A::Datatype,
                      root: c_int, comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let x = block::<A>(count, datatype);
        let bytes = b::all_to_one(ctx, side, in_place::<A>(sendbuf), x, x);
        Some(Shape { op: Op::Reduce, comm, root, bytes })
    }
    allreduce / iallreduce (call, sendbuf: *const c_void, count: c_int, datatype: A::Datatype,
                            comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let x = block::<A>(count, datatype);
        let bytes = b::alltoall(ctx, in_place::<A>(sendbuf), x, x);
        Some(Shape { op: Op::Allreduce, comm, root: None, bytes })
    }
    gather / igather (call, sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype,
                      recvcount: c_int, recvtype: A::Datatype, root: c_int, comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let (s, r) = (block::<A>(sendcount, sendtype), block::<A>(recvcount, recvtype));
        let bytes = b::all_to_one(ctx, side, in_place::<A>(sendbuf), s, r);
        Some(Shape { op: Op::Gather, comm, root, bytes })
    }
    gatherv / igatherv (call, sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype,
                        recvcounts: *const c_int, recvtype: A::Datatype, root: c_int,
                        comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let s = block::<A>(sendcount, sendtype);
        let r = if side == Side::Root { blocks::<A>(recvcounts, ctx.peers(), recvtype) } else { Vec::new() };
        let bytes = b::gatherv(ctx, side, in_place::<A>(sendbuf), s, &r);
        Some(Shape { op: Op::Gatherv, comm, root, bytes })
    }
    scatter / iscatter (call, sendcount: c_int, sendtype: A::Datatype, recvbuf: *const c_void,
                        recvcount: c_int, recvtype: A::Datatype, root: c_int, comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let (s, r) = (block::<A>(sendcount, sendtype), block::<A>(recvcount, recvtype));
        let bytes = b::one_to_all(ctx, side, in_place::<A>(recvbuf), s, r);
        Some(Shape { op: Op::Scatter, comm, root, bytes })
    }
    scatterv / iscatterv (call, sendcounts: *const c_int, sendtype: A::Datatype,
                          recvbuf: *const c_void, recvcount: c_int, recvtype: A::Datatype,
                          root: c_int, comm: A::Comm) {
        let (comm, ctx, side, root) = context::<A>(call, comm, Some(root))?;
        let s = if side == Side::Root { blocks::<A>(sendcounts, ctx.peers(), sendtype) } else { Vec::new() };
        let r = block::<A>(recvcount, recvtype);
        let bytes = b::scatterv(ctx, side, in_place::<A>(recvbuf), &s, r);
        Some(Shape { op: Op::Scatterv, comm, root, bytes })
    }
    allgather / iallgather (call, sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype,
                            recvcount: c_int, recvtype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let (s, r) = (block::<A>(sendcount, sendtype), block::<A>(recvcount, recvtype));
        let bytes = b::alltoall(ctx, in_place::<A>(sendbuf), s, r);
        Some(Shape { op: Op::Allgather, comm, root: None, bytes })
    }
    allgatherv / iallgatherv (call, sendbuf: *const c_void, sendcount: c_int,
                              sendtype: A::Datatype, recvcounts: *const c_int,
                              recvtype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let s = block::<A>(sendcount, sendtype);
        let r = blocks::<A>(recvcounts, ctx.peers(), recvtype);
        let bytes = b::allgatherv(ctx, in_place::<A>(sendbuf), s, &r);
        Some(Shape { op: Op::Allgatherv, comm, root: None, bytes })
    }
    alltoall / ialltoall (call, sendbuf: *const c_void, sendcount: c_int, sendtype: A::Datatype,
                          recvcount: c_int, recvtype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let (s, r) = (block::<A>(sendcount, sendtype), block::<A>(recvcount, recvtype));
        let bytes = b::alltoall(ctx, in_place::<A>(sendbuf), s, r);
        Some(Shape { op: Op::Alltoall, comm, root: None, bytes })
    }
    alltoallv / ialltoallv (call, sendbuf: *const c_void, sendcounts: *const c_int,
                            sendtype: A::Datatype, recvcounts: *const c_int,
                            recvtype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let inplace = in_place::<A>(sendbuf);
        let s = if inplace { Vec::new() } else { blocks::<A>(sendcounts, ctx.peers(), sendtype) };
        let r = blocks::<A>(recvcounts, ctx.peers(), recvtype);
        let bytes = b::alltoallv(ctx, inplace, &s, &r);
        Some(Shape { op: Op::Alltoallv, comm, root: None, bytes })
    }
    alltoallw / ialltoallw (call, sendbuf: *const c_void, sendcounts: *const c_int,
                            sendtypes: *const A::Datatype, recvcounts: *const c_int,
                            recvtypes: *const A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let inplace = in_place::<A>(sendbuf);
        let s = if inplace { Vec::new() } else { typed_blocks::<A>(sendcounts, sendtypes, ctx.peers()) };
        let r = typed_blocks::<A>(recvcounts, recvtypes, ctx.peers());
        let bytes = b::alltoallv(ctx, inplace, &s, &r);
        Some(Shape { op: Op::Alltoallw, comm, root: None, bytes })
    }
    reduce_scatter / ireduce_scatter (call, sendbuf: *const c_void, recvcounts: *const c_int,
                                      datatype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let r = blocks::<A>(recvcounts, ctx.n, datatype);
        let bytes = b::reduce_scatter(ctx, in_place::<A>(sendbuf), &r);
        Some(Shape { op: Op::ReduceScatter, comm, root: None, bytes })
    }
    reduce_scatter_block / ireduce_scatter_block (call, sendbuf: *const c_void,
                                                  recvcount: c_int, datatype: A::Datatype,
                                                  comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let x = block::<A>(recvcount, datatype);
        let bytes = b::reduce_scatter_block(ctx, in_place::<A>(sendbuf), x);
        Some(Shape { op: Op::ReduceScatterBlock, comm, root: None, bytes })
    }
    scan / iscan (call, sendbuf: *const c_void, count: c_int, datatype: A::Datatype,
                  comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let bytes = b::scan(ctx, in_place::<A>(sendbuf), block::<A>(count, datatype));
        Some(Shape { op: Op::Scan, comm, root: None, bytes })
    }
    exscan / iexscan (call, count: c_int, datatype: A::Datatype, comm: A::Comm) {
        let (comm, ctx, _, _) = context::<A>(call, comm, None)?;
        let bytes = b::scan(ctx, true, block::<A>(count, datatype));
        Some(Shape { op: Op::Exscan, comm, root: None, bytes })
    }
}
