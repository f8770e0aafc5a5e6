// The bundled CUDA example: SAXPY on the GPU with the copies around it,
// repeated, on two streams. Prints a checksum so that traced and untraced
// runs can be compared.
//
//   nvcc -O2 -o cuda_saxpy cuda_saxpy.cu
//   gputrace ./cuda_saxpy 50
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 50;
  const int n = 1 << 22;
  const size_t bytes = n * sizeof(float);
  float *hx, *hy, *dx, *dy;
  cudaMallocHost(&hx, bytes);
  cudaMallocHost(&hy, bytes);
  for (int i = 0; i < n; i++) hx[i] = 1.0f, hy[i] = 2.0f;
  cudaMalloc(&dx, bytes);
  cudaMalloc(&dy, bytes);
  cudaStream_t s[2];
  for (auto &st : s) cudaStreamCreate(&st);
  cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice);
  for (int k = 0; k < steps; k++) {
    cudaStream_t st = s[k % 2];
    cudaMemcpyAsync(dy, hy, bytes, cudaMemcpyHostToDevice, st);
    saxpy<<<(n + 255) / 256, 256, 0, st>>>(n, 0.5f, dx, dy);
    cudaMemcpyAsync(hy, dy, bytes, cudaMemcpyDeviceToHost, st);
    cudaStreamSynchronize(st);
  }
  double sum = 0;
  for (int i = 0; i < n; i += 4096) sum += hy[i];
  printf("saxpy: %d steps, checksum %.3f\n", steps, sum);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
