#!/usr/bin/python3
"""GPU tests, checking side: reads the archives that tests/gpu/run.sh made
on the GPU machine with the independent Python OTF2 reader and checks them
against the ground truth the test programs printed ("expect ..." lines).

Usage: check_archives.py RESULTS_DIR   (the unpacked gpu-results.tgz)
Prints one line per check, "ok" or "FAIL", and exits 1 if any failed.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

import otf2
from check_critical import check_critical
from check_hang import check_hang
from check_link import check_link
from check_multi import attr, check_multi
from check_sampled import check_paths, check_sampled
from check_straggler import check_straggler
from check_torchsampled import check_torchsampled
from otf2.events import (Enter, Leave, Metric, MpiIrecv, MpiIsend, MpiRecv, MpiSend, RmaGet, RmaOpCompleteBlocking,
                         RmaPut)

failures = 0


def check(name, cond, detail=""):
    global failures
    print(f"{'ok  ' if cond else 'FAIL'} {name}{': ' + str(detail) if detail else ''}")
    if not cond:
        failures += 1


def expectations(path):
    out = {}
    for line in open(path):
        m = re.match(r"expect (.*) (\S+)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


SYNC = re.compile(r"ynchronize|\[CUDA sync")


def read(archive):
    """Per location: events; plus kernels, copies, memsets, API regions."""
    facts = {"locations": {}, "kernels": [], "copies": [], "memsets": [], "api": [], "rma": [], "mem": [], "pools": [],
             "named_metrics": defaultdict(lambda: defaultdict(list)),
             "metrics": defaultdict(list), "gpu_metrics": defaultdict(dict), "mono": True, "balanced": True, "groups": {}, "msgs": 0, "nb_msgs": 0}
    with otf2.reader.open(archive) as trace:
        # NVTX ranges and marks: user regions described "NVTX" or "NVTX
        # domain <name>" (docs/otf2-mapping.md).
        facts["nvtx"] = {r.name for r in trace.definitions.regions
                         if str(r.paradigm).endswith("USER")
                         and (r.description == "NVTX" or r.description.startswith("NVTX domain "))}
        for i, g in enumerate(trace.definitions.location_groups):
            creator = getattr(g, "creating_location_group", None)
            facts["groups"][f"{g.name} #{i}"] = (str(g.location_group_type), creator.name if creator else None)
        stacks = defaultdict(list)
        last = {}
        for loc, ev in trace.events:
            key = f"{loc.name}@{loc.group.name}#{loc._ref}"
            on_gpu = "ACCELERATOR" in str(loc.group.location_group_type)
            facts["locations"].setdefault(key, {"name": loc.name, "type": str(loc.type), "group": loc.group.name,
                                                "creator": getattr(loc.group.creating_location_group, "name", None),
                                                "events": 0})
            facts["locations"][key]["events"] += 1
            if key in last and ev.time < last[key]:
                facts["mono"] = False
            last[key] = ev.time
            if isinstance(ev, Enter):
                stacks[key].append((ev.region.name, ev.time, ev))
            elif isinstance(ev, Leave):
                if not stacks[key] or stacks[key][-1][0] != ev.region.name:
                    facts["balanced"] = False
                    continue
                name, t0, enter = stacks[key].pop()
                item = {"name": name, "start": t0, "end": ev.time, "loc": key, "group": loc.group.name,
                        "creator": getattr(loc.group.creating_location_group, "name", None),
                        "corr": attr(enter, "CUDA correlation id"), "enter": enter,
                        # The regions it ran inside, outermost first.
                        "outer": [n for n, _, _ in stacks[key]],
                        "graph": attr(enter, "CUDA graph id"), "node": attr(enter, "CUDA graph node id")}
                if name.startswith("CUDA alloc (") or name.startswith("CUDA free ("):
                    # Allocations and frees (docs/otf2-mapping.md): zero-length
                    # regions on the process's `CUDA memory GPU d` location.
                    item["alloc"] = name.startswith("CUDA alloc (")
                    item["kind"] = name[name.index("(") + 1:-1]
                    item["bytes"] = attr(enter, "bytes")
                    item["address"] = attr(enter, "address")
                    facts["mem"].append(item)
                elif name.startswith("CUDA memory pool "):
                    facts["pools"].append(item)
                elif name.startswith("[CUDA memcpy"):
                    item["bytes"] = attr(enter, "bytes")
                    item["kind"] = attr(enter, "copy kind")
                    item["src"] = attr(enter, "source device")
                    item["dst"] = attr(enter, "destination device")
                    # With `memory`: the addresses the copy call named.
                    item["src_address"] = attr(enter, "source address")
                    item["dst_address"] = attr(enter, "destination address")
                    facts["copies"].append(item)
                elif name == "[CUDA memset]":
                    item["bytes"] = attr(enter, "bytes")
                    facts["memsets"].append(item)
                elif on_gpu and name.startswith("CUDA graph ") and item["graph"] is not None:
                    # A graph execution (GPUTRACE_CUDA_ENABLE=graph).
                    facts.setdefault("graph_runs", []).append(item)
                elif on_gpu:
                    # Written where it changes on the stream (None else).
                    item["grid_x"] = attr(enter, "grid x")
                    facts["kernels"].append(item)
                else:
                    facts["api"].append(item)
            elif isinstance(ev, (RmaPut, RmaGet)):
                facts["rma"].append((type(ev).__name__, ev.bytes, key))
            elif isinstance(ev, Metric):
                for v in ev.values:
                    facts["metrics"][key].append((ev.time, v))
                facts["named_metrics"][key][ev.metric.members[0].name].append((ev.time, ev.values[0]))
                if loc.name.endswith(" metrics") and loc.name.startswith("GPU "):
                    m = ev.metric.members[0]
                    series = facts["gpu_metrics"][f"{loc.name}@{loc.group.name}"].setdefault(
                        m.name, {"unit": m.unit, "samples": []})
                    series["samples"].append((ev.time, ev.values[0]))
            elif isinstance(ev, (MpiSend, MpiRecv)):
                facts["msgs"] += 1
            elif isinstance(ev, (MpiIsend, MpiIrecv)):
                facts["nb_msgs"] += 1
        facts["nodes"] = {n.name: n for n in trace.definitions.system_tree_nodes}
        facts["props"] = [(p.system_tree_node.name, p.name, p.value)
                          for p in trace.definitions.system_tree_node_properties]
    return facts


def by(items, key):
    out = defaultdict(list)
    for i in items:
        out[key(i)].append(i)
    return out


def check_basic(d, exp, label):
    f = read(os.path.join(d, "traces.otf2"))
    check(f"{label}: timestamps non-decreasing per location", f["mono"])
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    kernels = f["kernels"]
    check(f"{label}: kernel count equals launches", len(kernels) == int(exp["kernels"]),
          f"{len(kernels)} vs {exp['kernels']}")
    for short in ("scale", "axpy", "reduce_shared"):
        n = sum(1 for k in kernels if re.search(r"\b" + short + r"\b", k["name"]))
        check(f"{label}: kernel {short}", n == int(exp["kernel " + short]), f"{n} vs {exp['kernel ' + short]}")
    copies = by(f["copies"], lambda c: c["kind"])
    for kind in ("HtoD", "DtoH", "DtoD", "HtoH"):
        got = copies.get(kind, [])
        b = sum(c["bytes"] for c in got)
        check(f"{label}: {kind} copies and bytes", len(got) == int(exp["copies " + kind])
              and b == int(exp["bytes " + kind]), f"{len(got)} copies, {b} bytes vs {exp['copies ' + kind]}, "
              f"{exp['bytes ' + kind]}")
    rma = sum(1 for r in f["rma"])
    check(f"{label}: every copy is an RMA operation", rma == len(f["copies"]), f"{rma} vs {len(f['copies'])}")
    return f, kernels


def check_gpu_metrics(f, label):
    """NVML's GPU metrics (docs/cuda.md): a `GPU d metrics` location per
    GPU and process; utilization within 0..100 %, memory in use, SM clock,
    power > 0; samples increasing in time."""
    gpus = {n.split(" ")[2] for n in f["nodes"] if n.startswith("CUDA Device ")}
    locs = f["gpu_metrics"]
    seen = {k.split(" ")[1] for k in locs}
    starts = []
    check(f"{label}: GPU metrics location per GPU", gpus and seen == gpus, f"{sorted(seen)} vs {sorted(gpus)}")
    for loc, metrics in sorted(locs.items()):
        def values(name):
            return [v for _, v in metrics.get(name, {}).get("samples", [])]
        for name in ("GPU utilization", "GPU memory utilization"):
            v = values(name)
            check(f"{label}: {loc}: {name} in 0..100 %", v and all(0 <= x <= 100 for x in v)
                  and metrics[name]["unit"] == "%", v[:5])
        for name, unit in (("GPU memory used", "bytes"), ("SM clock", "MHz"), ("GPU power", "mW")):
            v = values(name)
            check(f"{label}: {loc}: {name} > 0 {unit}", v and all(x > 0 for x in v)
                  and metrics[name]["unit"] == unit, v[:5])
        times = {name: [t for t, _ in s["samples"]] for name, s in metrics.items()}
        check(f"{label}: {loc}: samples increasing in time",
              all(all(a < b for a, b in zip(t, t[1:])) for t in times.values()),
              {n: len(t) for n, t in times.items()})
        starts.append(min((t[0] for t in times.values() if t), default=None))
    # Sampling starts with a GPU's context (its creation and NVML's start
    # take ~150 ms on the H100), not at the first CUPTI buffer, which a
    # program hands over after a second or at exit. The first GPU's: a
    # program may make a context on another GPU much later (PyTorch on a
    # 4-GPU host touched GPUs 1-3 5.5 s after its first CUDA call).
    first = min((t for t in starts if t is not None), default=None)
    calls = [a["start"] for a in f["api"]]
    check(f"{label}: the first GPU's first sample within 0.5 s of the first CUDA call",
          first is not None and calls and first - min(calls) < 500_000_000,
          ((first - min(calls)) / 1e6 if first and calls else None, "ms"))


def check_memory(d, exp, label):
    """Allocations and frees (GPUTRACE_CUDA_ENABLE member `memory`,
    docs/cuda.md): counts and bytes per kind equal the program's; what was
    never freed is the program's leaks; the `CUDA memory in use` metrics
    end at the leaked bytes and peak where the events say."""
    f = read(os.path.join(d, "traces.otf2"))
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    mem = f["mem"]
    for kind in ("device", "pinned", "device, async"):
        for op in ("alloc", "free"):
            got = [m for m in mem if m["kind"] == kind and m["alloc"] == (op == "alloc")]
            n, b = len(got), sum(m["bytes"] or 0 for m in got)
            want = (int(exp[f"{op} {kind} n"]), int(exp[f"{op} {kind} bytes"]))
            check(f"{label}: {op} {kind}: count and bytes", (n, b) == want, f"{(n, b)} vs {want}")
    # What stays allocated at the end, per location, by address.
    live = {}
    peaks = defaultdict(int)
    in_use = defaultdict(int)
    for m in sorted(mem, key=lambda m: m["start"]):
        k = (m["loc"], m["address"])
        if m["alloc"]:
            live[k] = m
            in_use[m["loc"]] += m["bytes"]
            peaks[m["loc"]] = max(peaks[m["loc"]], in_use[m["loc"]])
        elif k in live:
            in_use[m["loc"]] -= live.pop(k)["bytes"]
    leaks = by(live.values(), lambda m: m["kind"])
    for kind in ("device", "pinned"):
        got = (len(leaks.get(kind, [])), sum(m["bytes"] for m in leaks.get(kind, [])))
        want = (int(exp[f"leak {kind} n"]), int(exp[f"leak {kind} bytes"]))
        check(f"{label}: leaked {kind}: count and bytes", got == want, f"{got} vs {want}")
    check(f"{label}: nothing else leaked", set(leaks) <= {"device", "pinned"}, sorted(leaks))
    locs = sorted({m["loc"] for m in mem})
    check(f"{label}: a CUDA memory location", locs and all(l.startswith("CUDA memory GPU ") for l in locs), locs)
    last = {l: f["named_metrics"][l]["CUDA memory in use"][-1][1] for l in locs
            if f["named_metrics"][l]["CUDA memory in use"]}
    check(f"{label}: memory in use ends at the leaked bytes", sum(last.values()) == int(exp["leaked bytes"]),
          f"{last} vs {exp['leaked bytes']}")
    for kind in ("device", "pinned"):
        ends = [f["named_metrics"][l][f"CUDA {kind} memory in use"][-1][1] for l in locs
                if f["named_metrics"][l][f"CUDA {kind} memory in use"]]
        check(f"{label}: {kind} memory in use ends at its leak", sum(ends) == int(exp[f"leak {kind} bytes"]), ends)
    peak = {l: max(v for _, v in f["named_metrics"][l]["CUDA memory in use"]) for l in last}
    check(f"{label}: memory in use peaks where the allocations say", peak == dict(peaks), f"{peak} vs {dict(peaks)}")
    pools = by(f["pools"], lambda p: p["name"])
    for op in ("created", "destroyed"):
        n = len(pools.get(f"CUDA memory pool {op}", []))
        check(f"{label}: memory pools {op}", n >= int(exp[f"pools {op}"]), n)
    check(f"{label}: timestamps non-decreasing", f["mono"])
    if "copies out of device n" in exp:
        check_copies_by_allocation(f, exp, label)
    return f


def check_copies_by_allocation(f, exp, label):
    """Every copy carries the addresses its call named, and each end
    lies in an allocation live at the copy's start: the program's copies
    out of and into device and pinned buffers, counted and in bytes."""
    spans = []  # (address, end, alloc time, free time, kind)
    live = {}
    for m in sorted(f["mem"], key=lambda m: m["start"]):
        if m["alloc"]:
            live[m["address"]] = m
        elif m["address"] in live:
            a = live.pop(m["address"])
            spans.append((a["address"], a["address"] + a["bytes"], a["start"], m["start"], a["kind"]))
    spans += [(a["address"], a["address"] + a["bytes"], a["start"], float("inf"), a["kind"]) for a in live.values()]

    def kind_at(address, t):
        for lo, hi, t0, t1, kind in spans:
            if lo <= address < hi and t0 <= t <= t1:
                return kind
        return None

    copies = f["copies"]
    check(f"{label}: every copy has its addresses",
          copies and all(c["src_address"] is not None and c["dst_address"] is not None for c in copies),
          sum(1 for c in copies if c["src_address"] is None))
    sides = defaultdict(lambda: [0, 0])
    for c in copies:
        for end, word in ((c["src_address"], "out of"), (c["dst_address"], "into")):
            kind = kind_at(end, c["start"]) if end is not None else None
            sides[f"{word} {kind}"][0] += 1
            sides[f"{word} {kind}"][1] += c["bytes"]
    for side in ("out of device", "into pinned", "into device", "out of pinned"):
        want = (int(exp[f"copies {side} n"]), int(exp[f"copies {side} bytes"]))
        got = tuple(sides.get(side, (0, 0)))
        check(f"{label}: copies {side} an allocation: count and bytes", got == want, f"{got} vs {want}")
    check(f"{label}: no copy end outside the allocations", not any(k.endswith(" None") for k in sides),
          {k: v for k, v in sides.items() if k.endswith(" None")})


def check_uvm(d, exp, label):
    """Unified memory (member `uvm`): the managed allocation, CPU and GPU
    page faults, migrations both ways with bytes."""
    f = read(os.path.join(d, "traces.otf2"))
    managed = [m for m in f["mem"] if m["kind"] == "managed"]
    for op in ("alloc", "free"):
        got = [m for m in managed if m["alloc"] == (op == "alloc")]
        want = (int(exp[f"{op} managed n"]), int(exp[f"{op} managed bytes"]))
        check(f"{label}: {op} managed: count and bytes", (len(got), sum(m["bytes"] for m in got)) == want,
              f"{(len(got), sum(m['bytes'] for m in got))} vs {want}")
    totals = defaultdict(int)
    for loc, metrics in f["named_metrics"].items():
        for name, samples in metrics.items():
            if name.startswith("UVM "):
                totals[name] += samples[-1][1]
                check(f"{label}: {loc}: {name} never decreases",
                      all(a[1] <= b[1] for a, b in zip(samples, samples[1:])), len(samples))
    # A count of faults, at most one per 4 KiB page of the buffer and touch
    # (CUPTI's record value is the faulting instruction's address: counted
    # as one).
    pages = int(exp.get("managed bytes", 0)) // 4096
    check(f"{label}: CPU page faults > 0, a count (at most 2 per page)",
          0 < totals["UVM CPU page faults"] <= 2 * max(pages, 1), dict(totals))
    if exp.get("concurrent") == "1":
        check(f"{label}: GPU page faults > 0", totals["UVM GPU page faults"] > 0, dict(totals))
    check(f"{label}: bytes migrated HtoD > 0", totals["UVM bytes HtoD"] > 0, dict(totals))
    check(f"{label}: bytes migrated DtoH > 0", totals["UVM bytes DtoH"] > 0, dict(totals))
    check(f"{label}: HtoD migrations cover the buffer the kernel touched",
          totals["UVM bytes HtoD"] >= int(exp["managed bytes"]), f"{totals['UVM bytes HtoD']} vs {exp['managed bytes']}")
    check(f"{label}: timestamps non-decreasing", f["mono"])
    return f


def check_launch_nesting(f, kernels, label):
    api = by([a for a in f["api"] if a["corr"] is not None], lambda a: a["corr"])
    syncs = sorted((a for a in f["api"] if SYNC.search(a["name"])), key=lambda a: a["start"])
    bad = []
    for k in kernels:
        launches = [a for a in api.get(k["corr"], []) if "aunch" in a["name"]]
        if not launches:
            bad.append((k["name"], "no launch"))
            continue
        launch = min(launches, key=lambda a: a["start"])
        if k["start"] < launch["start"]:
            bad.append((k["name"], "starts before its launch"))
            continue
        after = [s for s in syncs if s["start"] >= launch["start"] and s["end"] >= k["end"]]
        if not after:
            bad.append((k["name"], "no synchronization ends after it"))
    check(f"{label}: every kernel inside its launch's enter and a following synchronization's leave",
          not bad, bad[:3])


def check_ranges(f, exp, label):
    """NVTX ranges per name against the program's `expect range NAME N`
    lines; returns the ranges by name."""
    ranges = by([a for a in f["api"] if a["name"] in f["nvtx"]], lambda a: a["name"])
    for key, want in exp.items():
        if key.startswith("range "):
            name = key[len("range "):]
            got = len(ranges.get(name, []))
            check(f"{label}: range {name}", got == int(want), f"{got} vs {want}")
    return ranges


def check_nvtx(d, exp, label):
    """nvtx_cuda.cu: ranges per name; each kernel's launch (its API call by
    correlation id, on a host thread) inside the innermost NVTX range of
    the program's, on that same thread."""
    f = read(os.path.join(d, "traces.otf2"))
    check(f"{label}: timestamps non-decreasing per location", f["mono"])
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    ranges = check_ranges(f, exp, label)
    check(f"{label}: start/end range on its lane", all(a["loc"].startswith("NVTX ranges@")
                                                        for a in ranges.get("async copy", [])),
          [a["loc"] for a in ranges.get("async copy", [])])
    check(f"{label}: the worker's range on the thread it named",
          all(a["loc"].startswith("worker@") for a in ranges.get("worker kernels", [])),
          [a["loc"] for a in ranges.get("worker kernels", [])])
    check(f"{label}: kernel count", len(f["kernels"]) == int(exp["kernels"]), f"{len(f['kernels'])} vs {exp['kernels']}")
    if "stream name" in exp:
        # nvtxNameCudaStream / nvtxNameCudaDevice: the stream's location
        # and the GPU's node carry the names.
        named = [loc["name"] for loc in f["locations"].values()
                 if loc["name"].startswith(exp["stream name"] + " (CUDA[")]
        check(f"{label}: the stream named through NVTX", len(named) == 1, named)
        worker = [k for k in f["kernels"] if k["loc"].split("@")[0].startswith(exp["stream name"] + " (")]
        check(f"{label}: the worker's kernels on the named stream",
              len(worker) == int(exp.get("kernels in worker kernels", 0)), len(worker))
        props = [(n, v) for n, k, v in f["props"] if k == "NVTX name"]
        check(f"{label}: the GPU named through NVTX", props == [("CUDA Device 0", exp["device name"])], props)
    launches = by([a for a in f["api"] if a["corr"] is not None and "aunch" in a["name"]], lambda a: a["corr"])
    inside = defaultdict(int)
    unmatched = []
    for k in f["kernels"]:
        ls = launches.get(k["corr"], [])
        if not ls:
            unmatched.append(k["name"])
            continue
        launch = min(ls, key=lambda a: a["start"])
        ranges_around = [n for n in launch["outer"] if n in f["nvtx"]]
        inside[ranges_around[-1] if ranges_around else None] += 1
    check(f"{label}: every kernel has its launch", not unmatched, unmatched[:3])
    for key, want in exp.items():
        if key.startswith("kernels in "):
            name = key[len("kernels in "):]
            check(f"{label}: kernels launched inside {name} (innermost range, same thread)",
                  inside.get(name, 0) == int(want), f"{inside.get(name, 0)} vs {want}")


GRAPH_LINE = re.compile(r"graph (\w+) nodes kernels=(\d+) memcpy=(\d+) memset=(\d+) launches=(\d+)$")


def graph_truth(path):
    """cuda_graphs.cu's lines: per graph, (kernels, memcpy, memset) per
    launch and launches; and its other expectations."""
    graphs = {}
    for line in open(path):
        m = GRAPH_LINE.match(line.strip())
        if m:
            graphs[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 6))
    return graphs, expectations(path)


def graph_launch_calls(f):
    """Host API calls that launch a graph (cudaGraphLaunch, cuGraphLaunch),
    by correlation id."""
    return by([a for a in f["api"] if a["corr"] is not None and "GraphLaunch" in a["name"]], lambda a: a["corr"])


def check_graphs(d, truth, label):
    """Node-level trace: every kernel, copy and memset a graph ran carries
    its graph and node ids; per graph, launches x nodes of each kind, each
    launch (correlation id) with every node once, and the launch call on
    the host with the same correlation id."""
    graphs, exp = truth
    f = read(os.path.join(d, "traces.otf2"))
    check(f"{label}: timestamps non-decreasing per location", f["mono"])
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    work = [("kernels", k) for k in f["kernels"]] + [("memcpy", c) for c in f["copies"]] + \
        [("memset", m) for m in f["memsets"]]
    in_graphs = [(kind, w) for kind, w in work if w["graph"] is not None]
    plain = [k for k in f["kernels"] if k["graph"] is None]
    check(f"{label}: kernels outside graphs", len(plain) == int(exp["plain kernels"]),
          f"{len(plain)} vs {exp['plain kernels']}")
    for i, kind in enumerate(("kernels", "memcpy", "memset")):
        want = sum(g[i] * g[3] for g in graphs.values())
        got = sum(1 for k, _ in in_graphs if k == kind)
        check(f"{label}: {kind} with a graph id = launches x nodes", got == want, f"{got} vs {want}")
    per_graph = by(in_graphs, lambda kw: kw[1]["graph"])
    check(f"{label}: graph ids", len(per_graph) == int(exp["graphs"]), sorted(per_graph))
    # Each graph id is the program's graph of the same nodes per launch.
    seen = {}
    for gid, items in sorted(per_graph.items()):
        launches = by(items, lambda kw: kw[1]["corr"])
        shapes = {tuple(sum(1 for k, _ in l if k == kind) for kind in ("kernels", "memcpy", "memset"))
                  for l in launches.values()}
        nodes = {w["node"] for _, w in items}
        seen[gid] = (shapes, len(launches), len(nodes))
    for name, (k, m, s, n) in sorted(graphs.items()):
        match = [gid for gid, (shapes, launches, nodes) in seen.items()
                 if shapes == {(k, m, s)} and launches == n and nodes == k + m + s]
        check(f"{label}: graph {name}: {n} launches, each {k} kernels, {m} copies, {s} memsets, "
              f"{k + m + s} node ids", len(match) == 1, seen)
    calls = graph_launch_calls(f)
    missing = [(w["name"], w["corr"]) for _, w in in_graphs if w["corr"] not in calls]
    check(f"{label}: every graph node's launch call (same correlation id) recorded", not missing, missing[:3])
    runtime = [a for a in f["api"] if a["name"].startswith("cudaGraphLaunch")]
    check(f"{label}: cudaGraphLaunch calls", len(runtime) == int(exp["graph launches"]),
          f"{len(runtime)} vs {exp['graph launches']}")
    return f


def check_graphs_whole(d, truth, label):
    """Graph-level trace (GPUTRACE_CUDA_ENABLE with `graph`): per graph, one
    region `CUDA graph <id>` per launch, tied to its launch call; no kernel,
    copy or memset with a graph id."""
    graphs, exp = truth
    f = read(os.path.join(d, "traces.otf2"))
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    runs = f.get("graph_runs", [])
    per_graph = by(runs, lambda r: r["graph"])
    counts = sorted(len(v) for v in per_graph.values())
    want = sorted(g[3] for g in graphs.values())
    check(f"{label}: one region per graph execution, per graph", counts == want, f"{counts} vs {want}")
    check(f"{label}: regions named by their graph", all(r["name"] == f"CUDA graph {r['graph']}" for r in runs),
          sorted({r["name"] for r in runs})[:4])
    work = f["kernels"] + f["copies"] + f["memsets"]
    check(f"{label}: no graph nodes recorded one by one", not any(w["graph"] is not None for w in work),
          sum(1 for w in work if w["graph"] is not None))
    calls = graph_launch_calls(f)
    missing = [r["corr"] for r in runs if r["corr"] not in calls]
    check(f"{label}: every graph execution's launch call (same correlation id) recorded", not missing, missing[:3])
    plain = [k for k in f["kernels"] if k["graph"] is None]
    check(f"{label}: kernels outside graphs still recorded", len(plain) == int(exp["plain kernels"]),
          f"{len(plain)} vs {exp['plain kernels']}")


def gputrace_lines(path):
    """The [gputrace] lines a run printed on stderr (tests/gpu/run.sh keeps
    them as <part>.err)."""
    if not os.path.exists(path):
        return None
    return [l.rstrip("\n") for l in open(path, errors="replace") if l.startswith("[gputrace]")]


def check_event_count(f, lines, label):
    """The summary's "N events" is the archive's event count."""
    said = [m.group(1) for m in (re.search(r"locations, ([\d,]+) events", l) for l in lines) if m]
    read = sum(loc["events"] for loc in f["locations"].values())
    check(f"{label}: the summary's event count is the archive's", said == [f"{read:,}"], (said, read))


def check_names_by_rank(f, label):
    """Contexts and streams are named by their process: processes sharing a
    GPU have the same context and stream ids."""
    bad = []
    for g, (_, creator) in f["groups"].items():
        if g.startswith("CUDA Context"):
            m = re.match(r"CUDA Context \d+ of (rank|process) (\d+) #", g)
            if not m or creator not in (f"MPI Rank {m.group(2)}", f"Process {m.group(2)}"):
                bad.append((g, creator))
    streams = [loc for loc in f["locations"].values() if loc["name"].startswith("CUDA[")]
    for loc in streams:
        m = re.match(r"CUDA\[\d+:\d+\] (rank|process) (\d+)$", loc["name"])
        if not m or loc["creator"] not in (f"MPI Rank {m.group(2)}", f"Process {m.group(2)}"):
            bad.append((loc["name"], loc["creator"]))
    names = [(loc["name"], loc["group"]) for loc in streams]
    check(f"{label}: contexts and streams named by their process, no two alike",
          not bad and len(set(names)) == len(names) and streams, bad[:4] or names[:4])


def check_not_traced(lines, label, why):
    """When CUDA was not traced, the last line says so (and why), never that
    the program did no GPU work."""
    text = "\n".join(lines)
    check(f"{label}: the summary says CUDA was not traced, and why", f"CUDA was not traced ({why}" in text
          and "did no GPU work" not in text, lines[-1:])


def main(results):
    # basic.out: the basic program's ground truth (results replayed from
    # fixtures may hold other parts only).
    basic_out = os.path.join(results, "basic.out")
    exp = expectations(basic_out) if os.path.exists(basic_out) else {}
    if os.path.isdir(os.path.join(results, "exp-basic")):
        f, kernels = check_basic(os.path.join(results, "exp-basic"), exp, "basic")
        memsets = f["memsets"]
        check("basic: memset count and bytes", len(memsets) == int(exp["memsets"])
              and sum(m["bytes"] for m in memsets) == int(exp["memset_bytes"]),
              f"{len(memsets)}, {sum(m['bytes'] for m in memsets)}")
        check_launch_nesting(f, kernels, "basic")
        check_gpu_metrics(f, "basic")
        names = {a["name"] for a in f["api"]}
        # The default records the runtime API, not the driver calls it makes.
        check("basic: runtime API recorded, driver API not (the default)", "cudaLaunchKernel" in names and not any(
            n.startswith("cu") and not n.startswith("cuda") for n in names),
            sorted(n for n in names if n.startswith("cu") and not n.startswith("cuda"))[:5])
        # Synchronizations are the runtime's synchronizing calls; CUPTI's
        # SYNCHRONIZATION records (`sync`, off by default) are not there.
        check("basic: synchronizing calls recorded, no SYNCHRONIZATION records (the default)",
              {"cudaDeviceSynchronize", "cudaStreamSynchronize"} & names
              and not any(n.startswith("[CUDA sync") for n in names),
              sorted(n for n in names if "ynchron" in n or n.startswith("[CUDA sync")))
        lines = gputrace_lines(os.path.join(results, "basic.err"))
        if lines is not None:
            check_event_count(f, lines, "basic")
            check_names_by_rank(f, "basic")
    sub = os.path.join(results, "exp-subset")
    if os.path.isdir(sub):
        f = read(os.path.join(sub, "traces.otf2"))
        names = {a["name"] for a in f["api"]}
        check("subset: no runtime API calls", not any(n.startswith("cuda") for n in names),
              sorted(n for n in names if n.startswith("cuda"))[:5])
        check("subset: driver API calls", any(n.startswith("cu") for n in names))
        check("subset: no memsets, no synchronizations", not f["memsets"]
              and not any(n.startswith("[CUDA sync") for n in names))
        check("subset: kernels and copies", len(f["kernels"]) > 0 and len(f["copies"]) > 0)
    peer = os.path.join(results, "exp-peer")
    if os.path.isdir(peer):
        pexp = expectations(os.path.join(results, "peer.out"))
        f = read(os.path.join(peer, "traces.otf2"))
        p2p = [c for c in f["copies"] if c["kind"] == "PtoP"]
        for (src, dst) in (("0", "1"), ("1", "0")):
            got = [c for c in p2p if c["src"] == f"CUDA Device {src}" and c["dst"] == f"CUDA Device {dst}"]
            b = sum(c["bytes"] for c in got)
            check(f"peer: {src}->{dst} copies name source and destination GPU, bytes",
                  len(got) == int(pexp[f"peer {src}->{dst} copies"]) and b == int(pexp[f"peer {src}->{dst} bytes"]),
                  f"{len(got)} copies, {b} bytes")
        links = [p for p in f["props"] if p[1].startswith("NVLink to")]
        check("peer: NVLink topology present", len(links) >= 2, links[:2])
        moved = {k: max((v for _, v in vals), default=0) for k, vals in f["metrics"].items()}
        check("peer: NVLink traffic non-zero during the peer copies", any(v > 0 for v in moved.values()), moved)
        check("peer: timestamps non-decreasing", f["mono"])
    mpi = os.path.join(results, "exp-mpi")
    if os.path.isdir(mpi):
        mexp = expectations(os.path.join(results, "mpi.out"))
        f = read(os.path.join(mpi, "traces.otf2"))
        ranks = sorted(g.split(" #")[0] for g in f["groups"] if g.startswith("MPI Rank"))
        check("mpi: one archive with both ranks", ranks == ["MPI Rank 0", "MPI Rank 1"], ranks)
        ctx = {g: v for g, v in f["groups"].items() if g.startswith("CUDA Context")}
        creators = sorted(v[1] for v in ctx.values())
        check("mpi: each rank's GPU context under its process", creators == ["MPI Rank 0", "MPI Rank 1"], ctx)
        per_rank = by(f["kernels"], lambda k: k["creator"])
        for r in (0, 1):
            n = len(per_rank.get(f"MPI Rank {r}", []))
            check(f"mpi: rank {r} kernels", n == int(mexp[f"rank {r} kernels"]), n)
        check("mpi: MPI messages recorded", f["msgs"] >= 4 * int(mexp["rank 0 sends"]), f["msgs"])
        # Score-P's conventions hold on a CUDA + MPI archive too (or are
        # documented differences): tests/scripts/scorep_conventions.py.
        here = os.path.dirname(os.path.abspath(__file__))
        conv = subprocess.run([sys.executable, os.path.join(here, "..", "scripts", "scorep_conventions.py"),
                               os.path.join(mpi, "traces.otf2"), os.path.join(here, "..", "..", "docs", "otf2-mapping.md")],
                              capture_output=True, text=True)
        lines = conv.stdout.splitlines()
        check("mpi: Score-P's conventions or documented differences", conv.returncode == 0 and lines
              and not any(l.startswith("FAIL") for l in lines),
              f"{sum(l.startswith('ok') for l in lines)} ok; " + "; ".join(l for l in lines if l.startswith("FAIL")))
        check_names_by_rank(f, "mpi")
        check("mpi: timestamps non-decreasing", f["mono"])
    halo = os.path.join(results, "exp-halo")
    if os.path.isdir(halo):
        hexp = expectations(os.path.join(results, "halo.out"))
        f = read(os.path.join(halo, "traces.otf2"))
        ranks = sorted(g.split(" #")[0] for g in f["groups"] if g.startswith("MPI Rank"))
        n = len(ranks)
        check(f"halo: one archive with {n} ranks", n >= 2 and ranks == [f"MPI Rank {r}" for r in range(n)], ranks)
        per_rank = by(f["kernels"], lambda k: k["creator"])
        for r in range(n):
            got = len(per_rank.get(f"MPI Rank {r}", []))
            check(f"halo: rank {r} has its GPU stream and kernels", got == int(hexp[f"rank {r} kernels"]), got)
        p2p = [c for c in f["copies"] if c["kind"] == "PtoP"]
        pairs = by(p2p, lambda c: (c["src"], c["dst"]))
        want = sum(int(hexp[f"rank {r} peer_copies"]) for r in range(n))
        check("halo: peer copies, count and bytes", len(p2p) == want
              and sum(c["bytes"] for c in p2p) == sum(int(hexp[f"rank {r} peer_bytes"]) for r in range(n)),
              {k: len(v) for k, v in pairs.items()})
        ring = all((f"CUDA Device {r}", f"CUDA Device {(r + 1) % n}") in pairs for r in range(n))
        check("halo: GPU x GPU matrix is the ring rank -> rank+1", ring, sorted(pairs))
        # The steps' messages are non-blocking (MPI_Isend, MPI_Irecv: the
        # program counts them); the IPC handles go by one MPI_Sendrecv per
        # rank before the steps.
        msgs = f["nb_msgs"]
        want = sum(2 * int(hexp[f"rank {r} messages"]) for r in range(n))
        check("halo: MPI messages (sends + receives) equal the program's", msgs == want, (msgs, want))
        check("halo: the handles' MPI_Sendrecv, a send and a receive per rank", f["msgs"] == 2 * n, f["msgs"])
        gpus = [name for name, node in f["nodes"].items() if name.startswith("CUDA Device")]
        links = {p[0] for p in f["props"] if p[1].startswith("NVLink to")}
        check(f"halo: NVLink topology of all {len(gpus)} GPUs", len(gpus) == n and links == set(gpus),
              (gpus, sorted(links)))
        check("halo: timestamps non-decreasing", f["mono"])
    nvtx = os.path.join(results, "exp-nvtx")
    if os.path.isdir(nvtx):
        check_nvtx(nvtx, expectations(os.path.join(results, "nvtx.out")), "nvtx")
    tnvtx = os.path.join(results, "exp-torch_nvtx")
    if os.path.isdir(tnvtx):
        texp = expectations(os.path.join(results, "torch_nvtx.out"))
        f = read(os.path.join(tnvtx, "traces.otf2"))
        check("torch_nvtx: Enter/Leave balanced", f["balanced"])
        if f["gpu_metrics"]:
            # (The CI fixture of this run predates GPU metrics.)
            check_gpu_metrics(f, "torch_nvtx")
        ranges = check_ranges(f, texp, "torch_nvtx")
        emitted = [n for n in ranges if n.startswith("aten::")]
        check("torch_nvtx: emit_nvtx recorded aten:: operator ranges", len(emitted) > 0, sorted(emitted)[:5])
        check("torch_nvtx: kernels recorded", len(f["kernels"]) > 0, len(f["kernels"]))
    torch = os.path.join(results, "exp-torch")
    if os.path.isdir(torch):
        f = read(os.path.join(torch, "traces.otf2"))
        procs = [g for g, v in f["groups"].items() if "PROCESS" in v[0]]
        with_gpu = sorted({v[1] for g, v in f["groups"].items() if g.startswith("CUDA Context")})
        check("torch: 2 worker processes, each with GPU streams, no phantom launcher",
              len(procs) == 2 and len(with_gpu) == 2, (procs, with_gpu))
        check("torch: kernels recorded", len(f["kernels"]) > 0, len(f["kernels"]))
    for part, checker in (("graphs", check_graphs), ("graphs_whole", check_graphs_whole)):
        d = os.path.join(results, f"exp-{part}")
        if os.path.isdir(d):
            checker(d, graph_truth(os.path.join(results, f"{part}.out")), part)
    memory = os.path.join(results, "exp-memory")
    if os.path.isdir(memory):
        check_memory(memory, expectations(os.path.join(results, "memory.out")), "memory")
    uvm = os.path.join(results, "exp-uvm")
    if os.path.isdir(uvm):
        check_uvm(uvm, expectations(os.path.join(results, "uvm.out")), "uvm")
    lines = gputrace_lines(os.path.join(results, "nocupti.err"))
    if lines is not None:
        check_not_traced(lines, "nocupti", "CUPTI could not be loaded: GPUTRACE_CUPTI_LIB=/nonexistent/libcupti.so: "
                         "cannot open shared object file")
        first = next((l for l in lines if "CUDA is not traced" in l), "")
        check("nocupti: the library is named once", first.count("/nonexistent/libcupti.so") == 1, first)
    lines = gputrace_lines(os.path.join(results, "nsys.err"))
    if lines is not None:
        check_not_traced(lines, "nsys", "the program ran under nsys")
    check_multi(check, read, expectations, results)
    check_critical(check, expectations, results)
    check_straggler(check, results)
    check_link(check, results)
    check_sampled(check, read, expectations, results)
    check_paths(check, results)
    check_torchsampled(check, results)
    check_hang(check, expectations, results)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
