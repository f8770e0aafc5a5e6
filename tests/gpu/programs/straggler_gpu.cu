// A GPU straggler of known size, for `gputrace analyze`'s stragglers on
// several GPUs: one MPI rank per GPU, each iteration
//   compute<<<>>>      a kernel that runs COMPUTE_MS on every rank,
//   spin_wait<<<>>>    on the slow rank only: spins SPIN_MS on the GPU's
//                      globaltimer (its host calls stay on time),
//   ncclAllReduce      of 1 Mi floats, on the same stream,
//   cudaStreamSynchronize.
// Two all-reduces before the loop (NCCL connects at the first) and an
// MPI_Barrier. Prints "expect" lines for tests/gpu/check_straggler.py: the
// slow rank, the time injected per iteration (ns), the iterations, the
// all-reduces before them; and what the slow rank's spin kernels took
// (CUDA events, mean).
//
// Usage: straggler_gpu [ITERATIONS=20] [SPIN_MS=20] [SLOW_RANK=2] [COMPUTE_MS=10]
// Build: nvcc -O2 -arch=native -o straggler_gpu straggler_gpu.cu -lnccl \
//          $(mpicc --showme:compile) $(mpicc --showme:link)
#include <cuda_runtime.h>
#include <nccl.h>
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#define PROGRAM "straggler_gpu"
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

// One thread spins `ns` on the GPU's clock.
__global__ void spin_wait(long long ns) {
  unsigned long long start = now_ns();
  while (now_ns() - start < (unsigned long long)ns) {
  }
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 20;
  long long spin_ns = (argc > 2 ? atoll(argv[2]) : 20) * 1000000LL;
  int slow = argc > 3 ? atoi(argv[3]) : 2;
  long long compute_ns = (argc > 4 ? atoll(argv[4]) : 10) * 1000000LL;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CUDA_OK(cudaGetDeviceCount(&devices));
  if (devices < 1 || slow < 0 || slow >= size) {
    fprintf(stderr, "straggler_gpu: %d GPUs, slow rank %d of %d ranks\n", devices, slow, size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CUDA_OK(cudaSetDevice(rank % devices));
  ncclUniqueId id;
  if (rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const size_t n = 1 << 20;
  float* buf;
  CUDA_OK(cudaMalloc(&buf, n * sizeof(float)));
  CUDA_OK(cudaMemset(buf, 0, n * sizeof(float)));
  cudaEvent_t before, after;
  CUDA_OK(cudaEventCreate(&before));
  CUDA_OK(cudaEventCreate(&after));

  for (int i = 0; i < WARMUP; i++) {
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const unsigned blocks = (unsigned)((n + 255) / 256);
  double spun_ms = 0;
  for (int i = 0; i < iterations; i++) {
    compute<<<blocks, 256, 0, stream>>>(buf, n, compute_ns);
    CUDA_OK(cudaGetLastError());
    if (rank == slow) {
      CUDA_OK(cudaEventRecord(before, stream));
      spin_wait<<<1, 1, 0, stream>>>(spin_ns);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaEventRecord(after, stream));
    }
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    if (rank == slow) {
      float ms = 0;
      CUDA_OK(cudaEventElapsedTime(&ms, before, after));
      spun_ms += ms;
    }
  }
  if (rank == slow) {
    printf("straggler_gpu: rank %d spin_wait took %.3f ms on average (%d iterations)\n", rank,
           iterations ? spun_ms / iterations : 0.0, iterations);
  }
  if (rank == 0) {
    printf("expect slow rank %d\n", slow);
    printf("expect injected ns %lld\n", spin_ns);
    printf("expect iterations %d\n", iterations);
    printf("expect warmup %d\n", WARMUP);
    printf("expect ranks %d\n", size);
  }
  fflush(stdout);
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(buf));
  MPI_Finalize();
  return 0;
}
