/* Known wait states for `gputrace analyze`: in each iteration one rank
 * (or, for imbalance, every rank) sleeps before an MPI call, so that the
 * others wait for it a known time. Each rank prints the time it actually
 * slept (clock_gettime around nanosleep) and the sum over the iterations
 * of the CLOCK_MONOTONIC time at which it called the measured MPI
 * function, as "delays rank R: injected_ns=N enter_ns=E late=0|1": on one
 * host the difference of two ranks' E is the time one entered after the
 * other, the delay as the ranks realized it (a waiting rank that a loaded
 * machine schedules late enters late, and waits that much less).
 *
 * Usage: delays MODE [-n ITER] [-d MS]   (defaults: 5 iterations, 20 ms)
 *
 *   late-sender    rank 0 sleeps, then MPI_Send to rank 1, which waits in
 *                  MPI_Recv (Late Sender on rank 1)
 *   late-receiver  rank 1 sleeps, then MPI_Recv; rank 0 waits in MPI_Ssend
 *                  (Late Receiver on rank 0)
 *   irecv          as late-sender, rank 1 posting MPI_Irecv and waiting in
 *                  MPI_Wait (Late Sender in MPI_Wait)
 *   barrier        the last rank sleeps before MPI_Barrier (Wait at
 *                  Barrier on the others)
 *   alltoall       the last rank sleeps before MPI_Alltoall (Wait at NxN
 *                  on the others)
 *   bcast          the root (0) sleeps before MPI_Bcast (Late Broadcast
 *                  on the others)
 *   reduce         every rank but the root (0) sleeps before MPI_Reduce
 *                  (Early Reduce on the root: it waits for the first
 *                  sender)
 *   imbalance      every rank sleeps ("computes") before MPI_Barrier,
 *                  rank 1 twice as long (load imbalance; Wait at Barrier
 *                  on the others)
 *   balanced       as imbalance, every rank sleeping the same (what
 *                  imbalance would be without rank 1's extra)
 *
 * Before the iterations the ranks line up with a collective of another
 * kind than the one measured, so that start-up skew is not counted. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Sleeps `ms` milliseconds; returns the time that actually passed. */
static long long delay(int ms)
{
    long long start = now_ns();
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
    return now_ns() - start;
}

static int option(int argc, char **argv, const char *name, int fallback)
{
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return atoi(argv[i + 1]);
        }
    }
    return fallback;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: delays MODE [-n ITER] [-d MS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    int iterations = option(argc, argv, "-n", 5);
    int ms = option(argc, argv, "-d", 20);
    int last = size - 1;
    long long injected = 0, enter = 0;
    int late = 0;
    double x = rank, y = 0;
    int *all = calloc((size_t)size, sizeof(int)), *back = calloc((size_t)size, sizeof(int));

    if (strcmp(mode, "barrier") == 0 || strcmp(mode, "imbalance") == 0 || strcmp(mode, "balanced") == 0) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int i = 0; i < iterations; i++) {
        if (strcmp(mode, "late-sender") == 0) {
            if (rank == 0) {
                late = 1;
                injected += delay(ms);
                enter += now_ns();
                MPI_Send(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
            } else if (rank == 1) {
                enter += now_ns();
                MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (strcmp(mode, "irecv") == 0) {
            if (rank == 0) {
                late = 1;
                injected += delay(ms);
                enter += now_ns();
                MPI_Send(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
            } else if (rank == 1) {
                MPI_Request r;
                MPI_Irecv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &r);
                enter += now_ns();
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
        } else if (strcmp(mode, "late-receiver") == 0) {
            if (rank == 1) {
                late = 1;
                injected += delay(ms);
                enter += now_ns();
                MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 0) {
                enter += now_ns();
                MPI_Ssend(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
            }
        } else if (strcmp(mode, "barrier") == 0) {
            if (rank == last) {
                late = 1;
                injected += delay(ms);
            }
            enter += now_ns();
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (strcmp(mode, "alltoall") == 0) {
            if (rank == last) {
                late = 1;
                injected += delay(ms);
            }
            enter += now_ns();
            MPI_Alltoall(all, 1, MPI_INT, back, 1, MPI_INT, MPI_COMM_WORLD);
        } else if (strcmp(mode, "bcast") == 0) {
            if (rank == 0) {
                late = 1;
                injected += delay(ms);
            }
            enter += now_ns();
            MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        } else if (strcmp(mode, "reduce") == 0) {
            if (rank != 0) {
                late = 1;
                injected += delay(ms);
            }
            enter += now_ns();
            MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        } else if (strcmp(mode, "imbalance") == 0 || strcmp(mode, "balanced") == 0) {
            int extra = strcmp(mode, "imbalance") == 0 && rank == 1;
            late = extra;
            injected += delay(extra ? 2 * ms : ms);
            enter += now_ns();
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            if (rank == 0) fprintf(stderr, "delays: unknown mode %s\n", mode);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    printf("delays rank %d: injected_ns=%lld enter_ns=%lld late=%d\n", rank, injected, enter, late);
    fflush(stdout);
    free(all);
    free(back);
    MPI_Finalize();
    return 0;
}
