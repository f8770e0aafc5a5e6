/* NVTX ranges around MPI calls in every rank: the NVTX stream's thread and
 * the MPI hooks' thread are one location, on which the MPI calls nest in
 * the ranges. Usage: mpirun -np 2 mpi_ranges ITERATIONS */
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 3;
    double x = rank, y = 0;
    for (int i = 0; i < iterations; i++) {
        nvtxRangePushA("exchange");
        int peer = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, peer, 7, &y, 1, MPI_DOUBLE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        nvtxRangePop();
        nvtxRangePushA("reduce");
        MPI_Allreduce(&y, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        nvtxRangePop();
    }
    MPI_Finalize();
    return 0;
}
