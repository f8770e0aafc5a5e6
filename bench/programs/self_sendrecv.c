/* One rank sends to and receives from itself, N times (0-byte messages,
 * eager): the cost of an MPI call with nothing else around it. Prints the
 * time per MPI call (a send and a receive are 2 calls), over the whole
 * loop and in the fastest of its 100 batches (a batch the machine took the
 * core away from is not the call's cost).
 * Usage: self_sendrecv [-n N]   (default 400000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = 400000;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-n") == 0) n = atol(argv[i + 1]);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char buf[8];
    /* warm up: first calls define regions and open buffers */
    for (int i = 0; i < 1000; i++) {
        MPI_Send(buf, 0, MPI_BYTE, rank, 7, MPI_COMM_WORLD);
        MPI_Recv(buf, 0, MPI_BYTE, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    long batch = n / 100 > 0 ? n / 100 : 1;
    double best = 1e30;
    double t0 = MPI_Wtime();
    for (long done = 0; done < n; done += batch) {
        double b0 = MPI_Wtime();
        for (long i = 0; i < batch; i++) {
            MPI_Send(buf, 0, MPI_BYTE, rank, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, 0, MPI_BYTE, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double b = MPI_Wtime() - b0;
        if (b < best) best = b;
    }
    double t1 = MPI_Wtime();
    long total = (n + batch - 1) / batch * batch;
    if (rank == 0)
        printf("self send/recv: %ld iterations, %.1f ns per MPI call, %.1f ns in the fastest batch\n", total,
               (t1 - t0) * 1e9 / (2.0 * total), best * 1e9 / (2.0 * batch));
    MPI_Finalize();
    return 0;
}
