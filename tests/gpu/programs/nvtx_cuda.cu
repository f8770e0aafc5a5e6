// GPU test program: CUDA kernels launched inside nested NVTX ranges (the
// nvtx3 headers of the CUDA toolkit, C API and nvtx3::scoped_range), a
// known count of each, and a start/end range around an asynchronous copy.
// Prints the ground truth as "expect <key> <value>" lines for
// tests/gpu/check_archives.py.
//
// Usage: nvtx_cuda STEPS FORWARD_KERNELS BACKWARD_KERNELS WORKER_KERNELS
//
// Main thread, STEPS x:  "step" { "forward" { FORWARD_KERNELS x fwd },
//                                 "backward" { BACKWARD_KERNELS x bwd,
//                                              "grad sync" { 1 x sync_grads } } }
//   then "async copy" (start/end) around a cudaMemcpyAsync and its sync.
// Thread "worker" (nvtxNameOsThreadA): "worker kernels" (scoped_range)
//   { WORKER_KERNELS x side } on a stream of its own, named "worker-stream"
//   (nvtxNameCudaStreamA); device 0 named "main-GPU" (nvtxNameCudaDeviceA).
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvtx3.hpp>
#include <sys/syscall.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fwd(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

__global__ void bwd(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.9999f - 1.0f;
}

__global__ void sync_grads(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 0.5f;
}

__global__ void side(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 2.0f;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s STEPS FORWARD_KERNELS BACKWARD_KERNELS WORKER_KERNELS\n", argv[0]);
    return 2;
  }
  int steps = atoi(argv[1]), nf = atoi(argv[2]), nb = atoi(argv[3]), nw = atoi(argv[4]);
  const int n = 1 << 16;
  dim3 block(256), grid((n + 255) / 256);
  float *d_x, *d_w, *h;
  CK(cudaMalloc(&d_x, n * sizeof(float)));
  CK(cudaMalloc(&d_w, n * sizeof(float)));
  CK(cudaMallocHost(&h, n * sizeof(float)));
  CK(cudaMemset(d_x, 0, n * sizeof(float)));

  nvtxNameCudaDeviceA(0, "main-GPU");
  std::thread worker([&] {
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "worker");
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    nvtxNameCudaStreamA(s, "worker-stream");
    {
      nvtx3::scoped_range r{"worker kernels"};
      for (int i = 0; i < nw; i++) side<<<grid, block, 0, s>>>(d_w, n);
      CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamDestroy(s));
  });

  for (int s = 0; s < steps; s++) {
    nvtxRangePushA("step");
    nvtxRangePushA("forward");
    for (int i = 0; i < nf; i++) fwd<<<grid, block>>>(d_x, n);
    nvtxRangePop();
    nvtxRangePushA("backward");
    for (int i = 0; i < nb; i++) bwd<<<grid, block>>>(d_x, n);
    nvtxRangePushA("grad sync");
    sync_grads<<<grid, block>>>(d_x, n);
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxRangeId_t copy = nvtxRangeStartA("async copy");
  CK(cudaMemcpyAsync(h, d_x, n * sizeof(float), cudaMemcpyDeviceToHost, 0));
  CK(cudaStreamSynchronize(0));
  nvtxRangeEnd(copy);
  worker.join();

  printf("expect range step %d\n", steps);
  printf("expect range forward %d\n", steps);
  printf("expect range backward %d\n", steps);
  printf("expect range grad sync %d\n", steps);
  printf("expect range worker kernels 1\n");
  printf("expect range async copy 1\n");
  printf("expect stream name worker-stream\n");
  printf("expect device name main-GPU\n");
  printf("expect kernels in forward %d\n", steps * nf);
  printf("expect kernels in backward %d\n", steps * nb);
  printf("expect kernels in grad sync %d\n", steps);
  printf("expect kernels in worker kernels %d\n", nw);
  printf("expect kernels %d\n", steps * (nf + nb + 1) + nw);
  CK(cudaFree(d_x));
  CK(cudaFree(d_w));
  CK(cudaFreeHost(h));
  return 0;
}
