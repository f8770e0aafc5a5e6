/* After MPI_Init, closes descriptors from 3 up, as daemons and some
 * libraries do, then writes files of its own (DIR/out.RANK.F) while it
 * goes on calling MPI. Every descriptor of a regular file is closed; MPI's
 * sockets, pipes and eventfds are left open (closing them all ends the
 * job under both Open MPI and MPICH).
 * With -l, the open-file limit is then lowered to the descriptors in use:
 * no file can be opened any more.
 * Usage: closefds -d DIR [-n ITER] [-l] */
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

static int flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return 1;
        }
    }
    return 0;
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

/* Closes every descriptor of a regular file from 3 up. Returns how many. */
static int close_files_from_3(void)
{
    int fds[4096], n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd >= 3 && fd != dirfd(d)) {
            fds[n++] = fd;
        }
    }
    closedir(d);
    int closed = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (fstat(fds[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        closed += close(fds[i]) == 0;
    }
    return closed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = arg(argc, argv, "-d", ".");
    int iter = atoi(arg(argc, argv, "-n", "2000"));
    MPI_Barrier(MPI_COMM_WORLD);
    int closed = close_files_from_3();
    /* The program's own files, opened after the close: they get the
     * lowest numbers, the ones just freed. */
    int files[4];
    for (int f = 0; f < 4; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out.%d.%d", dir, rank, f);
        files[f] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (files[f] < 0 || write(files[f], "12345678", 8) != 8) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (flag(argc, argv, "-l")) {
        /* The lowest free number: every one below it is in use. */
        int lowest = dup(0);
        close(lowest);
        struct rlimit lim;
        getrlimit(RLIMIT_NOFILE, &lim);
        lim.rlim_cur = lowest;
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
            perror("setrlimit");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long sum = 0;
    for (int i = 0; i < iter; i++) {
        int x = rank + i, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (size > 1) {
            MPI_Sendrecv(&x, 1, MPI_INT, (rank + 1) % size, 3, &y, 1, MPI_INT, (rank + size - 1) % size, 3,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        sum += y;
        if (i % 100 == 0) {
            char line[64];
            int len = snprintf(line, sizeof line, "%d %ld\n", i, sum);
            if (write(files[i / 100 % 4], line, len) != len) {
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
    }
    for (int f = 0; f < 4; f++) {
        close(files[f]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("closefds: allreduce %d, sendrecv %d, sum %ld\n", iter, size > 1 ? iter : 0, sum);
    }
    /* Not on stdout: under gputrace, its streams are closed too. */
    fprintf(stderr, "closefds: rank %d closed %d descriptors\n", rank, closed);
    MPI_Finalize();
    return 0;
}
