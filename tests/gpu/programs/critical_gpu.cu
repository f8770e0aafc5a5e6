// GPU test program for the critical path across GPU work (gputrace
// analyze): ITERS iterations on one stream, each 8 launches of `work`
// (spinning WORK_US) with one launch of `spin` (spinning 5 us) in the
// middle, then a cudaStreamSynchronize. Every third iteration (0, 3, 6,
// ...) carries the injected delay of DELAY_MS:
//   kernel: that iteration's `spin` spins DELAY_MS longer (globaltimer);
//   gap:    the host sleeps DELAY_MS just before launching that `spin`;
//   none:   no delay (the baseline).
// Prints "expect <key> <value>" lines for tests/gpu/check_critical.py:
// the mode, the iterations, the delayed iterations and the injected
// time (for gap: the sleeps as measured on the host).
//
// Usage: critical_gpu MODE [ITERS] [DELAY_MS] [WORK_US]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ unsigned long long gpu_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void work(unsigned long long ns, int *count) {
  unsigned long long t0 = gpu_now();
  while (gpu_now() - t0 < ns) {
  }
  if (threadIdx.x == 0) atomicAdd(count, 1);
}

__global__ void spin(unsigned long long ns, int *count) {
  unsigned long long t0 = gpu_now();
  while (gpu_now() - t0 < ns) {
  }
  if (threadIdx.x == 0) atomicAdd(count, 1);
}

static long long host_now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "kernel") && strcmp(argv[1], "gap") && strcmp(argv[1], "none"))) {
    fprintf(stderr, "usage: critical_gpu kernel|gap|none [ITERS] [DELAY_MS] [WORK_US]\n");
    return 2;
  }
  const char *mode = argv[1];
  int iters = argc > 2 ? atoi(argv[2]) : 30;
  long long delay_ns = (argc > 3 ? atoll(argv[3]) : 20) * 1000000LL;
  long long work_ns = (argc > 4 ? atoll(argv[4]) : 500) * 1000LL;
  const long long spin_ns = 5000;
  bool kernel = !strcmp(mode, "kernel"), gap = !strcmp(mode, "gap");
  int *count;
  CK(cudaMalloc(&count, sizeof(int)));
  CK(cudaMemset(count, 0, sizeof(int)));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaDeviceSynchronize());
  long long injected = 0;
  int delayed = 0;
  for (int it = 0; it < iters; it++) {
    bool late = it % 3 == 0;
    delayed += late;
    for (int k = 0; k < 8; k++) {
      if (k == 4) {
        if (gap && late) {
          struct timespec d = {(time_t)(delay_ns / 1000000000LL), (long)(delay_ns % 1000000000LL)};
          long long t0 = host_now();
          nanosleep(&d, nullptr);
          injected += host_now() - t0;
        }
        long long extra = kernel && late ? delay_ns : 0;
        injected += extra;
        spin<<<1, 32, 0, s>>>(spin_ns + extra, count);
      }
      work<<<1, 32, 0, s>>>(work_ns, count);
    }
    CK(cudaStreamSynchronize(s));
  }
  int done = 0;
  CK(cudaMemcpy(&done, count, sizeof(int), cudaMemcpyDeviceToHost));
  CK(cudaGetLastError());
  printf("expect mode %s\n", mode);
  printf("expect iterations %d\n", iters);
  printf("expect delayed_iterations %d\n", delayed);
  printf("expect injected_ns %lld\n", injected);
  printf("expect kernels %d\n", done);
  printf("critical_gpu: %s ok\n", mode);
  return done == iters * 9 ? 0 : 1;
}
