/* A conjugate-gradient-like loop on a 1-D decomposition: each iteration
 * computes on the rank's block (a busy loop of a known length, a little
 * longer on every fourth rank), exchanges halos with both neighbours of
 * the ring (MPI_Sendrecv twice) and joins two MPI_Allreduce (the dot
 * products); MPI_Barrier before and after. The pictures in docs/ are of
 * this program; the window tests count its calls.
 *
 *   cg [ITERATIONS [WORK_US]]   (defaults 50, 200)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Computes for `us` microseconds; returns something the compiler keeps. */
static double compute(double us, double x) {
  double end = now_us() + us;
  while (now_us() < end) {
    for (int i = 0; i < 100; i++) x = x * 0.999999 + 1e-6;
  }
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 50;
  double work = argc > 2 ? atof(argv[2]) : 200.0;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double halo_out[64] = {0}, halo_in[64], x = rank, dot = 0.0, sum;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int it = 0; it < iterations; it++) {
    x = compute(rank % 4 == 3 ? work * 1.5 : work, x);
    halo_out[0] = x;
    MPI_Sendrecv(halo_out, 64, MPI_DOUBLE, right, 1, halo_in, 64, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(halo_out, 64, MPI_DOUBLE, left, 2, halo_in, 64, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    dot = x * halo_in[0];
    MPI_Allreduce(&dot, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    x = compute(work / 4, x + sum * 1e-12);
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("cg: %d ranks, %d iterations, %.0f us work\n", size, iterations, work);
  MPI_Finalize();
  return 0;
}
