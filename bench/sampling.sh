#!/usr/bin/env bash
# What call-stack sampling costs (not part of CI): a fixed-work MPI
# program (bench/programs/sampling_work.c, 2 ranks, built -O2
# -fomit-frame-pointer -g) run untraced, traced, and traced with
# --sampling 10ms and 1ms, interleaved over ROUNDS rounds (so that a slow
# moment of the machine hits every variant alike). Prints per variant the
# min and median wall time and their ratios to the untraced run, the
# samples taken (from the archive) and the cost per sample: the run time
# added over traced-without-sampling, times the ranks, over the samples.
# MECHANISM=timer takes the timer-signal fallback instead of perf events.
# Usage: bench/sampling.sh [ROUNDS] [ITERATIONS]   (default 5, 400)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rounds=${1:-5}
iterations=${2:-400}
cargo build --release -q --workspace
target=${CARGO_TARGET_DIR:-target}
gt=$target/release/gputrace
work=$(mktemp -d /tmp/gputrace-sampling-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -fomit-frame-pointer -g -o "$work/work" bench/programs/sampling_work.c
if [[ "${MECHANISM:-perf}" == timer ]]; then
  export _GPUTRACE_TEST_SAMPLING_TIMER=1
fi
run_variant() { # variant round -> seconds
  local v=$1 r=$2 start end
  local cmd=(mpirun -np 2 "$work/work" "$iterations")
  start=$(date +%s.%N)
  case $v in
    untraced) "${cmd[@]}" >/dev/null 2>&1 ;;
    traced) "$gt" -o "$work/$v-$r" "${cmd[@]}" >/dev/null 2>&1 ;;
    *) "$gt" --sampling "$v" -o "$work/$v-$r" "${cmd[@]}" >/dev/null 2>&1 ;;
  esac
  end=$(date +%s.%N)
  echo "$v $r $(echo "$end - $start" | bc)"
}
variants=(untraced traced 10ms 1ms)
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    run_variant "$v" "$r" >>"$work/times"
  done
done
# Samples per sampled run, from the archive.
for v in 10ms 1ms; do
  for r in $(seq 1 "$rounds"); do
    n=$(otf2-print "$work/$v-$r/traces.otf2" 2>/dev/null | grep -c '^CALLING_CONTEXT_SAMPLE' || true)
    echo "$v $r $n" >>"$work/samples"
  done
done
/usr/bin/python3 - "$work/times" "$work/samples" "${MECHANISM:-perf}" <<'PY'
import statistics, sys
from collections import defaultdict
times, samples = defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    v, _, t = line.split()
    times[v].append(float(t))
for line in open(sys.argv[2]):
    v, _, n = line.split()
    samples[v].append(int(n))
base_min, base_med = min(times["untraced"]), statistics.median(times["untraced"])
traced_med = statistics.median(times["traced"])
print(f"sampling by {sys.argv[3]}; {len(times['untraced'])} rounds, 2 ranks")
print(f"{'variant':<10} {'min s':>7} {'median s':>9} {'min ratio':>10} {'median ratio':>13} {'samples':>8} {'us/sample':>10}")
for v in ("untraced", "traced", "10ms", "1ms"):
    t = times[v]
    mn, md = min(t), statistics.median(t)
    n = statistics.median(samples[v]) if samples[v] else 0
    per = f"{(md - traced_med) * 2 / n * 1e6:.1f}" if n else ""
    print(f"{v:<10} {mn:7.3f} {md:9.3f} {mn / base_min:10.3f} {md / base_med:13.3f} {n:8.0f} {per:>10}")
PY
