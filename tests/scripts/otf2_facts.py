#!/usr/bin/python3
"""Reads an OTF2 archive with the independent Python reader (Debian's
python3-otf2, built on the OTF2 library's own reader) and prints facts
about it as JSON, for the integration tests to compare with what the
traced program did.

Usage: otf2_facts.py ARCHIVE.otf2

Facts, with ranks as world ranks (from the 'MPI Rank r' location groups):
  ranks        sorted MPI ranks that have a location group
  locations    per location: name, group, rank, event count, and whether
               its timestamps never decrease (clock offsets applied)
  counts       per rank: number of events of each type
  sends        [sender, receiver, comm, tag, bytes] for MpiSend and MpiIsend
  recvs        [receiver, sender, comm, tag, bytes] for MpiRecv and MpiIrecv
  collectives  [rank, op, comm, root (world rank or null), sent, received]
  regions      per rank: region name -> number of Enter events
  comms        the names of the archive's communicators, sorted
  unbalanced   locations whose Enter/Leave do not pair up
"""

import json
import re
import sys
from collections import defaultdict

import otf2
from otf2.events import (Enter, Leave, MpiCollectiveEnd, MpiIrecv, MpiIsend, MpiRecv, MpiSend,
                         NonBlockingCollectiveComplete)

UNDEFINED = 0xFFFFFFFF


def rank_of_group(name):
    """The rank of a process's location group: 'MPI Rank r', or 'Process r'
    for a process without MPI (an NCCL job launched without MPI)."""
    m = re.match(r"(?:MPI Rank|Process) (\d+)$", name)
    return int(m.group(1)) if m else None


def comm_world_ranks(comm):
    """World ranks of a communicator's members, in communicator order."""
    members = comm.group.members
    out = []
    for m in members:
        r = rank_of_group(m.group.name) if hasattr(m, "group") else None
        out.append(r)
    return out


def main(path):
    facts = {
        "ranks": [],
        "locations": {},
        "counts": defaultdict(lambda: defaultdict(int)),
        "sends": [],
        "recvs": [],
        "collectives": [],
        "regions": defaultdict(lambda: defaultdict(int)),
        "unbalanced": [],
    }
    with otf2.reader.open(path) as trace:
        defs = trace.definitions
        ranks = sorted({r for r in (rank_of_group(g.name) for g in defs.location_groups) if r is not None})
        facts["ranks"] = ranks
        comm_ranks = {}
        facts["comms"] = sorted(c.name for c in defs.comms)
        for c in defs.comms:
            try:
                comm_ranks[c._ref] = comm_world_ranks(c)
            except Exception:  # a COMM_SELF group has no members
                comm_ranks[c._ref] = None
        last = {}
        stacks = defaultdict(list)
        for loc, ev in trace.events:
            key = str(loc._ref)
            rank = rank_of_group(loc.group.name)
            info = facts["locations"].setdefault(
                key, {"name": loc.name, "group": loc.group.name, "rank": rank, "events": 0, "monotonic": True})
            info["events"] += 1
            if key in last and ev.time < last[key]:
                info["monotonic"] = False
            last[key] = ev.time
            facts["counts"][str(rank)][type(ev).__name__] += 1

            def world(comm, local):
                members = comm_ranks.get(comm._ref)
                if members is None:
                    return rank
                return members[local] if local < len(members) else None

            if isinstance(ev, Enter):
                facts["regions"][str(rank)][ev.region.name] += 1
                stacks[key].append(ev.region.name)
            elif isinstance(ev, Leave):
                if not stacks[key] or stacks[key].pop() != ev.region.name:
                    facts["unbalanced"].append(key)
            elif isinstance(ev, (MpiSend, MpiIsend)):
                facts["sends"].append([rank, world(ev.communicator, ev.receiver), ev.communicator.name,
                                       ev.msg_tag, ev.msg_length])
            elif isinstance(ev, (MpiRecv, MpiIrecv)):
                facts["recvs"].append([rank, world(ev.communicator, ev.sender), ev.communicator.name,
                                       ev.msg_tag, ev.msg_length])
            elif isinstance(ev, (MpiCollectiveEnd, NonBlockingCollectiveComplete)):
                root = None if ev.root == UNDEFINED else world(ev.communicator, ev.root)
                facts["collectives"].append([rank, str(ev.collective_op).split(".")[-1], ev.communicator.name, root,
                                             ev.size_sent, ev.size_received])
        for key, st in stacks.items():
            if st:
                facts["unbalanced"].append(key)
    json.dump(facts, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
