/* Collectives: every blocking collective once per iteration with a known
 * root and size, on MPI_COMM_WORLD and on a communicator split by rank
 * parity (roots rotate with the iteration), one MPI_IN_PLACE allreduce,
 * and the non-blocking MPI_Ibarrier, MPI_Ibcast, MPI_Iallreduce and
 * MPI_Igather completed with MPI_Wait/MPI_Waitall. Prints the checksums of
 * the results and, per rank, how many collectives it called.
 *
 * Usage: collectives [-n ITER]
 *
 * The test of the MPI hooks recomputes the bytes of each call from this
 * sequence: keep the two in step. */
#include "common.h"

enum { BLOCKING, NONBLOCKING, CHECKSUM };
static const char *const NAMES[NCOUNTERS] = {"blocking", "nonblocking", "checksum"};

#define N 64

static void run(MPI_Comm comm, int root_base, counters_t *c)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int root = root_base % size;
    int a[N * 16], b[N * 16], counts[16], displs[16], mine[16];
    for (int i = 0; i < N * 16; i++) a[i] = rank + i;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = i * N;
        mine[i] = rank + 1;
    }
    MPI_Barrier(comm);
    MPI_Bcast(a, N, MPI_INT, root, comm);                                         /* 256 B */
    MPI_Reduce(a, b, N, MPI_INT, MPI_SUM, root, comm);
    MPI_Allreduce(a, b, N, MPI_INT, MPI_SUM, comm);
    MPI_Gather(a, 8, MPI_INT, b, 8, MPI_INT, root, comm);
    MPI_Gatherv(a, rank + 1, MPI_INT, b, counts, displs, MPI_INT, root, comm);
    MPI_Scatter(b, 4, MPI_INT, a, 4, MPI_INT, root, comm);
    MPI_Scatterv(b, counts, displs, MPI_INT, a, rank + 1, MPI_INT, root, comm);
    MPI_Allgather(a, 2, MPI_INT, b, 2, MPI_INT, comm);
    MPI_Allgatherv(a, rank + 1, MPI_INT, b, counts, displs, MPI_INT, comm);
    MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, comm);
    MPI_Alltoallv(a, mine, displs, MPI_INT, b, counts, displs, MPI_INT, comm);
    MPI_Reduce_scatter_block(b, a, 2, MPI_INT, MPI_SUM, comm);
    MPI_Reduce_scatter(b, a, counts, MPI_INT, MPI_SUM, comm);
    MPI_Scan(a, b, 3, MPI_INT, MPI_SUM, comm);
    MPI_Exscan(a, b, 3, MPI_INT, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, a, 5, MPI_INT, MPI_MAX, comm);
    c->v[BLOCKING] += 17;
    for (int i = 0; i < 5; i++) c->v[CHECKSUM] += a[i];

    MPI_Request r[3];
    MPI_Ibarrier(comm, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Ibcast(a, 10, MPI_INT, root, comm, &r[0]);
    MPI_Iallreduce(a, b, 7, MPI_INT, MPI_SUM, comm, &r[1]);
    MPI_Igather(a, 3, MPI_INT, b, 3, MPI_INT, root, comm, &r[2]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    c->v[NONBLOCKING] += 4;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 2);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    counters_t c = {{0}};
    for (int it = 0; it < iters; it++) {
        run(MPI_COMM_WORLD, it + 1, &c);
        run(half, it, &c);
    }
    MPI_Comm_free(&half);
    print_summary("collectives", &c, NAMES);
    MPI_Finalize();
    return 0;
}
