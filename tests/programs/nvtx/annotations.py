"""NVTX from Python, through the `nvtx` package: what the integration
test (crates/gputrace/tests/integration/nvtx.rs) checks in the archive.
Usage: annotations.py STEPS

Main thread:
  STEPS x  "train step" (nvtx.annotate as a context manager, domain
           "trainer", category "compute") { "forward" (decorated
           function), "backward" (push_range/pop_range, default domain),
           mark "step done" }
  STEPS x  start_range "prefetch" here, end_range on another thread
  once:    start_range "epoch" in domain "trainer" and end it
Thread "loader" (threading name; not an NVTX name): STEPS x
  nvtx.annotate("load batch").
"""

import os
import sys
import threading

import nvtx


@nvtx.annotate("forward", color="blue")
def forward():
    return sum(range(100))


def main(steps):
    for i in range(steps):
        with nvtx.annotate("train step", domain="trainer", category="compute", payload=i):
            forward()
            nvtx.push_range("backward", color="red")
            nvtx.pop_range()
            nvtx.mark("step done")
    for _ in range(steps):
        rng = nvtx.start_range("prefetch")
        t = threading.Thread(target=nvtx.end_range, args=(rng,))
        t.start()
        t.join()
    rng = nvtx.start_range("epoch", domain="trainer")
    nvtx.end_range(rng)

    def loader():
        for _ in range(steps):
            with nvtx.annotate("load batch"):
                pass

    t = threading.Thread(target=loader, name="loader")
    t.start()
    t.join()
    with open("/proc/self/maps") as f:
        mapped = "libgputrace_nvtx" in f.read()
    print("injection mapped:", "yes" if mapped else "no")


if __name__ == "__main__":
    main(int(sys.argv[1]))
