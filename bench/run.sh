#!/usr/bin/env bash
# gputrace benchmark (CPU side): prints, measured in this one run,
#  1. the time tracing adds to an MPI call: one rank sending to and
#     receiving from itself, and the two-rank ping-pong (bench/mpi_call.sh:
#     interleaved rounds, min and median; the TSC and clock_gettime timers),
#     the recorder alone, and the bundled example's end-to-archive time;
#  2. merge throughput and peak memory on synthetic traces of ~10 and ~20
#     million events (bounded memory: the two peaks should be alike), and
#     on one of them the merge in parallel: --jobs 1, --jobs 2 and
#     `mpirun -np 2 gputrace merge --mpi` (interleaved rounds, min and median);
#  3. bytes per event in the raw streams and in the OTF2 archive, for the
#     synthetic trace and for the bundled MPI example traced for real;
#  4. merge time and peak memory for synthetic jobs of 64, 256 and 1,024
#     ranks with the same events per rank (8 ranks per simulated node, an
#     MPI and a CUDA stream each): linear in ranks, memory bounded;
#  5. real runs of 256 ranks oversubscribed on this machine (Open MPI and
#     MPICH): every rank and message, no receive before its send, and what
#     the clock synchronization adds to MPI_Init and MPI_Finalize.
# Usage: bench/run.sh [ITERATIONS]   (default 400000 iterations of the MPI loops)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
iters=${1:-400000}
cargo build --release --workspace -q && cargo build --release --workspace --examples -q
gt=./target/release/gputrace
work=$(mktemp -d /tmp/gputrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc.openmpi -O2 -o "$work/pingpong" tests/programs/mpi/pingpong.c
mpicc.openmpi -O2 -o "$work/mpi_ring" examples/mpi_ring.c

# Runs a command and prints its wall time (s) and its children's peak RSS (KiB).
measure() {
  /usr/bin/python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}

echo "== 1. what tracing adds to an MPI call (bench/mpi_call.sh: self send/receive and ping-pong, 7 interleaved rounds)"
bench/mpi_call.sh 7 "$iters"
"$gt" --keep-raw -o "$work/pp1" mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" >/dev/null 2>&1
cargo run --release -q -p gputrace-recorder --example record_cost 5000000 | sed 's/^/recorder alone: /'
ev=$(grep -h "events" "$work/pp1/summary.txt" | head -1 | sed -n 's/.*, \([0-9,]*\) events.*/\1/p' | tr -d ,)
raw=$(du -s --block-size=1 "$work/pp1/raw" | cut -f1)
echo "ping-pong trace: $ev events, raw $(( raw / ev )).$(( raw * 10 / ev % 10 )) bytes/event"

echo
echo "== 2. merge of synthetic traces (4 ranks, MPI ring pattern)"
for it in 300000 600000; do
  d="$work/synth$it"
  events=$(./target/release/examples/synth "$d" 4 "$it" | awk '{print $2}')
  read -r secs rss < <(measure "$gt" merge "$d")
  raw=$(du -s --block-size=1 "$d/raw" | cut -f1)
  otf=$(du -scb "$d/traces" "$d/traces.def" "$d/traces.otf2" | tail -1 | cut -f1)
  /usr/bin/python3 -c "
e, s, r, raw, otf = $events, $secs, $rss, $raw, $otf
print(f'{e:>11,} events: merged in {s:.2f} s = {e/s/1e6:.1f} M events/s (target >= 2), peak RSS {r/1024:.0f} MiB; '
      f'raw {raw/e:.2f} B/event (target <= 16), OTF2 {otf/e:.2f} B/event')"
  rm -rf "$d"
done
rounds=5
d="$work/psynth"
events=$(./target/release/examples/synth "$d" 4 300000 | awk '{print $2}')
echo "-- the merge in parallel: $events events, 4 processes, $rounds interleaved rounds (merge time from the summary)"
"$gt" merge "$d" >/dev/null 2>&1 # the raw streams in the page cache, as for every round after
times=(); peaks=()
for r in $(seq "$rounds"); do
  for mode in jobs1 jobs2 mpi2; do
    case $mode in
      jobs1) cmd=("$gt" merge --force --jobs 1 "$d") ;;
      jobs2) cmd=("$gt" merge --force --jobs 2 "$d") ;;
      mpi2) cmd=(mpirun.openmpi --oversubscribe -np 2 "$gt" merge --mpi --force --jobs 1 "$d") ;;
    esac
    read -r _ rss < <(measure "${cmd[@]}")
    t=$(sed -n 's/.*merged in \([0-9.]*\) s.*/\1/p' "$d/summary.txt" | head -1)
    times+=("$mode:$t"); peaks+=("$mode:$rss")
  done
done
/usr/bin/python3 - "$events" "${times[*]}" "${peaks[*]}" <<'PY'
import statistics, sys
events = int(sys.argv[1])
def by_mode(text):
    out = {}
    for item in text.split():
        mode, v = item.split(":")
        out.setdefault(mode, []).append(float(v))
    return out
times, peaks = by_mode(sys.argv[2]), by_mode(sys.argv[3])
names = {"jobs1": "merge --jobs 1", "jobs2": "merge --jobs 2", "mpi2": "mpirun -np 2 merge --mpi"}
for mode in ("jobs1", "jobs2", "mpi2"):
    t, p = times[mode], peaks[mode]
    print(f"{names[mode]:>25}: {events / min(t) / 1e6:5.1f} M events/s best, {events / statistics.median(t) / 1e6:5.1f} median "
          f"({min(t):.2f} / {statistics.median(t):.2f} s); peak RSS per process {min(p) / 1024:.0f} / {statistics.median(p) / 1024:.0f} MiB (min / median)")
PY
rm -rf "$d"

echo
echo "== 3. the bundled MPI example traced for real (4 ranks, 2000 steps)"
"$gt" --keep-raw -o "$work/ring" mpirun.openmpi -np 4 "$work/mpi_ring" 2000 >/dev/null 2>"$work/ring.log"
ev=$(sed -n 's/.*, \([0-9,]*\) events.*/\1/p' "$work/ring/summary.txt" | head -1 | tr -d ,)
raw=$(du -s --block-size=1 "$work/ring/raw" | cut -f1)
otf=$(du -scb "$work/ring/traces" "$work/ring/traces.def" "$work/ring/traces.otf2" | tail -1 | cut -f1)
/usr/bin/python3 -c "print(f'$ev events: raw {$raw/$ev:.2f} B/event, OTF2 {$otf/$ev:.2f} B/event')"
grep "merged in" "$work/ring/summary.txt"

echo
echo "== 4. merge of synthetic jobs: same events per rank, 64 to 1,024 ranks (8 per node, MPI + CUDA streams)"
scale_steps=${SCALE_STEPS:-2000}
printf '%6s %12s | %9s %11s %11s %9s | %9s %9s\n' ranks events archive_s "M events/s" "ms per rank" "RSS MiB" command_s "RSS MiB"
for ranks in 64 256 1024; do
  d="$work/job$ranks"
  events=$(./target/release/examples/synth "$d" "$ranks" "$scale_steps" job 8 | awk '{print $2}')
  cp -r "$d" "$d.full"
  read -r secs rss < <(GPUTRACE_ENABLE_PROFILING=false measure "$gt" merge "$d")
  read -r fsecs frss < <(measure "$gt" merge "$d.full")
  /usr/bin/python3 -c "
r, e, s, m, fs, fm = $ranks, $events, $secs, $rss, $fsecs, $frss
print(f'{r:6d} {e:12,d} | {s:9.2f} {e/s/1e6:11.2f} {s/r*1e3:11.2f} {m/1024:9.0f} | {fs:9.2f} {fm/1024:9.0f}')"
  rm -rf "$d" "$d.full"
done
echo "(left: the archive alone, GPUTRACE_ENABLE_PROFILING=false: linear when M events/s and ms per rank are alike"
echo " across the rows, bounded when its RSS is; right: the whole 'gputrace merge', profile, summary and analysis too)"

echo
echo "== 5. real runs of 256 ranks oversubscribed on $(nproc) cores (tests/programs/mpi/neighbours.c, 10 steps)"
mpicc.openmpi -O1 -o "$work/nb_ompi" tests/programs/mpi/neighbours.c
mpicc.openmpi -O1 -o "$work/init_ompi" bench/programs/init_time.c
mpicc.mpich -O1 -o "$work/nb_mpich" tests/programs/mpi/neighbours.c 2>/dev/null
export OMPI_MCA_rmaps_base_oversubscribe=1
for mpi in ompi mpich; do
  if [ $mpi = ompi ]; then launch=(mpirun.openmpi -np 256); else launch=(mpiexec.mpich -n 256); fi
  t=$(date +%s.%N)
  "$gt" --keep-raw -o "$work/real-$mpi" "${launch[@]}" "$work/nb_$mpi" 10 >/dev/null 2>"$work/real-$mpi.log"
  took=$(/usr/bin/python3 -c "print(f'{$(date +%s.%N) - $t:.1f}')")
  /usr/bin/python3 tests/scripts/message_order.py "$work/real-$mpi/traces.otf2" > "$work/real-$mpi.json"
  /usr/bin/python3 - "$work/real-$mpi.json" "$mpi" "$took" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
ok = len(v["hosts"]) == 256 and v["unpaired"] == 0 and not v["backwards"] and v["pairs"] == 256 * 20
print(f'{sys.argv[2]:5s}: {len(v["hosts"])} ranks, {v["pairs"]} messages paired, {v["unpaired"]} unpaired, '
      f'{len(v["backwards"])} receives before their sends; traced run + merge {sys.argv[3]} s: {"ok" if ok else "FAIL"}')
PY
  grep "merged in" "$work/real-$mpi/summary.txt"
done
echo "-- MPI_Init and MPI_Finalize at 256 ranks (Open MPI; bench/programs/init_time.c; one run each, this machine is oversubscribed 128x)"
mpirun.openmpi -np 256 "$work/init_ompi" | sed 's/^/untraced:             /'
for dom in "" "rank%32" "rank"; do
  what="traced, 1 clock:     "
  [ "$dom" = "rank%32" ] && what="traced, 32 clocks:   "
  [ "$dom" = "rank" ] && what="traced, 256 clocks:  "
  _GPUTRACE_TEST_CLOCK_DOMAIN=$dom GPUTRACE_VERBOSE=1 "$gt" -o "$work/init-$dom" mpirun.openmpi -np 256 "$work/init_ompi" 2>&1 |
    grep -E "init_time|clock synchronization" | sed -e 's/^DEBUG //' -e "s/^/$what/"
  rm -rf "$work/init-$dom"
done
echo "(the clock synchronization lines: rank 0 at MPI_Init, then at MPI_Finalize; rank%32 and rank give the"
echo " ranks artificial clock domains, as 32 or 256 hosts would have; see docs/mpi.md)"
