// GPU test program: allocations and frees of known counts and sizes on
// one GPU — cudaMalloc/cudaFree, cudaMallocHost/cudaFreeHost, a deliberate
// leak of each (one device buffer, one pinned buffer), stream-ordered
// allocations from a pool the program creates (cudaMemPoolCreate,
// cudaMallocFromPoolAsync) and from the device's default pool
// (cudaMallocAsync), all freed. Prints the ground truth as "expect <key>
// <value>" lines for tests/gpu/check_archives.py; kinds are named as
// gputrace names them: device, pinned, "device, async".
//
// The copies, for the copy report by allocation: each round copies the
// first hb bytes of every device buffer into its pinned buffer
// (cudaMemcpyAsync DtoH); the device leak is filled from the pinned leak
// (cudaMemcpy HtoD). A virtual-memory (VMM) allocation — cuMemCreate,
// cuMemAddressReserve, cuMemMap — gets one HtoD copy (cuMemcpyHtoD), then
// is unmapped and released: CUPTI reports it as a device allocation and
// free (at cuMemMap and cuMemUnmap), and it counts as one here.
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { \
  const char *m = ""; cuGetErrorString(e, &m); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, m); exit(1); } } while (0)
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fill(unsigned char *p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

struct Count {
  unsigned long long allocs = 0, alloc_bytes = 0, frees = 0, freed_bytes = 0;
  void alloc(size_t b) { allocs++; alloc_bytes += b; }
  void free(size_t b) { frees++; freed_bytes += b; }
  void print(const char *kind) const {
    printf("expect alloc %s n %llu\n", kind, allocs);
    printf("expect alloc %s bytes %llu\n", kind, alloc_bytes);
    printf("expect free %s n %llu\n", kind, frees);
    printf("expect free %s bytes %llu\n", kind, freed_bytes);
  }
};

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  CK(cudaSetDevice(0));
  Count dev, pin, async;
  // Copies by allocation kind: [0] out of device buffers, [1] into pinned
  // buffers, [2] into device buffers, [3] out of pinned buffers.
  unsigned long long copy_n[4] = {0}, copy_bytes[4] = {0};
  auto copied = [&](int from, int to, size_t b) {
    copy_n[from]++; copy_bytes[from] += b; copy_n[to]++; copy_bytes[to] += b;
  };
  cudaStream_t s;
  CK(cudaStreamCreate(&s));

  // Plain device and pinned allocations, used and freed, `rounds` times.
  const int per_round = 4;
  for (int r = 0; r < rounds; r++) {
    unsigned char *d[per_round], *h[per_round];
    for (int i = 0; i < per_round; i++) {
      size_t db = (size_t)(i + 1) << 20;          // 1..4 MiB
      size_t hb = (size_t)(i + 1) * (64 << 10);   // 64..256 KiB
      CK(cudaMalloc(&d[i], db));
      dev.alloc(db);
      CK(cudaMallocHost(&h[i], hb));
      pin.alloc(hb);
      fill<<<64, 256, 0, s>>>(d[i], db, (unsigned char)i);
      CK(cudaMemcpyAsync(h[i], d[i], hb, cudaMemcpyDeviceToHost, s));
      copied(0, 1, hb);
    }
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < per_round; i++) {
      CK(cudaFree(d[i]));
      dev.free((size_t)(i + 1) << 20);
      CK(cudaFreeHost(h[i]));
      pin.free((size_t)(i + 1) * (64 << 10));
    }
  }

  // The leaks: never freed.
  const size_t leak_dev = 3u << 20, leak_pin = 192u << 10;
  unsigned char *ld, *lh;
  CK(cudaMalloc(&ld, leak_dev));
  dev.alloc(leak_dev);
  CK(cudaMallocHost(&lh, leak_pin));
  pin.alloc(leak_pin);
  fill<<<64, 256, 0, s>>>(ld, leak_dev, 7);
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(ld, lh, leak_pin, cudaMemcpyHostToDevice));
  copied(3, 2, leak_pin);

  // A virtual-memory allocation: physical memory mapped into a reserved
  // range, one copy into it, unmapped and released.
  CUmemAllocationProp vprop = {};
  vprop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  vprop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  vprop.location.id = 0;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &vprop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t vbytes = 2 * gran;
  CUmemGenericAllocationHandle vh;
  CU(cuMemCreate(&vh, vbytes, &vprop, 0));
  CUdeviceptr vptr;
  CU(cuMemAddressReserve(&vptr, vbytes, 0, 0, 0));
  CU(cuMemMap(vptr, vbytes, 0, vh, 0));
  CUmemAccessDesc access = {};
  access.location = vprop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU(cuMemSetAccess(vptr, vbytes, &access, 1));
  dev.alloc(vbytes);
  CU(cuMemcpyHtoD(vptr, lh, leak_pin));
  copied(3, 2, leak_pin);
  CU(cuMemUnmap(vptr, vbytes));
  CU(cuMemAddressFree(vptr, vbytes));
  CU(cuMemRelease(vh));
  dev.free(vbytes);

  // Stream-ordered allocations from a pool of our own, then from the
  // device's default pool; all freed on the stream.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CK(cudaMemPoolCreate(&pool, &props));
  const int n_async = 6;
  for (int r = 0; r < rounds; r++) {
    void *a[n_async];
    for (int i = 0; i < n_async; i++) {
      size_t b = (size_t)(i + 1) * (256 << 10);   // 256 KiB..1.5 MiB
      if (i % 2 == 0) {
        CK(cudaMallocFromPoolAsync(&a[i], b, pool, s));
      } else {
        CK(cudaMallocAsync(&a[i], b, s));
      }
      async.alloc(b);
      fill<<<32, 256, 0, s>>>((unsigned char *)a[i], b, 1);
    }
    for (int i = 0; i < n_async; i++) {
      CK(cudaFreeAsync(a[i], s));
      async.free((size_t)(i + 1) * (256 << 10));
    }
    CK(cudaStreamSynchronize(s));
  }
  CK(cudaMemPoolDestroy(pool));
  CK(cudaStreamDestroy(s));
  CK(cudaDeviceSynchronize());

  printf("cuda_memory: %d rounds\n", rounds);
  dev.print("device");
  pin.print("pinned");
  async.print("device, async");
  const char *sides[4] = {"out of device", "into pinned", "into device", "out of pinned"};
  for (int i = 0; i < 4; i++) {
    printf("expect copies %s n %llu\n", sides[i], copy_n[i]);
    printf("expect copies %s bytes %llu\n", sides[i], copy_bytes[i]);
  }
  printf("expect leak device n 1\n");
  printf("expect leak device bytes %zu\n", leak_dev);
  printf("expect leak pinned n 1\n");
  printf("expect leak pinned bytes %zu\n", leak_pin);
  printf("expect leaked bytes %zu\n", leak_dev + leak_pin);
  printf("expect pools created 1\n");
  printf("expect pools destroyed 1\n");
  // The leaks stay allocated until the process ends.
  return 0;
}
