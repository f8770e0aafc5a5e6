/* What the CUDA driver does at cuInit when CUDA_INJECTION64_PATH is set:
 * it loads that library and calls its InitializeInjection. Tests use it to
 * start the real CUDA agent on a machine without a GPU (where its CUPTI
 * cannot be loaded) and see what gputrace says about it.
 * Usage: cuda_init   (prints what InitializeInjection returned) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (path == NULL || *path == '\0') {
        puts("cuda_init: no CUDA_INJECTION64_PATH");
        return 0;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cuda_init: %s\n", dlerror());
        return 1;
    }
    int (*initialize)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
    if (initialize == NULL) {
        fprintf(stderr, "cuda_init: %s has no InitializeInjection\n", path);
        return 1;
    }
    printf("cuda_init: InitializeInjection returned %d\n", initialize());
    return 0;
}
