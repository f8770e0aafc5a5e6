"""Known hot functions for the sampling tests (crates/gputrace/tests/
integration/sampling_python.rs): pure-Python loops of known CPU time.

Each of STEPS steps: step_one calls hot_a for 40 ms of CPU time, then
MPI_Barrier (rank 1 sleeps 20 ms before it, using no CPU, so that the
other ranks wait in it, as Open MPI does, busy); step_two calls hot_a for 20 ms and hot_b for 30 ms. Over the
run hot_a spins 0.6 s (0.4 s under step_one, 0.2 s under step_two), hot_b
0.3 s: of the spins' samples, 4/9, 2/9 and 3/9. `python3 hot.py SCALE`
multiplies every time (the timer fallback samples 4 times less often);
`--no-mpi` leaves mpi4py out (Pythons without it).
"""

import sys
import time

SCALE = float(next((a for a in sys.argv[1:] if not a.startswith("-")), "1"))
STEPS = 10


def hot_a(seconds):
    end = time.thread_time() + seconds * SCALE
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


def hot_b(seconds):
    end = time.thread_time() + seconds * SCALE
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


def step_one(comm):
    hot_a(0.04)
    if comm is not None:
        if comm.Get_rank() == 1:
            time.sleep(0.02 * SCALE)
        comm.Barrier()


def step_two():
    hot_a(0.02)
    hot_b(0.03)


def main():
    comm = None
    if "--no-mpi" not in sys.argv:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    for _ in range(STEPS):
        step_one(comm)
        step_two()
    print("hot.py done", "rank", comm.Get_rank() if comm is not None else 0)


if __name__ == "__main__":
    main()
