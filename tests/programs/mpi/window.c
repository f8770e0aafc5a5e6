/* Iterations at known times, for the tests of the recording window
 * (GPUTRACE_DELAY, GPUTRACE_DURATION, --capture-range pcontrol).
 *
 * Usage: window ITERATIONS PERIOD_MS FIRST_MS [OFF ON]
 *
 * Iteration i (from 0) waits until FIRST_MS + i * PERIOD_MS after the job
 * started (GPUTRACE_WINDOW_ORIGIN, gputrace's launch time; the program's
 * own start without it), then makes an MPI_Sendrecv around the ring, an
 * MPI_Isend/MPI_Irecv pair to the neighbours with an MPI_Waitall, and an
 * MPI_Allreduce. With OFF and ON, MPI_Pcontrol(0) comes before iteration
 * OFF and MPI_Pcontrol(1) before iteration ON. Every rank prints, after
 * the run, the milliseconds after the job's start at which each of its
 * iterations began:
 *   window rank R: 3001.2 3251.0 ...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_until(double t_ns)
{
    double left = t_ns - now_ns();
    if (left <= 0) {
        return;
    }
    struct timespec ts = { (time_t)(left / 1e9), (long)((long long)left % 1000000000LL) };
    nanosleep(&ts, NULL);
    while (now_ns() < t_ns) {
    }
}

int main(int argc, char **argv)
{
    double start = now_ns();
    const char *origin_text = getenv("GPUTRACE_WINDOW_ORIGIN");
    double origin = origin_text ? strtod(origin_text, NULL) : start;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) {
            fprintf(stderr, "usage: window ITERATIONS PERIOD_MS FIRST_MS [OFF ON]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iterations = atoi(argv[1]);
    double period = atof(argv[2]) * 1e6, first = atof(argv[3]) * 1e6;
    int off = argc > 5 ? atoi(argv[4]) : -1, on = argc > 5 ? atoi(argv[5]) : -1;
    double *began = calloc((size_t)iterations, sizeof(double));
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    double x = rank, y = 0, a = 0, b = 0;
    for (int i = 0; i < iterations; i++) {
        if (i == off) {
            MPI_Pcontrol(0);
        }
        if (i == on) {
            MPI_Pcontrol(1);
        }
        sleep_until(origin + first + i * period);
        began[i] = (now_ns() - origin) / 1e6;
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, peer, 7, &y, 1, MPI_DOUBLE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Request r[2];
        MPI_Irecv(&b, 1, MPI_DOUBLE, from, 8, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&a, 1, MPI_DOUBLE, peer, 8, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Allreduce(&y, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int r = 0; r < size; r++) {
        if (r == rank) {
            printf("window rank %d:", rank);
            for (int i = 0; i < iterations; i++) {
                printf(" %.1f", began[i]);
            }
            printf("\n");
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(began);
    MPI_Finalize();
    return 0;
}
