/* A slower link for `gputrace analyze`'s stragglers: each iteration every
 * rank computes (sleeps) MS, sends DOUBLES doubles to the next rank of a
 * ring (MPI_Isend, waited for after the all-reduce), receives as many
 * from the previous one (MPI_Recv), then all call MPI_Allreduce. Rank
 * SLOW receives into a strided datatype (every STRIDE-th double), which
 * the MPI library unpacks element by element: the same bytes take longer
 * to arrive there, so rank SLOW enters every all-reduce last although it
 * computes as long as the others. Each rank prints the time it spent in
 * MPI_Recv, summed: "links rank R: recv_ns=N".
 *
 * Usage: mpirun -np N links [ITERATIONS [MS [DOUBLES [STRIDE [SLOW]]]]]
 * (defaults: 6, 10, 1048576, 16, 2) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 6;
    long ms = argc > 2 ? atol(argv[2]) : 10;
    int n = argc > 3 ? atoi(argv[3]) : 1048576;
    int stride = argc > 4 ? atoi(argv[4]) : 16;
    int slow = argc > 5 ? atoi(argv[5]) : 2;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double *out = calloc((size_t)n, sizeof(double));
    double *in = calloc((size_t)n * (rank == slow ? stride : 1), sizeof(double));
    MPI_Datatype strided;
    MPI_Type_vector(n, 1, stride, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    long long in_recv = 0;
    double x = rank, y = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iterations; i++) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        MPI_Request req;
        MPI_Isend(out, n, MPI_DOUBLE, next, 0, MPI_COMM_WORLD, &req);
        long long t0 = now_ns();
        if (rank == slow)
            MPI_Recv(in, 1, strided, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Recv(in, n, MPI_DOUBLE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        in_recv += now_ns() - t0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    printf("links rank %d: recv_ns=%lld\n", rank, in_recv);
    MPI_Type_free(&strided);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
