/* Blocking point-to-point: MPI_Send, MPI_Ssend, MPI_Bsend, MPI_Rsend-free
 * exchanges between every ordered pair of ranks with several tags and
 * sizes (eager and rendezvous), receives with MPI_ANY_SOURCE,
 * MPI_Sendrecv and MPI_Sendrecv_replace, and messages to MPI_PROC_NULL
 * (which are not messages). Prints, per rank, the number of sends and
 * receives and their bytes.
 *
 * Usage: p2p [-n ITER] */
#include "common.h"

enum { SENDS, RECVS, BYTES_SENT, BYTES_RECV, ANY_SOURCE_RECVS, BAD };
static const char *const NAMES[NCOUNTERS] = {"sends", "recvs", "bytes_sent", "bytes_recv",
                                             "any_source_recvs", "errors"};

static counters_t c;

static void sent(int bytes) { c.v[SENDS]++; c.v[BYTES_SENT] += bytes; }

static void received(MPI_Status *st, int expect_source, int expect_tag)
{
    int n;
    MPI_Get_count(st, MPI_BYTE, &n);
    c.v[RECVS]++;
    c.v[BYTES_RECV] += n;
    if (st->MPI_SOURCE != expect_source || st->MPI_TAG != expect_tag) {
        c.v[BAD]++;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 3);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const int sizes[] = {0, 8, 4096, 70000};
    char *buf = calloc(1, 70000);
    char *bsend = malloc(70000 + MPI_BSEND_OVERHEAD);
    MPI_Buffer_attach(bsend, 70000 + MPI_BSEND_OVERHEAD);
    MPI_Status st;

    for (int it = 0; it < iters; it++) {
        /* Every ordered pair in one global order: deadlock-free with
         * blocking calls whatever the message size. */
        for (int s = 0; s < size; s++) {
            for (int r = 0; r < size; r++) {
                if (s == r || (rank != s && rank != r)) {
                    continue;
                }
                for (int k = 0; k < 4; k++) {
                    int n = sizes[k], tag = 10 + k;
                    if (rank == s) {
                        if (k == 1) {
                            MPI_Ssend(buf, n, MPI_BYTE, r, tag, MPI_COMM_WORLD);
                        } else if (k == 2) {
                            MPI_Bsend(buf, n, MPI_BYTE, r, tag, MPI_COMM_WORLD);
                        } else {
                            MPI_Send(buf, n, MPI_BYTE, r, tag, MPI_COMM_WORLD);
                        }
                        sent(n);
                    } else if (k == 3) {
                        /* A specific tag: a sender ahead of us may already have sent
                         * its eager tag-10 message of a later step. */
                        MPI_Recv(buf, n, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
                        c.v[ANY_SOURCE_RECVS]++;
                        received(&st, s, tag);
                    } else {
                        MPI_Recv(buf, n, MPI_BYTE, s, tag, MPI_COMM_WORLD, &st);
                        received(&st, s, tag);
                    }
                }
                /* Ints, so that bytes = count x 4. */
                if (rank == s) {
                    MPI_Send(buf, 5, MPI_INT, r, 20, MPI_COMM_WORLD);
                    sent(20);
                } else {
                    MPI_Recv(buf, 5, MPI_INT, s, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    c.v[RECVS]++;
                    c.v[BYTES_RECV] += 20;
                }
            }
        }
        /* Pairwise exchanges. */
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                if (rank != a && rank != b) {
                    continue;
                }
                int peer = rank == a ? b : a;
                MPI_Sendrecv(buf, 128, MPI_BYTE, peer, 30, buf + 1000, 128, MPI_BYTE, peer, 30,
                             MPI_COMM_WORLD, &st);
                sent(128);
                received(&st, peer, 30);
                MPI_Sendrecv_replace(buf, 64, MPI_BYTE, peer, 31, peer, 31, MPI_COMM_WORLD, &st);
                sent(64);
                received(&st, peer, 31);
            }
        }
        /* Not messages. */
        MPI_Send(buf, 8, MPI_BYTE, MPI_PROC_NULL, 40, MPI_COMM_WORLD);
        MPI_Recv(buf, 8, MPI_BYTE, MPI_PROC_NULL, 40, MPI_COMM_WORLD, &st);
    }
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    print_summary("p2p", &c, NAMES);
    free(bsend);
    free(buf);
    MPI_Finalize();
    return 0;
}
