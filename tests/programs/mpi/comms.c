/* Communicators: MPI_Comm_idup, an intercommunicator between the even and
 * the odd ranks (MPI_Intercomm_create) with messages and a broadcast
 * across it, MPI_Intercomm_merge, a Cartesian ring (MPI_Cart_create,
 * MPI_Cart_shift, MPI_Cart_sub) and MPI_Comm_create_group. Every message
 * names its peer in the communicator it was sent on, so the trace must
 * translate each to the right process. Needs an even number of ranks.
 *
 * Usage: comms [-n ITER] */
#include "common.h"

enum { SENDS, RECVS, BYTES_SENT, BYTES_RECV, BAD };
static const char *const NAMES[NCOUNTERS] = {"sends", "recvs", "bytes_sent", "bytes_recv", "errors"};
static counters_t c;

static void exchange(MPI_Comm comm, int dest, int source, int tag, int bytes)
{
    char out[512] = {0}, in[512];
    MPI_Status st;
    MPI_Sendrecv(out, bytes, MPI_BYTE, dest, tag, in, sizeof in, MPI_BYTE, source, tag, comm, &st);
    int n;
    MPI_Get_count(&st, MPI_BYTE, &n);
    c.v[SENDS]++;
    c.v[RECVS]++;
    c.v[BYTES_SENT] += bytes;
    c.v[BYTES_RECV] += n;
    if (st.MPI_SOURCE != source) c.v[BAD]++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 2);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Non-blocking duplicate, then a ring on it. */
    MPI_Comm dup;
    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_set_name(dup, "ring");
    for (int i = 0; i < iters; i++) {
        exchange(dup, (rank + 1) % size, (rank + size - 1) % size, 1, 16);
    }

    /* Even and odd ranks, joined by an intercommunicator. */
    MPI_Comm half, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_set_name(half, rank % 2 == 0 ? "even ranks" : "odd ranks");
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
    for (int i = 0; i < iters; i++) {
        /* Partner: the same local rank in the other group. */
        exchange(inter, hrank, hrank, 2, 32 + rank % 2);
    }
    int value = rank;
    if (rank % 2 == 0) {
        MPI_Bcast(&value, 1, MPI_INT, hrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Bcast(&value, 1, MPI_INT, 0, inter);
    }
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    exchange(merged, (mrank + 1) % msize, (mrank + msize - 1) % msize, 3, 8);

    /* A periodic ring topology and a sub-communicator of it. */
    MPI_Comm cart, sub;
    int dims[1] = {size}, periods[1] = {1}, left, right;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Cart_shift(cart, 0, 1, &left, &right);
    exchange(cart, right, left, 4, 24);
    int remain[1] = {1};
    MPI_Cart_sub(cart, remain, &sub);
    MPI_Barrier(sub);

    /* A communicator of the even ranks only, made by them alone. */
    if (rank % 2 == 0) {
        MPI_Group world_group, even_group;
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        int ranges[1][3] = {{0, size - 1, 2}};
        MPI_Group_range_incl(world_group, 1, ranges, &even_group);
        MPI_Comm even;
        MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 5, &even);
        int erank, esize;
        MPI_Comm_rank(even, &erank);
        MPI_Comm_size(even, &esize);
        exchange(even, (erank + 1) % esize, (erank + esize - 1) % esize, 6, 40);
        MPI_Comm_free(&even);
        MPI_Group_free(&even_group);
        MPI_Group_free(&world_group);
    }

    MPI_Comm_free(&sub);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    c.v[BAD] += rank % 2 == 1 && value != 0;
    print_summary("comms", &c, NAMES);
    MPI_Finalize();
    return 0;
}
