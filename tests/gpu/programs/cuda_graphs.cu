// GPU test program: CUDA graphs. One graph made by stream capture, one
// with the explicit API (kernel, 1D memcpy and memset nodes), each
// instantiated once and launched N times (argument, default 10), plus a
// few kernels outside any graph. Prints what it made, counted from the
// graphs themselves (cudaGraphGetNodes, cudaGraphNodeGetType):
//   graph <capture|explicit> nodes kernels=K memcpy=M memset=S launches=N
//   expect plain kernels P
// for tests/gpu/check_archives.py.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

struct Counts {
  int kernels = 0, memcpy = 0, memset = 0, other = 0;
};

// The nodes of `graph`, by type.
static Counts count_nodes(cudaGraph_t graph) {
  size_t n = 0;
  CK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) CK(cudaGraphGetNodes(graph, nodes.data(), &n));
  Counts c;
  for (size_t i = 0; i < n; i++) {
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nodes[i], &t));
    if (t == cudaGraphNodeTypeKernel) c.kernels++;
    else if (t == cudaGraphNodeTypeMemcpy) c.memcpy++;
    else if (t == cudaGraphNodeTypeMemset) c.memset++;
    else c.other++;
  }
  return c;
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 10;
  if (launches < 1) launches = 1;
  int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  float *h, *d_x, *d_y, *d_w;
  CK(cudaMallocHost(&h, bytes));
  CK(cudaMalloc(&d_x, bytes));
  CK(cudaMalloc(&d_y, bytes));
  CK(cudaMalloc(&d_w, bytes));
  for (int i = 0; i < n; i++) h[i] = 1.0f;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  dim3 block(256), grid((n + 255) / 256);

  // Kernels outside any graph.
  const int plain = 2;
  CK(cudaMemcpyAsync(d_x, h, bytes, cudaMemcpyHostToDevice, s));
  scale<<<grid, block, 0, s>>>(d_x, 1.0f, n);
  add<<<grid, block, 0, s>>>(d_w, d_x, n);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));

  // Graph 1, by stream capture: HtoD copy, memset, three kernels, DtoH copy.
  cudaGraph_t captured;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(d_x, h, bytes, cudaMemcpyHostToDevice, s));
  CK(cudaMemsetAsync(d_y, 0, bytes, s));
  scale<<<grid, block, 0, s>>>(d_x, 2.0f, n);
  add<<<grid, block, 0, s>>>(d_y, d_x, n);
  scale<<<grid, block, 0, s>>>(d_y, 0.5f, n);
  CK(cudaGetLastError());
  CK(cudaMemcpyAsync(h, d_y, bytes, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamEndCapture(s, &captured));

  // Graph 2, by the explicit API: two memsets, two kernels, a DtoD copy,
  // in a chain.
  cudaGraph_t built;
  CK(cudaGraphCreate(&built, 0));
  cudaGraphNode_t set_y, set_w, k_add, k_scale, copy;
  cudaMemsetParams mp = {};
  mp.dst = d_y;
  mp.value = 0;
  mp.elementSize = sizeof(float);
  mp.width = n;
  mp.height = 1;
  mp.pitch = 0;
  CK(cudaGraphAddMemsetNode(&set_y, built, nullptr, 0, &mp));
  mp.dst = d_w;
  CK(cudaGraphAddMemsetNode(&set_w, built, &set_y, 1, &mp));
  float *add_y = d_y;
  const float *add_x = d_x;
  int add_n = n;
  void *add_args[] = {&add_y, &add_x, &add_n};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)add;
  kp.gridDim = grid;
  kp.blockDim = block;
  kp.sharedMemBytes = 0;
  kp.kernelParams = add_args;
  kp.extra = nullptr;
  CK(cudaGraphAddKernelNode(&k_add, built, &set_w, 1, &kp));
  float *scale_x = d_y;
  float scale_a = 3.0f;
  int scale_n = n;
  void *scale_args[] = {&scale_x, &scale_a, &scale_n};
  kp.func = (void *)scale;
  kp.kernelParams = scale_args;
  CK(cudaGraphAddKernelNode(&k_scale, built, &k_add, 1, &kp));
  CK(cudaGraphAddMemcpyNode1D(&copy, built, &k_scale, 1, d_w, d_y, bytes, cudaMemcpyDeviceToDevice));

  Counts cc = count_nodes(captured), ce = count_nodes(built);
  if (cc.other != 0 || ce.other != 0) {
    fprintf(stderr, "unexpected node types: %d in the captured graph, %d in the built one\n", cc.other, ce.other);
    return 1;
  }

  cudaGraphExec_t capture_exec, built_exec;
  CK(cudaGraphInstantiate(&capture_exec, captured, 0));
  CK(cudaGraphInstantiate(&built_exec, built, 0));
  for (int i = 0; i < launches; i++) {
    CK(cudaGraphLaunch(capture_exec, s));
    CK(cudaGraphLaunch(built_exec, s));
  }
  CK(cudaStreamSynchronize(s));

  printf("graph capture nodes kernels=%d memcpy=%d memset=%d launches=%d\n", cc.kernels, cc.memcpy, cc.memset,
         launches);
  printf("graph explicit nodes kernels=%d memcpy=%d memset=%d launches=%d\n", ce.kernels, ce.memcpy, ce.memset,
         launches);
  printf("expect plain kernels %d\n", plain);
  printf("expect graphs 2\n");
  printf("expect graph launches %d\n", 2 * launches);

  CK(cudaGraphExecDestroy(capture_exec));
  CK(cudaGraphExecDestroy(built_exec));
  CK(cudaGraphDestroy(captured));
  CK(cudaGraphDestroy(built));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(d_x));
  CK(cudaFree(d_y));
  CK(cudaFree(d_w));
  CK(cudaFreeHost(h));
  return 0;
}
