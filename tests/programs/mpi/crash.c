/* A rank that crashes (a null pointer write, SIGSEGV) right after its
 * last messages, with no time for the tracer's periodic flush: what it
 * recorded must still reach the trace, and the summary must name the
 * signal.
 *
 * Usage: crash [-n ITER] */
#include <unistd.h>
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 5);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int x = 0;
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 1) {
        printf("crash: rank 1 received %d messages and writes through a null pointer\n", iters);
        fflush(stdout);
        volatile int *nowhere = NULL;
        *nowhere = x;
    }
    sleep(30);
    MPI_Finalize();
    return 0;
}
