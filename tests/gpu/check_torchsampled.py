"""Checks of the torchsampled part of tests/gpu/run.sh, called by
check_archives.py: the ddp4 part's PyTorch DDP program
(programs/torch_ddp.py, one worker per GPU) traced with `--sampling 1ms`
under `torchrun --standalone`. Torchrun passes LD_PRELOAD (the sampler
only) to its workers, and the sampler stays dormant in torchrun itself
(docs/sampling.md, *How*): each worker (one per `expect rank` line the
program prints) is a process of the archive with CallingContextSample
events, some of whose call paths hold a Python frame of the training
script (`torch_ddp.py:<module>`: its code is at module level) above
native frames of torch or CUDA; there is no other process (none for
torchrun, whose samples would have no frame of the script). The run
also has `--unwinding`: every CUDA runtime call PyTorch makes (through
the runtime library it loads) is a CallingContextEnter, none a plain
Enter, on every worker, their paths ending in torch's native frames
with no frame of CUPTI, the driver or the runtime."""

import os
import re

import otf2
from otf2.events import CallingContextEnter, CallingContextSample, Enter

# A native frame of torch, its C10 core, its Python binding, or of CUDA
# and its libraries (function names demangled, or `[libfoo.so]` where a
# library has no symbol for the address).
# A frame of CUPTI, the driver or the CUDA runtime (check_sampled.py's).
LIBRARY = re.compile(r"^(cuda[A-Z]|cu[A-Z]|__cudart|cudart::)|libcuda|libcupti|libcudart")
NATIVE = re.compile(r"at::|c10::|torch::|THP|cuda|cublas|nccl|libtorch|libc10", re.IGNORECASE)


def sampled_processes(archive, script, native=NATIVE):
    """Per process (location group) of the archive: its number of samples,
    and of those whose path holds a Python frame of `script` with a native
    frame that matches `native` inside it (outermost first: after it); and
    the CUDA runtime calls entered in a calling context per process, the
    plain Enters of CUDA runtime calls, and the paths that end in a CUDA
    library's frame."""
    samples, under_script = {}, {}
    processes = set()
    calls = {"paths": {}, "plain": 0, "library": []}
    with otf2.reader.open(archive) as t:
        for g in t.definitions.location_groups:
            if "PROCESS" in str(g.location_group_type):
                processes.add(g.name)
        for loc, ev in t.events:
            if isinstance(ev, Enter) and ev.region.name.startswith("cuda"):
                calls["plain"] += 1
            if isinstance(ev, CallingContextEnter) and ev.calling_context.region.name.startswith("cuda"):
                path, c = [], ev.calling_context.parent
                while c is not None:
                    path.append(c.region.name)
                    c = c.parent
                group = loc.group.name
                calls["paths"][group] = calls["paths"].get(group, 0) + 1
                if path and LIBRARY.search(path[0]):
                    calls["library"].append(" < ".join(path[:4]))
            if not isinstance(ev, CallingContextSample):
                continue
            group = loc.group.name
            samples[group] = samples.get(group, 0) + 1
            names, c = [], ev.calling_context
            while c is not None:
                names.append(c.region.name)
                c = c.parent
            names.reverse()
            first = next((i for i, n in enumerate(names) if n.startswith(f"{script}:")), None)
            if first is not None and any(".py:" not in n and native.search(n) for n in names[first + 1:]):
                under_script[group] = under_script.get(group, 0) + 1
    return processes, samples, under_script, calls


def check_torchsampled(check, results):
    exp_dir = os.path.join(results, "exp-torchsampled")
    if not os.path.isdir(exp_dir):
        return
    out = os.path.join(results, "torchsampled.out")
    ranks = sorted({m.group(1) for m in (re.match(r"expect rank (\d+) ", l) for l in open(out)) if m})
    workers = len(ranks)
    check("torchsampled: every worker printed its expect line", workers >= 2, ranks)
    processes, samples, under, calls = sampled_processes(os.path.join(exp_dir, "traces.otf2"), "torch_ddp.py")
    check(f"torchsampled: {workers} processes, one per worker, none for torchrun", len(processes) == workers,
          sorted(processes))
    check("torchsampled: every process has samples", len(samples) == workers and set(samples) == processes, samples)
    check("torchsampled: every process has samples with torch_ddp.py's frames above native torch/CUDA frames",
          len(under) == workers and set(under) == processes, (under, samples))
    check("torchsampled: every worker's CUDA runtime calls are CallingContextEnters (--unwinding), none plain",
          set(calls["paths"]) == processes and calls["plain"] == 0, (calls["paths"], calls["plain"]))
    check("torchsampled: no CUDA call's path ends in a frame of CUPTI, the driver or the runtime",
          not calls["library"], calls["library"][:3])
