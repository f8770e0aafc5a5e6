#!/usr/bin/python3
"""Reads an OTF2 archive with the Python reader (which applies the clock
offsets) and pairs every point-to-point send with its receive — by
sender, receiver, communicator and tag, in order, as MPI delivers them —
then prints as JSON what a multi-host trace must get right:

  pairs       messages paired
  unpaired    sends or receives left without a partner
  backwards   pairs whose receive event comes before its send (at most
              10 listed: [sender, receiver, tag, send time, receive time])
  worst_ns    the largest (send time - receive time), ns, over all pairs
  hosts       per MPI rank, the system-tree node its process is under
  length_ns   the trace's length from its clock properties

Usage: message_order.py ARCHIVE.otf2
"""

import json
import re
import sys
from collections import defaultdict, deque

import otf2
from otf2.events import MpiIrecv, MpiIsend, MpiRecv, MpiSend


def main():
    sends = defaultdict(deque)
    recvs = defaultdict(deque)
    hosts = {}
    with otf2.reader.open(sys.argv[1]) as trace:
        d = trace.definitions
        length = d.clock_properties.trace_length if d.clock_properties else None
        for g in d.location_groups:
            m = re.match(r"MPI Rank (\d+)$", g.name)
            if m:
                hosts[int(m.group(1))] = g.system_tree_parent.name
        rank_of = {}
        for loc in d.locations:
            m = re.match(r"MPI Rank (\d+)$", loc.group.name)
            if m:
                rank_of[loc._ref] = int(m.group(1))
        world = {}
        for c in d.comms:
            members = list(c.group.members) if c.group is not None else []
            world[c.name] = members
        for loc, ev in trace.events:
            me = rank_of.get(loc._ref)
            if me is None:
                continue
            if isinstance(ev, (MpiSend, MpiIsend)):
                peer = comm_rank_to_world(ev.communicator, ev.receiver)
                sends[(me, peer, ev.communicator.name, ev.msg_tag)].append(ev.time)
            elif isinstance(ev, (MpiRecv, MpiIrecv)):
                peer = comm_rank_to_world(ev.communicator, ev.sender)
                recvs[(peer, me, ev.communicator.name, ev.msg_tag)].append(ev.time)
    pairs = unpaired = 0
    backwards = []
    worst = None
    for key in set(sends) | set(recvs):
        s, r = sends.get(key, deque()), recvs.get(key, deque())
        n = min(len(s), len(r))
        unpaired += len(s) + len(r) - 2 * n
        for _ in range(n):
            ts, tr = s.popleft(), r.popleft()
            pairs += 1
            worst = ts - tr if worst is None else max(worst, ts - tr)
            if tr < ts and len(backwards) < 10:
                backwards.append([key[0], key[1], key[3], ts, tr])
    print(json.dumps({"pairs": pairs, "unpaired": unpaired, "backwards": backwards, "worst_ns": worst,
                      "hosts": {str(k): v for k, v in sorted(hosts.items())}, "length_ns": length}))


def comm_rank_to_world(comm, rank):
    """The world rank of `rank` in `comm`: its group's members are world
    ranks (COMM_GROUP), or the rank itself for unknown groups."""
    group = getattr(comm, "group", None)
    members = list(getattr(group, "members", []) or [])
    if members and 0 <= rank < len(members):
        m = members[rank]
        return m if isinstance(m, int) else getattr(m, "_ref", rank)
    return rank


if __name__ == "__main__":
    main()
