"""Checks of the straggler4 part of tests/gpu/run.sh, called by
check_archives.py: on a run where one rank's GPU spins a known time in the
kernel spin_wait before each ncclAllReduce, its host calls on time
(programs/straggler_gpu.cu), `gputrace analyze --format json`
(straggler4.analyze.out) names that rank as the NCCL straggler, judged by
the NCCL kernels' starts, the kernel spin_wait as the cause, and its excess
per all-reduce within 10 % of the time injected."""

import json
import os
import re


def check_straggler(check, results):
    out = os.path.join(results, "straggler4.out")
    if not os.path.exists(out):
        return
    exp = {}
    for line in open(out):
        m = re.match(r"expect (.*) (\S+)$", line.strip())
        if m:
            exp[m.group(1)] = m.group(2)
    need = ("slow rank", "injected ns", "iterations", "warmup")
    check("straggler4: the program's expect lines", all(k in exp for k in need), exp)
    if not all(k in exp for k in need):
        return
    slow, injected = int(exp["slow rank"]), int(exp["injected ns"])
    iters, warmup = int(exp["iterations"]), int(exp["warmup"])
    try:
        with open(os.path.join(results, "straggler4.analyze.out")) as f:
            a = json.load(f)
    except (OSError, ValueError) as e:
        check("straggler4: gputrace analyze --format json", False, e)
        return
    nccl = [s for s in a.get("stragglers", []) if s.get("paradigm") == "NCCL"]
    check("straggler4: an NCCL straggler", bool(nccl), a.get("stragglers"))
    if not nccl:
        return
    top = nccl[0]
    brief = {k: top.get(k) for k in ("rank", "operations", "times_last", "by_kernel", "lateness_ns", "wait_caused_ns",
                                     "cause_kind", "cause", "cause_excess_ns")}
    check(f"straggler4: rank {slow} is the NCCL straggler", top.get("rank") == slow, brief)
    check("straggler4: last at every all-reduce of the loop (of loop + warm-up)",
          top.get("times_last", 0) >= iters and top.get("operations") == iters + warmup, brief)
    check("straggler4: judged by the NCCL kernels' starts", top.get("by_kernel", 0) >= iters, brief)
    check("straggler4: the cause is the kernel spin_wait",
          top.get("cause_kind") == "kernel" and "spin_wait" in (top.get("cause") or ""), brief)
    per_op = top.get("cause_excess_ns", 0) / max(iters, 1)
    check("straggler4: spin_wait's excess per all-reduce within 10% of the time injected",
          abs(per_op - injected) <= 0.1 * injected, f"{per_op / 1e6:.3f} ms vs {injected / 1e6:.3f} ms")
    # The warm-up all-reduces may add to the lateness (NCCL connects at
    # the first), never take from it.
    late = top.get("lateness_ns", 0) / max(iters, 1)
    check("straggler4: its lateness per all-reduce at least 90% of the time injected", late >= 0.9 * injected,
          f"{late / 1e6:.3f} ms vs {injected / 1e6:.3f} ms")
    err = os.path.join(results, "straggler4.err")
    lines = [l.strip() for l in open(err) if "Straggler:" in l] if os.path.exists(err) else []
    if lines:
        check("straggler4: the run summary's Straggler line names its GPU and spin_wait",
              f"rank {slow}'s GPU started" in lines[0] and "longer in kernel spin_wait" in lines[0], lines[0])
