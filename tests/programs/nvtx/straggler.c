/* A straggler with a known cause for `gputrace analyze`: in each
 * iteration every rank "computes" (sleeps) inside the NVTX range
 * "compute", the last rank twice as long, then all call MPI_Allreduce.
 * The last rank therefore enters every all-reduce last, about MS later
 * than the others, and spends that much longer in "compute". Each rank
 * prints "straggler rank R: compute_ns=C" (the time it actually slept,
 * summed) so that the test compares with what happened.
 *
 * Usage: mpirun -np N straggler [ITERATIONS [MS]]   (defaults: 6, 20) */
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 6;
    long ms = argc > 2 ? atol(argv[2]) : 20;
    long long slept = 0;
    double x = rank, y = 0;
    /* Line up first, with another kind of collective. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iterations; i++) {
        long long d = (rank == size - 1 ? 2 : 1) * ms * 1000000LL;
        nvtxRangePushA("compute");
        long long t0 = now_ns();
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        nanosleep(&ts, NULL);
        slept += now_ns() - t0;
        nvtxRangePop();
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("straggler rank %d: compute_ns=%lld\n", rank, slept);
    MPI_Finalize();
    return 0;
}
