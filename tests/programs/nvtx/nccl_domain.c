/* NCCL's NVTX ranges without NCCL: ranges in a domain named "NCCL", as
 * NCCL 2.28 makes them around its API functions (a registered string per
 * function, an extended payload of NCCL's static schema: communicator
 * hash, bytes), for the test that gputrace's NVTX library hands them to
 * the NCCL plugin, which records each as an NCCL region.
 *
 * Per iteration: ncclGroupStart; ncclSend (payload: comm, 64 bytes,
 * peer 1); ncclGroupEnd; ncclAllGather of 0 bytes (a collective of count
 * 0). Prints "expect iterations=N".
 *
 * Build: gcc -I<nvtx3 include> -o nccl_domain nccl_domain.c -ldl */
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* nvToolsExtPayload.h's nvtxPayloadData_t and NVTX_PAYLOAD_TYPE_EXT (the
 * payload header is not among those the tests fetch). */
typedef struct {
  uint64_t schemaId;
  size_t size;
  const void* payload;
} payload_data;
#define PAYLOAD_TYPE_EXT ((int32_t)0xDFBD0009)
#define SCHEMA_STATIC_START (1ull << 24)

struct send_recv { uint64_t comm; size_t bytes; int peer; };
struct all_gather { uint64_t comm; size_t bytes; };

static void push(nvtxDomainHandle_t d, nvtxStringHandle_t name, uint64_t sid, const void* p, size_t size) {
  payload_data data = {SCHEMA_STATIC_START + sid, size, p};
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  if (p) {
    a.payloadType = PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = (uint64_t)(uintptr_t)&data;
  }
  nvtxDomainRangePushEx(d, &a);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
  nvtxStringHandle_t start = nvtxDomainRegisterStringA(d, "ncclGroupStart");
  nvtxStringHandle_t send = nvtxDomainRegisterStringA(d, "ncclSend");
  nvtxStringHandle_t end = nvtxDomainRegisterStringA(d, "ncclGroupEnd");
  nvtxStringHandle_t ag = nvtxDomainRegisterStringA(d, "ncclAllGather");
  struct send_recv s = {0x1234, 64, 1};
  struct all_gather g = {0x1234, 0};
  for (int i = 0; i < n; i++) {
    push(d, start, 0, NULL, 0);
    nvtxDomainRangePop(d);
    push(d, send, 9, &s, sizeof s);
    nvtxDomainRangePop(d);
    push(d, end, 0, NULL, 0);
    nvtxDomainRangePop(d);
    push(d, ag, 4, &g, sizeof g);
    nvtxDomainRangePop(d);
  }
  printf("expect iterations=%d\n", n);
  return 0;
}
