/* Sampling (tests/integration/sampling.rs): known hot functions, built
 * -O2 -fomit-frame-pointer -g. hot_a spins 0.6 s of CPU time, hot_b 0.3 s,
 * each calling MPI from its own frame; main spins 0.1 s itself. An
 * argument scales the three (2: twice as long). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile double sink;

__attribute__((noinline)) static void spin(double seconds) {
    double end = cpu_now() + seconds, x = 1.0;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++) x = x * 1.000001 + 1e-9;
    sink = x;
}

__attribute__((noinline)) void hot_a(int rounds, double scale) {
    for (int r = 0; r < rounds; r++) {
        spin(0.6 * scale / rounds);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

__attribute__((noinline)) void hot_b(int rounds, double scale) {
    for (int r = 0; r < rounds; r++) {
        spin(0.3 * scale / rounds);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    hot_a(20, scale);
    hot_b(20, scale);
    double end = cpu_now() + 0.1 * scale, x = 1.0;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++) x = x * 1.000001 + 1e-9;
    sink = x;
    MPI_Finalize();
    return 0;
}
