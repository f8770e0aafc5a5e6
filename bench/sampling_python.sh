#!/usr/bin/env bash
# What reading the Python frames of sampled stacks costs (not part of CI):
# a fixed-work Python program (bench/programs/python_work.py: pure-Python
# arithmetic 30 Python frames deep) run untraced, traced, traced with
# --sampling 1ms (Python frames read), and traced with --sampling 1ms
# with Python-frame reading off (_GPUTRACE_TEST_SAMPLING_NO_PYTHON, a test
# hook: no interpreter looked for, drained every 5 ms as a native
# program), interleaved over ROUNDS rounds. Prints per variant the min and
# median of the work's wall time and of the process's CPU time (all its
# threads: the sampler's unwinding and Python reading included), their
# ratios to the untraced run, the samples taken (from the archive), and
# the cost of the Python frames per sample: the CPU time the Python
# variant adds over the variant without, over its samples.
# MPI=1 runs 2 ranks under mpirun with mpi4py (a barrier per round).
# Usage: bench/sampling_python.sh [ROUNDS] [ITERATIONS]   (default 7, 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rounds=${1:-7}
iterations=${2:-5000}
cargo build --release -q -p gputrace -p gputrace-sampling
target=${CARGO_TARGET_DIR:-target}
gt=$target/release/gputrace
work=$(mktemp -d /tmp/gputrace-sampling-python-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmd=(/usr/bin/python3 bench/programs/python_work.py "$iterations" 30)
ranks=1
if [[ "${MPI:-0}" == 1 ]]; then
  cmd=(mpirun -np 2 "${cmd[@]}" --mpi)
  ranks=2
fi
run_variant() { # variant round -> lines "variant round wall cpu" (one per rank)
  local v=$1 r=$2
  case $v in
    untraced) "${cmd[@]}" ;;
    traced) "$gt" -o "$work/$v-$r" "${cmd[@]}" ;;
    python) "$gt" --sampling 1ms -o "$work/$v-$r" "${cmd[@]}" ;;
    native) _GPUTRACE_TEST_SAMPLING_NO_PYTHON=1 "$gt" --sampling 1ms -o "$work/$v-$r" "${cmd[@]}" ;;
  esac 2>/dev/null | grep -o 'work_wall_s [0-9.]* process_cpu_s [0-9.]*' | # (two ranks' lines may run together)
    sed "s/^work_wall_s \([0-9.]*\) process_cpu_s \([0-9.]*\)/$v $r \1 \2/"
}
variants=(untraced traced python native)
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    run_variant "$v" "$r" >>"$work/times"
  done
done
# Samples per sampled run (all ranks), from the archive.
for v in python native; do
  for r in $(seq 1 "$rounds"); do
    n=$(otf2-print "$work/$v-$r/traces.otf2" 2>/dev/null | grep -c '^CALLING_CONTEXT_SAMPLE' || true)
    echo "$v $r $n" >>"$work/samples"
  done
done
/usr/bin/python3 - "$work/times" "$work/samples" "$ranks" <<'PY'
import statistics, sys
from collections import defaultdict
wall, cpu, samples = defaultdict(list), defaultdict(list), defaultdict(list)
ranks = int(sys.argv[3])
rounds = set()
for line in open(sys.argv[1]):
    v, r, w, c = line.split()
    rounds.add(r)
    wall[v].append(float(w))
    cpu[v].append(float(c))
for line in open(sys.argv[2]):
    v, _, n = line.split()
    samples[v].append(int(n))
print(f"{len(rounds)} rounds, {ranks} process(es); wall: the work's, CPU: the process's, per process; "
      "runs: the processes' lines read (a run that failed has none)")
print(f"{'variant':<9} {'min wall':>9} {'med wall':>9} {'min cpu':>8} {'med cpu':>8} {'wall ratio min/med':>19} "
      f"{'cpu ratio min/med':>18} {'samples':>8} {'runs':>5}")
bw, bwm = min(wall["untraced"]), statistics.median(wall["untraced"])
bc, bcm = min(cpu["untraced"]), statistics.median(cpu["untraced"])
for v in ("untraced", "traced", "python", "native"):
    w, c = wall[v], cpu[v]
    n = statistics.median(samples[v]) / ranks if samples[v] else 0
    print(f"{v:<9} {min(w):9.3f} {statistics.median(w):9.3f} {min(c):8.3f} {statistics.median(c):8.3f} "
          f"{min(w) / bw:9.3f}/{statistics.median(w) / bwm:.3f} {min(c) / bc:9.3f}/{statistics.median(c) / bcm:.3f} "
          f"{n:8.0f} {len(w):5}")
n = statistics.median(samples["python"]) / ranks
for what, xs in (("CPU", cpu), ("wall", wall)):
    dmin = min(xs["python"]) - min(xs["native"])
    dmed = statistics.median(xs["python"]) - statistics.median(xs["native"])
    print(f"Python frames: {what} time added over sampling without them, per sample: "
          f"min {dmin / n * 1e6:.1f} us, median {dmed / n * 1e6:.1f} us ({n:.0f} samples per process)")
PY
