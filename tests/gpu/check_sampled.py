"""Checks of the sampled part of tests/gpu/run.sh, called by
check_archives.py: the CUDA + MPI program of the mpi part
(programs/mpi_cuda.cu, 2 ranks) traced with `--sampling 1ms --unwinding`
on the GPU machine: the program's output as in the mpi part, each rank's
kernels as the program counts them, call stacks sampled on both ranks, and
every MPI call a CallingContextEnter whose path holds `main` (the CUDA
agent's and CUPTI's threads beside the sampler's do not disturb either);
every CUDA runtime call recorded a CallingContextEnter too, its path
holding `main` and no frame of CUPTI, the driver or the runtime; in the
Cube profile, the kernel `step` under `main > ... > cudaLaunchKernel` (the
call path of its launch) with the kernel time."""

import os
import re
import tarfile
import xml.etree.ElementTree as ET
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
    without_main, cuda_calls, plain_cuda, library_frames = [], Counter(), 0, []
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
                if names[0].startswith("cuda"):
                    cuda_calls[names[0]] += 1
                    if any(LIBRARY.search(n) for n in names[1:]):
                        library_frames.append(" > ".join(reversed(names)))
            elif isinstance(ev, CallingContextLeave):
                leaves += 1
            elif isinstance(ev, Enter):
                name = ev.region.name
                if name.startswith("MPI_"):
                    plain_mpi += 1
                if name.startswith("cuda"):
                    plain_cuda += 1
    check("sampled: call stacks sampled on both ranks", samples["MPI Rank 0"] > 0 and samples["MPI Rank 1"] > 0,
          dict(samples))
    check("sampled: every MPI call a CallingContextEnter with its Leave, none plain",
          sum(calls.values()) > 0 and sum(calls.values()) == leaves and plain_mpi == 0,
          (dict(calls), leaves, plain_mpi))
    check("sampled: every MPI and CUDA call's path holds main", not without_main, without_main[:3])
    check("sampled: every CUDA runtime call a CallingContextEnter, none plain (cudaLaunchKernel, cudaMemcpy)",
          cuda_calls["cudaLaunchKernel"] >= 20 and cuda_calls["cudaMemcpy"] >= 40 and plain_cuda == 0,
          (dict(cuda_calls), plain_cuda))
    check("sampled: no CUDA call's path holds a frame of CUPTI, the driver or the runtime", not library_frames,
          library_frames[:3])
    under = launch_paths(os.path.join(exp_dir, "profile.cubex"), "step(float*, int, float)")
    check("sampled: the profile's kernel step under main > ... > cudaLaunchKernel, its launch's call path",
          bool(under) and all("main" in p and p[-1] == "cudaLaunchKernel" for p in under),
          [" > ".join(p) for p in under][:3])
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


# A frame of CUPTI, the driver or the CUDA runtime (named, or as
# "[libcuda.so.1]" where it has no symbol).
LIBRARY = re.compile(r"^(cuda[A-Z]|cu[A-Z]|__cudart|cudart::)|libcuda|libcupti|libcudart")


def launch_paths(profile, kernel):
    """The call paths (root excluded) above each cnode of region `kernel`
    in a Cube profile's anchor.xml."""
    with tarfile.open(profile) as tar:
        anchor = ET.fromstring(tar.extractfile("anchor.xml").read())
    names = {r.get("id"): r.findtext("name") for r in anchor.iter("region")}
    found = []

    def walk(cnode, path):
        name = names.get(cnode.get("calleeId"))
        if name == kernel:
            found.append(path[1:])
        for child in cnode.findall("cnode"):
            walk(child, path + [name])

    for root in anchor.find("program").findall("cnode"):
        walk(root, [])
    return found


# The user's NCCL calls that nccl_four.cu's collectives mode makes.
NCCL_CALLS = {"ncclAllReduce", "ncclBroadcast"}


def check_paths(check, results):
    """The paths part: nccl_four.cu's collectives under --unwinding. Every
    ncclAllReduce and ncclBroadcast region is a CallingContextEnter whose
    path holds main and no frame of NCCL or CUDA's libraries."""
    exp_dir = os.path.join(results, "exp-paths")
    if not os.path.isdir(exp_dir):
        return
    entered, plain, without_main, library = Counter(), 0, [], []
    with otf2.reader.open(os.path.join(exp_dir, "traces.otf2")) as t:
        for loc, ev in t.events:
            if isinstance(ev, Enter) and ev.region.name in NCCL_CALLS:
                plain += 1
            elif isinstance(ev, CallingContextEnter) and ev.calling_context.region.name in NCCL_CALLS:
                names, c = [], ev.calling_context
                while c is not None:
                    names.append(c.region.name)
                    c = c.parent
                entered[(loc.group.name, names[0])] += 1
                if "main" not in names:
                    without_main.append(" > ".join(reversed(names)))
                if any(LIBRARY.search(n) or NCCL_FRAME.search(n) for n in names[1:]):
                    library.append(" > ".join(reversed(names)))
    check("paths: every ncclAllReduce and ncclBroadcast a CallingContextEnter (--unwinding), none plain",
          len(entered) >= 4 and all(n == 20 for n in entered.values()) and plain == 0, (dict(entered), plain))
    check("paths: every NCCL call's path holds main", not without_main, without_main[:3])
    check("paths: no NCCL call's path holds a frame of NCCL or CUDA's libraries", not library, library[:3])


NCCL_FRAME = re.compile(r"^nccl[A-Z]|libnccl")
