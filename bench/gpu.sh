#!/usr/bin/env bash
# gputrace benchmark (GPU side), all in one run on the GPU machine: the
# launch storm of ../shared/anchors (200,000 empty-kernel launches, then
# 50,000 4-byte cudaMemcpyAsync) untraced, with the thinnest CUPTI client
# (cupti_floor.c), with gputrace at its default, and under nsys -t cuda,
# interleaved over ROUNDS rounds; then, for gputrace, the time from the
# program's exit to the archive, the bytes per GPU event on disk and the
# peak memory of the traced program and of the merge. With MEMORY=1 also
# gputrace with GPUTRACE_CUDA_ENABLE=default,memory (what the copy
# callbacks and CUPTI's memory records add per launch and per copy).
#
# Usage: bench/gpu.sh ANCHORS_DIR [ROUNDS]  (gputrace's binaries in $GT_BIN,
# default .device/bin; results also in $OUT/bench.txt when $OUT is set)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
anchors=${1:?anchors directory (launch_storm.cu, cupti_floor.c)}
rounds=${2:-3}
bin=${GT_BIN:-$root/.device/bin}
gt=$bin/gputrace
work=/tmp/gputrace-gpu-bench
rm -rf "$work" && mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH
cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
nvcc -O2 -o "$work/storm" "$anchors/launch_storm.cu" || exit 1
gcc -O2 -shared -fPIC -o "$work/libfloor.so" "$anchors/cupti_floor.c" -I/usr/local/cuda/include \
  -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti || exit 1
nsys=$(command -v nsys || find /opt/nvidia /usr/local/cuda* -name nsys -type f -perm -u+x 2>/dev/null | grep -v host- | head -1)
n=200000

# measure NAME CMD...: runs CMD, keeps its output and "wall_s peak_kib".
measure() {
  local name=$1; shift
  python3 - "$work/$name.out" "$@" <<'PY'
import resource, subprocess, sys, time
out = open(sys.argv[1], "w")
t = time.perf_counter()
subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
wall = time.perf_counter() - t
print(f"wall_s {wall:.3f}", file=out)
print(f"peak_kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=out)
PY
}

for r in $(seq "$rounds"); do
  measure "plain.$r" "$work/storm" $n
  measure "floor.$r" env CUDA_INJECTION64_PATH="$work/libfloor.so" "$work/storm" $n
  rm -rf "$work/exp.$r"
  measure "gputrace.$r" "$gt" --keep-raw -o "$work/exp.$r" "$work/storm" $n
  if [ "${MEMORY:-0}" = 1 ]; then
    rm -rf "$work/exp-memory.$r"
    measure "memory.$r" env GPUTRACE_CUDA_ENABLE=default,memory "$gt" -o "$work/exp-memory.$r" "$work/storm" $n
  fi
  if [ -n "$nsys" ]; then
    measure "nsys.$r" "$nsys" profile -t cuda -o "$work/nsys.$r" --force-overwrite true "$work/storm" $n
  fi
done

# The experiment directory a 100,000-launch storm leaves, as a user gets it
# (raw/ removed after the verified merge), and Score-P's for comparison
# when it is installed.
rm -rf "$work/exp.size"
"$gt" -o "$work/exp.size" "$work/storm" 100000 >"$work/size.out" 2>&1
echo "size_bytes $(du -sb "$work/exp.size" | cut -f1)" >>"$work/size.out"

python3 - "$work" "$rounds" <<'PY' | tee "${OUT:-$work}/bench.txt"
import glob, os, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def value(path, key):
    m = re.search(rf"^{key} ([0-9.]+)", open(path).read(), re.M)
    return float(m.group(1)) if m else None
rows = {}
for mode in ("plain", "floor", "gputrace", "memory", "nsys"):
    runs = [f"{work}/{mode}.{r}.out" for r in range(1, rounds + 1) if os.path.exists(f"{work}/{mode}.{r}.out")]
    if not runs:
        continue
    rows[mode] = {k: [value(p, k) for p in runs] for k in ("launch_ns_per_kernel", "memcpy_ns_per_copy", "wall_s", "peak_kib")}
print("us per call, median of %d rounds (min-max)" % rounds)
print(f"{'':10} {'launch':>22} {'added':>8} {'4 B memcpyAsync':>22} {'added':>8} {'whole run s':>12}")
base = {k: statistics.median(rows["plain"][k]) for k in ("launch_ns_per_kernel", "memcpy_ns_per_copy")}
for mode, v in rows.items():
    l, m = v["launch_ns_per_kernel"], v["memcpy_ns_per_copy"]
    if None in l or None in m:
        print(f"{mode:10} (no figures: the run failed)")
        continue
    ml, mm = statistics.median(l), statistics.median(m)
    print(f"{mode:10} {ml/1e3:8.2f} ({min(l)/1e3:.2f}-{max(l)/1e3:.2f}) {(ml-base['launch_ns_per_kernel'])/1e3:+8.2f}"
          f" {mm/1e3:8.2f} ({min(m)/1e3:.2f}-{max(m)/1e3:.2f}) {(mm-base['memcpy_ns_per_copy'])/1e3:+8.2f}"
          f" {statistics.median(v['wall_s']):12.2f}")
added = lambda mode, k: statistics.median(rows[mode][k]) - base[k]
if "floor" in rows and "gputrace" in rows:
    ratio = added("gputrace", "launch_ns_per_kernel") / max(added("floor", "launch_ns_per_kernel"), 1e-9)
    print(f"gputrace adds {ratio:.2f}x what the thinnest CUPTI client adds per launch (target <= 1.1)")
if "nsys" in rows and None not in rows["nsys"]["launch_ns_per_kernel"]:
    print(f"nsys adds {added('nsys', 'launch_ns_per_kernel')/1e3:.2f} us per launch, gputrace "
          f"{added('gputrace', 'launch_ns_per_kernel')/1e3:.2f} us (target: below nsys)")
size = value(f"{work}/size.out", "size_bytes")
arch = re.search(r"after the program's exit", open(f"{work}/size.out").read())
if size:
    print(f"experiment directory of the 100,000-launch storm: {size/1e6:.1f} MB (target <= 12 MB; "
          f"Score-P 8.4: 12.9 MB, gputrace before: 22.2 MB)")
for r in range(1, rounds + 1):
    text = open(f"{work}/gputrace.{r}.out").read()
    m = re.search(r"([0-9,]+) events.*", text)
    merged = re.search(r"merged in ([0-9.]+) s(?: \(([0-9.]+) s after the program's exit\))?", text)
    raw = sum(os.path.getsize(p) for p in glob.glob(f"{work}/exp.{r}/raw/*.cuda.gtr"))
    otf = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(f"{work}/exp.{r}") for f in fs
              if "/raw" not in d and not f.endswith(".txt"))
    events = int(m.group(1).replace(",", "")) if m else 0
    print(f"gputrace round {r}: {events:,} events; exit to archive {merged.group(2) if merged else '?'} s "
          f"(merge {merged.group(1) if merged else '?'} s); raw {raw/max(events,1):.2f} B/event, "
          f"OTF2 {otf/max(events,1):.2f} B/event; peak memory of the traced run {rows['gputrace']['peak_kib'][r-1]/1024:.0f} MiB "
          f"(untraced {rows['plain']['peak_kib'][r-1]/1024:.0f} MiB)")
PY
