/* A rank that is killed with SIGKILL after some messages: what it wrote
 * before must be salvageable. Rank 1 receives the messages, flushes its
 * stdout, waits over a second (so that the tracer writes out events that
 * old at its next event), receives one more message, and kills itself.
 *
 * Usage: killself [-n ITER] */
#include <signal.h>
#include <unistd.h>
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 5);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int x = 0;
    for (int i = 0; i < iters + 1; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        } else if (rank == 1) {
            if (i == iters) {
                usleep(1300 * 1000);
            }
            MPI_Recv(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 1) {
        printf("killself: rank 1 received %d messages and kills itself\n", iters + 1);
        fflush(stdout);
        kill(getpid(), SIGKILL);
    }
    sleep(30);
    MPI_Finalize();
    return 0;
}
