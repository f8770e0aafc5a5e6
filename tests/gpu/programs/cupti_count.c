/* An independent CUPTI activity counter, the ground truth of the GPU
 * checks: loaded by the CUDA driver (CUDA_INJECTION64_PATH) in place of
 * gputrace's agent, it enables the kernel, copy, peer-copy and memset
 * activity kinds and nothing else, counts every record CUPTI hands over,
 * and at exit writes one file per process that did GPU work:
 *
 *   $CUPTI_COUNT_DIR/<pid>.count   lines "key value":
 *     pid, rank (OMPI_COMM_WORLD_RANK, PMI_RANK or RANK; -1 if none),
 *     kernels, memsets, memset_bytes, copies_<kind> and bytes_<kind> per
 *     CUPTI copy kind (htod, dtoh, dtod, htoh, ptop, other), peer_copies
 *     and peer_bytes (MEMCPY2 records), dropped (records CUPTI dropped).
 *
 * Build (GPU machine): gcc -O2 -shared -fPIC -o libcupti_count.so cupti_count.c
 *   -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti
 * (CUPTI's headers decide the record layouts, so it is compiled there.) */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF (8u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long kernels, memsets, memset_bytes, peer_copies, peer_bytes, dropped;
/* NCCL's kernels and the largest grid among them: NCCL launches a block
 * per channel, so this says how many channels it chose. */
static unsigned long long nccl_kernels, nccl_grid_x_max;
static unsigned long long copies[6], copy_bytes[6];
static const char *kinds[6] = {"htod", "dtoh", "dtod", "htoh", "ptop", "other"};

static int kind_index(int k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return 0;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return 1;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return 2;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return 3;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return 4;
    default:
      return 5;
  }
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max) {
  *buffer = aligned_alloc(8, BUF);
  *size = *buffer ? BUF : 0;
  *max = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  CUpti_Activity *rec = NULL;
  (void)size;
  pthread_mutex_lock(&lock);
  while (valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        kernels++;
        /* gridX (int32 at byte 52) and name (at byte 104): the same in
         * every kernel record from CUpti_ActivityKernel4 to Kernel11
         * (crates/sys/cupti-sys's layout checks). */
        const unsigned char *b = (const unsigned char *)rec;
        int grid_x;
        const char *name;
        memcpy(&grid_x, b + 52, sizeof grid_x);
        memcpy(&name, b + 104, sizeof name);
        if (name && (strstr(name, "ncclDevKernel") || strstr(name, "ncclKernel"))) {
          nccl_kernels++;
          if (grid_x > 0 && (unsigned long long)grid_x > nccl_grid_x_max) nccl_grid_x_max = (unsigned long long)grid_x;
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
        int i = kind_index(m->copyKind);
        copies[i]++;
        copy_bytes[i] += m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        CUpti_ActivityMemcpyPtoP4 *p = (CUpti_ActivityMemcpyPtoP4 *)rec;
        peer_copies++;
        peer_bytes += p->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
        memsets++;
        memset_bytes += m->bytes;
        break;
      }
      default:
        break;
    }
  }
  size_t d = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS) dropped += d;
  pthread_mutex_unlock(&lock);
  free(buffer);
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  unsigned long long total = kernels + memsets + peer_copies;
  for (int i = 0; i < 6; i++) total += copies[i];
  const char *dir = getenv("CUPTI_COUNT_DIR");
  if (!total || !dir) return;
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = getenv("PMI_RANK");
  if (!rank) rank = getenv("RANK");
  char path[4096];
  snprintf(path, sizeof path, "%s/%d.count", dir, (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "pid %d\nrank %s\nkernels %llu\nmemsets %llu\nmemset_bytes %llu\n", (int)getpid(), rank ? rank : "-1",
          kernels, memsets, memset_bytes);
  for (int i = 0; i < 6; i++) fprintf(f, "copies_%s %llu\nbytes_%s %llu\n", kinds[i], copies[i], kinds[i], copy_bytes[i]);
  fprintf(f, "peer_copies %llu\npeer_bytes %llu\ndropped %llu\n", peer_copies, peer_bytes, dropped);
  fprintf(f, "nccl_kernels %llu\nnccl_grid_x_max %llu\n", nccl_kernels, nccl_grid_x_max);
  fclose(f);
}

int InitializeInjection(void) {
  static int done;
  if (done++) return 1;
  CUpti_SubscriberHandle h;
  if (cuptiSubscribe(&h, NULL, NULL) != CUPTI_SUCCESS) return 1;
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  /* CUPTI_COUNT_API=runtime|driver|both also records API calls (counted
   * nowhere): CUPTI's own cost and behaviour with them, for comparison. */
  const char *api = getenv("CUPTI_COUNT_API");
  if (api && (!strcmp(api, "runtime") || !strcmp(api, "both"))) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (api && (!strcmp(api, "driver") || !strcmp(api, "both"))) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  atexit(at_exit);
  return 1;
}
