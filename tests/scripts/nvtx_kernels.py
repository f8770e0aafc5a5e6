#!/usr/bin/python3
"""Reads an OTF2 archive with the independent Python reader (Debian's
python3-otf2) and prints, as JSON, the kernels summed under the NVTX
push/pop range that launched them: what `gputrace stats --report
nvtx_kern_sum` must report.

Usage: nvtx_kernels.py ARCHIVE.otf2

A kernel (an Enter/Leave on an accelerator stream that is not a copy or a
memset) carries the attribute "CUDA correlation id"; its launch is the
earliest host region of the same process carrying the same id; its range
is the innermost NVTX push/pop range (a USER region described "NVTX" or
"NVTX domain <d>", role FUNCTION) open on the launch's thread at the
launch's Enter, named "<domain>:<name>" (the default domain empty).
Output:
  rows     per "range|kernel": [count, total ns, min ns, max ns]
  outside  kernels whose launch was made outside every push/pop range
  kernels  all kernels
"""

import json
import sys
from collections import defaultdict

import otf2
from otf2.events import Enter, Leave


def corr_of(ev):
    for k, v in (ev.attributes or {}).items():
        if k.name == "CUDA correlation id":
            return v
    return None


def pushpop_name(region):
    if not str(region.paradigm).endswith("USER") or not str(region.region_role).endswith("FUNCTION"):
        return None
    d = region.description
    if d == "NVTX":
        return ":" + region.name
    if d.startswith("NVTX domain "):
        return d[len("NVTX domain "):] + ":" + region.name
    return None


def process_of(loc):
    g = loc.group
    creator = getattr(g, "creating_location_group", None)
    return (creator or g).name


def main(archive):
    launches = {}  # (process, corr) -> (time, range)
    kernels = []  # (process, corr, name, ns)
    with otf2.reader.open(archive) as trace:
        res = trace.definitions.clock_properties.timer_resolution
        stacks = defaultdict(list)
        for loc, ev in trace.events:
            on_gpu = "ACCELERATOR" in str(loc.group.location_group_type)
            key = (loc.group.name, loc.name, loc._ref)
            if isinstance(ev, Enter):
                stacks[key].append(ev)
                corr = corr_of(ev)
                if corr is None or on_gpu:
                    continue
                names = [pushpop_name(e.region) for e in stacks[key][:-1]]
                names = [n for n in names if n is not None]
                k = (process_of(loc), corr)
                if k not in launches or ev.time < launches[k][0]:
                    launches[k] = (ev.time, names[-1] if names else None)
            elif isinstance(ev, Leave) and stacks[key]:
                enter = stacks[key].pop()
                name = enter.region.name
                if not on_gpu or name.startswith("[CUDA mem"):
                    continue
                corr = corr_of(enter)
                ns = (ev.time - enter.time) * 1_000_000_000 // res
                kernels.append((process_of(loc), corr, name, ns))
    rows = {}
    outside = 0
    for proc, corr, name, ns in kernels:
        rng = launches.get((proc, corr), (0, None))[1]
        if rng is None:
            outside += 1
            continue
        r = rows.setdefault(f"{rng}|{name}", [0, 0, ns, ns])
        r[0] += 1
        r[1] += ns
        r[2] = min(r[2], ns)
        r[3] = max(r[3], ns)
    json.dump({"rows": rows, "outside": outside, "kernels": len(kernels)}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
