/* A paced MPI_Send/MPI_Recv ping-pong between ranks 0 and 1 that is
 * stopped before it finishes: by a signal from outside, or by rank 1
 * itself. Every rank publishes how many sends and receives it completed
 * in a counter file that survives any end of the process, SIGKILL
 * included: a MAP_SHARED mapping of DIR/rank.R (its pages are the
 * kernel's), updated right after each MPI call returns. The test compares
 * these counts with the archive: every completed call must be there.
 *
 * The counter file holds four native 64-bit integers: a magic number
 * (written once MPI_Init returned), sends completed, receives completed,
 * and the rank's pid (so that the test can wait for the rank's end).
 *
 * Usage: stopped -d DIR [-m MODE] [-t SECONDS] [-r ROUND_TRIPS_PER_S]
 *   MODE run    ping-pong until stopped from outside (at most 120 s at
 *               full pace, then finish normally)
 *        crash  rank 1 writes through a null pointer (SIGSEGV) right
 *               after its first send completed SECONDS into the ping-pong
 *        fatal  the same moment, rank 1 sends to rank 99 with
 *               MPI_ERRORS_ARE_FATAL
 *        kill   the same moment, rank 1 sends itself SIGKILL
 *   The pace (default 5000 round trips per second) keeps archives small
 *   enough for the Python reader. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

#define MAGIC 0x53544f50504544LL /* "STOPPED" */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *arg(int argc, char **argv, const char *flag, const char *fallback)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], flag) == 0) {
            return argv[i + 1];
        }
    }
    return fallback;
}

/* The counters of this rank: [magic, sends, receives, pid]. */
static volatile int64_t *counters(const char *dir, int rank)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    close(fd);
    return p;
}

static void publish(volatile int64_t *slot, int64_t value)
{
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = arg(argc, argv, "-d", NULL);
    const char *mode = arg(argc, argv, "-m", "run");
    double when = atof(arg(argc, argv, "-t", "1.5"));
    double pace = atof(arg(argc, argv, "-r", "5000"));
    if (!dir) {
        fprintf(stderr, "usage: stopped -d DIR [-m run|crash|fatal|kill] [-t S] [-r N]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    volatile int64_t *c = counters(dir, rank);
    publish(&c[3], getpid());
    publish(&c[0], MAGIC);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    int64_t sends = 0, recvs = 0;
    int x = 0;
    double t0 = now();
    /* Run mode's end: the same number of round trips on both ranks. */
    long limit = (long)(120 * pace);
    for (long i = 0; rank <= 1 && i < limit; i++) {
        double t = now() - t0;
        if (rank == 0) {
            double due = i / pace;
            if (due > t) {
                struct timespec d = {0, (long)((due - t) * 1e9)};
                nanosleep(&d, NULL);
            }
            MPI_Send(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
            publish(&c[1], ++sends);
            MPI_Recv(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            publish(&c[2], ++recvs);
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            publish(&c[2], ++recvs);
            x++;
            MPI_Send(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
            publish(&c[1], ++sends);
            if (strcmp(mode, "run") != 0 && t >= when) {
                if (strcmp(mode, "crash") == 0) {
                    volatile int *nowhere = NULL;
                    *nowhere = x;
                } else if (strcmp(mode, "fatal") == 0) {
                    MPI_Send(&x, 1, MPI_INT, 99, 7, MPI_COMM_WORLD);
                } else if (strcmp(mode, "kill") == 0) {
                    kill(getpid(), SIGKILL);
                }
                fprintf(stderr, "stopped: rank 1 outlived its %s\n", mode);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
