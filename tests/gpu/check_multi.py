"""Checks of the multi-GPU parts of tests/gpu/run.sh (threads, nccl4-*,
ddp4), called by check_archives.py: the archives against an independent
CUPTI activity counter (programs/cupti_count.c, files count-<part>/*.count),
NCCL's own log of every call (NCCL_DEBUG_SUBSYS=COLL, ncclcoll-<part>/) and
the programs' own expect lines."""

import glob
import os
import re
from collections import Counter, defaultdict

import otf2
from otf2.events import Enter, Leave, MpiCollectiveEnd, MpiRecv, MpiSend

# NCCL's data types (nccl.h's ncclDataType_t) and their sizes in bytes.
DTYPE_SIZE = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 1, 11: 1}
# NCCL's log names the operation as its info struct does; the API call:
API = {"AllReduce": "ncclAllReduce", "AllGather": "ncclAllGather", "ReduceScatter": "ncclReduceScatter",
       "Broadcast": "ncclBroadcast", "Reduce": "ncclReduce", "Send": "ncclSend", "Recv": "ncclRecv",
       "AlltoAll": "ncclAlltoAll", "Gather": "ncclGather", "Scatter": "ncclScatter"}
# The calls NCCL's log lists (the plugin also records ncclGroup,
# ncclGroupStart/End, ncclCommInitRank, ... which it does not).
CALLS = set(API.values())
COLL_LINE = re.compile(r"\[(\d+)\] NCCL INFO (\w+): opCount \w+ .* count (\d+) datatype (\d+) .*\[nranks=(\d+)\]")


def counter_files(d):
    """The counter's files: {rank: {key: int}} (rank -1: not an MPI or torch rank)."""
    out = {}
    for p in glob.glob(os.path.join(d, "*.count")):
        vals = dict(line.split() for line in open(p) if line.strip())
        out[int(vals.pop("rank"))] = {k: int(v) for k, v in vals.items()}
    return out


def gpu_counts(f):
    """Per process (location group that created the GPU's locations): the
    archive's kernels, memsets, copies by kind and copies between GPUs."""
    per = defaultdict(Counter)
    for c in f["copies"]:
        proc = c["creator"] or c["group"]
        if c["kind"] == "PtoP":
            per[proc]["peer_copies"] += 1
            per[proc]["peer_bytes"] += c["bytes"]
        else:
            per[proc]["copies_" + str(c["kind"]).lower()] += 1
    for m in f["memsets"]:
        per[m["creator"] or m["group"]]["memsets"] += 1
    for k in f["kernels"]:
        per[k["creator"] or k["group"]]["kernels"] += 1
    return per


KEYS = ("kernels", "memsets", "copies_htod", "copies_dtoh", "copies_dtod", "copies_htoh", "peer_copies", "peer_bytes")


def check_counter(check, f, count_dir, label):
    """Per process, kernels, memsets, copies by kind and peer copies equal
    the independent counter's, which dropped nothing."""
    counted = counter_files(count_dir)
    got = gpu_counts(f)
    check(f"{label}: the counter saw every process the archive has GPU work of",
          counted and len(counted) == len(got), (sorted(counted), sorted(got)))
    for rank, c in sorted(counted.items()):
        if rank < 0:
            names = list(got)
            proc = names[0] if len(names) == 1 else None
        else:
            proc = next((p for p in got if p in (f"MPI Rank {rank}", f"Process {rank}")), None)
        want = {k: c.get(k, 0) for k in KEYS}
        have = {k: got.get(proc, Counter()).get(k, 0) for k in KEYS}
        check(f"{label}: {proc}: kernels, memsets, copies per kind and peer copies equal the counter's",
              proc is not None and want == have, {k: (have[k], want[k]) for k in KEYS if have[k] != want[k]} or want)
        check(f"{label}: {proc}: the counter dropped no record", c.get("dropped", 0) == 0, c.get("dropped"))
        if c.get("nccl_kernels"):
            # NCCL launches a block per channel: traced, it must choose the
            # channels it chose untraced (a different topology seen under
            # the tracer would change them, and the program's speed).
            grids = [k["grid_x"] for k in f["kernels"] if (k["creator"] or k["group"]) == proc
                     and k["grid_x"] is not None and ("ncclDevKernel" in k["name"] or "ncclKernel" in k["name"])]
            check(f"{label}: {proc}: NCCL's kernels have the grid (channels) they have under the counter",
                  grids and max(grids) == c["nccl_grid_x_max"], (max(grids) if grids else None, c["nccl_grid_x_max"]))


def check_calls_have_records(check, f, label):
    """Within the run itself (no second run to differ from it): every copy
    and memset call recorded on a host thread has its copy or memset on
    the GPU (same correlation id), and every copy and memset on the GPU
    its call. NCCL sets up connections lazily, so the count of its setup
    copies can differ between two runs of the same program; this check
    does not depend on that."""
    calls = defaultdict(set)
    for a in f["api"]:
        if a["corr"] is not None and (a["name"].startswith("cudaMemcpy") or a["name"].startswith("cudaMemset")):
            calls[a["creator"] or a["group"]].add(a["corr"])
    work = defaultdict(set)
    for x in f["copies"] + f["memsets"]:
        work[x["creator"] or x["group"]].add(x["corr"])
    for proc in sorted(set(calls) | set(work)):
        c, w = calls.get(proc, set()), work.get(proc, set())
        check(f"{label}: {proc}: every copy and memset call has its GPU record and every record its call",
              c == w and c, (len(c), len(w), len(c - w), len(w - c)))


def coll_log(d):
    """NCCL's log of every call: {(file, cuda device index): Counter((API name, count, bytes))}."""
    out = defaultdict(Counter)
    for p in sorted(glob.glob(os.path.join(d, "*"))):
        for line in open(p, errors="replace"):
            m = COLL_LINE.search(line)
            if m and m.group(2) in API:
                dev, op, count, dtype = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
                out[(os.path.basename(p), int(dev))][(API[op], count, count * DTYPE_SIZE.get(dtype, 0))] += 1
    return out


def attr(ev, name):
    """The value of the attribute `name` on an event, or None (check_archives
    uses it too)."""
    for k, v in (ev.attributes or {}).items():
        if k.name == name:
            return v
    return None


def nccl_facts(archive):
    """Per process: the plugin's call regions (name, count, bytes), the
    messages and collectives on NCCL communicators, NVTX regions named
    like NCCL calls, calls not inside their explicit group, and regions
    nested in one of the same name."""
    facts = {"calls": defaultdict(Counter), "sends": Counter(), "recvs": Counter(), "colls": Counter(),
             "nvtx_nccl": Counter(), "twice": 0, "ungrouped": Counter(), "balanced": True}
    with otf2.reader.open(archive) as trace:
        stacks = defaultdict(list)
        for loc, ev in trace.events:
            proc = loc.group.name
            if isinstance(ev, Enter):
                r = ev.region
                user = str(r.paradigm).endswith("USER")
                stack = stacks[loc]
                if r.name.startswith("nccl") and user:
                    facts["nvtx_nccl"][(proc, r.name)] += 1
                elif r.name in CALLS:
                    facts["calls"][proc][(r.name, attr(ev, "count"), attr(ev, "bytes"))] += 1
                    if r.name in ("ncclSend", "ncclRecv") and "ncclGroup" not in [n for n, _ in stack]:
                        facts["ungrouped"][proc] += 1
                if r.name.startswith("nccl") and any(n == r.name for n, _ in stack):
                    facts["twice"] += 1
                stack.append((r.name, user))
            elif isinstance(ev, Leave):
                stack = stacks[loc]
                if not stack or stack[-1][0] != ev.region.name:
                    facts["balanced"] = False
                else:
                    stack.pop()
            elif isinstance(ev, (MpiSend, MpiRecv, MpiCollectiveEnd)) and ev.communicator.name.startswith("NCCL"):
                key = {MpiSend: "sends", MpiRecv: "recvs", MpiCollectiveEnd: "colls"}[type(ev)]
                facts[key][proc] += 1
    return facts


def rank_of(proc):
    m = re.match(r"(?:MPI Rank|Process) (\d+)$", proc)
    return int(m.group(1)) if m else None


def check_nccl(check, results, part, mpi):
    """One nccl4 part: NCCL's log against the archive, per process."""
    label = part
    d = os.path.join(results, f"exp-{part}")
    err = os.path.join(results, f"{part}.err")
    lines = open(err, errors="replace").read().splitlines() if os.path.exists(err) else []
    repaired = [l for l in lines if "repaired:" in l]
    check(f"{label}: repaired: 0 (the raw streams nest as the calls did)", not repaired, repaired[:1])
    f = nccl_facts(os.path.join(d, "traces.otf2"))
    check(f"{label}: Enter/Leave balanced", f["balanced"])
    log = coll_log(os.path.join(results, f"ncclcoll-{part}"))
    # Per process: MPI runs have one rank a file ([k] = its device = its
    # rank here); one process driving every GPU logs them all in one file.
    want = defaultdict(Counter)
    for (_, dev), calls in log.items():
        want[dev if mpi else 0] += calls
    got = {}
    for proc, calls in f["calls"].items():
        got[rank_of(proc) if mpi else 0] = calls
    check(f"{label}: NCCL's log has calls", sum(sum(c.values()) for c in want.values()) > 0)
    for r in sorted(want):
        w, g = want[r], got.get(r, Counter())
        check(f"{label}: rank {r}: NCCL calls, counts and bytes equal NCCL's log", w == g,
              {k: (g.get(k, 0), v) for k, v in w.items() if g.get(k, 0) != v} or
              {k: g[k] for k in g if k not in w} or sorted(w.items())[:4])
    check(f"{label}: no NCCL call recorded twice (NCCL's own NVTX ranges are not user regions)",
          not f["nvtx_nccl"] and f["twice"] == 0, (dict(f["nvtx_nccl"]), f["twice"]))
    return f


def check_lost(check, results):
    """The forced drops (tests/gpu/run.sh lost): CUPTI refused every
    second buffer, so it dropped records; the summary says how many, and
    the archive's process property holds the same count. With small
    buffers alone nothing is lost and nothing is said."""
    err = os.path.join(results, "lost.err")
    if not os.path.exists(err):
        return
    text = open(err, errors="replace").read()
    m = re.search(r"lost: .*?([\d,]+) CUDA activity records dropped by CUPTI", text)
    check("lost: the summary counts the records CUPTI dropped", m is not None,
          [l for l in text.splitlines() if "lost" in l][:2])
    said = int(m.group(1).replace(",", "")) if m else None
    with otf2.reader.open(os.path.join(results, "exp-lost", "traces.otf2")) as trace:
        props = {p.name: p.value for p in trace.definitions.location_group_properties
                 if p.name.startswith("GPUTRACE::LOST::")}
    check("lost: the archive holds the same count (GPUTRACE::LOST::CUPTI_DROPPED)",
          said is not None and props.get("GPUTRACE::LOST::CUPTI_DROPPED") == said, (props, said))
    small = os.path.join(results, "small.err")
    if os.path.exists(small):
        check("lost: small buffers alone lose nothing and say nothing",
              "lost:" not in open(small, errors="replace").read())


def check_multi(check, read, expectations, results):
    """Every multi-GPU part found in results."""
    check_lost(check, results)
    d = os.path.join(results, "exp-threads")
    if os.path.isdir(d):
        exp = {}
        for line in open(os.path.join(results, "threads.out"), errors="replace"):
            if line.startswith("expect "):
                exp.update(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        f = read(os.path.join(d, "traces.otf2"))
        check("threads: Enter/Leave balanced, timestamps non-decreasing", f["balanced"] and f["mono"])
        p2p = [c for c in f["copies"] if c["kind"] == "PtoP"]
        check("threads: copies between GPUs, count and bytes, as the program made them",
              len(p2p) == int(exp["peer_copies"]) and sum(c["bytes"] for c in p2p) == int(exp["bytes"]),
              (len(p2p), sum(c["bytes"] for c in p2p), exp.get("peer_copies"), exp.get("bytes")))
        threads, iters = int(exp["threads"]), int(exp["iterations"])
        jac = [k for k in f["kernels"] if k["name"].startswith("jacobi")]
        check("threads: a kernel per thread and iteration", len(jac) == threads * iters, len(jac))
        corr = {a["corr"] for a in f["api"] if a["corr"] is not None}
        linked = [x for x in f["kernels"] + f["copies"] + f["memsets"] if x["corr"] in corr]
        check("threads: every kernel, copy and memset linked to its launching call by correlation id",
              len(linked) == len(f["kernels"]) + len(f["copies"]) + len(f["memsets"]),
              len(f["kernels"]) + len(f["copies"]) + len(f["memsets"]) - len(linked))
        steps = [a for a in f["api"] if a["name"] == "step"]
        per_thread = Counter(a["loc"] for a in steps)
        check("threads: NVTX step ranges, one per thread and iteration, each thread its own",
              len(per_thread) == threads and set(per_thread.values()) == {iters}, dict(per_thread))
        launches = [a for a in f["api"] if a["name"] == "cudaLaunchKernel"]
        check("threads: every kernel launch inside its thread's step range",
              launches and all(a["outer"][-1:] == ["step"] for a in launches),
              Counter(tuple(a["outer"]) for a in launches).most_common(3))
        check_counter(check, f, os.path.join(results, "count-threads"), "threads")
        for name in ("threads.traced", "threads.traced.x4", "threads.traced.runtime"):
            p = os.path.join(results, f"{name}.result")
            if os.path.exists(p):
                runs, failed = (int(x) for x in open(p).read().split())
                check(f"{name}: {runs} traced runs, 0 failed (the program checks its own result)",
                      runs >= 20 and failed == 0, (runs, failed))
    for part, mpi in (("nccl4-groups", True), ("nccl4-halo", True), ("nccl4-zero", True), ("nccl4-alltoall", True),
                      ("nccl4-graph", True), ("nccl4-collectives", True), ("nccl4-single", False), ("ddp4", False)):
        d = os.path.join(results, f"exp-{part}")
        if not os.path.isdir(d):
            continue
        f = read(os.path.join(d, "traces.otf2"))
        check_counter(check, f, os.path.join(results, f"count-{part}"), part)
        check_calls_have_records(check, f, part)
        if part == "ddp4":
            # torchrun's workers: one NCCL log file each, [k] their device.
            nf = check_nccl(check, results, part, mpi=True)
        else:
            nf = check_nccl(check, results, part, mpi)
        exp_lines = [l for l in open(os.path.join(results, f"{part}.out"), errors="replace") if l.startswith("expect")]
        if part in ("nccl4-groups", "nccl4-halo"):
            check(f"{part}: every ncclSend and ncclRecv inside its ncclGroup", not nf["ungrouped"],
                  dict(nf["ungrouped"]))
        if part == "nccl4-graph":
            launches = [int(m.group(2)) for m in (re.search(r"rank=(\d+) graph_launches=(\d+)", l) for l in exp_lines) if m]
            sends = Counter()
            for l in exp_lines:
                m = re.search(r"rank=(\d+) op=ncclSend calls=(\d+)", l)
                if m:
                    sends[int(m.group(1))] = int(m.group(2))
            for proc, n in sorted(nf["sends"].items()):
                r = rank_of(proc)
                check(f"nccl4-graph: rank {r}: a message per captured send and graph launch",
                      launches and n == launches[0] * sends[r], (n, launches[:1], sends[r]))
            check("nccl4-graph: messages recorded for every rank", len(nf["sends"]) == len(sends), dict(nf["sends"]))
