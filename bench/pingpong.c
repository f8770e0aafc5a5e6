/* Benchmark: a 0-byte MPI_Send/MPI_Recv ping-pong between ranks 0 and 1.
 * Prints the mean time of one call (half a send+receive pair per side)
 * in ns. Usage: mpirun -np 2 ./pingpong ITERATIONS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long n = argc > 1 ? atol(argv[1]) : 100000;
  char b = 0;
  for (int warm = 0; warm < 2; warm++) {
    long iters = warm == 0 ? n / 10 : n;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
      if (rank == 0) {
        MPI_Send(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    double t1 = MPI_Wtime();
    /* One iteration is 2 calls on each rank (a send and a receive). */
    if (warm == 1 && rank == 0) printf("ns_per_call %.1f\n", (t1 - t0) * 1e9 / (2.0 * iters));
  }
  MPI_Finalize();
  return 0;
}
