// A slower link of known cost, for `gputrace analyze`'s stragglers and
// per-iteration analysis on several GPUs: one MPI rank per GPU, each
// iteration (the NVTX range "iteration")
//   compute<<<>>>          COMPUTE_MS on every rank,
//   MB MiB to the next GPU: peer to peer (cudaMemcpyPeerAsync, NVLink)
//                          on every rank but SLOW, which stages the same
//                          bytes through pinned host memory (device to
//                          host, then host to the next GPU: PCIe twice),
//   ncclAllReduce          of 1 Mi floats, on the same stream,
//   cudaStreamSynchronize.
// The slow rank's GPU starts every all-reduce late by the time its copies
// took beyond the others'. Two all-reduces before the loop (NCCL connects
// at the first) and an MPI_Barrier. Prints "expect" lines for
// tests/gpu/check_link.py: the slow rank, the iterations, the all-reduces
// before them, and per rank the mean time of its copies (CUDA events).
//
// Usage: link_gpu [ITERATIONS=20] [MB=256] [SLOW_RANK=1] [COMPUTE_MS=5]
// Build: nvcc -O2 -arch=native -o link_gpu link_gpu.cu -lnccl \
//          $(mpicc --showme:compile) $(mpicc --showme:link)
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#define PROGRAM "link_gpu"
#include "gpu_check.h"

static const int WARMUP = 2;

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every thread waits `ns` on the GPU's clock, then adds 1 to its element.
__global__ void compute(float* p, size_t n, long long ns) {
  unsigned long long start = now_ns();
  while (now_ns() - start < (unsigned long long)ns) {
  }
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 20;
  size_t bytes = (size_t)(argc > 2 ? atoll(argv[2]) : 256) << 20;
  int slow = argc > 3 ? atoi(argv[3]) : 1;
  long long compute_ns = (argc > 4 ? atoll(argv[4]) : 5) * 1000000LL;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CUDA_OK(cudaGetDeviceCount(&devices));
  if (devices < 2 || size < 2 || slow < 0 || slow >= size) {
    fprintf(stderr, "link_gpu: %d GPUs, slow rank %d of %d ranks (2 or more of each needed)\n", devices, slow, size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int me = rank % devices, peer = (rank + 1) % devices;
  // The destination on the next GPU, allocated by this process.
  float* remote;
  CUDA_OK(cudaSetDevice(peer));
  CUDA_OK(cudaMalloc(&remote, bytes));
  CUDA_OK(cudaSetDevice(me));
  int can = 0;
  CUDA_OK(cudaDeviceCanAccessPeer(&can, me, peer));
  if (can && rank != slow) CUDA_OK(cudaDeviceEnablePeerAccess(peer, 0));
  ncclUniqueId id;
  if (rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const size_t n = 1 << 20;
  float *buf, *data, *host;
  CUDA_OK(cudaMalloc(&buf, n * sizeof(float)));
  CUDA_OK(cudaMemset(buf, 0, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&data, bytes));
  CUDA_OK(cudaMemset(data, 1, bytes));
  CUDA_OK(cudaMallocHost(&host, bytes));
  cudaEvent_t before, after;
  CUDA_OK(cudaEventCreate(&before));
  CUDA_OK(cudaEventCreate(&after));

  for (int i = 0; i < WARMUP; i++) {
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const unsigned blocks = (unsigned)((n + 255) / 256);
  double copy_ms = 0;
  for (int i = 0; i < iterations; i++) {
    nvtxRangePushA("iteration");
    compute<<<blocks, 256, 0, stream>>>(buf, n, compute_ns);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(before, stream));
    if (rank == slow) {
      CUDA_OK(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, stream));
      CUDA_OK(cudaMemcpyAsync(remote, host, bytes, cudaMemcpyHostToDevice, stream));
    } else {
      CUDA_OK(cudaMemcpyPeerAsync(remote, peer, data, me, bytes, stream));
    }
    CUDA_OK(cudaEventRecord(after, stream));
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    nvtxRangePop();
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, before, after));
    copy_ms += ms;
  }
  double mine = iterations ? copy_ms / iterations : 0.0;
  double* all = (double*)calloc(size, sizeof(double));
  MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("expect slow rank %d\n", slow);
    printf("expect iterations %d\n", iterations);
    printf("expect warmup %d\n", WARMUP);
    printf("expect ranks %d\n", size);
    printf("expect bytes %zu\n", bytes);
    for (int r = 0; r < size; r++) printf("expect copy ns rank %d %.0f\n", r, all[r] * 1e6);
  }
  fflush(stdout);
  free(all);
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFreeHost(host));
  CUDA_OK(cudaFree(data));
  CUDA_OK(cudaFree(buf));
  CUDA_OK(cudaSetDevice(peer));
  CUDA_OK(cudaFree(remote));
  MPI_Finalize();
  return 0;
}
