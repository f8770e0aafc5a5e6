/* MPI_THREAD_MULTIPLE: 4 threads per rank, thread t exchanging messages
 * around the ring of ranks on tag t (MPI_Sendrecv: a send to the right
 * and a receive from the left). Prints, per rank, the messages of every
 * thread together.
 *
 * Usage: threads [-n ITER] */
#include <pthread.h>
#include "common.h"

#define THREADS 4

static int iters, rank, size;
static long long sent[THREADS], recvd[THREADS];

static void *work(void *arg)
{
    int t = (int)(long)arg;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char out[64 * (THREADS + 1)], in[64 * (THREADS + 1)];
    for (int i = 0; i < iters; i++) {
        MPI_Sendrecv(out, 64 * (t + 1), MPI_BYTE, right, t, in, sizeof in, MPI_BYTE, left, t,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sent[t]++;
        recvd[t]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("threads: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    iters = parse_iterations(argc, argv, 20);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    counters_t c = {{0}};
    static const char *const names[NCOUNTERS] = {"sends", "recvs", "threads"};
    for (int t = 0; t < THREADS; t++) {
        c.v[0] += sent[t];
        c.v[1] += recvd[t];
    }
    c.v[2] = THREADS;
    print_summary("threads", &c, names);
    MPI_Finalize();
    return 0;
}
