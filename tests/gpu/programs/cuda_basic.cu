// GPU test program: kernels, every copy kind, memsets and synchronizations
// on one GPU, with known counts and sizes. Prints the ground truth as
// "expect <key> <value>" lines for tests/gpu/check_archives.py.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

template <typename T>
__global__ void axpy(T *y, const T *x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

__global__ void reduce_shared(const float *x, float *out, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (int k = 0; k < blockDim.x; k++) s += buf[k];
    atomicAdd(out, s);
  }
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 20;
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  float *h_page = (float *)malloc(bytes), *h_page2 = (float *)malloc(bytes), *h_pin;
  CK(cudaMallocHost(&h_pin, bytes));
  for (int i = 0; i < n; i++) h_page[i] = 1.0f, h_pin[i] = 2.0f;
  float *d_x, *d_y, *d_sum;
  CK(cudaMalloc(&d_x, bytes));
  CK(cudaMalloc(&d_y, bytes));
  CK(cudaMalloc(&d_sum, sizeof(float)));
  cudaStream_t s1, s2;
  CK(cudaStreamCreate(&s1));
  CK(cudaStreamCreate(&s2));
  cudaEvent_t ev;
  CK(cudaEventCreate(&ev));

  long k_scale = 0, k_axpy = 0, k_reduce = 0;
  long c_htod = 0, c_dtoh = 0, c_dtod = 0, c_htoh = 0, m_count = 0;
  unsigned long long b_htod = 0, b_dtoh = 0, b_dtod = 0, b_htoh = 0, m_bytes = 0;
  dim3 block(256), grid((n + 255) / 256);

  CK(cudaMemcpy(d_x, h_page, bytes, cudaMemcpyHostToDevice)); c_htod++; b_htod += bytes;       // pageable
  CK(cudaMemcpyAsync(d_y, h_pin, bytes, cudaMemcpyHostToDevice, s1)); c_htod++; b_htod += bytes; // pinned
  CK(cudaStreamSynchronize(s1));
  for (int it = 0; it < iters; it++) {
    scale<<<grid, block, 0, s1>>>(d_x, 1.0001f, n); k_scale++;
    axpy<float><<<grid, block, 0, s2>>>(d_y, d_x, 0.5f, n); k_axpy++;
    CK(cudaMemsetAsync(d_sum, 0, sizeof(float), s1)); m_count++; m_bytes += sizeof(float);
    reduce_shared<<<grid, block, block.x * sizeof(float), s1>>>(d_x, d_sum, n); k_reduce++;
    CK(cudaMemcpyAsync(d_y, d_x, bytes / 2, cudaMemcpyDeviceToDevice, s2)); c_dtod++; b_dtod += bytes / 2;
    CK(cudaEventRecord(ev, s1));
    CK(cudaEventSynchronize(ev));
    CK(cudaStreamSynchronize(s2));
  }
  CK(cudaMemset(d_y, 0, bytes)); m_count++; m_bytes += bytes;
  CK(cudaMemcpy(h_page2, d_x, bytes, cudaMemcpyDeviceToHost)); c_dtoh++; b_dtoh += bytes;
  CK(cudaMemcpyAsync(h_pin, d_x, 4096, cudaMemcpyDeviceToHost, s2)); c_dtoh++; b_dtoh += 4096;
  CK(cudaMemcpy(h_page2, h_page, 8192, cudaMemcpyHostToHost)); c_htoh++; b_htoh += 8192;
  CK(cudaDeviceSynchronize());
  float sum;
  CK(cudaMemcpy(&sum, d_sum, sizeof(float), cudaMemcpyDeviceToHost)); c_dtoh++; b_dtoh += sizeof(float);

  printf("cuda_basic: %d iterations, sum %.3e\n", iters, sum);
  printf("expect kernels %ld\n", k_scale + k_axpy + k_reduce);
  printf("expect kernel scale %ld\n", k_scale);
  printf("expect kernel axpy %ld\n", k_axpy);
  printf("expect kernel reduce_shared %ld\n", k_reduce);
  printf("expect copies HtoD %ld\nexpect bytes HtoD %llu\n", c_htod, b_htod);
  printf("expect copies DtoH %ld\nexpect bytes DtoH %llu\n", c_dtoh, b_dtoh);
  printf("expect copies DtoD %ld\nexpect bytes DtoD %llu\n", c_dtod, b_dtod);
  printf("expect copies HtoH %ld\nexpect bytes HtoH %llu\n", c_htoh, b_htoh);
  printf("expect memsets %ld\nexpect memset_bytes %llu\n", m_count, m_bytes);
  return 0;
}
