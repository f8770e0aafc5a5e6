// GPU test program: one host thread per GPU, a Jacobi solver whose halo
// rows travel between GPUs with cudaMemcpyAsync(..., DeviceToDevice,
// stream) from the thread's own GPU into its neighbours' buffers — the
// shape of the public multi-threaded multi-GPU Jacobi solvers. Each thread
// sets its device, enables peer access to its neighbours, creates its own
// streams and events, and synchronizes with its neighbours' events; a
// host barrier per iteration. The result is checked against the same
// iteration on the host; a wrong result or a failed CUDA call exits 1.
// Each thread marks its solve and every iteration with NVTX ranges
// ("solve", "step"), as such solvers do.
//
// Usage: threads_peer [ITERATIONS] [ROWS_PER_THREAD] [COLUMNS] [THREADS]
// (default 100 64 256, a thread per visible GPU; more threads than GPUs
// share them round-robin, and copies between threads of one GPU stay
// within it). Prints
//   expect threads=N iterations=K peer_copies=C bytes=B
// with the copies between GPUs the program made and their bytes.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "threads_peer: %s:%d %s failed with %s\n", __FILE__, __LINE__, #call,       \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

// One row-block step: interior rows 1..rows, columns 1..cols-2.
__global__ void jacobi(const float* a, float* out, int rows, int cols) {
  int i = blockIdx.y * blockDim.y + threadIdx.y + 1;
  int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
  if (i <= rows && j < cols - 1) {
    out[i * cols + j] =
        0.25f * ((a[(i - 1) * cols + j] + a[(i + 1) * cols + j]) + (a[i * cols + j - 1] + a[i * cols + j + 1]));
  }
}

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    int gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      gen_++;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen != gen_; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0, gen_ = 0;
};

struct Gpu {
  float* buf[2] = {nullptr, nullptr};
  cudaStream_t compute = nullptr, push_top = nullptr, push_bottom = nullptr;
  // Indexed by iteration parity.
  cudaEvent_t computed[2], pushed_top[2], pushed_bottom[2];
};

static void initial(std::vector<float>& g, int rows, int cols) {
  // Periodic in y; the left column held at 1, the right at 0.
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) g[i * cols + j] = (j == 0) ? 1.0f : (float)((i * 7 + j * 3) % 11) * 0.01f;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 100;
  int rows = argc > 2 ? atoi(argv[2]) : 64;
  int cols = argc > 3 ? atoi(argv[3]) : 256;
  int ngpu = 0;
  CUDA_OK(cudaGetDeviceCount(&ngpu));
  int n = argc > 4 ? atoi(argv[4]) : ngpu;
  if (ngpu < 1 || n < 1 || iters < 1 || rows < 1 || cols < 3) {
    fprintf(stderr, "threads_peer: needs a GPU and positive sizes\n");
    return 2;
  }
  const int total = rows * n;
  std::vector<float> global(size_t(total) * cols);
  initial(global, total, cols);

  std::vector<Gpu> gpus(n);
  Barrier barrier(n);
  std::vector<std::vector<float>> results(n);
  // How long each thread's setup (allocations, copies, streams, events,
  // peer access) takes after a common start: what a tracer's stalls on
  // some threads and not others show in (a program that reads what a
  // neighbour set up without waiting for it fails when they are uneven).
  std::vector<double> setup_ms(n);
  const size_t row_bytes = size_t(cols) * sizeof(float);

  auto device = [&](int t) { return t % ngpu; };
  auto work = [&](int d) {
    Gpu& g = gpus[d];
    int top = (d + n - 1) % n, bottom = (d + 1) % n;
    CUDA_OK(cudaSetDevice(device(d)));
    CUDA_OK(cudaFree(nullptr));
    barrier.wait();
    auto setup_start = std::chrono::steady_clock::now();
    for (int peer : {device(top), device(bottom)}) {
      int can = 0;
      if (peer == device(d)) continue;
      CUDA_OK(cudaDeviceCanAccessPeer(&can, device(d), peer));
      if (can) {
        cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_OK(e);
        (void)cudaGetLastError();
      }
    }
    size_t bytes = size_t(rows + 2) * row_bytes;
    // Local rows 1..rows are global rows d*rows ..; rows 0 and rows+1 are halos.
    std::vector<float> local(size_t(rows + 2) * cols);
    for (int i = 0; i < rows + 2; i++) {
      int gi = (d * rows + i - 1 + total) % total;
      for (int j = 0; j < cols; j++) local[size_t(i) * cols + j] = global[size_t(gi) * cols + j];
    }
    for (int b = 0; b < 2; b++) {
      CUDA_OK(cudaMalloc(&g.buf[b], bytes));
      CUDA_OK(cudaMemcpy(g.buf[b], local.data(), bytes, cudaMemcpyHostToDevice));
    }
    CUDA_OK(cudaStreamCreateWithFlags(&g.compute, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&g.push_top, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&g.push_bottom, cudaStreamNonBlocking));
    for (int p = 0; p < 2; p++) {
      CUDA_OK(cudaEventCreateWithFlags(&g.computed[p], cudaEventDisableTiming));
      CUDA_OK(cudaEventCreateWithFlags(&g.pushed_top[p], cudaEventDisableTiming));
      CUDA_OK(cudaEventCreateWithFlags(&g.pushed_bottom[p], cudaEventDisableTiming));
    }
    CUDA_OK(cudaDeviceSynchronize());
    setup_ms[d] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - setup_start).count();
    barrier.wait();
    dim3 block(32, 8), grid((cols - 2 + 31) / 32, (rows + 7) / 8);
    nvtxRangePushA("solve");
    for (int it = 0; it < iters; it++) {
      nvtxRangePushA("step");
      int p = it & 1, q = p ^ 1;
      float* in = g.buf[p];
      float* out = g.buf[q];
      if (it > 0) {
        // My halos of `in` were written by the neighbours' last pushes.
        CUDA_OK(cudaStreamWaitEvent(g.compute, gpus[top].pushed_bottom[q], 0));
        CUDA_OK(cudaStreamWaitEvent(g.compute, gpus[bottom].pushed_top[q], 0));
      }
      jacobi<<<grid, block, 0, g.compute>>>(in, out, rows, cols);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaEventRecord(g.computed[p], g.compute));
      // My first row goes to the top neighbour's bottom halo, my last row
      // to the bottom neighbour's top halo.
      CUDA_OK(cudaStreamWaitEvent(g.push_top, g.computed[p], 0));
      CUDA_OK(cudaMemcpyAsync(gpus[top].buf[q] + size_t(rows + 1) * cols, out + cols, row_bytes,
                              cudaMemcpyDeviceToDevice, g.push_top));
      CUDA_OK(cudaEventRecord(g.pushed_top[p], g.push_top));
      CUDA_OK(cudaStreamWaitEvent(g.push_bottom, g.computed[p], 0));
      CUDA_OK(cudaMemcpyAsync(gpus[bottom].buf[q], out + size_t(rows) * cols, row_bytes, cudaMemcpyDeviceToDevice,
                              g.push_bottom));
      CUDA_OK(cudaEventRecord(g.pushed_bottom[p], g.push_bottom));
      nvtxRangePop();
      barrier.wait();
    }
    nvtxRangePop();
    CUDA_OK(cudaStreamSynchronize(g.push_top));
    CUDA_OK(cudaStreamSynchronize(g.push_bottom));
    CUDA_OK(cudaStreamSynchronize(g.compute));
    barrier.wait();
    results[d].resize(size_t(rows) * cols);
    CUDA_OK(cudaMemcpy(results[d].data(), g.buf[iters & 1] + cols, size_t(rows) * row_bytes, cudaMemcpyDeviceToHost));
    barrier.wait();
    for (int b = 0; b < 2; b++) CUDA_OK(cudaFree(g.buf[b]));
    for (int p = 0; p < 2; p++) {
      CUDA_OK(cudaEventDestroy(g.computed[p]));
      CUDA_OK(cudaEventDestroy(g.pushed_top[p]));
      CUDA_OK(cudaEventDestroy(g.pushed_bottom[p]));
    }
    CUDA_OK(cudaStreamDestroy(g.compute));
    CUDA_OK(cudaStreamDestroy(g.push_top));
    CUDA_OK(cudaStreamDestroy(g.push_bottom));
  };

  std::vector<std::thread> threads;
  for (int d = 0; d < n; d++) threads.emplace_back(work, d);
  for (auto& t : threads) t.join();

  // The same iterations on the host.
  std::vector<float> next(global);
  for (int it = 0; it < iters; it++) {
    for (int i = 0; i < total; i++) {
      int up = (i + total - 1) % total, down = (i + 1) % total;
      for (int j = 1; j < cols - 1; j++)
        next[size_t(i) * cols + j] = 0.25f * ((global[size_t(up) * cols + j] + global[size_t(down) * cols + j]) +
                                              (global[size_t(i) * cols + j - 1] + global[size_t(i) * cols + j + 1]));
    }
    std::swap(global, next);
  }
  int wrong = 0;
  double worst = 0;
  for (int d = 0; d < n; d++)
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++) {
        double diff = std::fabs(double(results[d][size_t(i) * cols + j]) - global[size_t(d * rows + i) * cols + j]);
        worst = diff > worst ? diff : worst;
        if (diff > 1e-5) wrong++;
      }
  long copies = 0;
  for (int t = 0; t < n; t++)
    copies += long(device((t + n - 1) % n) != device(t)) + long(device((t + 1) % n) != device(t));
  copies *= iters;
  printf("expect threads=%d iterations=%d peer_copies=%ld bytes=%ld\n", n, iters, copies, copies * long(row_bytes));
  double fastest = setup_ms[0], slowest = setup_ms[0];
  for (double t : setup_ms) {
    fastest = t < fastest ? t : fastest;
    slowest = t > slowest ? t : slowest;
  }
  printf("threads_peer: setup after a common start: fastest %.3f ms, slowest %.3f ms\n", fastest, slowest);
  printf("threads_peer: %d threads on %d GPUs, %d iterations, worst difference %.3g, %s\n", n, ngpu, iters, worst,
         wrong ? "WRONG" : "ok");
  return wrong ? 1 : 0;
}
