/* A program without MPI that looks MPI functions up with dlsym, as
 * libraries do to learn whether MPI is in use. With gputrace's MPI library
 * preloaded it finds the wrappers, with no MPI library behind them.
 * Prints what the calls returned. Not linked against MPI.
 *
 * Usage: no_mpi [OBJECT.so]: with an object linked against MPI, opens it
 * with dlopen(RTLD_LOCAL) afterwards and calls MPI_Initialized again. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int (*initialized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "MPI_Initialized");
    double (*wtime)(void) = (double (*)(void))dlsym(RTLD_DEFAULT, "MPI_Wtime");
    if (!initialized || !wtime) {
        printf("no MPI\n");
        return 0;
    }
    int flag = -7;
    int first = initialized(&flag);
    int second = initialized(&flag);
    printf("MPI_Initialized: %d %d flag=%d MPI_Wtime: %g\n", first, second, flag, wtime());
    if (argc > 1) {
        if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "no_mpi: %s\n", dlerror());
            return 2;
        }
        int rc = initialized(&flag);
        printf("after opening MPI: MPI_Initialized: %d flag=%d\n", rc, flag);
    }
    return 0;
}
