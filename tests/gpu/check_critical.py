"""Checks of tests/gpu/run.sh's `critical` part, called by
check_archives.py: `gputrace analyze`'s critical path of
programs/critical_gpu.cu in its three modes (exp-critical-MODE/analyze.json,
the program's expect lines in critical-MODE.out).

- kernel: the top step of the path is the `spin` kernel on a GPU stream,
  its time on the path the injected delay (the program says how much) +-10%;
  the what-if `kernel_at_median` of `spin` projects a run within 10% of
  the `none` run's path.
- gap: the top step is the host's computation outside any region (the
  sleeps before the launches), the injected sleeps +-10%; the what-if
  `host_gap_at_median` projects a run within 10% of the `none` run's path.
"""

import json
import os


def load(results, mode, expectations):
    d = os.path.join(results, f"exp-critical-{mode}")
    path = os.path.join(d, "analyze.json")
    out = os.path.join(results, f"critical-{mode}.out")
    if not (os.path.isfile(path) and os.path.isfile(out)):
        return None, None
    try:
        with open(path) as f:
            a = json.load(f)
    except ValueError as e:
        return {"error": str(e)}, expectations(out)
    return a, expectations(out)


def near(got, want):
    return want > 0 and abs(got - want) <= 0.10 * want


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def start_up(a):
    """The time on the path of the program's CUDA start-up: its one
    cudaMalloc, which creates the context (113 to 212 ms between runs of
    the same program on an H100, more than the 10% being checked)."""
    steps = (a.get("critical_path") or {}).get("steps") or []
    return sum(s["time_ns"] for s in steps if s["activity"] == "cudaMalloc")


def check_mode(check, a, exp, none_len, mode, activity, on_gpu, kind):
    label = f"critical-{mode}"
    path = a.get("critical_path") or {}
    steps = path.get("steps") or []
    check(f"{label}: a critical path", bool(steps), a.get("notes"))
    if not steps:
        return
    injected = int(exp.get("injected_ns", "0"))
    top = steps[0]
    what = f"{top['activity']} on {top['location']} ({'GPU' if top['on_gpu'] else 'host'}), {ms(top['time_ns'])}"
    check(f"{label}: the delay is the top of the path", activity(top["activity"]) and top["on_gpu"] == on_gpu, what)
    check(f"{label}: its time on the path is the injected {ms(injected)} +-10%", near(top["time_ns"], injected), what)
    total = sum(s["time_ns"] for s in steps)
    check(f"{label}: the steps add up to the path", total == path["length_ns"], f"{total} vs {path['length_ns']}")
    rows = [w for w in a.get("what_if_gpu") or [] if w["kind"] == kind]
    if mode == "kernel":
        rows = [w for w in rows if activity(w.get("activity") or "")]
    check(f"{label}: a {kind} projection", bool(rows), a.get("what_if_gpu"))
    if rows and none_len:
        # Both without the context's creation, whose time varies by more
        # than the delay's projection is to be checked to (see start_up).
        w = rows[0]
        projected, none = w["projected_ns"] - start_up(a), none_len[0] - none_len[1]
        check(f"{label}: the projection is the run without the delay within 10% (both without CUDA's start-up)",
              near(projected, none),
              f"projected {ms(w['projected_ns'])} (saved {ms(w['saved_ns'])} of {ms(path['length_ns'])}), "
              f"less start-up {ms(projected)}; none {ms(none_len[0])}, less start-up {ms(none)}")


def check_critical(check, expectations, results):
    runs = {m: load(results, m, expectations) for m in ("kernel", "gap", "none")}
    if all(a is None for a, _ in runs.values()):
        return
    for mode, (a, exp) in runs.items():
        check(f"critical-{mode}: analyze's JSON", a is not None and "error" not in a, a and a.get("error"))
        if exp is not None:
            check(f"critical-{mode}: the program ran", exp.get("mode") == mode, exp)
    none, _ = runs["none"]
    length = ((none or {}).get("critical_path") or {}).get("length_ns") if none and "error" not in none else None
    none_len = (length, start_up(none)) if length else None
    if none_len:
        print(f"     critical-none: the path {ms(length)}, CUDA's start-up {ms(none_len[1])} of it")
    a, exp = runs["kernel"]
    if a and "error" not in a:
        spin = lambda s: s.removeprefix("void ").startswith("spin(")
        check_mode(check, a, exp, none_len, "kernel", spin, True, "kernel_at_median")
    a, exp = runs["gap"]
    if a and "error" not in a:
        check_mode(check, a, exp, none_len, "gap", lambda s: s == "(outside any region)", False,
                   "host_gap_at_median")
