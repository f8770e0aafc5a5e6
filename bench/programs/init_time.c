/* How long MPI_Init and MPI_Finalize take (CLOCK_MONOTONIC around each):
 * rank 0 prints the slowest rank's MPI_Init and its own MPI_Finalize, in
 * ms, for bench/run.sh to compare traced and untraced runs.
 *
 *   init_time
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  double t0 = now_ms();
  MPI_Init(&argc, &argv);
  double init = now_ms() - t0, slowest;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Reduce(&init, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = now_ms();
  MPI_Finalize();
  double fin = now_ms() - t1;
  if (rank == 0) printf("init_time: %d ranks, MPI_Init %.1f ms (slowest rank), MPI_Finalize %.1f ms (rank 0)\n", size, slowest, fin);
  return 0;
}
