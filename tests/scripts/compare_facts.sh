#!/usr/bin/env bash
# Traces the bundled MPI example and the MPI test programs with two builds
# of gputrace and compares the archives' facts (tests/scripts/otf2_facts.py,
# the independent Python reader), as multisets: the order of locations and
# messages may differ between builds, the facts may not. For refactors that
# must not change what is recorded.
# Usage: tests/scripts/compare_facts.sh OLD_TARGET_RELEASE [NEW_TARGET_RELEASE]
# Programs that poll (MPI_Test loops) differ in their polling counts from
# run to run; for them only the messages, collectives and communicators
# are compared.
set -euo pipefail
cd "$(dirname "$0")/../.."
old=${1:?usage: compare_facts.sh OLD_TARGET_RELEASE [NEW_TARGET_RELEASE]}
new=${2:-./target/release}
work=$(mktemp -d /tmp/gputrace-facts.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
progs="mpi_ring:examples/mpi_ring.c:4:200 p2p:tests/programs/mpi/p2p.c:4: collectives:tests/programs/mpi/collectives.c:4: comms:tests/programs/mpi/comms.c:4: threads:tests/programs/mpi/threads.c:2: nonblocking:tests/programs/mpi/nonblocking.c:4:"
status=0
for spec in $progs; do
  IFS=: read -r name src np args <<<"$spec"
  mpicc.openmpi -O2 -fopenmp -Itests/programs/mpi -o "$work/$name" "$src" -lpthread
  for build in old new; do
    bin=$old; [[ $build == new ]] && bin=$new
    # shellcheck disable=SC2086
    GPUTRACE_CUDA_ENABLE=no "$bin/gputrace" -o "$work/$build-$name" \
      mpirun.openmpi --oversubscribe -np "$np" "$work/$name" $args >/dev/null 2>"$work/$build-$name.err"
    /usr/bin/python3 tests/scripts/otf2_facts.py "$work/$build-$name/traces.otf2" >"$work/$build-$name.json"
  done
  /usr/bin/python3 - "$work/old-$name.json" "$work/new-$name.json" "$name" <<'P' || status=1
import json, sys
def norm(x):
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, list):
        return sorted((norm(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True))
    return x
a, b = (norm(json.load(open(p))) for p in sys.argv[1:3])
name = sys.argv[3]
keys = sorted(set(a) | set(b))
if name == "nonblocking":  # MPI_Test* loops: polling counts vary
    keys = [k for k in keys if k not in ("counts", "regions", "locations")]
differ = [k for k in keys if a.get(k) != b.get(k)]
sends = len(a.get("sends", []))
print(f"{name}: {'same facts' if not differ else 'DIFFER in ' + ', '.join(differ)} "
      f"({len(keys)} kinds of fact; {sends} sends, {len(a.get('collectives', []))} collective records)")
sys.exit(1 if differ else 0)
P
done
exit $status
