#!/usr/bin/python3
"""What a time window and a set of ranks hold of an OTF2 archive, computed
with the independent Python reader (Debian's python3-otf2) from the whole
archive, for the tests of `--from/--to/--ranks` to compare with.

Usage: window_facts.py ARCHIVE.otf2 FROM_NS TO_NS RANKS

FROM_NS and TO_NS count from the archive's start (its clock properties'
global offset), both edges inside the window; RANKS is a comma-separated
list of world ranks ('all': every rank). A region instance is in the
window when it overlaps it (enter <= to and leave >= from); its time in
the window is the overlap, as gputrace clips it.

Prints JSON:
  regions   name -> [instances in the window, ns in the window] over the
            chosen ranks' locations
  per_rank  rank -> name -> instances
  sends     MpiSend and MpiIsend records inside the window, chosen ranks
  slices    region instances in the window, every name
  length_ns the trace's length from its clock properties
"""

import json
import re
import sys
from collections import defaultdict

import otf2
from otf2.events import Enter, Leave, MpiIsend, MpiSend


def rank_of_group(name):
    m = re.match(r"(?:MPI Rank|Process) (\d+)$", name)
    return int(m.group(1)) if m else None


def main(path, from_ns, to_ns, ranks):
    regions = defaultdict(lambda: [0, 0])
    per_rank = defaultdict(lambda: defaultdict(int))
    sends = 0
    slices = 0
    with otf2.reader.open(path) as trace:
        clock = trace.definitions.clock_properties
        res, origin = clock.timer_resolution, clock.global_offset
        length_ns = clock.trace_length * 1_000_000_000 // res
        ticks = lambda ns: origin + ns * res // 1_000_000_000
        start, end = ticks(from_ns), ticks(to_ns)
        stacks = defaultdict(list)
        for loc, ev in trace.events:
            rank = rank_of_group(loc.group.name)
            if ranks is not None and rank not in ranks:
                continue
            if isinstance(ev, Enter):
                stacks[loc._ref].append((ev.region.name, ev.time))
            elif isinstance(ev, Leave):
                stack = stacks[loc._ref]
                name, entered = stack.pop()
                assert name == ev.region.name, (name, ev.region.name)
                if entered <= end and ev.time >= start:
                    overlap = min(ev.time, end) - max(entered, start)
                    regions[name][0] += 1
                    regions[name][1] += overlap * 1_000_000_000 // res
                    per_rank[rank][name] += 1
                    slices += 1
            elif isinstance(ev, (MpiSend, MpiIsend)) and start <= ev.time <= end:
                sends += 1
    print(json.dumps({"regions": regions, "per_rank": per_rank, "sends": sends, "slices": slices,
                      "length_ns": length_ns}))


if __name__ == "__main__":
    ranks = None if sys.argv[4] == "all" else {int(r) for r in sys.argv[4].split(",")}
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), ranks)
