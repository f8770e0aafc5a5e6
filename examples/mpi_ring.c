/* The bundled example: a token travels around a ring of ranks, each rank
 * exchanges halos with its neighbours (non-blocking), and every tenth step
 * all ranks agree on a checksum with MPI_Allreduce. Prints the checksum so
 * that traced and untraced runs can be compared.
 *
 *   mpicc -O2 -o mpi_ring mpi_ring.c
 *   gputrace mpirun -np 4 ./mpi_ring 1000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define HALO 256

static double work(double *cells, int n, int step) {
  double sum = 0.0;
  for (int i = 0; i < n; i++) {
    cells[i] = 0.5 * cells[i] + 0.25 * (i + step);
    sum += cells[i];
  }
  return sum;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 100;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;

  double cells[4096], send_l[HALO], send_r[HALO], recv_l[HALO], recv_r[HALO];
  for (int i = 0; i < 4096; i++) cells[i] = rank + i;
  double checksum = 0.0;
  long token = 0;

  for (int step = 0; step < steps; step++) {
    double local = work(cells, 4096, step);
    for (int i = 0; i < HALO; i++) {
      send_l[i] = cells[i];
      send_r[i] = cells[4096 - HALO + i];
    }
    MPI_Request req[4];
    MPI_Irecv(recv_l, HALO, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(recv_r, HALO, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(send_r, HALO, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(send_l, HALO, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    cells[0] += 1e-3 * recv_l[0];
    cells[4095] += 1e-3 * recv_r[HALO - 1];

    /* The token goes once around the ring. */
    if (rank == 0) {
      token++;
      MPI_Send(&token, 1, MPI_LONG, right, 3, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_LONG, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_LONG, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token++;
      MPI_Send(&token, 1, MPI_LONG, right, 3, MPI_COMM_WORLD);
    }
    if (step % 10 == 9) {
      double global;
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      checksum += global;
    }
  }
  MPI_Bcast(&checksum, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("ring: %d ranks, %d steps, token %ld, checksum %.6e\n", size, steps, token, checksum);
  MPI_Finalize();
  return 0;
}
