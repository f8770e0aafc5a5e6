#!/usr/bin/env bash
# gputrace benchmark (CPU side): prints, measured in this one run,
#  1. the time tracing adds to a 0-byte MPI_Send/MPI_Recv ping-pong, per
#     call (traced and untraced runs interleaved, medians of 5 each);
#  2. merge throughput and peak memory on synthetic traces of ~10 and ~20
#     million events (bounded memory: the two peaks should be alike), and
#     on one of them the merge in parallel: --jobs 1, --jobs 2 and
#     `mpirun -np 2 gputrace merge --mpi` (interleaved rounds, min and median);
#  3. bytes per event in the raw streams and in the OTF2 archive, for the
#     synthetic trace and for the bundled MPI example traced for real.
# Usage: bench/run.sh [ITERATIONS]   (default 1000000 ping-pong iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
iters=${1:-1000000}
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

echo "== 1. MPI ping-pong, 0 bytes, $iters iterations, 2 ranks (7 alternating runs each)"
plain=(); traced=()
for i in 1 2 3 4 5 6 7; do
  plain+=("$(mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" | sed -n 's/.*, \([0-9.]*\) ns per round trip.*/\1/p')")
  traced+=("$("$gt" --keep-raw -o "$work/pp$i" mpirun.openmpi -np 2 --bind-to core "$work/pingpong" -n "$iters" 2>/dev/null | sed -n 's/.*, \([0-9.]*\) ns per round trip.*/\1/p')")
done
/usr/bin/python3 - "${plain[*]}" "${traced[*]}" <<'PY'
import statistics, sys
p = [float(x) for x in sys.argv[1].split()]
t = [float(x) for x in sys.argv[2].split()]
print(f"untraced round trip ns: min {min(p):7.1f}  median {statistics.median(p):7.1f}  (runs: {' '.join(f'{x:.0f}' for x in p)})")
print(f"traced   round trip ns: min {min(t):7.1f}  median {statistics.median(t):7.1f}  (runs: {' '.join(f'{x:.0f}' for x in t)})")
print(f"added by tracing:       {(min(t) - min(p)) / 4:7.1f} ns per MPI call (a round trip is 4 calls in a row; best runs;")
print(f"                        median runs: {(statistics.median(t) - statistics.median(p)) / 4:.1f} ns; target < 100)")
PY
cargo run --release -q -p runtime --example record_cost 5000000 | sed 's/^/recorder alone: /'
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
