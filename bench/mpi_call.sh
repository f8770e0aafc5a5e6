#!/usr/bin/env bash
# What tracing adds to an MPI call, and the time from the program's end to
# the archive. Traced and untraced runs interleaved, ROUNDS rounds; min and
# median of each:
#  1. one rank sending to and receiving from itself (0-byte messages,
#     eager): ns per MPI call, untraced, traced with the TSC timer and with
#     clock_gettime (GPUTRACE_TIMER);
#  2. the two-rank 0-byte ping-pong: ns per MPI call (a round trip is 4
#     calls in a row);
#  3. the bundled example (examples/mpi_ring.c, 4 ranks): the program's
#     end to the archive written, as the summary reports it.
# Usage: bench/mpi_call.sh [ROUNDS] [ITERATIONS]   (default 7, 400000)
# GT_BIN=DIR: take gputrace and its libraries from DIR (prebuilt; the GPU
# machine has no Rust) instead of building target/release.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
iters=${2:-400000}
if [ -n "${GT_BIN:-}" ]; then
  gt=$GT_BIN/gputrace
else
  source scripts/env.sh
  cargo build --release --workspace -q
  gt=./target/release/gputrace
fi
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
work=$(mktemp -d /tmp/gputrace-mpi-call.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 -o "$work/self" bench/programs/self_sendrecv.c
"$mpicc" -O2 -Itests/programs/mpi -o "$work/pingpong" tests/programs/mpi/pingpong.c
"$mpicc" -O2 -o "$work/ring" examples/mpi_ring.c
# Open MPI refuses to start as root without these (CI and the GPU machine).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# "whole/fastest": the loop's mean, and its fastest 1% batch (what the
# call costs when nothing else takes the core: these machines are shared).
run_self() { "$@" "$mpirun" -np 1 "$work/self" -n "$iters" 2>/dev/null | sed -n 's/.*, \([0-9.]*\) ns per MPI call, \([0-9.]*\) ns in the fastest batch.*/\1\/\2/p'; }
run_pp() { "$@" "$mpirun" -np 2 --bind-to core "$work/pingpong" -n "$iters" 2>/dev/null | sed -n 's/.*, \([0-9.]*\) ns per call.*/\1/p'; }
traced() { rm -rf "$work/t"; "$gt" -o "$work/t" "$@"; }
traced_gettime() { rm -rf "$work/t"; "$gt" --timer clock_gettime -o "$work/t" "$@"; }
plain() { "$@"; }

declare -A r
for i in $(seq "$rounds"); do
  r[self_plain]+="$(run_self plain) "
  r[self_tsc]+="$(run_self traced) "
  r[self_gettime]+="$(run_self traced_gettime) "
  r[pp_plain]+="$(run_pp plain) "
  r[pp_tsc]+="$(run_pp traced) "
  rm -rf "$work/ring$i"
  "$gt" -o "$work/ring$i" "$mpirun" -np 4 "$work/ring" 2000 >/dev/null 2>&1
  r[ring]+="$(sed -n 's/.*(\([0-9.]*\) s after the program.s exit).*/\1/p' "$work/ring$i/summary.txt" | head -1) "
done
/usr/bin/python3 - "${r[self_plain]}" "${r[self_tsc]}" "${r[self_gettime]}" "${r[pp_plain]}" "${r[pp_tsc]}" "${r[ring]}" "$rounds" "$iters" <<'PY'
import statistics as st, sys
v = [a.split() for a in sys.argv[1:7]]
whole = lambda xs: [float(x.split("/")[0]) for x in xs]
fast = lambda xs: [float(x.split("/")[1]) for x in xs]
sp, stsc, sget = (whole(x) for x in v[:3])
fp, ftsc, fget = (fast(x) for x in v[:3])
pp, ptsc, ring = ([float(x) for x in a] for a in v[3:])
rounds, iters = sys.argv[7], sys.argv[8]
def mm(x): return f"min {min(x):7.1f}  median {st.median(x):7.1f}"
print(f"== MPI call cost: {rounds} interleaved rounds of {iters} iterations")
print(f"self send/recv, untraced    ns/call: {mm(sp)}")
print(f"self send/recv, traced tsc  ns/call: {mm(stsc)}")
print(f"self send/recv, traced gettime     : {mm(sget)}")
print(f"  added per call, tsc:           min {min(stsc)-min(sp):6.1f}  median {st.median(stsc)-st.median(sp):6.1f}  (target < 100)")
print(f"  added per call, clock_gettime: min {min(sget)-min(sp):6.1f}  median {st.median(sget)-st.median(sp):6.1f}")
print(f"self send/recv, fastest batch ns/call: untraced {mm(fp)}")
print(f"                                       tsc      {mm(ftsc)}")
print(f"                                       gettime  {mm(fget)}")
print(f"  added per call in the fastest batch, tsc:     min {min(ftsc)-min(fp):6.1f}  median {st.median(ftsc)-st.median(fp):6.1f}")
print(f"  added per call in the fastest batch, gettime: min {min(fget)-min(fp):6.1f}  median {st.median(fget)-st.median(fp):6.1f}")
print(f"ping-pong 2 ranks, untraced ns/call: {mm(pp)}")
print(f"ping-pong 2 ranks, traced   ns/call: {mm(ptsc)}")
print(f"  added per call:                min {min(ptsc)-min(pp):6.1f}  median {st.median(ptsc)-st.median(pp):6.1f}")
if ring:
    print(f"bundled example (4 ranks): archive after the program's end, ms: min {1e3*min(ring):.1f}  median {1e3*st.median(ring):.1f}  (target < 50)")
PY
