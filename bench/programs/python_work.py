"""Fixed-work Python program for bench/sampling_python.sh: ITERATIONS
rounds of pure-Python arithmetic at the bottom of a call stack DEPTH
Python frames deep (so that every sample has that many frames to read),
then one line: `work_wall_s W process_cpu_s C`, the work's wall time and
the process's CPU time so far, all its threads (the sampler's included).
`--mpi` adds an MPI_Barrier per round (mpi4py), for runs under mpirun.

Usage: python3 python_work.py [ITERATIONS] [DEPTH] [--mpi]
"""

import sys
import time

args = [a for a in sys.argv[1:] if not a.startswith("-")]
ITERATIONS = int(args[0]) if args else 5000
DEPTH = int(args[1]) if len(args) > 1 else 30


def leaf():
    n = 0
    for i in range(20000):
        n += i * i % 7
    return n


def down(depth):
    if depth == 0:
        return leaf()
    return down(depth - 1)


def main():
    comm = None
    if "--mpi" in sys.argv:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    start = time.perf_counter()
    total = 0
    for _ in range(ITERATIONS):
        total += down(DEPTH)
        if comm is not None:
            comm.Barrier()
    wall = time.perf_counter() - start
    print(f"work_wall_s {wall:.4f} process_cpu_s {time.process_time():.4f} total {total}", flush=True)


if __name__ == "__main__":
    main()
