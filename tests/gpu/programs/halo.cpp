// Test program for many ranks: each rank owns a slab of a 1-D domain,
// exchanges halos with its neighbours over MPI every step, and — built
// with -DWITH_CUDA (nvcc -x cu) — drives its own GPU (rank % GPUs),
// updates the slab with a kernel and copies its boundary straight into
// its right neighbour's GPU memory, peer to peer (CUDA IPC handles are
// exchanged once over MPI; the copy goes over NVLink where the GPUs have
// it). Without CUDA it does the same work on the CPU, so that the same
// program runs with many ranks where there is no GPU.
//
// Prints per rank "expect rank R <key> <value>": halo messages and bytes,
// and with CUDA kernels, peer copies and bytes, plus the elapsed time.
//
//   mpicxx -O2 -o halo halo.cpp
//   nvcc -O2 -x cu -DWITH_CUDA -o halo halo.cpp $(mpicxx --showme:compile) $(mpicxx --showme:link)
//   mpirun -np 8 ./halo STEPS
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#ifdef WITH_CUDA
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
__global__ void relax(float *u, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) u[i] = 0.5f * u[i] + 0.25f * (u[i - 1] + u[i + 1]);
}
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 20;
  const int n = 1 << 20, halo = 1024;
  const size_t halo_bytes = halo * sizeof(float);
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  std::vector<float> u(n, (float)rank), send_l(halo), send_r(halo), recv_l(halo), recv_r(halo);
  long messages = 0, kernels = 0, peer_copies = 0;
  unsigned long long message_bytes = 0, peer_bytes = 0;
#ifdef WITH_CUDA
  int ngpu = 0;
  CK(cudaGetDeviceCount(&ngpu));
  int dev = rank % ngpu;
  CK(cudaSetDevice(dev));
  float *d_u, *d_inbox;
  CK(cudaMalloc(&d_u, n * sizeof(float)));
  CK(cudaMalloc(&d_inbox, halo_bytes));
  CK(cudaMemcpy(d_u, u.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  // The right neighbour's inbox, mapped into this process.
  cudaIpcMemHandle_t mine, theirs;
  CK(cudaIpcGetMemHandle(&mine, d_inbox));
  MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, left, 99, &theirs, sizeof theirs, MPI_BYTE, right, 99, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  float *peer_inbox = nullptr;
  int peer_dev = right % ngpu;
  bool peer = size > 1 && peer_dev != dev;
  if (peer) {
    int can = 0;
    CK(cudaDeviceCanAccessPeer(&can, dev, peer_dev));
    if (can) cudaDeviceEnablePeerAccess(peer_dev, 0), cudaGetLastError();
    CK(cudaIpcOpenMemHandle((void **)&peer_inbox, theirs, cudaIpcMemLazyEnablePeerAccess));
  }
  MPI_Barrier(MPI_COMM_WORLD);
#endif
  double t0 = MPI_Wtime();
  for (int s = 0; s < steps; s++) {
#ifdef WITH_CUDA
    relax<<<(n + 255) / 256, 256>>>(d_u, n);
    kernels++;
    if (peer) {
      CK(cudaMemcpyPeer(peer_inbox, peer_dev, d_u + n - halo, dev, halo_bytes));
      peer_copies++;
      peer_bytes += halo_bytes;
    }
    CK(cudaMemcpy(send_l.data(), d_u, halo_bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(send_r.data(), d_u + n - halo, halo_bytes, cudaMemcpyDeviceToHost));
#else
    for (int i = 1; i < n - 1; i++) u[i] = 0.5f * u[i] + 0.25f * (u[i - 1] + u[i + 1]);
    for (int i = 0; i < halo; i++) send_l[i] = u[i], send_r[i] = u[n - halo + i];
#endif
    MPI_Request req[4];
    MPI_Irecv(recv_l.data(), halo, MPI_FLOAT, left, s, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(recv_r.data(), halo, MPI_FLOAT, right, s, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(send_r.data(), halo, MPI_FLOAT, right, s, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(send_l.data(), halo, MPI_FLOAT, left, s, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    messages += 2;
    message_bytes += 2 * halo_bytes;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double elapsed = MPI_Wtime() - t0;
#ifdef WITH_CUDA
  CK(cudaDeviceSynchronize());
  if (peer) CK(cudaIpcCloseMemHandle(peer_inbox));
#endif
  printf("expect rank %d messages %ld\nexpect rank %d message_bytes %llu\n", rank, messages, rank, message_bytes);
  printf("expect rank %d kernels %ld\nexpect rank %d peer_copies %ld\nexpect rank %d peer_bytes %llu\n", rank, kernels,
         rank, peer_copies, rank, peer_bytes);
  if (rank == 0) printf("halo: %d ranks, %d steps, %.3f s\n", size, steps, elapsed);
  MPI_Finalize();
  return 0;
}
