#!/usr/bin/env bash
# What tracing adds to an MPI call, and the time from the program's end to
# the archive and to the command's return. Traced and untraced runs
# interleaved, ROUNDS rounds; min and median of each:
#  1. one rank sending to and receiving from itself (0-byte messages,
#     eager, bench/programs/self_sendrecv.c): ns per MPI call, untraced
#     and traced, under Open MPI's mpirun with its default binding (a rank
#     of a job of 1 or 2 is bound to a core, which the flusher thread
#     shares) and with --bind-to none, and under MPICH's mpiexec (Hydra,
#     its default binding; 2 ranks each sending to itself: MPICH 4.0's
#     ch4:ucx never completes a singleton's send to itself);
#  2. the two-rank 0-byte ping-pong: ns per MPI call (a round trip is 4
#     calls in a row), the same three ways;
#  3. the self loop of ITERATIONS/2 iterations (~1.2 million events) and
#     the bundled example (examples/mpi_ring.c, 4 ranks): the program's
#     end (as gputrace saw its launcher exit) to the archive written, as
#     the summary says, and to the command's return (that plus the time
#     from the archive's last file written to the return).
# Usage: bench/mpi_call.sh [ROUNDS] [ITERATIONS]   (default 10, 400000)
# GT_BIN=DIR: take gputrace and its libraries from DIR (prebuilt; the GPU
# machine has no Rust) instead of building target/release.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
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
mpiexec=$(command -v mpiexec.mpich || true)
work=$(mktemp -d /tmp/gputrace-mpi-call.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 -o "$work/self" bench/programs/self_sendrecv.c
"$mpicc" -O2 -Itests/programs/mpi -o "$work/pingpong" tests/programs/mpi/pingpong.c
"$mpicc" -O2 -o "$work/ring" examples/mpi_ring.c
if [ -n "$mpiexec" ]; then
  mpicc.mpich -O2 -o "$work/self_mpich" bench/programs/self_sendrecv.c
  mpicc.mpich -O2 -Itests/programs/mpi -o "$work/pingpong_mpich" tests/programs/mpi/pingpong.c
fi
# Open MPI refuses to start as root without these (CI and the GPU machine).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

self_of() { sed -n 's/.*, \([0-9.]*\) ns per MPI call, .*/\1/p'; }
pp_of() { sed -n 's/.*, \([0-9.]*\) ns per call.*/\1/p'; }
traced() { rm -rf "$work/t"; "$gt" -o "$work/t" "$@"; }
plain() { "$@"; }
# The program's end to the archive and to the return, in ms: "archive/return".
ends() {
  rm -rf "$work/e"
  "$gt" -o "$work/e" "$@" >/dev/null 2>&1
  local back
  back=$(date +%s%N)
  /usr/bin/python3 - "$work/e" "$back" <<'PY'
import os, re, sys
d, back = sys.argv[1], int(sys.argv[2])
text = open(os.path.join(d, "summary.txt")).read()
after = float(re.search(r"\(([0-9.]+) s after the program's exit\)", text).group(1)) * 1e3
files = [os.path.join(d, "traces.otf2"), os.path.join(d, "traces.def")]
for root, _, names in os.walk(os.path.join(d, "traces")):
    files += [os.path.join(root, n) for n in names]
written = max(os.stat(f).st_mtime_ns for f in files)
print(f"{after:.1f}/{after + (back - written) / 1e6:.1f}")
PY
}

declare -A r
modes=(ompi_default ompi_none)
[ -n "$mpiexec" ] && modes+=(mpich)
for i in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    case $m in
      ompi_default) s=("$mpirun" -np 1 "$work/self"); p=("$mpirun" -np 2 "$work/pingpong") ;;
      ompi_none) s=("$mpirun" -np 1 --bind-to none "$work/self"); p=("$mpirun" -np 2 --bind-to none "$work/pingpong") ;;
      mpich) s=("$mpiexec" -n 2 "$work/self_mpich"); p=("$mpiexec" -n 2 "$work/pingpong_mpich") ;;
    esac
    for how in plain traced; do
      r[self_${m}_$how]+="$($how "${s[@]}" -n "$iters" 2>/dev/null | self_of) "
      r[pp_${m}_$how]+="$($how "${p[@]}" -n "$iters" 2>/dev/null | pp_of) "
    done
  done
  r[end_self]+="$(ends "$mpirun" -np 1 "$work/self" -n $((iters / 2))) "
  r[end_ring]+="$(ends "$mpirun" -np 4 "$work/ring" 2000) "
done
args=()
for k in "${!r[@]}"; do args+=("$k=${r[$k]}"); done
/usr/bin/python3 - "$rounds" "$iters" "${args[@]}" <<'PY'
import statistics as st, sys
rounds, iters = sys.argv[1], int(sys.argv[2])
r = {k: v.split() for k, v in (a.split("=", 1) for a in sys.argv[3:])}
def mm(x): return f"{min(x):7.1f} {st.median(x):7.1f}"
print(f"== MPI call cost, ns per call: {rounds} interleaved rounds of {iters} iterations (min, median)")
print(f"{'':34} {'untraced':>15} {'traced':>15} {'added':>15}")
names = {"ompi_default": "Open MPI, default binding", "ompi_none": "Open MPI, --bind-to none", "mpich": "MPICH (Hydra default)"}
for test, what in (("self", "self send/recv"), ("pp", "ping-pong")):
    for m, name in names.items():
        if f"{test}_{m}_plain" not in r:
            continue
        p = [float(x) for x in r[f"{test}_{m}_plain"]]
        t = [float(x) for x in r[f"{test}_{m}_traced"]]
        if not p or not t:
            print(f"{what + ', ' + name:34} (no figures: the runs failed)")
            continue
        print(f"{what + ', ' + name:34} {mm(p)} {mm(t)} {min(t) - min(p):7.1f} {st.median(t) - st.median(p):7.1f}")
print("(added: min - min and median - median; target: median < 100)")
for k, what in (("end_self", f"self loop of {iters // 2} iterations"), ("end_ring", "bundled example, 4 ranks")):
    v = [x.split("/") for x in r[k]]
    a, b = [float(x[0]) for x in v], [float(x[1]) for x in v]
    print(f"{what}: the program's end to the archive, ms: min {min(a):.1f} median {st.median(a):.1f}; "
          f"to the command's return: min {min(b):.1f} median {st.median(b):.1f}")
PY
