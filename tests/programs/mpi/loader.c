/* Runs a test program built as a shared object, opened with
 * dlopen(RTLD_LOCAL) as Python opens mpi4py and the MPI library it links:
 * the MPI library is then in no list that dlsym(RTLD_NEXT) or
 * dlsym(RTLD_DEFAULT) searches. This program is not linked against MPI.
 *
 * Usage: loader OBJECT.so [ARGS...]  (runs OBJECT's program_main(ARGS))
 * Build the object with -shared -fPIC -Dmain=program_main. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: loader OBJECT.so [ARGS...]\n");
        return 2;
    }
    void *object = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!object) {
        fprintf(stderr, "loader: %s\n", dlerror());
        return 2;
    }
    int (*program_main)(int, char **) = (int (*)(int, char **))dlsym(object, "program_main");
    if (!program_main) {
        fprintf(stderr, "loader: %s\n", dlerror());
        return 2;
    }
    return program_main(argc - 1, argv + 1);
}
