/* Benchmark client (GPU side) for bench/gpu-calls.sh: what CUPTI itself
 * costs a runtime call whose callback is enabled. Injected with
 * CUDA_INJECTION64_PATH, it subscribes with a callback that returns at
 * once and enables every runtime API callback: each call then pays
 * CUPTI's dispatch (entry and exit) and nothing of a tracer's. */
#include <cupti.h>
#include <stdio.h>

static CUpti_SubscriberHandle subscriber;

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  (void)user; (void)domain; (void)cbid; (void)data;
}

int InitializeInjection(void) {
  if (cuptiSubscribe(&subscriber, on_callback, NULL) != CUPTI_SUCCESS ||
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_callbacks: CUPTI refused the subscription\n");
  }
  return 1;
}
