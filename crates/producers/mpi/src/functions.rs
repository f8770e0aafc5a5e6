//! The signature list: every wrapped MPI function, once, with its group,
//! region role, whether it is followed when its group is off, and its
//! hook (see [`hooks`](crate::hooks)).
//!
//! Signatures are C's (MPI 3.1, the version both Open MPI 4.1 and MPICH 4
//! implement completely), with handle types that each ABI defines. A
//! function is added here and nowhere else; region names are the function
//! names, and group names are Score-P's.

/// Defines every `MPI_*` wrapper for the ABI `$abi` (a path to a type
/// implementing [`MpiAbi`](crate::MpiAbi)), in a module `mpi_wrappers`.
/// The expansion names `raw` and `config` (a function's region role and
/// group), so the crate that expands it depends on both.
#[macro_export]
macro_rules! define_wrappers {
    ($abi:path) => {
        $crate::__wrappers! {
            $abi;
            // env
            [Env Function IfEnabled] MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int
                => lifecycle::init();
            [Env Function IfEnabled] MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int
                => lifecycle::init();
            [Env Function IfEnabled] MPI_Finalize() -> c_int
                => lifecycle::finalize();
            [Ext Function IfEnabled] MPI_Abort(comm: Comm, errorcode: c_int) -> c_int
                => lifecycle::abort();
            [Env Function IfEnabled] MPI_Finalized(flag: *mut c_int) -> c_int
                => plain::region();
            [Env Function IfEnabled] MPI_Initialized(flag: *mut c_int) -> c_int
                => plain::region();
            [Env Function IfEnabled] MPI_Query_thread(provided: *mut c_int) -> c_int
                => plain::region();
            [Env Function IfEnabled] MPI_Is_thread_main(flag: *mut c_int) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int
                => plain::region();
            [Env Function IfEnabled] MPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int
                => plain::region();
            // p2p: blocking
            [P2p Point2Point IfEnabled] MPI_Send(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int
                => p2p::send(count, datatype, dest, tag, comm);
            [P2p Point2Point IfEnabled] MPI_Ssend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int
                => p2p::send(count, datatype, dest, tag, comm);
            [P2p Point2Point IfEnabled] MPI_Bsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int
                => p2p::send(count, datatype, dest, tag, comm);
            [P2p Point2Point IfEnabled] MPI_Rsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int
                => p2p::send(count, datatype, dest, tag, comm);
            [P2p Point2Point IfEnabled] MPI_Recv(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int
                => p2p::recv(comm, &mut status);
            [P2p Point2Point IfEnabled] MPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int
                => p2p::sendrecv(sendcount, sendtype, dest, sendtag, comm, &mut status);
            [P2p Point2Point IfEnabled] MPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int
                => p2p::sendrecv(count, datatype, dest, sendtag, comm, &mut status);
            [P2p Point2Point IfEnabled] MPI_Probe(source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int
                => plain::region();
            [P2p Point2Point IfEnabled] MPI_Iprobe(source: c_int, tag: c_int, comm: Comm, flag: *mut c_int, status: *mut Status) -> c_int
                => plain::region();
            [P2p Point2Point IfEnabled] MPI_Mprobe(source: c_int, tag: c_int, comm: Comm, message: *mut Message, status: *mut Status) -> c_int
                => p2p::mprobe(comm, message);
            [P2p Point2Point IfEnabled] MPI_Improbe(source: c_int, tag: c_int, comm: Comm, flag: *mut c_int, message: *mut Message, status: *mut Status) -> c_int
                => p2p::improbe(comm, flag, message);
            [P2p Point2Point IfEnabled] MPI_Mrecv(buf: *mut c_void, count: c_int, datatype: Datatype, message: *mut Message, status: *mut Status) -> c_int
                => p2p::mrecv(message, &mut status);
            // p2p: non-blocking and persistent
            [P2p Point2Point IfEnabled] MPI_Imrecv(buf: *mut c_void, count: c_int, datatype: Datatype, message: *mut Message, request: *mut Request) -> c_int
                => p2p::imrecv(message, request);
            [P2p Point2Point IfEnabled] MPI_Isend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::isend(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Issend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::isend(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Ibsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::isend(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Irsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::isend(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Irecv(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::irecv(source, comm, request);
            [P2p Point2Point IfEnabled] MPI_Send_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::send_init(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Ssend_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::send_init(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Bsend_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::send_init(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Rsend_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::send_init(count, datatype, dest, tag, comm, request);
            [P2p Point2Point IfEnabled] MPI_Recv_init(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int
                => p2p::recv_init(source, comm, request);
            [P2p Function Always] MPI_Start(request: *mut Request) -> c_int
                => wait::start(request);
            [P2p Function Always] MPI_Startall(count: c_int, requests: *mut Request) -> c_int
                => wait::startall(count, requests);
            [P2p Function Always] MPI_Wait(request: *mut Request, status: *mut Status) -> c_int
                => wait::wait(request, &mut status);
            [P2p Function Always] MPI_Waitall(count: c_int, requests: *mut Request, statuses: *mut Status) -> c_int
                => wait::all(count, requests, std::ptr::null_mut(), &mut statuses);
            [P2p Function Always] MPI_Waitany(count: c_int, requests: *mut Request, index: *mut c_int, status: *mut Status) -> c_int
                => wait::any(count, requests, index, std::ptr::null_mut(), &mut status);
            [P2p Function Always] MPI_Waitsome(incount: c_int, requests: *mut Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int
                => wait::some(incount, requests, outcount, indices, &mut statuses, false);
            [P2p Function Always] MPI_Test(request: *mut Request, flag: *mut c_int, status: *mut Status) -> c_int
                => wait::test(request, flag, &mut status);
            [P2p Function Always] MPI_Testall(count: c_int, requests: *mut Request, flag: *mut c_int, statuses: *mut Status) -> c_int
                => wait::all(count, requests, flag, &mut statuses);
            [P2p Function Always] MPI_Testany(count: c_int, requests: *mut Request, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int
                => wait::any(count, requests, index, flag, &mut status);
            [P2p Function Always] MPI_Testsome(incount: c_int, requests: *mut Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int
                => wait::some(incount, requests, outcount, indices, &mut statuses, true);
            [P2p Function Always] MPI_Request_free(request: *mut Request) -> c_int
                => wait::request_free(request);
            [P2p Function IfEnabled] MPI_Cancel(request: *mut Request) -> c_int
                => plain::region();
            [P2p Function IfEnabled] MPI_Test_cancelled(status: *const Status, flag: *mut c_int) -> c_int
                => plain::region();
            [P2p Function IfEnabled] MPI_Request_get_status(request: Request, flag: *mut c_int, status: *mut Status) -> c_int
                => plain::region();
            [P2p Function IfEnabled] MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int
                => plain::region();
            [P2p Function IfEnabled] MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int
                => plain::region();
            // coll: blocking
            [Coll Barrier IfEnabled] MPI_Barrier(comm: Comm) -> c_int
                => coll::barrier(comm);
            [Coll CollOne2All IfEnabled] MPI_Bcast(buffer: *mut c_void, count: c_int, datatype: Datatype, root: c_int, comm: Comm) -> c_int
                => coll::bcast(count, datatype, root, comm);
            [Coll CollAll2One IfEnabled] MPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, root: c_int, comm: Comm) -> c_int
                => coll::reduce(sendbuf, count, datatype, root, comm);
            [Coll CollAll2All IfEnabled] MPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int
                => coll::allreduce(sendbuf, count, datatype, comm);
            [Coll CollAll2One IfEnabled] MPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int
                => coll::gather(sendbuf, sendcount, sendtype, recvcount, recvtype, root, comm);
            [Coll CollAll2One IfEnabled] MPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int
                => coll::gatherv(sendbuf, sendcount, sendtype, recvcounts, recvtype, root, comm);
            [Coll CollOne2All IfEnabled] MPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int
                => coll::scatter(sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
            [Coll CollOne2All IfEnabled] MPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int
                => coll::scatterv(sendcounts, sendtype, recvbuf, recvcount, recvtype, root, comm);
            [Coll CollAll2All IfEnabled] MPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int
                => coll::allgather(sendbuf, sendcount, sendtype, recvcount, recvtype, comm);
            [Coll CollAll2All IfEnabled] MPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm) -> c_int
                => coll::allgatherv(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm);
            [Coll CollAll2All IfEnabled] MPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int
                => coll::alltoall(sendbuf, sendcount, sendtype, recvcount, recvtype, comm);
            [Coll CollAll2All IfEnabled] MPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm) -> c_int
                => coll::alltoallv(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm);
            [Coll CollAll2All IfEnabled] MPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Datatype, comm: Comm) -> c_int
                => coll::alltoallw(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm);
            [Coll CollAll2All IfEnabled] MPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int
                => coll::reduce_scatter(sendbuf, recvcounts, datatype, comm);
            [Coll CollAll2All IfEnabled] MPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int
                => coll::reduce_scatter_block(sendbuf, recvcount, datatype, comm);
            [Coll CollOther IfEnabled] MPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int
                => coll::scan(sendbuf, count, datatype, comm);
            [Coll CollOther IfEnabled] MPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int
                => coll::exscan(count, datatype, comm);
            [Coll Function IfEnabled] MPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op) -> c_int
                => plain::region();
            // coll: non-blocking
            [Coll Barrier IfEnabled] MPI_Ibarrier(comm: Comm, request: *mut Request) -> c_int
                => coll::ibarrier(comm, request);
            [Coll CollOne2All IfEnabled] MPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::ibcast(count, datatype, root, comm, request);
            [Coll CollAll2One IfEnabled] MPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::ireduce(sendbuf, count, datatype, root, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int
                => coll::iallreduce(sendbuf, count, datatype, comm, request);
            [Coll CollAll2One IfEnabled] MPI_Igather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::igather(sendbuf, sendcount, sendtype, recvcount, recvtype, root, comm, request);
            [Coll CollAll2One IfEnabled] MPI_Igatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::igatherv(sendbuf, sendcount, sendtype, recvcounts, recvtype, root, comm, request);
            [Coll CollOne2All IfEnabled] MPI_Iscatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::iscatter(sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
            [Coll CollOne2All IfEnabled] MPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int
                => coll::iscatterv(sendcounts, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Iallgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => coll::iallgather(sendbuf, sendcount, sendtype, recvcount, recvtype, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Iallgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => coll::iallgatherv(sendbuf, sendcount, sendtype, recvcounts, recvtype, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Ialltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => coll::ialltoall(sendbuf, sendcount, sendtype, recvcount, recvtype, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => coll::ialltoallv(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Ialltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int
                => coll::ialltoallw(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int
                => coll::ireduce_scatter(sendbuf, recvcounts, datatype, comm, request);
            [Coll CollAll2All IfEnabled] MPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int
                => coll::ireduce_scatter_block(sendbuf, recvcount, datatype, comm, request);
            [Coll CollOther IfEnabled] MPI_Iscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int
                => coll::iscan(sendbuf, count, datatype, comm, request);
            [Coll CollOther IfEnabled] MPI_Iexscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int
                => coll::iexscan(count, datatype, comm, request);
            // coll: neighbourhood (regions only)
            [Topo CollAll2All IfEnabled] MPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Ineighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Ineighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Ineighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Ineighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int
                => plain::region();
            [Topo CollAll2All IfEnabled] MPI_Ineighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int
                => plain::region();
            // cg: communicators
            [Cg Function Always] MPI_Comm_dup(comm: Comm, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Comm_dup_with_info(comm: Comm, info: Info, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Comm_idup(comm: Comm, newcomm: *mut Comm, request: *mut Request) -> c_int
                => cg::idup(comm, newcomm, request);
            [Cg Function Always] MPI_Comm_split(comm: Comm, color: c_int, key: c_int, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Comm_split_type(comm: Comm, split_type: c_int, key: c_int, info: Info, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Comm_create(comm: Comm, group: Group, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Comm_create_group(comm: Comm, group: Group, tag: c_int, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Cg Function Always] MPI_Intercomm_create(local_comm: Comm, local_leader: c_int, peer_comm: Comm, remote_leader: c_int, tag: c_int, newintercomm: *mut Comm) -> c_int
                => cg::created(local_comm, newintercomm);
            [Cg Function Always] MPI_Intercomm_merge(intercomm: Comm, high: c_int, newintracomm: *mut Comm) -> c_int
                => cg::created(intercomm, newintracomm);
            [Cg Function Always] MPI_Comm_free(comm: *mut Comm) -> c_int
                => cg::free(comm);
            [Cg Function IfEnabled] MPI_Comm_rank(comm: Comm, rank: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_size(comm: Comm, size: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_compare(comm1: Comm, comm2: Comm, result: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_test_inter(comm: Comm, flag: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_remote_size(comm: Comm, size: *mut c_int) -> c_int
                => plain::region();
            [Cg Function Always] MPI_Comm_set_name(comm: Comm, name: *const c_char) -> c_int
                => cg::named(comm, name);
            [Cg Function IfEnabled] MPI_Comm_get_name(comm: Comm, name: *mut c_char, resultlen: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_group(comm: Comm, group: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Comm_remote_group(comm: Comm, group: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_incl(group: Group, n: c_int, ranks: *const c_int, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_excl(group: Group, n: c_int, ranks: *const c_int, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_range_incl(group: Group, n: c_int, ranges: *mut c_int, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_range_excl(group: Group, n: c_int, ranges: *mut c_int, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_union(group1: Group, group2: Group, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_intersection(group1: Group, group2: Group, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_difference(group1: Group, group2: Group, newgroup: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_free(group: *mut Group) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_size(group: Group, size: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_rank(group: Group, rank: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_translate_ranks(group1: Group, n: c_int, ranks1: *const c_int, group2: Group, ranks2: *mut c_int) -> c_int
                => plain::region();
            [Cg Function IfEnabled] MPI_Group_compare(group1: Group, group2: Group, result: *mut c_int) -> c_int
                => plain::region();
            // topo
            [Topo Function Always] MPI_Cart_create(comm_old: Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, comm_cart: *mut Comm) -> c_int
                => cg::created(comm_old, comm_cart);
            [Topo Function Always] MPI_Cart_sub(comm: Comm, remain_dims: *const c_int, newcomm: *mut Comm) -> c_int
                => cg::created(comm, newcomm);
            [Topo Function Always] MPI_Graph_create(comm_old: Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut Comm) -> c_int
                => cg::created(comm_old, comm_graph);
            [Topo Function Always] MPI_Dist_graph_create(comm_old: Comm, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights: *const c_int, info: Info, reorder: c_int, comm_dist_graph: *mut Comm) -> c_int
                => cg::created(comm_old, comm_dist_graph);
            [Topo Function Always] MPI_Dist_graph_create_adjacent(comm_old: Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: Info, reorder: c_int, comm_dist_graph: *mut Comm) -> c_int
                => cg::created(comm_old, comm_dist_graph);
            [Topo Function IfEnabled] MPI_Cart_coords(comm: Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Cart_rank(comm: Comm, coords: *const c_int, rank: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Cart_shift(comm: Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Cart_get(comm: Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Cartdim_get(comm: Comm, ndims: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Cart_map(comm: Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Graph_map(comm: Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Graph_get(comm: Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Graphdims_get(comm: Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Graph_neighbors_count(comm: Comm, rank: c_int, nneighbors: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Graph_neighbors(comm: Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Dist_graph_neighbors_count(comm: Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Dist_graph_neighbors(comm: Comm, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) -> c_int
                => plain::region();
            [Topo Function IfEnabled] MPI_Topo_test(comm: Comm, status: *mut c_int) -> c_int
                => plain::region();
            // rma (regions only)
            [Rma Function IfEnabled] MPI_Win_create(base: *mut c_void, size: Aint, disp_unit: c_int, info: Info, comm: Comm, win: *mut Win) -> c_int
                => plain::region();
            [Rma Allocate IfEnabled] MPI_Win_allocate(size: Aint, disp_unit: c_int, info: Info, comm: Comm, baseptr: *mut c_void, win: *mut Win) -> c_int
                => plain::region();
            [Rma Allocate IfEnabled] MPI_Win_allocate_shared(size: Aint, disp_unit: c_int, info: Info, comm: Comm, baseptr: *mut c_void, win: *mut Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_create_dynamic(info: Info, comm: Comm, win: *mut Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_free(win: *mut Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_attach(win: Win, base: *mut c_void, size: Aint) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_detach(win: Win, base: *const c_void) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_shared_query(win: Win, rank: c_int, size: *mut Aint, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_get_group(win: Win, group: *mut Group) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_fence(assert: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_unlock(rank: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_lock_all(assert: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_unlock_all(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_flush(rank: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_flush_all(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_flush_local(rank: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_flush_local_all(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_sync(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_post(group: Group, assert: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_start(group: Group, assert: c_int, win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_complete(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_wait(win: Win) -> c_int
                => plain::region();
            [Rma Function IfEnabled] MPI_Win_test(win: Win, flag: *mut c_int) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Put(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Get(origin_addr: *mut c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, op: Op, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Get_accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, result_addr: *mut c_void, result_count: c_int, result_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, op: Op, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Fetch_and_op(origin_addr: *const c_void, result_addr: *mut c_void, datatype: Datatype, target_rank: c_int, target_disp: Aint, op: Op, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Compare_and_swap(origin_addr: *const c_void, compare_addr: *const c_void, result_addr: *mut c_void, datatype: Datatype, target_rank: c_int, target_disp: Aint, win: Win) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Rput(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, win: Win, request: *mut Request) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Rget(origin_addr: *mut c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, win: Win, request: *mut Request) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Raccumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, op: Op, win: Win, request: *mut Request) -> c_int
                => plain::region();
            [Rma Rma IfEnabled] MPI_Rget_accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Datatype, result_addr: *mut c_void, result_count: c_int, result_datatype: Datatype, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Datatype, op: Op, win: Win, request: *mut Request) -> c_int
                => plain::region();
            // io (regions only)
            [Io FileIo IfEnabled] MPI_File_open(comm: Comm, filename: *const c_char, amode: c_int, info: Info, fh: *mut File) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_close(fh: *mut File) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_delete(filename: *const c_char, info: Info) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_read(fh: File, buf: *mut c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_read_all(fh: File, buf: *mut c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_write(fh: File, buf: *const c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_write_all(fh: File, buf: *const c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_read_at(fh: File, offset: Offset, buf: *mut c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_read_at_all(fh: File, offset: Offset, buf: *mut c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_write_at(fh: File, offset: Offset, buf: *const c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_write_at_all(fh: File, offset: Offset, buf: *const c_void, count: c_int, datatype: Datatype, status: *mut Status) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_iread(fh: File, buf: *mut c_void, count: c_int, datatype: Datatype, request: *mut Request) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_iwrite(fh: File, buf: *const c_void, count: c_int, datatype: Datatype, request: *mut Request) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_iread_at(fh: File, offset: Offset, buf: *mut c_void, count: c_int, datatype: Datatype, request: *mut Request) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_iwrite_at(fh: File, offset: Offset, buf: *const c_void, count: c_int, datatype: Datatype, request: *mut Request) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_seek(fh: File, offset: Offset, whence: c_int) -> c_int
                => plain::region();
            [Io Function IfEnabled] MPI_File_set_view(fh: File, disp: Offset, etype: Datatype, filetype: Datatype, datarep: *const c_char, info: Info) -> c_int
                => plain::region();
            [Io FileIo IfEnabled] MPI_File_sync(fh: File) -> c_int
                => plain::region();
            [Io Function IfEnabled] MPI_File_get_size(fh: File, size: *mut Offset) -> c_int
                => plain::region();
            [Io Function IfEnabled] MPI_File_set_size(fh: File, size: Offset) -> c_int
                => plain::region();
            [Io Function IfEnabled] MPI_File_preallocate(fh: File, size: Offset) -> c_int
                => plain::region();
            [Io Function IfEnabled] MPI_File_get_position(fh: File, offset: *mut Offset) -> c_int
                => plain::region();
            // type
            [Type Function IfEnabled] MPI_Type_contiguous(count: c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_create_hvector(count: c_int, blocklength: c_int, stride: Aint, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_indexed(count: c_int, blocklengths: *const c_int, displacements: *const c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_create_indexed_block(count: c_int, blocklength: c_int, displacements: *const c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_create_struct(count: c_int, blocklengths: *const c_int, displacements: *const Aint, types: *const Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_create_subarray(ndims: c_int, sizes: *const c_int, subsizes: *const c_int, starts: *const c_int, order: c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_create_resized(oldtype: Datatype, lb: Aint, extent: Aint, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_dup(oldtype: Datatype, newtype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_commit(datatype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_free(datatype: *mut Datatype) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_size(datatype: Datatype, size: *mut c_int) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_size_x(datatype: Datatype, size: *mut Count) -> c_int
                => plain::region();
            [Type Function IfEnabled] MPI_Type_get_extent(datatype: Datatype, lb: *mut Aint, extent: *mut Aint) -> c_int
                => plain::region();
            // misc, perf, err, spawn
            [Misc Function IfEnabled] MPI_Wtime() -> f64
                => plain::region();
            [Misc Function IfEnabled] MPI_Wtick() -> f64
                => plain::region();
            [Ext Function IfEnabled] MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int
                => plain::region();
            [Ext Function IfEnabled] MPI_Get_count(status: *const Status, datatype: Datatype, count: *mut c_int) -> c_int
                => plain::region();
            [Ext Function IfEnabled] MPI_Get_elements(status: *const Status, datatype: Datatype, count: *mut c_int) -> c_int
                => plain::region();
            [Ext Function IfEnabled] MPI_Get_elements_x(status: *const Status, datatype: Datatype, count: *mut Count) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Get_address(location: *const c_void, address: *mut Aint) -> c_int
                => plain::region();
            [Misc Allocate IfEnabled] MPI_Alloc_mem(size: Aint, info: Info, baseptr: *mut c_void) -> c_int
                => plain::region();
            [Misc Deallocate IfEnabled] MPI_Free_mem(base: *mut c_void) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_create(info: *mut Info) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_set(info: Info, key: *const c_char, value: *const c_char) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_get(info: Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_delete(info: Info, key: *const c_char) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_get_nkeys(info: Info, nkeys: *mut c_int) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_dup(info: Info, newinfo: *mut Info) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Info_free(info: *mut Info) -> c_int
                => plain::region();
            [Misc Function IfEnabled] MPI_Op_free(op: *mut Op) -> c_int
                => plain::region();
            [Perf Function Always] MPI_Pcontrol(level: c_int) -> c_int
                => perf::pcontrol(level);
            [Err Function IfEnabled] MPI_Comm_set_errhandler(comm: Comm, errhandler: Errhandler) -> c_int
                => plain::region();
            [Err Function IfEnabled] MPI_Comm_get_errhandler(comm: Comm, errhandler: *mut Errhandler) -> c_int
                => plain::region();
            [Err Function IfEnabled] MPI_Comm_call_errhandler(comm: Comm, errorcode: c_int) -> c_int
                => plain::region();
            [Err Function IfEnabled] MPI_Errhandler_free(errhandler: *mut Errhandler) -> c_int
                => plain::region();
            [Err Function IfEnabled] MPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int
                => plain::region();
            [Err Function IfEnabled] MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int
                => plain::region();
            [Spawn Function IfEnabled] MPI_Comm_get_parent(parent: *mut Comm) -> c_int
                => plain::region();
            [Spawn Function Always] MPI_Comm_disconnect(comm: *mut Comm) -> c_int
                => cg::free(comm);
        }
    };
}

/// How many functions the list wraps.
pub const WRAPPED: usize = 241;
