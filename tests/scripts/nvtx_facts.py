#!/usr/bin/python3
"""Reads an OTF2 archive with the independent Python reader (Debian's
python3-otf2) and prints what its NVTX regions say, as JSON, for the
NVTX tests to compare with what the program did.

Usage: nvtx_facts.py ARCHIVE.otf2

NVTX regions are user regions (paradigm USER) whose description is
"NVTX" (default domain) or "NVTX domain <name>"; their role says the
style: FUNCTION push/pop, CODE start/end, ARTIFICIAL a mark
(docs/otf2-mapping.md). Facts:
  locations   per "group/location name": its type, and "paths": the
              number of Enters per nesting path of region names
              ("iteration > solve > smooth")
  regions     per region name: a list of [domain, style, paradigm]
  marks       per "domain:name": [marks, marks whose Leave is not at the
              Enter's time]
  ranges      per "style|domain:name": [count, total ns, min ns, max ns],
              the durations nvtx_sum must report
  attributes  per region name: attribute name -> list of values, in
              order, from the Enters that carry them
  unbalanced  locations whose Enter/Leave do not pair up
  clock       timer resolution (ticks per second)
"""

import json
import sys
from collections import defaultdict

import otf2
from otf2.events import Enter, Leave

STYLES = {"FUNCTION": "PushPop", "CODE": "StartEnd", "ARTIFICIAL": "Mark"}


def nvtx_of(region):
    """(domain, style) of an NVTX region, or None."""
    if str(region.paradigm).split(".")[-1] != "USER":
        return None
    d = region.description
    if d == "NVTX":
        domain = ""
    elif d.startswith("NVTX domain "):
        domain = d[len("NVTX domain "):]
    else:
        return None
    return domain, STYLES.get(str(region.region_role).split(".")[-1], "PushPop")


def main(path):
    facts = {
        "locations": {},
        "regions": defaultdict(list),
        "marks": {},
        "ranges": {},
        "attributes": defaultdict(lambda: defaultdict(list)),
        "unbalanced": [],
    }
    with otf2.reader.open(path) as trace:
        defs = trace.definitions
        facts["clock"] = defs.clock_properties.timer_resolution
        for r in defs.regions:
            n = nvtx_of(r)
            if n is not None:
                facts["regions"][r.name].append([n[0], n[1], str(r.paradigm).split(".")[-1]])
        stacks = defaultdict(list)
        for loc, ev in trace.events:
            info = facts["locations"].setdefault(
                f"{loc.group.name}/{loc.name}", {"type": str(loc.type).split(".")[-1], "paths": defaultdict(int)})
            key = str(loc._ref)
            if isinstance(ev, Enter):
                stacks[key].append((ev.region, ev.time))
                path_ = " > ".join(r.name for r, _ in stacks[key])
                info["paths"][path_] += 1
                for a, v in (ev.attributes or {}).items():
                    facts["attributes"][ev.region.name][a.name].append(v)
            elif isinstance(ev, Leave):
                if not stacks[key] or stacks[key][-1][0] != ev.region:
                    facts["unbalanced"].append(f"{loc.group.name}/{loc.name}")
                    continue
                region, start = stacks[key].pop()
                n = nvtx_of(region)
                if n is None:
                    continue
                domain, style = n
                name = f"{domain}:{region.name}"
                length = ev.time - start
                if style == "Mark":
                    m = facts["marks"].setdefault(name, [0, 0])
                    m[0] += 1
                    m[1] += int(length != 0)
                else:
                    k = f"{style}|{name}"
                    c = facts["ranges"].setdefault(k, [0, 0, None, None])
                    c[0] += 1
                    c[1] += length
                    c[2] = length if c[2] is None else min(c[2], length)
                    c[3] = length if c[3] is None else max(c[3], length)
        for key, st in stacks.items():
            if st:
                facts["unbalanced"].append(key)
    json.dump(facts, sys.stdout, sort_keys=True, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
