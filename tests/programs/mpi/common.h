/* Shared by the MPI test programs of gputrace: argument parsing and a
 * deterministic summary (every rank's counters, printed by rank 0 in rank
 * order, so that stdout does not depend on how mpirun interleaves ranks). */
#ifndef GPUTRACE_TEST_COMMON_H
#define GPUTRACE_TEST_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -n ITER, default `fallback`. */
static inline int parse_iterations(int argc, char **argv, int fallback)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-n") == 0) {
            return atoi(argv[i + 1]);
        }
    }
    return fallback;
}

/* Counters of one rank, summed over peers by the program as it goes. */
#define NCOUNTERS 8
typedef struct {
    long long v[NCOUNTERS];
} counters_t;

/* Prints "rank R: name0=v0 name1=v1 ..." for every rank, from rank 0. */
static inline void print_summary(const char *program, const counters_t *mine,
                          const char *const names[NCOUNTERS])
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    counters_t *all = rank == 0 ? malloc(sizeof(counters_t) * size) : NULL;
    MPI_Gather(mine->v, NCOUNTERS, MPI_LONG_LONG, all ? all[0].v : NULL, NCOUNTERS,
               MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            printf("%s rank %d:", program, r);
            for (int k = 0; k < NCOUNTERS; k++) {
                if (names[k]) {
                    printf(" %s=%lld", names[k], all[r].v[k]);
                }
            }
            printf("\n");
        }
        fflush(stdout);
        free(all);
    }
}

#endif
