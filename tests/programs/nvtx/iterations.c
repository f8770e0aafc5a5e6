/* Iterations marked with the NVTX range "iteration" for `gputrace analyze
 * --iterations iteration`: in each, every rank "computes" (sleeps) MS
 * inside the NVTX range "compute", then all call MPI_Allreduce. In
 * iteration SLOW (counted from 1) rank SLOW_RANK computes twice as long:
 * that iteration's critical path, straggler and what-if must say so, and
 * the others' must not. Each rank prints what it slept in the slow
 * iteration: "iterations rank R: slow_ns=S".
 *
 * Usage: mpirun -np N iterations [ITERATIONS [MS [SLOW [SLOW_RANK]]]]
 * (defaults: 6, 20, 4, 1) */
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
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iterations = argc > 1 ? atoi(argv[1]) : 6;
    long ms = argc > 2 ? atol(argv[2]) : 20;
    int slow = argc > 3 ? atoi(argv[3]) : 4;
    int slow_rank = argc > 4 ? atoi(argv[4]) : 1;
    long long slow_ns = 0;
    double x = rank, y = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 1; i <= iterations; i++) {
        nvtxRangePushA("iteration");
        long long d = (i == slow && rank == slow_rank ? 2 : 1) * ms * 1000000LL;
        nvtxRangePushA("compute");
        long long t0 = now_ns();
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        nanosleep(&ts, NULL);
        if (i == slow) slow_ns = now_ns() - t0;
        nvtxRangePop();
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        nvtxRangePop();
    }
    printf("iterations rank %d: slow_ns=%lld\n", rank, slow_ns);
    MPI_Finalize();
    return 0;
}
