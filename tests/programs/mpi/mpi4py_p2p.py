"""Point-to-point messages from Python through mpi4py, which Python loads
with its MPI library RTLD_LOCAL: a ring of buffer messages (Isend/Recv,
Irecv/Send, Sendrecv) of 0 to 70000 bytes, eager and rendezvous, and of
pickled objects (isend/recv, which mpi4py receives with MPI_Mprobe and
MPI_Mrecv), then an Allreduce, a barrier and a (pickled) gather. Works on any number of
ranks, one included (the ring is then this rank to itself).

Rank 0 prints one line per rank, in rank order:
  mpi4py rank R: sends=S recvs=V buffer_bytes=B
with S and V the messages the rank sent and received (a Sendrecv is one
of each) and B the bytes of its buffer sends (tags 1, 3 and 4).

Usage: mpi4py_p2p.py [-n ITER] [--exit CODE]
"""

import sys
from array import array

from mpi4py import MPI


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    iters = option("-n", 3)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    sends = recvs = buffer_bytes = 0
    errors = 0
    for it in range(iters):
        for n in (0, 8, 4096, 70000):
            out = bytearray([(rank + it) % 251]) * n
            into = bytearray(n)
            status = MPI.Status()
            req = comm.Isend([out, MPI.BYTE], dest=right, tag=1)
            comm.Recv([into, MPI.BYTE], source=left, tag=1, status=status)
            req.Wait()
            sends, recvs, buffer_bytes = sends + 1, recvs + 1, buffer_bytes + n
            errors += status.Get_source() != left or status.Get_count(MPI.BYTE) != n
            errors += into != bytearray([(left + it) % 251]) * n

            comm.Sendrecv([out, MPI.BYTE], dest=right, sendtag=3, recvbuf=[into, MPI.BYTE], source=left, recvtag=3)
            sends, recvs, buffer_bytes = sends + 1, recvs + 1, buffer_bytes + n

            req = comm.Irecv([into, MPI.BYTE], source=MPI.ANY_SOURCE, tag=4)
            comm.Send([out, MPI.BYTE], dest=right, tag=4)
            req.Wait(status)
            sends, recvs, buffer_bytes = sends + 1, recvs + 1, buffer_bytes + n
            errors += status.Get_source() != left

        req = comm.isend({"from": rank, "iteration": it, "payload": "x" * 100 * it}, dest=right, tag=2)
        got = comm.recv(source=MPI.ANY_SOURCE, tag=2)
        req.wait()
        sends, recvs = sends + 1, recvs + 1
        errors += got["from"] != left or got["iteration"] != it

    # A buffer Allreduce: mpi4py's pickled allreduce exchanges messages
    # of its own on a duplicate of the communicator.
    total = array("q", [0])
    comm.Allreduce([array("q", [sends]), MPI.INT64_T], [total, MPI.INT64_T], op=MPI.SUM)
    comm.Barrier()
    lines = comm.gather(f"mpi4py rank {rank}: sends={sends} recvs={recvs} buffer_bytes={buffer_bytes} errors={errors}")
    if rank == 0:
        print("\n".join(lines))
        print(f"mpi4py total sends {total[0]}")
    return option("--exit", 0)


if __name__ == "__main__":
    sys.exit(main())
