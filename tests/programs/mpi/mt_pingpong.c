/* A multi-threaded ping-pong between ranks 0 and 1 (MPI_THREAD_MULTIPLE),
 * as a multi-threaded latency test runs it: two threads per rank, in two
 * phases. First each thread t pings and pongs on its own tag t; then both
 * threads use tag 2, so that which thread of rank 1 receives which ping
 * (and which thread of rank 0 which pong) is decided by MPI's matching,
 * not by the program. Small messages, many of them: the threads' calls
 * interleave. Prints every rank's sends and receives.
 *
 * Usage: mt_pingpong [-n ITER] */
#include <pthread.h>
#include "common.h"

#define THREADS 2

static int iters, rank;
static long long sent[THREADS], recvd[THREADS];

static void pingpong(int t, int tag)
{
    char b[8] = {0};
    int peer = 1 - rank;
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(b, sizeof b, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            MPI_Recv(b, sizeof b, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, sizeof b, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, sizeof b, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        }
        sent[t]++;
        recvd[t]++;
    }
}

static void *own_tag(void *arg)
{
    int t = (int)(long)arg;
    pingpong(t, t);
    return NULL;
}

static void *shared_tag(void *arg)
{
    pingpong((int)(long)arg, THREADS);
    return NULL;
}

static void run(void *(*work)(void *))
{
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("mt_pingpong: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    iters = parse_iterations(argc, argv, 1000);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank < 2) {
        run(own_tag);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2) {
        run(shared_tag);
    }
    counters_t c = {{0}};
    static const char *const names[NCOUNTERS] = {"sends", "recvs"};
    for (int t = 0; t < THREADS; t++) {
        c.v[0] += sent[t];
        c.v[1] += recvd[t];
    }
    print_summary("mt_pingpong", &c, names);
    MPI_Finalize();
    return 0;
}
