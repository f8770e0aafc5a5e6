// GPU test program for 2 GPUs: peer-to-peer copies in both directions
// with peer access enabled, kernels on both GPUs, and a long burst of
// copies from GPU 0 to GPU 1 so that NVLink counters move. Prints the
// ground truth as "expect <key> <value>" lines.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void touch(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

int main(int argc, char **argv) {
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) { printf("cuda_peer: needs 2 GPUs, found %d\n", ndev); return 77; }
  int reps = argc > 1 ? atoi(argv[1]) : 32;
  const size_t bytes = 256u << 20;
  float *a, *b;
  CK(cudaSetDevice(0)); CK(cudaMalloc(&a, bytes));
  int can01 = 0, can10 = 0;
  CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
  if (can01) CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaSetDevice(1)); CK(cudaMalloc(&b, bytes));
  CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  if (can10) CK(cudaDeviceEnablePeerAccess(0, 0));
  int n = bytes / sizeof(float);
  touch<<<(n + 255) / 256, 256>>>(b, n);
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(0));
  touch<<<(n + 255) / 256, 256>>>(a, n);
  long c01 = 0, c10 = 0;
  unsigned long long b01 = 0, b10 = 0;
  for (int i = 0; i < reps; i++) { CK(cudaMemcpyPeerAsync(b, 1, a, 0, bytes, 0)); c01++; b01 += bytes; }
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(1));
  for (int i = 0; i < reps / 4; i++) { CK(cudaMemcpyPeerAsync(a, 0, b, 1, bytes, 0)); c10++; b10 += bytes; }
  CK(cudaDeviceSynchronize());
  printf("cuda_peer: peer access %d/%d\n", can01, can10);
  printf("expect kernels 2\nexpect peer 0->1 copies %ld\nexpect peer 0->1 bytes %llu\n", c01, b01);
  printf("expect peer 1->0 copies %ld\nexpect peer 1->0 bytes %llu\n", c10, b10);
  return 0;
}
