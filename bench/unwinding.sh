#!/usr/bin/env bash
# What GPUTRACE_UNWINDING (--unwinding: the call path of every MPI call,
# unwound at its Enter) adds to an MPI call. One rank sending to and
# receiving from itself (0-byte messages, bench/programs/self_sendrecv.c,
# built -O2 -fomit-frame-pointer -g as a user's program would be), under
# Open MPI's mpirun: untraced, traced, and traced with --unwinding,
# interleaved over ROUNDS rounds; min and median ns per MPI call of each,
# and the ns unwinding adds per call (traced+unwinding minus traced).
# With Score-P on PATH (or SCOREP_BIN=DIR), also Score-P's tracing of
# the same program (built with `scorep --nocompiler mpicc`) without and
# with SCOREP_ENABLE_UNWINDING=true, interleaved with the others.
# Usage: bench/unwinding.sh [ROUNDS] [ITERATIONS]   (default 7, 200000)
# GT_BIN=DIR: take gputrace and its libraries from DIR instead of building
# target/release.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
iters=${2:-200000}
if [ -n "${GT_BIN:-}" ]; then
  gt=$GT_BIN/gputrace
else
  cargo build --release -q -p gputrace -p gputrace-mpi -p gputrace-mpi-mpich
  gt=./target/release/gputrace
fi
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
work=$(mktemp -d /tmp/gputrace-unwinding.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 -fomit-frame-pointer -g -o "$work/self" bench/programs/self_sendrecv.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
variants="untraced traced unwinding"
scorep=${SCOREP_BIN:+$SCOREP_BIN/}scorep
if command -v "$scorep" >/dev/null; then
  "$scorep" --nocompiler "$mpicc" -O2 -fomit-frame-pointer -g -o "$work/self_scorep" bench/programs/self_sendrecv.c
  variants+=" scorep scorep-unwinding"
  # Tracing only, in memory large enough not to flush during the run.
  export SCOREP_ENABLE_PROFILING=false SCOREP_TOTAL_MEMORY=1G SCOREP_EXPERIMENT_DIRECTORY=$work/s
  # Unwinding alone: no sampling besides (its default events need perf).
  export SCOREP_SAMPLING_EVENTS=
fi

per_call() { sed -n 's/.*, \([0-9.]*\) ns per MPI call, .*/\1/p'; }
run() {
  case $1 in
    untraced) "$mpirun" -np 1 "$work/self" -n "$iters" ;;
    traced) rm -rf "$work/t"; "$gt" -o "$work/t" "$mpirun" -np 1 "$work/self" -n "$iters" ;;
    unwinding) rm -rf "$work/t"; "$gt" --unwinding -o "$work/t" "$mpirun" -np 1 "$work/self" -n "$iters" ;;
    scorep) rm -rf "$work/s"; SCOREP_ENABLE_TRACING=true "$mpirun" -np 1 "$work/self_scorep" -n "$iters" ;;
    scorep-unwinding) rm -rf "$work/s"
      SCOREP_ENABLE_TRACING=true SCOREP_ENABLE_UNWINDING=true "$mpirun" -np 1 "$work/self_scorep" -n "$iters" ;;
  esac 2>/dev/null | per_call
}
declare -A all
for ((r = 1; r <= rounds; r++)); do
  for v in $variants; do
    all[$v]+="$(run "$v") "
  done
done
stats() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {printf "%.1f %.1f", a[1], a[int((NR+1)/2)]}'; }
printf '%-16s %10s %10s   (ns per MPI call, %d rounds of %d iterations)\n' variant min median "$rounds" "$iters"
for v in $variants; do
  read -r min med <<<"$(echo "${all[$v]}" | stats)"
  printf '%-16s %10s %10s\n' "$v" "$min" "$med"
  eval "min_${v//-/_}=$min med_${v//-/_}=$med"
done
awk -v a="$min_traced" -v b="$min_unwinding" -v c="$med_traced" -v d="$med_unwinding" \
  'BEGIN {printf "unwinding adds %.1f ns per MPI call (min), %.1f ns (median)\n", b - a, d - c}'
if [ -n "${min_scorep:-}" ]; then
  awk -v a="$min_scorep" -v b="$min_scorep_unwinding" -v c="$med_scorep" -v d="$med_scorep_unwinding" \
    'BEGIN {printf "Score-P: unwinding adds %.1f ns per MPI call (min), %.1f ns (median)\n", b - a, d - c}'
fi
