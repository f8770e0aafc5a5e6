"""Checks of the sampled part of tests/gpu/run.sh, called by
check_archives.py: the CUDA + MPI program of the mpi part
(programs/mpi_cuda.cu, 2 ranks) traced with `--sampling 1ms --unwinding`
on the GPU machine: the program's output as in the mpi part, each rank's
kernels as the program counts them, call stacks sampled on both ranks, and
every MPI call a CallingContextEnter whose path holds `main` (the CUDA
agent's and CUPTI's threads beside the sampler's do not disturb either)."""

import os
from collections import Counter

import otf2
from otf2.events import CallingContextEnter, CallingContextLeave, CallingContextSample, Enter


def check_sampled(check, read, expectations, results):
    exp_dir = os.path.join(results, "exp-sampled")
    if not os.path.isdir(exp_dir):
        return
    out = os.path.join(results, "sampled.out")
    want = expectations(out)
    check("sampled: the program's expect lines", "rank 0 kernels" in want and "rank 1 kernels" in want, want)
    samples, calls, plain_mpi, kernels, leaves = Counter(), Counter(), 0, Counter(), 0
    without_main = []
    with otf2.reader.open(os.path.join(exp_dir, "traces.otf2")) as t:
        for loc, ev in t.events:
            group = loc.group.name
            if isinstance(ev, CallingContextSample):
                samples[group] += 1
            elif isinstance(ev, CallingContextEnter):
                names, c = [], ev.calling_context
                while c is not None:
                    names.append(c.region.name)
                    c = c.parent
                calls[group] += 1
                if "main" not in names:
                    without_main.append(" > ".join(reversed(names)))
            elif isinstance(ev, CallingContextLeave):
                leaves += 1
            elif isinstance(ev, Enter):
                name = ev.region.name
                if name.startswith("MPI_"):
                    plain_mpi += 1
    check("sampled: call stacks sampled on both ranks", samples["MPI Rank 0"] > 0 and samples["MPI Rank 1"] > 0,
          dict(samples))
    check("sampled: every MPI call a CallingContextEnter with its Leave, none plain",
          sum(calls.values()) > 0 and sum(calls.values()) == leaves and plain_mpi == 0,
          (dict(calls), leaves, plain_mpi))
    check("sampled: every MPI call's path holds main", not without_main, without_main[:3])
    f = read(os.path.join(exp_dir, "traces.otf2"))
    for k in f["kernels"]:
        kernels[k["creator"]] += 1
    for r in (0, 1):
        n = kernels[f"MPI Rank {r}"]
        check(f"sampled: rank {r} kernels as the program counts them", str(n) == want.get(f"rank {r} kernels"), n)
    check("sampled: timestamps non-decreasing", f["mono"])
    got = dict(kernels)
    mpi_out = os.path.join(results, "mpi.out")
    if os.path.exists(mpi_out):
        # The ranks print in whichever order they come: compared as sets.
        same = sorted(l for l in open(mpi_out) if l.startswith("expect")) == sorted(
            l for l in open(out) if l.startswith("expect"))
        check("sampled: the program's expect lines as in the traced run without sampling", same, got)
