/* A job that hangs on purpose, for `gputrace --hang-timeout` and the
 * in-flight analysis: every rank makes N all-reduces on MPI_COMM_WORLD
 * (-n, default 5; with -s SECONDS, as many as fit in that time, rank 0
 * deciding when to stop through the all-reduce itself; -u MICROS: a nap
 * before each, for long runs that leave the machine's cores free), then
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
#include <time.h>
#include <unistd.h>

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "allreduce";
    int n = 5;
    double seconds = 0;
    int nap = 0;
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-n") == 0) {
            n = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "-s") == 0) {
            seconds = atof(argv[i + 1]);
        } else if (strcmp(argv[i], "-u") == 0) {
            nap = atoi(argv[i + 1]);
        }
    }
    double x = rank, y;
    if (seconds > 0) {
        /* Rank 0 says when the time is up; the maximum tells everyone. */
        double start = seconds_now();
        for (n = 0, y = 0; y == 0; n++) {
            if (nap > 0) {
                usleep(nap);
            }
            x = rank == 0 && seconds_now() - start >= seconds;
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
    } else {
        for (int i = 0; i < n; i++) {
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
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
