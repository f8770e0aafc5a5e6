// NCCL test program for gputrace's NCCL plugin: all-reduce, all-gather,
// reduce-scatter, broadcast of known sizes and a send/receive between
// ranks 0 and 1, a few iterations, with "expect" lines giving per rank and
// operation the calls, counts and bytes that the trace must show (bytes
// as docs/nccl.md tabulates them). Results are checked; a wrong result
// exits 1.
//
// Two ways to run:
//   ./nccl_test                 one process drives every visible GPU
//                               (ncclCommInitAll; on one GPU a 1-rank
//                               communicator, where NCCL reports nothing
//                               to profiler plugins)
//   mpirun -np N ./nccl_test_mpi  one rank per GPU (built with -DWITH_MPI;
//                               the unique id goes out with MPI_Bcast)
// Options: --iters K (default 3), --count C (elements per rank, default
// 262144 floats = 1 MiB), --bench N (N all-reduces of 8 bytes, or
// --bench-bytes B, each followed by a stream synchronization; prints ns
// per all-reduce).
//
// Build:
//   nvcc -O2 -o nccl_test nccl_test.cu -lnccl
//   nvcc -O2 -o nccl_test_mpi nccl_test.cu -lnccl -DWITH_MPI
//        $(mpicc --showme:compile) $(mpicc --showme:link)   (one line)
// Only host code: it also compiles as C++ against the CUDA runtime.

#include <cuda_runtime.h>
#include <nccl.h>
#ifdef WITH_MPI
// The C API only (no C++ bindings to link).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

#define NCCL_OK(call)                                                                        \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

// One rank's communicator, GPU, stream and buffers.
struct Rank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;  // count * nranks floats
  float* recv = nullptr;  // count * nranks floats
};

struct Options {
  int iters = 3;
  size_t count = 262144;
  long bench = 0;
  size_t bench_count = 2;  // floats per benchmark all-reduce
};

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      o.iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
      o.count = strtoull(argv[++i], nullptr, 10);
    } else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
      o.bench = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--bench-bytes") && i + 1 < argc) {
      o.bench_count = strtoull(argv[++i], nullptr, 10) / sizeof(float);
    } else {
      fprintf(stderr, "usage: %s [--iters K] [--count C] [--bench N [--bench-bytes B]]\n", argv[0]);
      exit(2);
    }
  }
  return o;
}

static void fill(Rank& r, size_t n, float value) {
  std::vector<float> h(n, value);
  CUDA_OK(cudaSetDevice(r.device));
  CUDA_OK(cudaMemcpy(r.send, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

static float first(Rank& r, const float* p) {
  float v = 0;
  CUDA_OK(cudaSetDevice(r.device));
  CUDA_OK(cudaMemcpy(&v, p, sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

static void sync_all(std::vector<Rank>& ranks) {
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamSynchronize(r.stream));
  }
}

// Runs `op` for every local rank: inside ncclGroupStart/End when one
// process drives several GPUs (NCCL requires it), else on its own.
template <class F>
static void each(std::vector<Rank>& ranks, F op) {
  bool group = ranks.size() > 1;
  if (group) NCCL_OK(ncclGroupStart());
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    op(r);
  }
  if (group) NCCL_OK(ncclGroupEnd());
}

static int failures = 0;

static void check(const char* what, int rank, float got, float want) {
  if (got != want) {
    fprintf(stderr, "rank %d: %s gave %g, expected %g\n", rank, what, got, want);
    failures++;
  }
}

static void expect(int rank, const char* op, int calls, size_t count, double sent, double received, int root) {
  printf("expect rank=%d op=%s calls=%d count=%zu datatype=ncclFloat32 bytes_sent=%.0f bytes_received=%.0f", rank,
         op, calls, count, sent, received);
  if (root >= 0) printf(" root=%d", root);
  printf("\n");
}

static void run_tests(std::vector<Rank>& ranks, int nranks, const Options& o) {
  const size_t c = o.count;
  const double b = double(c) * sizeof(float);
  const double n = nranks;
  for (int it = 0; it < o.iters; it++) {
    // All-reduce of rank+1 everywhere: the sum is n(n+1)/2.
    for (auto& r : ranks) fill(r, c, float(r.rank + 1));
    each(ranks, [&](Rank& r) {
      NCCL_OK(ncclAllReduce(r.send, r.recv, c, ncclFloat32, ncclSum, r.comm, r.stream));
    });
    sync_all(ranks);
    for (auto& r : ranks) check("all-reduce", r.rank, first(r, r.recv), float(n * (n + 1) / 2));

    // All-gather of c per rank: block k holds k+1.
    each(ranks, [&](Rank& r) {
      NCCL_OK(ncclAllGather(r.send, r.recv, c, ncclFloat32, r.comm, r.stream));
    });
    sync_all(ranks);
    for (auto& r : ranks) check("all-gather", r.rank, first(r, r.recv + (nranks - 1) * c), float(nranks));

    // Reduce-scatter to c per rank of n·c contributions of rank+1.
    for (auto& r : ranks) fill(r, c * nranks, float(r.rank + 1));
    each(ranks, [&](Rank& r) {
      NCCL_OK(ncclReduceScatter(r.send, r.recv, c, ncclFloat32, ncclSum, r.comm, r.stream));
    });
    sync_all(ranks);
    for (auto& r : ranks) check("reduce-scatter", r.rank, first(r, r.recv), float(n * (n + 1) / 2));

    // Broadcast of c from rank 0 (which sends 1).
    each(ranks, [&](Rank& r) {
      NCCL_OK(ncclBroadcast(r.send, r.recv, c, ncclFloat32, 0, r.comm, r.stream));
    });
    sync_all(ranks);
    for (auto& r : ranks) check("broadcast", r.rank, first(r, r.recv), 1.0f);

    // Ranks 0 and 1 exchange c floats, each in a group of a send and a receive.
    if (nranks >= 2) {
      NCCL_OK(ncclGroupStart());
      for (auto& r : ranks) {
        if (r.rank > 1) continue;
        CUDA_OK(cudaSetDevice(r.device));
        int peer = 1 - r.rank;
        NCCL_OK(ncclSend(r.send, c, ncclFloat32, peer, r.comm, r.stream));
        NCCL_OK(ncclRecv(r.recv, c, ncclFloat32, peer, r.comm, r.stream));
      }
      NCCL_OK(ncclGroupEnd());
      sync_all(ranks);
      for (auto& r : ranks)
        if (r.rank <= 1) check("send/recv", r.rank, first(r, r.recv), float(2 - r.rank));
    }
  }
  for (auto& r : ranks) {
    int k = o.iters;
    expect(r.rank, "ncclAllReduce", k, c, b, b, -1);
    expect(r.rank, "ncclAllGather", k, c, b, b * n, -1);
    expect(r.rank, "ncclReduceScatter", k, c, b * n, b, -1);
    expect(r.rank, "ncclBroadcast", k, c, r.rank == 0 ? b : 0, r.rank == 0 ? 0 : b, 0);
    if (nranks >= 2 && r.rank <= 1) {
      printf("expect rank=%d op=ncclSend calls=%d peer=%d count=%zu bytes=%.0f\n", r.rank, k, 1 - r.rank, c, b);
      printf("expect rank=%d op=ncclRecv calls=%d peer=%d count=%zu bytes=%.0f\n", r.rank, k, 1 - r.rank, c, b);
    }
    if (nranks == 1)
      printf("expect rank=0 note=one-rank-communicator: NCCL short-cuts collectives and reports no events\n");
  }
}

static void bench(std::vector<Rank>& ranks, long n, size_t count) {
  // Warm up, then time n all-reduces of `count` floats, each synchronized.
  auto once = [&]() {
    each(ranks, [&](Rank& r) {
      NCCL_OK(ncclAllReduce(r.send, r.recv, count, ncclFloat32, ncclSum, r.comm, r.stream));
    });
    sync_all(ranks);
  };
  for (int i = 0; i < 100; i++) once();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; i++) once();
  auto t1 = std::chrono::steady_clock::now();
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
  printf("bench rank=%d allreduce_bytes=%zu iterations=%ld ns_per_allreduce=%.0f\n", ranks[0].rank,
         count * sizeof(float), n, ns);
}

int main(int argc, char** argv) {
  int world_rank = 0, world_size = 1;
#ifdef WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
#endif
  (void)world_size;
  Options o = parse(argc, argv);
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) {
    fprintf(stderr, "no GPU\n");
    return 2;
  }
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));

  std::vector<Rank> ranks;
  int nranks = 0;
#ifdef WITH_MPI
  nranks = world_size;
  ncclUniqueId id;
  if (world_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  Rank r;
  r.rank = world_rank;
  r.device = world_rank % ndev;
  CUDA_OK(cudaSetDevice(r.device));
  NCCL_OK(ncclCommInitRank(&r.comm, nranks, id, world_rank));
  ranks.push_back(r);
#else
  nranks = ndev;
  std::vector<ncclComm_t> comms(ndev);
  std::vector<int> devs(ndev);
  for (int d = 0; d < ndev; d++) devs[d] = d;
  NCCL_OK(ncclCommInitAll(comms.data(), ndev, devs.data()));
  for (int d = 0; d < ndev; d++) {
    Rank r;
    r.rank = d;
    r.device = d;
    r.comm = comms[d];
    ranks.push_back(r);
  }
#endif
  size_t elems = std::max(std::max(o.count, size_t(2)), o.bench_count) * size_t(nranks);
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&r.send, elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&r.recv, elems * sizeof(float)));
    CUDA_OK(cudaMemset(r.send, 0, elems * sizeof(float)));
  }
  if (world_rank == 0)
    printf("nccl_test: NCCL %d, %d rank(s), %d GPU(s) visible, %s\n", version, nranks, ndev,
#ifdef WITH_MPI
           "one rank per process (MPI)"
#else
           "one process (ncclCommInitAll)"
#endif
    );
  fflush(stdout);

  if (o.bench > 0) {
    bench(ranks, o.bench, o.bench_count);
  } else {
    run_tests(ranks, nranks, o);
  }
  fflush(stdout);

  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamSynchronize(r.stream));
    NCCL_OK(ncclCommDestroy(r.comm));
    CUDA_OK(cudaFree(r.send));
    CUDA_OK(cudaFree(r.recv));
    CUDA_OK(cudaStreamDestroy(r.stream));
  }
#ifdef WITH_MPI
  int bad = failures;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  failures = bad;
  MPI_Finalize();
#endif
  if (failures) {
    fprintf(stderr, "nccl_test: %d wrong results\n", failures);
    return 1;
  }
  return 0;
}
