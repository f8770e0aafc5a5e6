// NCCL test program for the four-GPU checks: the NCCL patterns that real
// multi-GPU programs use, each with its result checked (a wrong result
// exits 1), one mode per run:
//
//   groups K    K times ncclGroupStart; ncclSend to the next rank;
//               ncclRecv from the previous; ncclGroupEnd (a ring)
//   halo K      K halo exchanges: send/receive to both neighbours in one
//               group (4 calls), on a non-blocking stream
//   zero K      K rounds of all-gather, reduce-scatter, all-reduce and
//               broadcast of 0 elements, then the same with 2 elements
//   alltoall K  K ncclAlltoAll of 2 floats to every rank (NCCL >= 2.28),
//               else the same as sends and receives in a group
//   graph K     a halo exchange captured into a CUDA graph once, the
//               graph launched K times (each launch also adds 1 on the GPU)
//   collectives K  K all-reduces and broadcasts of 64 Ki floats
//
// Two builds: `nccl_four` (one process drives every GPU: one communicator
// per GPU from ncclCommInitAll, every call in a group over them) and
// `nccl_four_mpi` (-DWITH_MPI: one rank per GPU). Prints "expect" lines:
// per rank, each NCCL call the program made, how many times, the count and
// the bytes (count × type size), for the checker to compare with the
// archive and NCCL's own log.
//
// Build: nvcc -O2 -o nccl_four nccl_four.cu -lnccl
//        nvcc -O2 -DWITH_MPI -o nccl_four_mpi nccl_four.cu -lnccl $(mpicc --showme:compile) $(mpicc --showme:link)
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef WITH_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#define CUDA_OK(call)                                                                                \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      fprintf(stderr, "nccl_four: %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)
#define NCCL_OK(call)                                                                                \
  do {                                                                                               \
    ncclResult_t r_ = (call);                                                                        \
    if (r_ != ncclSuccess) {                                                                         \
      fprintf(stderr, "nccl_four: %s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

__global__ void add_one(float* p, size_t n) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}

struct Rank {
  int rank = 0, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float *send = nullptr, *recv = nullptr, *recv2 = nullptr;
};

static int nranks = 1;
static int failures = 0;
// (rank, op) -> (calls, count); counts of one op are all alike in a mode.
static std::map<std::pair<int, std::string>, std::pair<long, size_t>> made;

static void note(int rank, const char* op, size_t count) {
  auto& m = made[{rank, op}];
  m.first++;
  m.second = count;
}

static const size_t N = 65536;  // floats per buffer block

static void fill(Rank& r, float v, size_t n) {
  std::vector<float> h(n, v);
  CUDA_OK(cudaSetDevice(r.device));
  CUDA_OK(cudaMemcpy(r.send, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

static float at(Rank& r, const float* p, size_t i) {
  float v = 0;
  CUDA_OK(cudaSetDevice(r.device));
  CUDA_OK(cudaMemcpy(&v, p + i, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

static void want(const char* what, int rank, float got, float expected) {
  if (got != expected) {
    fprintf(stderr, "rank %d: %s gave %g, expected %g\n", rank, what, got, expected);
    failures++;
  }
}

static void sync_all(std::vector<Rank>& ranks) {
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamSynchronize(r.stream));
  }
}

// Runs op for every local rank, in a group when one process drives several.
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

static void halo_calls(Rank& r, size_t c, bool both) {
  int next = (r.rank + 1) % nranks, prev = (r.rank + nranks - 1) % nranks;
  NCCL_OK(ncclSend(r.send, c, ncclFloat32, next, r.comm, r.stream));
  NCCL_OK(ncclRecv(r.recv, c, ncclFloat32, prev, r.comm, r.stream));
  note(r.rank, "ncclSend", c);
  note(r.rank, "ncclRecv", c);
  if (both) {
    NCCL_OK(ncclSend(r.send, c, ncclFloat32, prev, r.comm, r.stream));
    NCCL_OK(ncclRecv(r.recv2, c, ncclFloat32, next, r.comm, r.stream));
    note(r.rank, "ncclSend", c);
    note(r.rank, "ncclRecv", c);
  }
}

// A group of sends and receives: an explicit group (one process with
// several GPUs already groups them; NCCL allows the nesting).
static void exchange(std::vector<Rank>& ranks, size_t c, bool both) {
  NCCL_OK(ncclGroupStart());
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    halo_calls(r, c, both);
  }
  NCCL_OK(ncclGroupEnd());
}

static void check_halo(std::vector<Rank>& ranks, bool both, float base) {
  for (auto& r : ranks) {
    int prev = (r.rank + nranks - 1) % nranks, next = (r.rank + 1) % nranks;
    want("receive from the previous rank", r.rank, at(r, r.recv, 7), base + prev);
    if (both) want("receive from the next rank", r.rank, at(r, r.recv2, 7), base + next);
  }
}

int main(int argc, char** argv) {
  int world = 0, size = 1;
#ifdef WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#endif
  const char* mode = argc > 1 ? argv[1] : "groups";
  int k = argc > 2 ? atoi(argv[2]) : 10;
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  std::vector<Rank> ranks;
#ifdef WITH_MPI
  nranks = size;
  ncclUniqueId id;
  if (world == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  Rank one;
  one.rank = world;
  one.device = world % ndev;
  CUDA_OK(cudaSetDevice(one.device));
  NCCL_OK(ncclCommInitRank(&one.comm, nranks, id, world));
  ranks.push_back(one);
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
  const size_t elems = N * size_t(nranks);
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&r.send, elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&r.recv, elems * sizeof(float)));
    CUDA_OK(cudaMalloc(&r.recv2, elems * sizeof(float)));
    CUDA_OK(cudaMemset(r.recv, 0, elems * sizeof(float)));
    CUDA_OK(cudaMemset(r.recv2, 0, elems * sizeof(float)));
  }
  if (world == 0) {
    int v = 0;
    NCCL_OK(ncclGetVersion(&v));
    printf("nccl_four: NCCL %d, mode %s, %d iterations, %d rank(s)\n", v, mode, k, nranks);
  }

  const std::string m = mode;
  if (m == "groups" || m == "halo") {
    bool both = m == "halo";
    for (auto& r : ranks) fill(r, float(r.rank), N);
    for (int i = 0; i < k; i++) {
      exchange(ranks, N, both);
      if (i % 10 == 9 || i == k - 1) sync_all(ranks);
    }
    check_halo(ranks, both, 0.0f);
  } else if (m == "zero") {
    for (auto& r : ranks) fill(r, float(r.rank + 1), elems);
    for (size_t c : {size_t(0), size_t(2)}) {
      for (int i = 0; i < k; i++) {
        each(ranks, [&](Rank& r) {
          NCCL_OK(ncclAllGather(r.send, r.recv, c, ncclFloat32, r.comm, r.stream));
          note(r.rank, "ncclAllGather", c);
        });
        each(ranks, [&](Rank& r) {
          NCCL_OK(ncclReduceScatter(r.send, r.recv2, c, ncclFloat32, ncclSum, r.comm, r.stream));
          note(r.rank, "ncclReduceScatter", c);
        });
        each(ranks, [&](Rank& r) {
          NCCL_OK(ncclAllReduce(r.send, r.recv2, c, ncclFloat32, ncclSum, r.comm, r.stream));
          note(r.rank, "ncclAllReduce", c);
        });
        each(ranks, [&](Rank& r) {
          NCCL_OK(ncclBroadcast(r.send, r.recv, c, ncclFloat32, 0, r.comm, r.stream));
          note(r.rank, "ncclBroadcast", c);
        });
      }
      sync_all(ranks);
    }
    float sum = float(nranks) * float(nranks + 1) / 2;
    for (auto& r : ranks) want("all-reduce of 2", r.rank, at(r, r.recv2, 1), sum);
    for (auto& r : ranks) want("broadcast of 2", r.rank, at(r, r.recv, 1), 1.0f);
  } else if (m == "alltoall") {
    for (auto& r : ranks) fill(r, float(r.rank), elems);
    const size_t c = 2;
    for (int i = 0; i < k; i++) {
#if NCCL_VERSION_CODE >= 22800
      each(ranks, [&](Rank& r) {
        NCCL_OK(ncclAlltoAll(r.send, r.recv, c, ncclFloat32, r.comm, r.stream));
        note(r.rank, "ncclAlltoAll", c);
      });
#else
      NCCL_OK(ncclGroupStart());
      for (auto& r : ranks)
        for (int p = 0; p < nranks; p++) {
          NCCL_OK(ncclSend(r.send + p * c, c, ncclFloat32, p, r.comm, r.stream));
          NCCL_OK(ncclRecv(r.recv + p * c, c, ncclFloat32, p, r.comm, r.stream));
          note(r.rank, "ncclSend", c);
          note(r.rank, "ncclRecv", c);
        }
      NCCL_OK(ncclGroupEnd());
#endif
    }
    sync_all(ranks);
    for (auto& r : ranks)
      for (int p = 0; p < nranks; p++) want("all-to-all", r.rank, at(r, r.recv, p * c), float(p));
  } else if (m == "graph") {
    // Capture one halo exchange per rank's stream, then launch K times;
    // a kernel in the graph adds 1 to the send buffer after the exchange.
    for (auto& r : ranks) fill(r, float(r.rank), N);
    std::vector<cudaGraphExec_t> execs(ranks.size());
    std::vector<cudaGraph_t> graphs(ranks.size());
    for (auto& r : ranks) {
      CUDA_OK(cudaSetDevice(r.device));
      CUDA_OK(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeRelaxed));
    }
    exchange(ranks, N, true);
    for (size_t i = 0; i < ranks.size(); i++) {
      Rank& r = ranks[i];
      CUDA_OK(cudaSetDevice(r.device));
      add_one<<<(N + 255) / 256, 256, 0, r.stream>>>(r.send, N);
      CUDA_OK(cudaStreamEndCapture(r.stream, &graphs[i]));
      CUDA_OK(cudaGraphInstantiate(&execs[i], graphs[i], 0));
    }
    for (int i = 0; i < k; i++)
      for (size_t j = 0; j < ranks.size(); j++) {
        CUDA_OK(cudaSetDevice(ranks[j].device));
        CUDA_OK(cudaGraphLaunch(execs[j], ranks[j].stream));
      }
    sync_all(ranks);
    // The last launch received what the neighbours held after k-1 adds.
    check_halo(ranks, true, float(k - 1));
    for (size_t i = 0; i < ranks.size(); i++) {
      CUDA_OK(cudaGraphExecDestroy(execs[i]));
      CUDA_OK(cudaGraphDestroy(graphs[i]));
    }
    for (auto& r : ranks) printf("expect rank=%d graph_launches=%d\n", r.rank, k);
  } else if (m == "collectives") {
    for (auto& r : ranks) fill(r, float(r.rank + 1), N);
    for (int i = 0; i < k; i++) {
      each(ranks, [&](Rank& r) {
        NCCL_OK(ncclAllReduce(r.send, r.recv, N, ncclFloat32, ncclSum, r.comm, r.stream));
        note(r.rank, "ncclAllReduce", N);
      });
      each(ranks, [&](Rank& r) {
        NCCL_OK(ncclBroadcast(r.send, r.recv2, N, ncclFloat32, 0, r.comm, r.stream));
        note(r.rank, "ncclBroadcast", N);
      });
    }
    sync_all(ranks);
    float sum = float(nranks) * float(nranks + 1) / 2;
    for (auto& r : ranks) want("all-reduce", r.rank, at(r, r.recv, 5), sum);
  } else {
    fprintf(stderr, "nccl_four: unknown mode %s\n", mode);
    return 2;
  }

  for (auto& [key, v] : made)
    printf("expect rank=%d op=%s calls=%ld count=%zu bytes=%zu\n", key.first, key.second.c_str(), v.first, v.second,
           v.second * sizeof(float));
  fflush(stdout);
  for (auto& r : ranks) {
    CUDA_OK(cudaSetDevice(r.device));
    CUDA_OK(cudaStreamSynchronize(r.stream));
    NCCL_OK(ncclCommDestroy(r.comm));
    CUDA_OK(cudaFree(r.send));
    CUDA_OK(cudaFree(r.recv));
    CUDA_OK(cudaFree(r.recv2));
    CUDA_OK(cudaStreamDestroy(r.stream));
  }
#ifdef WITH_MPI
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
#endif
  if (failures) {
    fprintf(stderr, "nccl_four: %d wrong results\n", failures);
    return 1;
  }
  if (world == 0) printf("nccl_four: %s ok\n", mode);
  return 0;
}
