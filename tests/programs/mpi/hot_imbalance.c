/* Where an imbalance's computation went, for `gputrace analyze` on an
 * archive recorded with --sampling: in each of ROUNDS rounds every rank
 * spins 0.1 s of CPU time in common_work, rank 1 also 0.1 s in
 * extra_work, then all wait in MPI_Barrier. Rank 1 computes twice what
 * rank 0 does, half of it in extra_work. Built -O2 -fomit-frame-pointer
 * -g by the test.
 *
 * Usage: mpirun -np 2 hot_imbalance [ROUNDS]   (default 5) */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile double sink;

__attribute__((noinline)) static void busy(double seconds) {
    double end = cpu_now() + seconds, x = 1.0;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++) x = x * 1.000001 + 1e-9;
    sink = x;
}

__attribute__((noinline)) void common_work(void) { busy(0.1); sink += 1; }

__attribute__((noinline)) void extra_work(void) { busy(0.1); sink += 2; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    for (int r = 0; r < rounds; r++) {
        common_work();
        if (rank == 1) extra_work();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
