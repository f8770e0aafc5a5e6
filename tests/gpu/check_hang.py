"""Checks of the hang4 part of tests/gpu/run.sh, called by
check_archives.py: hang_gpu.cu's jobs, stopped by gputrace's watchdog
(--hang-timeout), against what the program says it did (its "expect"
lines): the archive is there in time, and `gputrace analyze`'s JSON
(hang4-<mode>.analysis.out) names the ranks that never entered the
collective the others wait in, and the GPU work launched that never
finished."""

import json
import os


def runs(ranks):
    """Ranks as analyze lists them: runs, `0-2`, `0,2-3`."""
    out, ranks = [], sorted(ranks)
    for r in ranks:
        if out and out[-1][1] + 1 == r:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def check_times(check, name, t):
    limit = float(t.get("timeout_s", "nan"))
    check(f"{name}: the program hung (every rank printed when)", "hang_to_exit_s" in t, t)
    if "hang_to_archive_s" in t:
        after = float(t["hang_to_archive_s"])
        check(f"{name}: the archive is written within timeout + 10 s of the hang", after <= limit + 10,
              f"{after:.1f} s after the hang (timeout {limit:.0f} s); {t.get('wall_s')} s from the start")
        check(f"{name}: not stopped before the timeout", after >= limit, f"{after:.1f} s")


def check_nccl(check, name, a, exp):
    size, k, last = int(exp["ranks"]), int(exp["hang_collective"]), int(exp["missing_rank"])
    others = [r for r in range(size) if r != last]
    stuck = [s for s in a["stuck"] if s["paradigm"] == "NCCL"]
    check(f"{name}: one NCCL communicator stuck", len(stuck) == 1, a["stuck"])
    if not stuck:
        return
    s = stuck[0]
    check(f"{name}: rank {last} never entered collective #{k}, ranks {runs(others)} did and returned",
          (s["operation"], s["missing"], s["waiting"], s["returned"]) == (k, str(last), runs(others), True), s)
    check(f"{name}: the collective is ncclAllReduce, NCCL's sequence number {k - 1} (from 0)",
          s["calls"] == ["ncclAllReduce"] and s["sequence"] == k - 1, (s["calls"], s["sequence"]))
    check(f"{name}: the ranks that entered it wait in cudaStreamSynchronize",
          len(s["waiting_doing"]) == len(others) and all("cudaStreamSynchronize" in d for d in s["waiting_doing"]),
          s["waiting_doing"])
    check(f"{name}: rank {last} waits in MPI_Barrier", any("MPI_Barrier" in d for d in s["missing_doing"]),
          s["missing_doing"])
    # The NCCL kernels of ranks 0-2 are in the CUPTI buffer that holds
    # their hung kernel, which CUPTI never hands back (docs/analysis.md):
    # what they did is not known, and nothing may be claimed of it.
    nccl = {u["rank"]: u["nccl"] for u in a["unfinished_kernels"] if u.get("nccl")}
    check(f"{name}: no NCCL kernel claimed unfinished but of collective #{k}",
          all(n["operation"] == k and n["call"] == "ncclAllReduce" for n in nccl.values()), nccl)


def check_spin(check, name, a, exp):
    size, k = int(exp["ranks"]), int(exp["hang_collective"])
    others = [r for r in range(size) if r != 1]
    stuck = [s for s in a["stuck"] if s["paradigm"] == "MPI"]
    check(f"{name}: MPI_COMM_WORLD stuck", len(stuck) == 1, a["stuck"])
    if stuck:
        s = stuck[0]
        check(f"{name}: rank 1 never entered collective #{k}, ranks {runs(others)} wait in MPI_Barrier",
              (s["operation"], s["missing"], s["waiting"], s["calls"]) == (k, "1", runs(others), ["MPI_Barrier"]), s)
        check(f"{name}: rank 1 waits in cudaDeviceSynchronize",
              any("cudaDeviceSynchronize" in d for d in s["missing_doing"]), s["missing_doing"])
    mine = [u for u in a["unfinished_kernels"] if u["rank"] == 1]
    last = mine[0]["last"] if mine and mine[0].get("last") else {}
    check(f"{name}: spin_forever on GPU 1 (rank 1) launched and never finished",
          # Its GPU is known only from CUPTI's records, which the buffer
          # holding the hung kernel keeps (docs/analysis.md).
          len(mine) == 1 and mine[0]["gpu"] in ("CUDA Device 1", None)
          and (last.get("kernel") or "").startswith("spin_forever")
          and last.get("call", "").startswith("cudaLaunchKernel"), mine)
    check(f"{name}: no other rank has a kernel that never finished",
          all(u["rank"] == 1 for u in a["unfinished_kernels"]), [u["rank"] for u in a["unfinished_kernels"]])


def check_hang(check, expectations, results):
    for mode, checker in (("nccl", check_nccl), ("spin", check_spin)):
        name = f"hang4-{mode}"
        out = os.path.join(results, f"{name}.out")
        if not os.path.exists(out):
            continue
        exp = expectations(out)
        check(f"{name}: the program ran ({exp.get('ranks')} ranks)", exp.get("mode") == mode, exp)
        check(f"{name}: the archive exists", os.path.exists(os.path.join(results, f"exp-{name}", "traces.otf2")))
        err = os.path.join(results, f"{name}.err")
        said = open(err, errors="replace").read() if os.path.exists(err) else ""
        check(f"{name}: the watchdog stopped the job",
              "hang: no MPI or NCCL call recorded and no GPU work ended in any process" in said,
              [l for l in said.splitlines() if "hang" in l][:2])
        times = os.path.join(results, f"{name}.time.out")
        if os.path.exists(times):
            check_times(check, name, expectations(times))
        analysis = os.path.join(results, f"{name}.analysis.out")
        try:
            a = json.load(open(analysis))
        except (OSError, ValueError) as e:
            check(f"{name}: gputrace analyze's JSON", False, e)
            continue
        if "ranks" in exp and "hang_collective" in exp:
            checker(check, name, a, exp)
