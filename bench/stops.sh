#!/usr/bin/env bash
# What a stopped job loses (not part of CI): runs the stopped-job
# scenarios of crates/gputrace/tests/integration/stops.rs (timeout, SIGINT
# and SIGTERM to gputrace, a crashing rank under Open MPI and MPICH, a
# fatal MPI error under both, a rank killing itself) RUNS times each and
# prints, per scenario, how many runs lost completed MPI_Send/MPI_Recv
# calls and how many at most (sends and receives of both ranks), how many
# runs' summaries did not say (rightly) how a rank ended, how many left a
# rank running after gputrace exited, and how many failed otherwise. The
# full per-run lines are in the log it names.
# Usage: bench/stops.sh [RUNS] [SCENARIO_FILTER]   (default 20 runs, all)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
runs=${1:-20}
filter=${2:-}
log=$(mktemp /tmp/gputrace-stops.XXXXXX.log)
STOPS_RUNS=$runs cargo test --release -q -p gputrace --test integration -- "stops::$filter" \
  --nocapture --test-threads 1 >"$log" 2>&1 || true
/usr/bin/python3 - "$log" <<'PY'
import re, sys
from collections import defaultdict

runs = defaultdict(dict)  # scenario -> run -> [missing calls, ending wrong, ran on, other]
current = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\S+) run (\d+) \(", line)
    if m:
        current = (m.group(1), int(m.group(2)))
        missing = sum(int(x) for x in re.findall(r"\(missing (-?\d+)\)", line) if int(x) > 0)
        runs[current[0]].setdefault(current[1], [missing, False, False, False])
        continue
    if current and line.startswith("    FAIL"):
        entry = runs[current[0]][current[1]]
        if any(w in line for w in ("does not name how", "does not say how", "ended by")):
            entry[1] = True
        elif "still running" in line:
            entry[2] = True
        elif "missing from the archive" not in line:
            entry[3] = True
print(f"{'scenario':<18} {'runs':>5} {'lost calls':>11} {'most lost':>10} {'end unnamed':>12} "
      f"{'rank ran on':>12} {'other fail':>11}")
for name, by_run in sorted(runs.items()):
    v = list(by_run.values())
    print(f"{name:<18} {len(v):>5} {sum(1 for x in v if x[0] > 0):>11} {max(x[0] for x in v):>10} "
          f"{sum(1 for x in v if x[1]):>12} {sum(1 for x in v if x[2]):>12} {sum(1 for x in v if x[3]):>11}")
PY
echo "per-run lines: $log"
