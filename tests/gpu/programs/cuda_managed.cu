// GPU test program: unified (managed) memory touched from the host, then
// the device, then the host again, so that the driver migrates it both
// ways and both sides fault. Prints the ground truth as "expect <key>
// <value>" lines for tests/gpu/check_archives.py.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void add_one(unsigned int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] += 1;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
  const size_t bytes = mib << 20, n = bytes / sizeof(unsigned int);
  CK(cudaSetDevice(0));
  int managed = 0, concurrent = 0;
  CK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  CK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  if (!managed) {
    fprintf(stderr, "cuda_managed: the GPU has no managed memory\n");
    return 2;
  }
  unsigned int *p;
  CK(cudaMallocManaged(&p, bytes));
  for (size_t i = 0; i < n; i++) p[i] = (unsigned int)i;  // host first: pages on the host
  add_one<<<256, 256>>>(p, n);                           // device: GPU faults, HtoD migrations
  CK(cudaDeviceSynchronize());
  unsigned long long sum = 0;
  for (size_t i = 0; i < n; i += 1024) sum += p[i];      // host again: CPU faults, DtoH migrations
  unsigned long long want = 0;
  for (size_t i = 0; i < n; i += 1024) want += (unsigned long long)i + 1;
  CK(cudaFree(p));
  printf("cuda_managed: %zu MiB, concurrent managed access %d, sum %s\n", mib, concurrent,
         sum == want ? "right" : "WRONG");
  printf("expect managed bytes %zu\n", bytes);
  printf("expect alloc managed n 1\n");
  printf("expect alloc managed bytes %zu\n", bytes);
  printf("expect free managed n 1\n");
  printf("expect free managed bytes %zu\n", bytes);
  printf("expect concurrent %d\n", concurrent);
  return sum == want ? 0 : 1;
}
