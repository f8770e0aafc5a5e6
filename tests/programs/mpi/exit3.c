/* A rank that exits with status 3 without MPI_Finalize, after exchanging
 * some messages: its trace must still be complete (the exit handler), and
 * the job's exit status the same as without tracing.
 *
 * Usage: exit3 [-n ITER] */
#include <unistd.h>
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 5);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int x = 0;
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("exit3: %d messages from rank 0 to rank 1; rank 1 exits with 3\n", iters);
        fflush(stdout);
    }
    if (rank == 1) {
        exit(3);
    }
    /* The others wait to be ended by the launcher. */
    sleep(30);
    MPI_Finalize();
    return 0;
}
