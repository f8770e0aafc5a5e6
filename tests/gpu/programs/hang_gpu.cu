// A job that hangs on its GPUs on purpose, for `gputrace --hang-timeout`
// and the analysis of what a stopped job was doing. One MPI rank per GPU
// (rank r on GPU r % GPUs); the last rank is L = size - 1. Modes:
//
//   nccl K   K - 1 times ncclAllReduce + cudaStreamSynchronize on every
//            rank; then ranks 0..L-1 make the K-th all-reduce and wait for
//            it in cudaStreamSynchronize (their NCCL kernels wait for rank
//            L forever), while rank L skips it and waits in MPI_Barrier
//   spin K   K - 1 rounds of a kernel, cudaDeviceSynchronize and an
//            MPI_Allreduce on every rank; then rank 1 launches the kernel
//            spin_forever, which spins on a device flag nobody sets, and
//            waits in cudaDeviceSynchronize, while the others wait in
//            MPI_Barrier, the K-th collective of MPI_COMM_WORLD
//
// Prints "expect" lines for tests/gpu/check_hang.py, and per rank, just
// before it hangs, "hang_gpu rank R: hanging at T" (T: seconds since the
// epoch) for tests/gpu/run.sh to time the stop from.
//
// Build: nvcc -O2 -o hang_gpu hang_gpu.cu -lnccl $(mpicc --showme:compile) $(mpicc --showme:link)
#include <cuda_runtime.h>
#include <nccl.h>
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#define PROGRAM "hang_gpu"
#include "gpu_check.h"

__global__ void add_one(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}

// Spins until *flag is set, which nobody does.
__global__ void spin_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}

static void hanging(int rank) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  printf("hang_gpu rank %d: hanging at %.3f\n", rank, now.tv_sec + now.tv_nsec / 1e9);
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "nccl";
  int k = argc > 2 ? atoi(argv[2]) : 20;
  if (k < 2 || size < 2 || (strcmp(mode, "nccl") != 0 && strcmp(mode, "spin") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N (N >= 2) hang_gpu nccl|spin [K >= 2]\n");
    MPI_Finalize();
    return 2;
  }
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  CUDA_OK(cudaSetDevice(rank % ndev));
  const int n = 1 << 20;
  float* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, n * sizeof(float)));
  CUDA_OK(cudaMemset(buf, 0, n * sizeof(float)));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int last = size - 1;
  if (rank == 0) {
    printf("expect mode %s\n", mode);
    printf("expect ranks %d\n", size);
    printf("expect hang_collective %d\n", k);
    printf("expect missing_rank %d\n", strcmp(mode, "nccl") == 0 ? last : 1);
    fflush(stdout);
  }
  if (strcmp(mode, "nccl") == 0) {
    ncclUniqueId id;
    if (rank == 0) NCCL_OK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    NCCL_OK(ncclCommInitRank(&comm, size, id, rank));
    for (int i = 1; i < k; i++) {
      NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
    }
    hanging(rank);
    if (rank == last) {
      MPI_Barrier(MPI_COMM_WORLD);
    } else {
      NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
    }
  } else {
    int* flag = nullptr;
    CUDA_OK(cudaMalloc(&flag, sizeof(int)));
    CUDA_OK(cudaMemset(flag, 0, sizeof(int)));
    double x = rank, y = 0;
    for (int i = 1; i < k; i++) {
      add_one<<<(n + 255) / 256, 256, 0, stream>>>(buf, n);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    hanging(rank);
    if (rank == 1) {
      spin_forever<<<1, 1, 0, stream>>>(flag);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  // Not reached: the job hangs until it is stopped.
  printf("hang_gpu rank %d: did not hang\n", rank);
  MPI_Finalize();
  return 0;
}
