/* MPI_Abort after some messages: rank 1 aborts the job with error code 5
 * once both ranks passed a barrier; its trace must be complete (the
 * stream is finished before PMPI_Abort).
 *
 * Usage: abort [-n ITER] */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 3);
    int rank, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        printf("abort: rank 1 received %d messages and aborts with 5\n", iters);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
