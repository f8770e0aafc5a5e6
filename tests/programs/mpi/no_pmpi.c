/* An MPI library without the profiling interface (no PMPI_ names), and
 * its user. With -DLIBRARY: the library, defining MPI_Initialized only.
 * Without: a plugin for loader.c (program_main) linked against it, which
 * prints what MPI_Initialized returned. Not linked against a real MPI. */
#ifdef LIBRARY

int MPI_Initialized(int *flag)
{
    *flag = 42;
    return 0;
}

#else
#include <stdio.h>

int MPI_Initialized(int *flag);

int program_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int flag = 0;
    int rc = MPI_Initialized(&flag);
    printf("MPI_Initialized: %d flag=%d\n", rc, flag);
    return 0;
}
#endif
