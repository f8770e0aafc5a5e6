/* Non-blocking point-to-point: every rank exchanges one message with every
 * other rank per phase, completing the requests with MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome, MPI_Testall and MPI_Test loops; receives are
 * posted for a specific source, except in the MPI_Waitany phase, which
 * uses MPI_ANY_SOURCE (each peer sends exactly one message with that tag,
 * so the counts stay deterministic). Then persistent requests around a
 * ring (MPI_Send_init/MPI_Recv_init, MPI_Startall, MPI_Waitall), freed
 * with MPI_Request_free. Prints, per rank, the messages and bytes.
 *
 * Usage: nonblocking [-n ITER] */
#include "common.h"

enum { ISENDS, IRECVS, BYTES_SENT, BYTES_RECV, PERSISTENT_SENDS, PERSISTENT_RECVS, BAD };
static const char *const NAMES[NCOUNTERS] = {"isends", "irecvs", "bytes_sent", "bytes_recv",
                                             "persistent_sends", "persistent_recvs", "errors"};

#define MAXP 64
#define MSG 256

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = parse_iterations(argc, argv, 3);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    counters_t c = {{0}};
    static char sbuf[MAXP][MSG], rbuf[MAXP][MSG];
    MPI_Request req[2 * MAXP];
    MPI_Status st[2 * MAXP];

    for (int it = 0; it < iters; it++) {
        for (int phase = 0; phase < 5; phase++) {
            int tag = 100 + phase, n = 0;
            int bytes = 16 * (phase + 1);
            /* Receives first, then sends. */
            for (int p = 0; p < size; p++) {
                if (p == rank) continue;
                int source = phase == 1 ? MPI_ANY_SOURCE : p;
                MPI_Irecv(rbuf[p], bytes, MPI_BYTE, source, tag, MPI_COMM_WORLD, &req[n++]);
            }
            int nrecv = n;
            for (int p = 0; p < size; p++) {
                if (p == rank) continue;
                MPI_Isend(sbuf[p], bytes, MPI_BYTE, p, tag, MPI_COMM_WORLD, &req[n++]);
                c.v[ISENDS]++;
                c.v[BYTES_SENT] += bytes;
            }
            int done = 0, idx, flag, out, indices[2 * MAXP];
            switch (phase) {
            case 0:
                MPI_Waitall(n, req, st);
                done = n;
                break;
            case 1:
                while (done < n) {
                    MPI_Waitany(n, req, &idx, &st[0]);
                    if (idx < nrecv && st[0].MPI_TAG != tag) c.v[BAD]++;
                    done++;
                }
                break;
            case 2:
                while (done < n) {
                    MPI_Waitsome(n, req, &out, indices, MPI_STATUSES_IGNORE);
                    done += out;
                }
                break;
            case 3:
                flag = 0;
                while (!flag) MPI_Testall(n, req, &flag, MPI_STATUSES_IGNORE);
                done = n;
                break;
            default:
                for (int i = 0; i < n; i++) {
                    flag = 0;
                    while (!flag) MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE);
                }
                done = n;
            }
            c.v[IRECVS] += nrecv;
            c.v[BYTES_RECV] += (long long)nrecv * bytes;
        }
    }

    /* Persistent requests around a ring. */
    if (size > 1) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Request pr[2];
        MPI_Recv_init(rbuf[0], 32, MPI_BYTE, left, 200, MPI_COMM_WORLD, &pr[0]);
        MPI_Send_init(sbuf[0], 32, MPI_BYTE, right, 200, MPI_COMM_WORLD, &pr[1]);
        for (int it = 0; it < iters; it++) {
            MPI_Startall(2, pr);
            MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
            c.v[PERSISTENT_SENDS]++;
            c.v[PERSISTENT_RECVS]++;
            c.v[BYTES_SENT] += 32;
            c.v[BYTES_RECV] += 32;
        }
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
    }
    print_summary("nonblocking", &c, NAMES);
    MPI_Finalize();
    return 0;
}
