/* Many ranks without a serial chain: each step every rank exchanges a
 * message with both neighbours of the ring (MPI_Irecv, MPI_Isend,
 * MPI_Waitall); every fifth step all join an MPI_Allreduce. Oversubscribed
 * runs of hundreds of ranks on a few cores stay quick: no step waits for
 * a message to travel around the whole ring.
 *
 *   neighbours [STEPS]   (default 10)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 10;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double out[2] = {rank, rank}, in[2] = {0, 0}, sum = 0.0;
  long sends = 0, recvs = 0;
  for (int step = 0; step < steps; step++) {
    MPI_Request req[4];
    MPI_Irecv(&in[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&in[1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&out[0], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&out[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    sends += 2;
    recvs += 2;
    out[0] = out[1] = in[0] + in[1];
    if (step % 5 == 4) {
      double global;
      MPI_Allreduce(&out[0], &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      sum += global;
    }
  }
  printf("neighbours rank %d: sends=%ld recvs=%ld errors=0\n", rank, sends, recvs);
  if (rank == 0) printf("neighbours: %d ranks, %d steps, sum %.6e\n", size, steps, sum);
  MPI_Finalize();
  return 0;
}
