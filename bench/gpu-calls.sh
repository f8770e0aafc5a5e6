#!/usr/bin/env bash
# gputrace benchmark (GPU side, one GPU): what each kind of CUDA runtime
# call costs the calling thread under each recording mode, one
# interleaved run of ROUNDS rounds of bench/programs/call_cost.cu (a
# getter, a capture query, a launch, a memset, an event record, a stream
# wait, an event query, a stream synchronization, and the five calls
# PyTorch makes around one kernel). Modes: plain (untraced), floor (the
# thinnest CUPTI client, ../shared/anchors/cupti_floor.c, when ANCHORS
# names its directory), callbacks (CUPTI's own cost of an enabled
# callback, bench/programs/cupti_callbacks.c), nsys (-t cuda,nvtx, with
# NSYS=1) and sets of GPUTRACE_CUDA_ENABLE members joined by
# '+' (default, kernel+sync, runtime-all...). Prints the median ns per
# call over the rounds and what each mode adds to untraced.
#
# Usage: [MODES="plain default kernel ..."] [CALLS=N] bench/gpu-calls.sh [ROUNDS]
#   (gputrace's binaries in $GT_BIN, default .device/bin; the table also in
# $OUT/bench-calls.txt when $OUT is set)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
bin=${GT_BIN:-$root/.device/bin}
work=/tmp/gputrace-calls-bench
rm -rf "$work" && mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
nvcc -O2 -arch=native -o "$work/call_cost" "$root/bench/programs/call_cost.cu" || exit 1
modes=${MODES:-plain kernel runtime default runtime-all}
cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
if [ -n "${ANCHORS:-}" ] && [ -f "$ANCHORS/cupti_floor.c" ]; then
  gcc -O2 -shared -fPIC -o "$work/libfloor.so" "$ANCHORS/cupti_floor.c" -I/usr/local/cuda/include \
    -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti && modes="$modes floor"
fi
# CUPTI's own cost of an enabled callback (bench/programs/cupti_callbacks.c)
gcc -O2 -shared -fPIC -o "$work/libcallbacks.so" "$root/bench/programs/cupti_callbacks.c" -I/usr/local/cuda/include \
  -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti && modes="$modes callbacks"
nsys=$(command -v nsys || find /opt/nvidia /usr/local/cuda* -name nsys -type f -perm -u+x 2>/dev/null | grep -v host- | head -1)
[ "${NSYS:-0}" = 1 ] && [ -n "$nsys" ] && modes="$modes nsys"
n=${CALLS:-100000}
i=0
for r in $(seq "$rounds"); do
  for mode in $modes; do
    i=$((i + 1))
    out="$work/out.$r.$i"
    echo "$mode" >"$out.mode"
    case $mode in
      plain) "$work/call_cost" "$n" >"$out" 2>&1 ;;
      floor) CUDA_INJECTION64_PATH=$work/libfloor.so "$work/call_cost" "$n" >"$out" 2>&1 ;;
      callbacks) CUDA_INJECTION64_PATH=$work/libcallbacks.so "$work/call_cost" "$n" >"$out" 2>&1 ;;
      nsys) "$nsys" profile -t cuda,nvtx --force-overwrite true -o "$work/nsys" "$work/call_cost" "$n" >"$out" 2>&1 ;;
      *) GPUTRACE_CUDA_ENABLE=${mode//+/,} "$bin/gputrace" -o "$work/exp" "$work/call_cost" "$n" >"$out" 2>&1 ;;
    esac
    rm -rf "$work/exp"
  done
done

python3 - "$work" $modes <<'PY' | tee "${OUT:-$work}/bench-calls.txt"
import glob, os, re, statistics, sys
work, modes = sys.argv[1], sys.argv[2:]
ns = {}  # (mode, call) -> [ns]
for p in glob.glob(os.path.join(work, "out.*.*")):
    if p.endswith(".mode"):
        continue
    mode = open(p + ".mode").read().strip()
    for m in re.finditer(r"call_ns (\S+) ([\d.]+)", open(p, errors="replace").read()):
        ns.setdefault((mode, m.group(1)), []).append(float(m.group(2)))
calls = ["get_device", "is_capturing", "launch", "memset", "event_record", "wait_event",
         "event_query", "stream_sync", "torch_op"]
width = max(14, *(len(m) + 2 for m in modes))
print(f"{'ns per call':14}" + "".join(f"{m:>{width}}" for m in modes))
for c in calls:
    base = ns.get(("plain", c))
    cells = []
    for mode in modes:
        v = ns.get((mode, c))
        if not v:
            cells.append(f"{'-':>{width}}")
        elif mode == "plain" or not base:
            cells.append(f"{statistics.median(v):>{width}.0f}")
        else:
            d = statistics.median(v) - statistics.median(base)
            cells.append(f"{f'{statistics.median(v):.0f} ({d:+.0f})':>{width}}")
    print(f"{c:14}" + "".join(cells))
print("(median ns per call over the rounds; in brackets: added to untraced)")
PY
