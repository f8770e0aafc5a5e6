"""Checks of the link part of tests/gpu/run.sh, called by check_archives.py:
on a run where every rank copies the same bytes to the next GPU each
iteration, peer to peer, but one rank stages them through pinned host
memory (programs/link_gpu.cu), `gputrace analyze --format json
--iterations iteration` (link.analyze.out) names that rank as the NCCL
straggler with a slower link as the cause (its copies), its lateness per
all-reduce within 10 % of what its copies took beyond the next slowest
rank's (CUDA events, the program's own measure), and every iteration of
the loop the same way."""

import json
import os
import re


def check_link(check, results):
    out = os.path.join(results, "link.out")
    if not os.path.exists(out):
        return
    exp, copy = {}, {}
    for line in open(out):
        m = re.match(r"expect copy ns rank (\d+) (\S+)$", line.strip())
        if m:
            copy[int(m.group(1))] = float(m.group(2))
            continue
        m = re.match(r"expect (.*) (\S+)$", line.strip())
        if m:
            exp[m.group(1)] = m.group(2)
    need = ("slow rank", "iterations", "warmup", "ranks", "bytes")
    check("link: the program's expect lines", all(k in exp for k in need) and len(copy) >= 2, (exp, copy))
    if not all(k in exp for k in need) or len(copy) < 2:
        return
    slow, iters, warmup = int(exp["slow rank"]), int(exp["iterations"]), int(exp["warmup"])
    others = sorted(v for r, v in copy.items() if r != slow)
    extra = copy[slow] - others[-1]
    check("link: the slow rank's copies took longer (CUDA events)", extra > 0, copy)
    try:
        with open(os.path.join(results, "link.analyze.out")) as f:
            a = json.load(f)
    except (OSError, ValueError) as e:
        check("link: gputrace analyze --format json --iterations iteration", False, e)
        return
    nccl = [s for s in a.get("stragglers", []) if s.get("paradigm") == "NCCL"]
    check("link: an NCCL straggler", bool(nccl), a.get("stragglers"))
    if not nccl:
        return
    top = nccl[0]
    brief = {k: top.get(k) for k in ("rank", "operations", "times_last", "by_kernel", "lateness_ns", "cause_kind",
                                     "cause", "cause_excess_ns")}
    check(f"link: rank {slow} is the NCCL straggler, judged on the GPU",
          top.get("rank") == slow and top.get("by_kernel", 0) >= iters, brief)
    check("link: last at every all-reduce of the loop",
          top.get("times_last", 0) >= iters and top.get("operations") == iters + warmup, brief)
    check("link: the cause is a slower link, its copies",
          top.get("cause_kind") == "link" and (top.get("cause") or "").startswith("copies [CUDA memcpy"), brief)
    late = top.get("lateness_ns", 0) / max(iters, 1)
    check("link: its lateness per all-reduce within 10% of what its copies took beyond the others'",
          abs(late - extra) <= 0.1 * extra, f"{late / 1e6:.3f} ms vs {extra / 1e6:.3f} ms")
    excess = top.get("cause_excess_ns", 0)
    check("link: the copies' excess explains the lateness within 10%",
          abs(excess - top.get("lateness_ns", 0)) <= 0.1 * top.get("lateness_ns", 1),
          f"{excess / 1e6:.3f} ms vs {top.get('lateness_ns', 0) / 1e6:.3f} ms")
    its = (a.get("iterations") or {}).get("items") or []
    check("link: every iteration analysed", len(its) == iters, len(its))
    per = [i for i in its if (i.get("straggler") or {}).get("rank") == slow
           and (i.get("straggler") or {}).get("cause_kind") == "link"]
    check(f"link: each iteration's straggler is rank {slow} with a slower link", len(per) == len(its) and its,
          [(i.get("number"), i.get("straggler")) for i in its if i not in per][:3])
    # Each iteration's critical path holds the slow rank's copies.
    on_path = [i for i in its if any(s.get("process") == f"rank {slow}" and s.get("on_gpu")
                                     and "memcpy" in s.get("activity", "") for s in i["critical_path"]["steps"])]
    check(f"link: each iteration's critical path holds rank {slow}'s copies", len(on_path) == len(its) and its,
          its[0]["critical_path"]["steps"][:4] if its else None)
    err = os.path.join(results, "link.err")
    lines = [l.strip() for l in open(err) if "Straggler:" in l] if os.path.exists(err) else []
    check("link: the run summary's Straggler line says a slower link",
          bool(lines) and f"rank {slow}'s GPU started" in lines[0] and "a slower link (copies" in lines[0], lines[:1])
