#!/usr/bin/env bash
# NCCL plugin tests, device side: builds nccl_test.cu (one process driving
# every GPU, and an MPI build with one rank per GPU), runs it with the
# plugin loaded by NCCL directly (NCCL_PROFILER_PLUGIN, no gputrace
# command needed), under `gputrace` when that sets NCCL_PROFILER_PLUGIN
# itself, under PyTorch (its bundled NCCL), and the 8-byte all-reduce
# benchmark untraced and traced, interleaved. Captures
# (GPUTRACE_NCCL_CAPTURE) are written next to the raw streams so that
# they can replace the hand-written fixtures of tests/fixtures/nccl.
#
# Usage (GPU machine, repository root; release binaries in $GT_BIN,
# default .device/bin, holding gputrace and libgputrace_nccl.so):
#   tests/programs/nccl/run.sh [single] [mpi] [gputrace] [torch] [bench]
# Each part prints "PART <name> rc=<n>" and the program's expect lines;
# everything lands in $OUT/nccl-results.tgz (OUT default /tmp/gputrace-nccl-out).
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=${GT_BIN:-$root/.device/bin}
plugin=${GT_NCCL_PLUGIN:-$bin/libgputrace_nccl.so}
gt=$bin/gputrace
out=${OUT:-/tmp/gputrace-nccl-out}
work=/tmp/gputrace-nccl
src=$root/tests/programs/nccl
rm -rf "$work"
mkdir -p "$work" "$out"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
# NCCL says which profiler interface it loaded: "PROFILER/Plugin: Loaded gputrace (v5)".
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE=$work/nccl-debug.%h.%p
parts=${*:-single mpi gputrace torch bench}
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "GPUs: $ngpu; plugin: $plugin; NCCL header: $(grep -m1 'define NCCL_VERSION_CODE' /usr/include/nccl.h 2>/dev/null)"
[ -f "$plugin" ] || { echo "no plugin at $plugin"; exit 1; }
nm -D --defined-only "$plugin" | grep -o 'ncclProfiler_v[0-9]' | tr '\n' ' '; echo

nvcc -O2 -arch=native -o "$work/nccl_test" "$src/nccl_test.cu" -lnccl >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
nvcc -O2 -arch=native -DWITH_MPI -o "$work/nccl_test_mpi" "$src/nccl_test.cu" -lnccl \
  $(mpicc --showme:compile) $(mpicc --showme:link) >>"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

part() { # name command...: runs it, keeps stdout/stderr, prints rc, expect lines and stream files
  local name=$1; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  echo "PART $name rc=$rc"
  grep -E '^(expect|bench|nccl_test)' "$work/$name.out" | sed "s/^/  [$name] /"
  tail -n 8 "$work/$name.err" | sed "s/^/  [$name stderr] /"
  return 0
}

streams() { # experiment dir: lists the raw streams and captures made
  ls -l "$1"/raw 2>/dev/null | sed 's/^/  raw: /'
  for c in "$1"/*.ncclcap*; do [ -f "$c" ] && echo "  capture: $(basename "$c") $(wc -l <"$c") lines"; done
  grep -h "PROFILER/Plugin" "$work"/nccl-debug.* 2>/dev/null | sort | uniq -c | sed 's/^/  nccl: /'
}

plugin_env() { # experiment dir, levels
  echo GPUTRACE_EXPERIMENT_DIRECTORY="$1" GPUTRACE_NCCL_ENABLE="$2" GPUTRACE_NCCL_CAPTURE="$1/capture-%p.ncclcap" \
    NCCL_PROFILER_PLUGIN="$plugin"
}

for p in $parts; do
  case $p in
    single)
      # One process, every GPU (1 GPU: a 1-rank communicator, no events).
      "$work/nccl_test" --iters 2 >"$work/single.plain.out"
      mkdir -p "$work/exp-single"
      part single env $(plugin_env "$work/exp-single" all) "$work/nccl_test" --iters 2
      cmp -s <(grep -v '^nccl_test' "$work/single.plain.out") <(grep -v '^nccl_test' "$work/single.out") \
        && echo "  single: stdout identical to the untraced run"
      streams "$work/exp-single"
      ;;
    mpi)
      if [ "$ngpu" -lt 2 ]; then echo "PART mpi skipped (1 GPU)"; continue; fi
      mkdir -p "$work/exp-mpi"
      part mpi env $(plugin_env "$work/exp-mpi" all) mpirun -np 2 --bind-to none \
        -x NCCL_PROFILER_PLUGIN -x GPUTRACE_EXPERIMENT_DIRECTORY -x GPUTRACE_NCCL_ENABLE -x GPUTRACE_NCCL_CAPTURE \
        -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_DEBUG_FILE -x NCCL_NVLS_ENABLE "$work/nccl_test_mpi" --iters 3
      streams "$work/exp-mpi"
      ;;
    gputrace)
      if [ ! -x "$gt" ]; then echo "PART gputrace skipped (no $gt)"; continue; fi
      part gputrace env GPUTRACE_NCCL_ENABLE=all GPUTRACE_NCCL_CAPTURE="$work/capture-gt-%p.ncclcap" \
        "$gt" -o "$work/exp-gt" mpirun -np 2 --bind-to none -x GPUTRACE_NCCL_CAPTURE "$work/nccl_test_mpi" --iters 3
      streams "$work/exp-gt"
      ;;
    torch)
      if ! python3 -c 'import torch' 2>/dev/null || [ "$ngpu" -lt 2 ]; then echo "PART torch skipped"; continue; fi
      mkdir -p "$work/exp-torch"
      part torch env $(plugin_env "$work/exp-torch" all) torchrun --standalone --nproc-per-node 2 "$src/torch_nccl.py"
      streams "$work/exp-torch"
      ;;
    bench)
      # 8-byte all-reduces: untraced, default levels, every level; interleaved.
      n=${NCCL_BENCH:-20000}
      for round in 1 2 3; do
        for mode in plain default all; do
          if [ "$mode" = plain ]; then pre=(env); else pre=(env $(plugin_env "$work/exp-bench-$mode-$round" "$mode")); fi
          [ "$mode" = plain ] || mkdir -p "$work/exp-bench-$mode-$round"
          "${pre[@]}" "$work/nccl_test" --bench "$n" 2>>"$work/bench.err" | sed "s/^/  bench $mode round $round: /"
          if [ "$ngpu" -ge 2 ]; then
            "${pre[@]}" mpirun -np 2 --bind-to none -x NCCL_PROFILER_PLUGIN -x GPUTRACE_EXPERIMENT_DIRECTORY \
              -x GPUTRACE_NCCL_ENABLE -x GPUTRACE_NCCL_CAPTURE "$work/nccl_test_mpi" --bench "$n" 2>>"$work/bench.err" \
              | grep '^bench' | sed "s/^/  bench mpi $mode round $round: /"
          fi
        done
      done
      # The bench captures are large and of no use as fixtures.
      rm -f "$work"/exp-bench-*/capture-*
      ;;
    *) echo "unknown part $p" ;;
  esac
done

tar -C /tmp -czf "$out/nccl-results.tgz" --exclude='gputrace-nccl/nccl_test' --exclude='gputrace-nccl/nccl_test_mpi' gputrace-nccl
echo "results: $out/nccl-results.tgz ($(du -h "$out/nccl-results.tgz" | cut -f1))"
