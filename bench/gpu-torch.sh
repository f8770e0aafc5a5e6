#!/usr/bin/env bash
# gputrace benchmark (GPU side): what tracing costs a PyTorch program, one
# interleaved run of ROUNDS rounds: per small op (x.add_(1)) and per DDP
# training step with one rank, untraced / gputrace / the PyTorch profiler
# (Kineto); and for each, the time from the end of the program's work to
# the command's return (for gputrace: to the finished archive; for Kineto
# the trace export is inside the work and quoted apart).
#
# Usage: bench/gpu-torch.sh [ROUNDS]  (gputrace's binaries in $GT_BIN,
# default .device/bin; results also in $OUT/bench-torch.txt when $OUT is set).
# Extra gputrace modes: GT_MODES="name:VAR=value;VAR=value name2:..."; with
# ANCHORS=DIR (holding ../shared/anchors' cupti_floor.c) also "floor": the
# thinnest CUPTI client (driver API, kernels, copies) injected alone, the
# least any CUPTI-based tracer adds.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
bin=${GT_BIN:-$root/.device/bin}
gt=$bin/gputrace
prog=$root/bench/programs/torch_bench.py
work=/tmp/gputrace-torch-bench
rm -rf "$work" && mkdir -p "$work"
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
ops=${OPS:-20000}
steps=${STEPS:-150}

# run NAME CMD...: runs CMD; keeps its output plus "return_ns" (monotonic).
run() {
  local name=$1; shift
  python3 - "$work/$name.out" "$@" <<'PY'
import subprocess, sys, time
out = open(sys.argv[1], "w")
t = time.perf_counter()
rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode
print(f"return_ns {time.monotonic_ns()}", file=out)
print(f"wall_s {time.perf_counter() - t:.3f}", file=out)
print(f"rc {rc}", file=out)
PY
}

modes="plain gputrace kineto"
if [ -n "${ANCHORS:-}" ] && [ -f "$ANCHORS/cupti_floor.c" ]; then
  cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
  gcc -O2 -shared -fPIC -o "$work/libfloor.so" "$ANCHORS/cupti_floor.c" -I/usr/local/cuda/include \
    -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti && modes="$modes floor"
fi
extra=()
for m in ${GT_MODES:-}; do
  modes="$modes ${m%%:*}"
  extra+=("$m")
done
settings() { # the environment of an extra gputrace mode
  local m
  for m in "${extra[@]}"; do
    [ "${m%%:*}" = "$1" ] && echo "${m#*:}" | tr ';' ' '
  done
}

for r in $(seq "$rounds"); do
  for what in op ddp; do
    if [ $what = op ]; then cmd=(python3 "$prog" op "$ops"); else
      cmd=(torchrun --standalone --nproc-per-node 1 "$prog" ddp "$steps"); fi
    for mode in $modes; do
      case $mode in
        plain) run "$what.$mode.$r" "${cmd[@]}" ;;
        floor) run "$what.$mode.$r" env CUDA_INJECTION64_PATH="$work/libfloor.so" "${cmd[@]}" ;;
        kineto) run "$what.$mode.$r" env BENCH_KINETO=1 BENCH_KINETO_TRACE="$work/kineto.$what.$r.json" "${cmd[@]}" ;;
        gputrace) rm -rf "$work/exp.$what.$mode.$r"; run "$what.$mode.$r" "$gt" -o "$work/exp.$what.$mode.$r" "${cmd[@]}" ;;
        *) rm -rf "$work/exp.$what.$mode.$r"
           # shellcheck disable=SC2046
           run "$what.$mode.$r" env $(settings "$mode") "$gt" -o "$work/exp.$what.$mode.$r" "${cmd[@]}" ;;
      esac
    done
  done
done

python3 - "$work" "$rounds" "$modes" <<'PY' | tee "${OUT:-$work}/bench-torch.txt"
import os, re, statistics, sys
work, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def value(text, key):
    m = re.search(rf"{key} ([0-9.]+)", text)
    return float(m.group(1)) if m else None
def figures(what, mode):
    rows = []
    for r in range(1, rounds + 1):
        p = f"{work}/{what}.{mode}.{r}.out"
        if not os.path.exists(p):
            continue
        t = open(p).read()
        per = value(t, "us_per_op" if what == "op" else "ms_per_step")
        end, ret = value(t, "work_end_ns"), value(t, "return_ns")
        archive = re.search(r"s after the program's exit", t)
        rows.append(dict(per=per, after=(ret - end) / 1e9 if end and ret else None,
                         export=value(t, "kineto_export_s"), rc=value(t, "rc"),
                         merged=value(t, "merged in"), archive=bool(archive)))
    return rows
unit = {"op": "us per op", "ddp": "ms per step"}
for what in ("op", "ddp"):
    base = figures(what, "plain")
    if not base or None in [b["per"] for b in base]:
        print(f"{what}: the untraced run failed"); continue
    b = statistics.median(x["per"] for x in base)
    bmin = min(x["per"] for x in base)
    print(f"{what} ({unit[what]}), {rounds} rounds interleaved: median (min) / added to the untraced median (min)")
    for mode in modes:
        rows = figures(what, mode)
        per = [x["per"] for x in rows if x["per"] is not None]
        if not per:
            print(f"  {mode:10} no figures (rc {[x['rc'] for x in rows]})"); continue
        med, mn = statistics.median(per), min(per)
        after = [x["after"] for x in rows if x["after"] is not None]
        extra = ""
        if mode == "kineto":
            ex = [x["export"] for x in rows if x["export"] is not None]
            if ex: extra = f"; trace export {statistics.median(ex):.2f} s (inside the work)"
        if mode not in ("plain", "kineto"):
            m = [x["merged"] for x in rows if x["merged"] is not None]
            if m: extra = f"; merge {statistics.median(m):.2f} s"
        print(f"  {mode:10} {med:9.3f} ({mn:.3f})  {med - b:+8.3f} ({mn - bmin:+.3f})  {100*(med-b)/b:+6.1f}%"
              f"   end of work -> return {statistics.median(after) if after else float('nan'):.2f} s"
              f" (min {min(after) if after else float('nan'):.2f}){extra}")
PY
