#!/usr/bin/env bash
# gputrace benchmark (GPU side, every GPU of the machine): what tracing
# costs a multi-GPU training step and an NCCL all-reduce, one interleaved
# run of ROUNDS rounds, a rank per GPU:
#   - the GPU-bound DDP step and the small launch-bound DDP step of
#     bench/programs/ddp_steps.py (torchrun), ms per step (median of the
#     ranks' medians of 30 steps);
#   - an all-reduce of 8 B and of 1 MiB over the ranks (tests/programs/nccl/
#     nccl_test.cu --bench under mpirun), µs per all-reduce;
# each untraced, under gputrace with the default, with every runtime call
# (default,runtime-all), (with MODES naming them) the default without API
# calls (noapi), kernels alone (kernel) or any set of members joined by
# '+' (kernel+sync), any of them with settings after a colon
# (default:GPUTRACE_GPU_METRICS_INTERVAL=0,GPUTRACE_NVLINK_INTERVAL=0),
# with the thinnest CUPTI client
# (../shared/anchors/cupti_floor.c, when ANCHORS names its directory) and,
# with NSYS=1 in the first round also under nsys (-t cuda,nvtx). Prints a table of
# minima and medians with the cost against untraced.
#
# The table is printed after every round (a bench cut short still says
# what it measured); each run is stopped after LAUNCH_TIMEOUT seconds
# (default 240) and then gives no value.
# Usage: [MODES="plain default ..."] [WORKLOADS="ddp ar8 ar1m"] [LAUNCH_TIMEOUT=S] bench/gpu-ddp.sh [ROUNDS]
#   (gputrace's binaries in $GT_BIN, default
# .device/bin; the table also in $OUT/bench-ddp.txt when $OUT is set)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
bin=${GT_BIN:-$root/.device/bin}
gt=$bin/gputrace
work=/tmp/gputrace-ddp-bench
rm -rf "$work" && mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ngpu=$(nvidia-smi -L | wc -l)
echo "GPUs: $ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
nvcc -O2 -arch=native -DWITH_MPI -o "$work/nccl_bench" "$root/tests/programs/nccl/nccl_test.cu" -lnccl \
  $(mpicc --showme:compile) $(mpicc --showme:link) || exit 1
modes=${MODES:-plain default runtime-all}
if [ -n "${ANCHORS:-}" ] && [ -f "$ANCHORS/cupti_floor.c" ]; then
  cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
  gcc -O2 -shared -fPIC -o "$work/libfloor.so" "$ANCHORS/cupti_floor.c" -I/usr/local/cuda/include \
    -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti && modes="$modes floor"
fi
nsys=$(command -v nsys || find /opt/nvidia /usr/local/cuda* -name nsys -type f -perm -u+x 2>/dev/null | grep -v host- | head -1)

# launch MODE ROUND CMD...: CMD (a launcher and its program) in MODE; output in $work/MODE.ROUND.<tag>.
# Each run gets at most LAUNCH_TIMEOUT seconds (default 240): a mode that
# hangs costs one line, not the rest of the bench.
launch() {
  local mode=$1 tag=$2; shift 2
  local out="$work/$tag.$mode"
  rm -rf "$work/exp"
  local to=(timeout -k 10 "${LAUNCH_TIMEOUT:-240}")
  # MODE:VAR=VALUE,VAR=VALUE runs MODE with those variables set (gputrace's
  # settings: default:GPUTRACE_GPU_METRICS_INTERVAL=0).
  if [[ $mode == *:* ]]; then
    local vars=${mode#*:}
    to=(env ${vars//,/ } "${to[@]}")
    mode=${mode%%:*}
  fi
  case $mode in
    plain) "${to[@]}" "$@" >"$out" 2>&1 ;;
    default) "${to[@]}" "$gt" -o "$work/exp" "$@" >"$out" 2>&1 ;;
    runtime-all) GPUTRACE_CUDA_ENABLE=default,runtime-all "${to[@]}" "$gt" -o "$work/exp" "$@" >"$out" 2>&1 ;;
    noapi) GPUTRACE_CUDA_ENABLE=kernel,memcpy,memset,peer,sync,nvlink "${to[@]}" "$gt" -o "$work/exp" "$@" >"$out" 2>&1 ;;
    kernel) GPUTRACE_CUDA_ENABLE=kernel "${to[@]}" "$gt" -o "$work/exp" "$@" >"$out" 2>&1 ;;
    # the client in the ranks only: Open MPI's mpirun initializes CUDA
    # itself (its -x passes the variable to the ranks, see main)
    floor) if [ "$1" = mpirun ]; then "${to[@]}" "$@" >"$out" 2>&1
      else CUDA_INJECTION64_PATH=$work/libfloor.so "${to[@]}" "$@" >"$out" 2>&1; fi ;;
    nsys) "${to[@]}" "$nsys" profile -t cuda,nvtx --force-overwrite true -o "$work/nsys-$tag" "$@" >"$out" 2>&1 ;;
    # any other mode names members joined by '+': kernel+sync is
    # GPUTRACE_CUDA_ENABLE=kernel,sync
    *) GPUTRACE_CUDA_ENABLE=${mode//+/,} "${to[@]}" "$gt" -o "$work/exp" "$@" >"$out" 2>&1 ;;
  esac
}

main() {
for r in $(seq "$rounds"); do
  m=$modes
  [ "$r" = 1 ] && [ -n "$nsys" ] && [ "${NSYS:-0}" = 1 ] && m="$m nsys"
  for mode in $m; do
    mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)
    [ "$mode" = floor ] && mpi+=(-x "CUDA_INJECTION64_PATH=$work/libfloor.so")
    for w in ${WORKLOADS:-ddp ar8 ar1m}; do
      case $w in
        ddp) launch "$mode" "ddp.$r" torchrun --standalone --nproc-per-node "$ngpu" "$root/bench/programs/ddp_steps.py" both 30 ;;
        ar8) launch "$mode" "ar8.$r" "${mpi[@]}" "$work/nccl_bench" --bench 2000 ;;
        ar1m) launch "$mode" "ar1m.$r" "${mpi[@]}" "$work/nccl_bench" --bench 2000 --bench-bytes 1048576 ;;
      esac
    done
  done
  # The table so far, after every round: a bench cut short still says what it measured.
  echo "after round $r of $rounds:"
  table
done
}

table() {
python3 - "$work" "$rounds" $modes $([ "${NSYS:-0}" = 1 ] && [ -n "$nsys" ] && echo nsys) <<'PY' | tee "${OUT:-$work}/bench-ddp.txt"
import re, statistics, sys, glob, os
work, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def values(tag, mode, pattern, scale):
    out = []
    for p in sorted(glob.glob(os.path.join(work, f"{tag}.*.{mode}"))):
        for m in re.finditer(pattern, open(p, errors="replace").read()):
            out.append(float(m.group(1)) * scale)
    return out
rows = [("GPU-bound DDP step, ms", "ddp", r"(?<!_)ms_per_step big ([\d.]+)", 1.0),
        ("  host issuing it, ms", "ddp", r"issue_ms_per_step big ([\d.]+)", 1.0),
        ("small DDP step, ms", "ddp", r"(?<!_)ms_per_step small ([\d.]+)", 1.0),
        ("  host issuing it, ms", "ddp", r"issue_ms_per_step small ([\d.]+)", 1.0),
        ("all-reduce 8 B, us", "ar8", r"rank=0 allreduce_bytes=8 \S+ ns_per_allreduce=(\d+)", 1e-3),
        ("all-reduce 1 MiB, us", "ar1m", r"rank=0 allreduce_bytes=1048576 \S+ ns_per_allreduce=(\d+)", 1e-3)]
# a column as wide as its mode's name (default:GPUTRACE_GPU_METRICS_INTERVAL=0)
width = {m: max(24, len(m) + 2) for m in modes}
print(f"{'':26}" + "".join(f"{m:>{width[m]}}" for m in modes))
for name, tag, pat, scale in rows:
    base = values(tag.split('.')[0], "plain", pat, scale)
    cells = []
    for mode in modes:
        v = values(tag, mode, pat, scale)
        if not v:
            cells.append(f"{'-':>{width[mode]}}")
            continue
        mn, md = min(v), statistics.median(v)
        if mode == "plain" or not base:
            cell = f"{mn:.2f} / {md:.2f}"
        else:
            cell = f"{mn:.2f}/{md:.2f} {(md / statistics.median(base) - 1) * 100:+5.0f}%"
        cells.append(f"{cell:>{width[mode]}}")
    print(f"{name:26}" + "".join(cells))
print("(min / median over the rounds; % = median against untraced's median; a timed-out run gives no value)")
PY
}

main
