#!/usr/bin/env bash
# Compares two builds of gputrace in one interleaved run: this checkout's
# (built here) against OLD, the target/release directory of another
# checkout (e.g. a worktree at an earlier commit, built with
# `cargo build --release --workspace --examples`). Prints, per round and as
# minima and medians:
#  1. the time each adds to a 0-byte MPI_Send/MPI_Recv ping-pong, per call
#     (untraced, old and new runs in rotating order);
#  2. the merge time of the same synthetic trace (4 ranks, MPI ring
#     pattern), each build merging what its own generator wrote.
# Usage: bench/compare.sh OLD_TARGET_RELEASE [ITERATIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
old=${1:?usage: bench/compare.sh OLD_TARGET_RELEASE [ITERATIONS] [ROUNDS]}
iters=${2:-500000}
rounds=${3:-7}
[[ -x "$old/gputrace" && -x "$old/examples/synth" ]] || { echo "no gputrace build in $old" >&2; exit 2; }
cargo build --release --workspace -q && cargo build --release --workspace --examples -q
new=./target/release
work=$(mktemp -d /tmp/gputrace-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc.openmpi -O2 -o "$work/pingpong" tests/programs/mpi/pingpong.c

pp() { sed -n 's/.*, \([0-9.]*\) ns per round trip.*/\1/p'; }
plain=(); a=(); b=()
echo "== ping-pong, 0 bytes, $iters iterations, 2 ranks, $rounds rounds (ns per round trip: untraced old new)"
for r in $(seq "$rounds"); do
  run_plain() { mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" | pp; }
  run_old() { "$old/gputrace" -o "$work/old$r" mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" 2>/dev/null | pp; }
  run_new() { "$new/gputrace" -o "$work/new$r" mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" 2>/dev/null | pp; }
  case $((r % 3)) in
    0) p=$(run_plain); o=$(run_old); n=$(run_new) ;;
    1) o=$(run_old); n=$(run_new); p=$(run_plain) ;;
    2) n=$(run_new); p=$(run_plain); o=$(run_old) ;;
  esac
  plain+=("$p"); a+=("$o"); b+=("$n")
  echo "round $r: $p $o $n"
  rm -rf "$work/old$r" "$work/new$r"
done

echo "== merge of a synthetic trace (4 ranks, 600000 ring steps; seconds: old new)"
secs() {
  /usr/bin/python3 -c 'import subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.3f}")' "$@"
}
ma=(); mb=()
for r in $(seq "$rounds"); do
  "$old/examples/synth" "$work/so" 4 600000 >/dev/null
  "$new/examples/synth" "$work/sn" 4 600000 >/dev/null
  if ((r % 2)); then
    ta=$(secs "$old/gputrace" merge "$work/so"); tb=$(secs "$new/gputrace" merge "$work/sn")
  else
    tb=$(secs "$new/gputrace" merge "$work/sn"); ta=$(secs "$old/gputrace" merge "$work/so")
  fi
  [[ -f "$work/so/traces.otf2" && -f "$work/sn/traces.otf2" ]] || { echo "a merge failed" >&2; exit 1; }
  ma+=("$ta"); mb+=("$tb")
  echo "round $r: $ta $tb"
  rm -rf "$work/so" "$work/sn"
done

/usr/bin/python3 - "${plain[*]}" "${a[*]}" "${b[*]}" "${ma[*]}" "${mb[*]}" <<'PY'
import statistics, sys
p, o, n, mo, mn = ([float(x) for x in a.split()] for a in sys.argv[1:6])
def added(t):
    return (min(t) - min(p)) / 4, (statistics.median(t) - statistics.median(p)) / 4
for name, t in (("old", o), ("new", n)):
    best, med = added(t)
    print(f"{name}: adds {best:6.1f} ns per MPI call (best runs), {med:6.1f} (medians)")
print(f"ratio new/old of the traced round trip: min {min(n)/min(o):.3f}, median {statistics.median(n)/statistics.median(o):.3f}")
print(f"merge: old min {min(mo):.3f} s median {statistics.median(mo):.3f}; new min {min(mn):.3f} s median {statistics.median(mn):.3f}; "
      f"ratio new/old {min(mn)/min(mo):.3f} (min), {statistics.median(mn)/statistics.median(mo):.3f} (median)")
PY
