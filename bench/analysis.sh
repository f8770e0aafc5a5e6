#!/usr/bin/env bash
# gputrace analysis benchmark: throughput and peak memory of
#   gputrace stats, analyze, export --format chrome (.json and .json.gz),
#   plot (timeline), export --format vite-otf2,
# and what the Cube profile adds to the merge (profile's merge_cost),
# on synthetic archives (an MPI ring of 4 ranks, raw::synthetic) of
# about 10 and 30 million events. Bounded memory: the peaks of the two
# sizes should be alike. Targets: stats of 10 million events within 10 s
# on 2 cores; export at least 1 million events per second.
# Usage: bench/analysis.sh [ITERATIONS]   (default 300000: ~10 million events;
#        the second archive has three times as many)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
iters=${1:-300000}
cargo build --release -q -p gputrace --bin gputrace --example synth
cargo build --release -q -p gputrace-profile --example merge_cost
target=${CARGO_TARGET_DIR:-target}
gt=$target/release/gputrace
work=$(mktemp -d /tmp/gputrace-analysis-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Runs a command; prints its wall time (s) and peak RSS (KiB).
measure() {
  /usr/bin/python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}

report() { # label events seconds rss_kib [extra]
  /usr/bin/python3 -c "
label, e, s, r, extra = '$1', $2, $3, $4, '''${5:-}'''
print(f'  {label:<28} {s:7.2f} s  {e/s/1e6:6.1f} M events/s  peak RSS {r/1024:6.1f} MiB  {extra}')"
}

echo "cores: $(nproc)"
for it in "$iters" $((iters * 3)); do
  d="$work/synth$it"
  "$target/release/examples/synth" "$d" 4 "$it" >/dev/null
  "$gt" merge "$d" >/dev/null 2>&1
  events=$(sed -n 's/.*, \([0-9,]*\) events.*/\1/p' "$d/summary.txt" | head -1 | tr -d ,)
  size=$(du -scb "$d/traces" "$d/traces.def" "$d/traces.otf2" | tail -1 | cut -f1)
  echo
  /usr/bin/python3 -c "print(f'== {$events:,} events (OTF2 archive {$size / 2**20:.0f} MiB, 4 ranks)')"
  if [[ "$it" == "$iters" ]]; then
    # The merge without and with the Cube profile, alternately (min, median).
    "$target/release/examples/merge_cost" "$d" 5 | sed 's/^/  /'
  fi
  read -r s r < <(measure "$gt" stats "$d")
  report "stats (all reports)" "$events" "$s" "$r" "(target: < 10 s)"
  read -r s r < <(measure "$gt" analyze "$d")
  report "analyze" "$events" "$s" "$r" "(all locations by time)"
  if [[ "$it" == "$iters" ]]; then
    read -r s r < <(measure "$gt" export --format chrome -o "$work/out.json" "$d")
    json=$(stat -c %s "$work/out.json")
    report "export chrome .json" "$events" "$s" "$r" "$((json / 1048576)) MiB (target: >= 1 M events/s)"
    rm -f "$work/out.json"
    read -r s r < <(measure "$gt" export --format chrome -o "$work/out.json.gz" "$d")
    gz=$(stat -c %s "$work/out.json.gz")
    report "export chrome .json.gz" "$events" "$s" "$r" "$((gz / 1048576)) MiB"
    rm -f "$work/out.json.gz"
  else
    # Three times the JSON would only fill the disk: the same work, to /dev/null.
    read -r s r < <(measure "$gt" export --format chrome -o /dev/null "$d")
    report "export chrome (to /dev/null)" "$events" "$s" "$r" "(target: >= 1 M events/s)"
  fi
  read -r s r < <(measure "$gt" plot -o "$work/timeline.png" "$d")
  report "plot timeline" "$events" "$s" "$r"
  read -r s r < <(measure "$gt" export --format vite-otf2 -o "$work/vite$it" "$d")
  report "export vite-otf2" "$events" "$s" "$r"
  rm -rf "$d" "$work/vite$it"
done
echo
echo "stats keeps every duration for exact medians (4 bytes each) up to 16 Mi values in all,"
echo "then switches the largest names to histograms: its peak grows with the trace up to"
echo "about 64 MiB plus the definitions, and no further. analyze reads every location at"
echo "once, merged by time (one OTF2 chunk each), and keeps the messages in flight, the"
echo "collectives not yet ended by every rank and at most 65,536 CUDA launches. The other"
echo "commands keep no per-event state at all. The export to Chrome includes analyze's"
echo "pass (its analysis tracks)."
