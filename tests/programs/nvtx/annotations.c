/* NVTX from C, through the nvtx3 headers: every kind of annotation the
 * integration test (crates/gputrace/tests/integration/nvtx.rs) checks in
 * the archive. Usage: annotations ITERATIONS HANDOFFS WORKER_TASKS
 *
 * Main thread ("driver"):
 *   ITERATIONS x  iteration { assemble, solve [category 1, payload i]
 *                 { smooth (domain "solver", registered string,
 *                 category 2) }, mark "iteration done" }
 *   once:         push "wide ✓" (nvtxRangePushW), a mark "converged" in
 *                 domain "solver"
 *   HANDOFFS x    start "handoff" here, end it on a fresh thread
 *   once:         start "phase A", start "phase B", end A, end B (not
 *                 nested: two lanes); then domain "solver" start/end
 *                 "domain span"
 * Thread "worker" (named with nvtxNameOsThreadA): WORKER_TASKS x push
 *   "worker task".
 * Thread named through nvtxDomainResourceCreate (GENERIC_THREAD_NATIVE):
 *   once push "named by resource".
 * Finally prints whether the injection library is mapped in the process.
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint32_t tid(void) { return (uint32_t)syscall(SYS_gettid); }

static int worker_tasks;

static void *worker(void *arg) {
    (void)arg;
    nvtxNameOsThreadA(tid(), "worker");
    for (int i = 0; i < worker_tasks; i++) {
        nvtxRangePushA("worker task");
        nvtxRangePop();
    }
    return NULL;
}

static void *ender(void *arg) {
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

static void *resource_named(void *arg) {
    nvtxDomainHandle_t domain = arg;
    nvtxResourceAttributes_t r;
    memset(&r, 0, sizeof r);
    r.version = NVTX_VERSION;
    r.size = NVTX_RESOURCE_ATTRIB_STRUCT_SIZE;
    r.identifierType = NVTX_RESOURCE_TYPE_GENERIC_THREAD_NATIVE;
    r.identifier.ullValue = tid();
    r.messageType = NVTX_MESSAGE_TYPE_ASCII;
    r.message.ascii = "resource-named";
    nvtxResourceHandle_t h = nvtxDomainResourceCreate(domain, &r);
    nvtxRangePushA("named by resource");
    nvtxRangePop();
    nvtxDomainResourceDestroy(h);
    return NULL;
}

static nvtxEventAttributes_t attributes(void) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

static int injection_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "libgputrace_nvtx")) found = 1;
    }
    if (f) fclose(f);
    return found;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s ITERATIONS HANDOFFS WORKER_TASKS\n", argv[0]);
        return 2;
    }
    int iterations = atoi(argv[1]), handoffs = atoi(argv[2]);
    worker_tasks = atoi(argv[3]);

    nvtxNameOsThreadA(tid(), "driver");
    nvtxNameCategoryA(1, "setup");
    nvtxDomainHandle_t solver = nvtxDomainCreateA("solver");
    nvtxDomainNameCategoryA(solver, 2, "linear algebra");
    nvtxStringHandle_t smooth = nvtxDomainRegisterStringA(solver, "smooth");

    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);

    for (int i = 0; i < iterations; i++) {
        nvtxRangePushA("iteration");
        nvtxRangePushA("assemble");
        nvtxRangePop();
        nvtxEventAttributes_t a = attributes();
        a.category = 1;
        a.colorType = NVTX_COLOR_ARGB;
        a.color = 0xff336699;
        a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        a.payload.ullValue = (uint64_t)i;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "solve";
        nvtxRangePushEx(&a);
        nvtxEventAttributes_t s = attributes();
        s.category = 2;
        s.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        s.message.registered = smooth;
        nvtxDomainRangePushEx(solver, &s);
        nvtxDomainRangePop(solver);
        nvtxRangePop();
        nvtxMarkA("iteration done");
        nvtxRangePop();
    }
    nvtxRangePushW(L"wide \u2713");
    nvtxRangePop();
    nvtxEventAttributes_t c = attributes();
    c.messageType = NVTX_MESSAGE_TYPE_ASCII;
    c.message.ascii = "converged";
    nvtxDomainMarkEx(solver, &c);

    for (int i = 0; i < handoffs; i++) {
        nvtxRangeId_t id = nvtxRangeStartA("handoff");
        pthread_t e;
        pthread_create(&e, NULL, ender, &id);
        pthread_join(e, NULL);
    }
    nvtxRangeId_t pa = nvtxRangeStartA("phase A");
    nvtxRangeId_t pb = nvtxRangeStartA("phase B");
    nvtxRangeEnd(pa);
    nvtxRangeEnd(pb);
    nvtxEventAttributes_t d = attributes();
    d.messageType = NVTX_MESSAGE_TYPE_ASCII;
    d.message.ascii = "domain span";
    nvtxRangeId_t ds = nvtxDomainRangeStartEx(solver, &d);
    nvtxDomainRangeEnd(solver, ds);

    pthread_join(w, NULL);
    pthread_t r;
    pthread_create(&r, NULL, resource_named, solver);
    pthread_join(r, NULL);
    nvtxDomainDestroy(solver);

    printf("injection mapped: %s\n", injection_mapped() ? "yes" : "no");
    return 0;
}
