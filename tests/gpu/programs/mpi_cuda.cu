// GPU test program: an MPI+CUDA job; each rank drives GPU (rank % GPUs),
// runs kernels, copies to and from its GPU, and exchanges host buffers
// with its neighbours over MPI. Prints per-rank ground truth lines
// "expect rank <r> <key> <value>".
#include <cstdio>
#include <cstdlib>
#include <mpi.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

__global__ void step(float *x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + 1.0f;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, ndev;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CK(cudaGetDeviceCount(&ndev));
  CK(cudaSetDevice(rank % ndev));
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  const int n = 1 << 18;
  const size_t bytes = n * sizeof(float);
  float *h, *d, *recv;
  CK(cudaMallocHost(&h, bytes));
  CK(cudaMallocHost(&recv, bytes));
  CK(cudaMalloc(&d, bytes));
  for (int i = 0; i < n; i++) h[i] = rank;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  long kernels = 0, htod = 0, dtoh = 0, sends = 0;
  for (int it = 0; it < iters; it++) {
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice)); htod++;
    step<<<(n + 255) / 256, 256>>>(d, n, 0.5f); kernels++;
    CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost)); dtoh++;
    MPI_Sendrecv(h, n, MPI_FLOAT, right, it, recv, n, MPI_FLOAT, left, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    sends++;
  }
  double local = h[0], total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  printf("expect rank %d device %d\n", rank, rank % ndev);
  printf("expect rank %d kernels %ld\nexpect rank %d HtoD %ld\nexpect rank %d DtoH %ld\nexpect rank %d bytes %zu\n",
         rank, kernels, rank, htod, rank, dtoh, rank, bytes);
  printf("expect rank %d sends %ld\n", rank, sends);
  MPI_Finalize();
  return 0;
}
