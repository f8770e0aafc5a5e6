// Error checks of the CUDA and NCCL test programs: a failing call prints
// the program's name (PROGRAM, defined before this header), where, the
// call and the error, and exits 1.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s: %s:%d %s: %s\n", PROGRAM, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#ifdef NCCL_H_
#define NCCL_OK(call)                                                                            \
  do {                                                                                           \
    ncclResult_t r_ = (call);                                                                    \
    if (r_ != ncclSuccess) {                                                                     \
      fprintf(stderr, "%s: %s:%d %s: %s\n", PROGRAM, __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)
#endif
