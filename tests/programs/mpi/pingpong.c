/* 0-byte ping-pong between ranks 0 and 1 with MPI_Send/MPI_Recv: the
 * benchmark of the MPI hooks' overhead. Prints the time per call (one
 * MPI_Send or MPI_Recv), which is not deterministic, so this program is
 * not used to compare outputs.
 *
 * Usage: pingpong [-n ITER] */
#include <time.h>
#include "common.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 100000);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char b;
    int warm = iters / 10;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now();
        }
        if (rank == 0) {
            MPI_Send(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double t = now() - t0;
    if (rank == 0) {
        /* Two calls per rank per iteration, both ranks in lockstep: a
         * round trip is 4 calls in sequence. */
        printf("pingpong: %d iterations, %.1f ns per round trip, %.1f ns per call\n", iters,
               t / iters, t / iters / 4);
    }
    MPI_Finalize();
    return 0;
}
