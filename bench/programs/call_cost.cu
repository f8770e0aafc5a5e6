// Benchmark program (GPU side) for bench/gpu-calls.sh: what one CUDA
// runtime call costs the calling thread, per kind of call, with nothing
// else in the loop. Each figure is the time of N calls issued in chunks of
// 256, the GPU drained between chunks outside the timed part (so a launch
// or a memset is its CPU cost, not the GPU's), divided by N. Prints
// "call_ns <name> <ns per call>" per kind:
//   get_device      cudaGetDevice (a getter)
//   is_capturing    cudaStreamIsCapturing (a query PyTorch makes per op)
//   launch          an empty kernel on a stream
//   memset          cudaMemsetAsync of 4 bytes
//   event_record    cudaEventRecord
//   wait_event      cudaStreamWaitEvent
//   event_query     cudaEventQuery of a completed event
//   stream_sync     cudaStreamSynchronize of an idle stream
//   torch_op        what PyTorch does around one kernel: get device, is
//                   capturing, launch, event record, stream wait event
// Usage: call_cost [N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                               \
  do {                                                                      \
    cudaError_t e_ = (x);                                                   \
    if (e_ != cudaSuccess) {                                                \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));              \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

__global__ void empty_kernel() {}

static double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename F>
static void measure(const char* name, long n, F op) {
  const int chunk = 256;
  double total = 0;
  long done = 0;
  while (done < n) {
    double t0 = now_ns();
    for (int i = 0; i < chunk; i++) op();
    total += now_ns() - t0;
    done += chunk;
    CK(cudaDeviceSynchronize());
  }
  printf("call_ns %s %.1f\n", name, total / done);
  fflush(stdout);
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  cudaStream_t s, s2;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e;
  CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  int* d;
  CK(cudaMalloc(&d, 64));
  int dev;
  cudaStreamCaptureStatus st;
  // warm-up: the first launch loads the module
  for (int i = 0; i < 1000; i++) empty_kernel<<<1, 1, 0, s>>>();
  CK(cudaDeviceSynchronize());
  measure("get_device", n, [&] { CK(cudaGetDevice(&dev)); });
  measure("is_capturing", n, [&] { CK(cudaStreamIsCapturing(s, &st)); });
  measure("launch", n, [&] { empty_kernel<<<1, 1, 0, s>>>(); });
  measure("memset", n, [&] { CK(cudaMemsetAsync(d, 0, 4, s)); });
  measure("event_record", n, [&] { CK(cudaEventRecord(e, s)); });
  measure("wait_event", n, [&] { CK(cudaStreamWaitEvent(s2, e, 0)); });
  CK(cudaEventRecord(e, s));
  CK(cudaDeviceSynchronize());
  measure("event_query", n, [&] { CK(cudaEventQuery(e)); });
  measure("stream_sync", n, [&] { CK(cudaStreamSynchronize(s2)); });
  measure("torch_op", n, [&] {
    CK(cudaGetDevice(&dev));
    CK(cudaStreamIsCapturing(s, &st));
    empty_kernel<<<1, 1, 0, s>>>();
    CK(cudaEventRecord(e, s));
    CK(cudaStreamWaitEvent(s2, e, 0));
  });
  CK(cudaGetLastError());
  return 0;
}
