#!/usr/bin/env bash
# The flight recorder (GPUTRACE_FLIGHT_RECORDER): memory and disk over a
# long run, and what it costs per MPI call.
#
#  1. Memory and disk: tests/programs/mpi/hang.c on 2 ranks makes
#     all-reduces for SECONDS (a 20 us nap before each) and then hangs
#     (the last rank never enters the next one), traced with
#     `--flight-recorder WINDOW --hang-timeout 20`. Every 10 s: the ranks'
#     resident memory (VmRSS, summed), the raw streams' disk use and
#     apparent size, and the same without the flight recorder in a second
#     run beside it (`--hang-timeout 20` alone); both with
#     GPUTRACE_TOTAL_MEMORY=1M (slots of at most 256 KiB a thread, so that
#     a slot holds less than the window). At the end: the
#     summary's flight-recorder and Stuck lines, and the seconds from the
#     hang to gputrace's return (the hang timeout plus the merge).
#  2. Cost: the two-rank 0-byte ping-pong (tests/programs/mpi/pingpong.c),
#     untraced, traced and traced with a 1 s flight recorder, ROUNDS
#     rounds interleaved: ns per MPI call, min and median.
# Usage: bench/flight-recorder.sh [SECONDS] [WINDOW] [ROUNDS]
#        (default 600, 10, 10; SECONDS 0: the cost only). GT_BIN=DIR as in
#        bench/mpi_call.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
window=${2:-10}
rounds=${3:-10}
if [ -n "${GT_BIN:-}" ]; then
  gt=$GT_BIN/gputrace
else
  source scripts/env.sh
  cargo build --release --workspace -q
  gt=./target/release/gputrace
fi
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
work=$(mktemp -d /tmp/gputrace-flight.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 -o "$work/hang" tests/programs/mpi/hang.c
"$mpicc" -O2 -Itests/programs/mpi -o "$work/pingpong" tests/programs/mpi/pingpong.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Resident memory of the ranks of the job traced into $1 (kB, summed).
rss_of() {
  local sum=0 pid kb
  for pid in $(pgrep -f "^$work/hang allreduce -s $seconds -u 20 $1\$" || true); do
    kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    sum=$((sum + ${kb:-0}))
  done
  echo "$sum"
}
disk_of() { du -s --block-size=1K "$1/raw" 2>/dev/null | cut -f1 || echo 0; }
apparent_of() { du -s --apparent-size --block-size=1K "$1/raw" 2>/dev/null | cut -f1 || echo 0; }

if [ "$seconds" -gt 0 ]; then
echo "== 1. memory and disk: ${seconds} s of all-reduces on 2 ranks, then a hang; window ${window} s"
start=$(date +%s)
# The last argument only tells the two jobs' ranks apart (hang.c ignores it).
export GPUTRACE_TOTAL_MEMORY=1M
"$gt" --flight-recorder "$window" --hang-timeout 20 --keep-raw -o "$work/fr" \
  "$mpirun" -np 2 --bind-to none "$work/hang" allreduce -s "$seconds" -u 20 fr >"$work/fr.out" 2>"$work/fr.err" &
fr=$!
"$gt" --hang-timeout 20 --keep-raw -o "$work/all" \
  "$mpirun" -np 2 --bind-to none "$work/hang" allreduce -s "$seconds" -u 20 all >"$work/all.out" 2>"$work/all.err" &
all=$!
printf '%6s  %12s %12s %14s   %12s %12s\n' "t (s)" "fr RSS kB" "fr disk kB" "fr apparent kB" "all RSS kB" "all disk kB"
while kill -0 "$fr" 2>/dev/null || kill -0 "$all" 2>/dev/null; do
  sleep 10
  t=$(($(date +%s) - start))
  printf '%6d  %12d %12d %14d   %12d %12d\n' "$t" "$(rss_of fr)" "$(disk_of "$work/fr")" "$(apparent_of "$work/fr")" \
    "$(rss_of all)" "$(disk_of "$work/all")"
done
wait "$fr" || true
wait "$all" || true
end=$(date +%s)
echo "hang to return: $((end - start - seconds)) s (hang timeout 20 s)"
grep -h "flight recorder\|Stuck\|events,\|archive:" "$work/fr.err" | sed 's/^/  fr:  /'
grep -h "Stuck\|events,\|archive:" "$work/all.err" | sed 's/^/  all: /'
fi

unset GPUTRACE_TOTAL_MEMORY
echo "== 2. cost: ping-pong, ns per MPI call, $rounds rounds interleaved"
per_call() { sed -n 's/.*, \([0-9.]*\) ns per call.*/\1/p' | head -1; }
: >"$work/plain.ns"
: >"$work/traced.ns"
: >"$work/fr.ns"
for ((r = 0; r < rounds; r++)); do
  "$mpirun" -np 2 "$work/pingpong" -n 200000 2>/dev/null | per_call >>"$work/plain.ns"
  rm -rf "$work/t"
  "$gt" -o "$work/t" "$mpirun" -np 2 "$work/pingpong" -n 200000 2>/dev/null | per_call >>"$work/traced.ns"
  rm -rf "$work/t"
  "$gt" --flight-recorder 1 -o "$work/t" "$mpirun" -np 2 "$work/pingpong" -n 200000 2>/dev/null |
    per_call >>"$work/fr.ns"
done
/usr/bin/python3 - "$work" <<'PY'
import statistics, sys
d = sys.argv[1]
v = {k: [float(x) for x in open(f"{d}/{k}.ns") if x.strip()] for k in ("plain", "traced", "fr")}
base = statistics.median(v["plain"])
for k, name in (("plain", "untraced"), ("traced", "traced"), ("fr", "flight recorder 1 s")):
    m, med = min(v[k]), statistics.median(v[k])
    print(f"  {name:22s} min {m:7.1f}  median {med:7.1f} ns per call  (+{med - base:.1f} ns over untraced)")
t, f = statistics.median(v["traced"]), statistics.median(v["fr"])
print(f"  flight recorder / traced, medians: {f / t:.3f}")
PY
