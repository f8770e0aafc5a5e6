/* A job that hangs on purpose, for `gputrace --hang-timeout` and the
 * in-flight analysis: every rank makes N all-reduces on MPI_COMM_WORLD
 * (-n, default 5), then
 *
 *   allreduce  every rank but the last enters the next all-reduce; the
 *              last never does (it sleeps until it is stopped)
 *   recv       rank 1 waits in MPI_Recv for a message rank 0 never
 *              sends; rank 0 and the others wait in MPI_Barrier
 *
 * Each rank prints "hang rank R: collectives=N" before it hangs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "allreduce";
    int n = 5;
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-n") == 0) {
            n = atoi(argv[i + 1]);
        }
    }
    double x = rank, y;
    for (int i = 0; i < n; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("hang rank %d: collectives=%d\n", rank, n);
    fflush(stdout);
    if (strcmp(mode, "recv") == 0) {
        if (rank == 1) {
            MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank != 0) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (rank == size - 1) {
        for (;;) {
            sleep(1);
        }
    } else {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
