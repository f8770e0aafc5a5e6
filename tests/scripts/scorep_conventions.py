#!/usr/bin/python3
"""Checks an MPI archive's definitions against Score-P's conventions, with
the independent Python reader (python3-otf2).

Usage: scorep_conventions.py ARCHIVE.otf2 DOC.md

Each convention below is what Score-P 8 writes (from its measurement
system's sources and the OTF2 documentation). One gputrace follows must
hold in the archive; one it does not follow must be documented in DOC
(docs/otf2-mapping.md) by a line holding `scorep-difference: <id>`. A
convention that stops holding, or a difference without its line, is a
FAIL: a new difference nobody documented. Prints `ok`/`FAIL` lines and
exits 1 on a FAIL.
"""

import re
import sys
from collections import defaultdict

import _otf2
import otf2
from otf2.events import Enter, ProgramBegin, ProgramEnd


def facts(archive):
    """What the conventions look at."""
    f = {"program": defaultdict(list), "first": {}}
    with otf2.reader.open(archive) as trace:
        d = trace.definitions
        f["nodes"] = list(d.system_tree_nodes)
        f["node_props"] = [(p.system_tree_node.name, p.name, p.value) for p in d.system_tree_node_properties]
        f["domains"] = [(x.system_tree_node.name, str(x.system_tree_node_domain)) for x in d.system_tree_node_domains]
        f["groups"] = list(d.location_groups)
        f["locations"] = [(l.name, str(l.type), l.group.name, l._ref) for l in d.locations]
        f["regions"] = list(d.regions)
        f["loc_groups"] = [(g.name, str(g.group_type), str(g.paradigm)) for g in d.groups]
        f["comms"] = [c.name for c in d.comms]
        f["paradigm_props"] = {(str(p.paradigm), str(p.property)): p.value for p in d.paradigm_properties}
        f["attributes"] = {a.name: str(a.type) for a in d.attributes}
        f["cart"] = [t.name for t in d.cart_topologies]
        for loc, ev in trace.events:
            key = (loc.group.name, loc._ref)
            f["first"].setdefault(key, type(ev).__name__)
            if isinstance(ev, (ProgramBegin, ProgramEnd)):
                f["program"][key].append(ev)
        reader = trace.handle
        names = _otf2.Reader_GetPropertyNames(reader)
        f["properties"] = {n: _otf2.Reader_GetProperty(reader, n) for n in names}
    return f


def rank_of(group):
    m = re.match(r"MPI Rank (\d+)$", group)
    return int(m.group(1)) if m else None


# (id, what Score-P does, check over the facts).
CONVENTIONS = [
    ("machine-root",
     "the system tree's root is the machine: class `machine`, named `Linux` (SCOREP_MACHINE_NAME's default), "
     "property `platform`, domain MACHINE",
     lambda f: [n.name for n in f["nodes"] if n.parent is None] == ["Linux"]
     and all(n.class_name == "machine" for n in f["nodes"] if n.parent is None)
     and ("Linux", "platform", "Linux") in [(a, b, str(c)) for a, b, c in f["node_props"]]
     and ("Linux", "SystemTreeDomain.MACHINE") in f["domains"]),
    ("node-shared-memory",
     "one system-tree node of class `node` per host, domain SHARED_MEMORY",
     lambda f: all((n.name, "SystemTreeDomain.SHARED_MEMORY") in f["domains"]
                   for n in f["nodes"] if n.class_name == "node")
     and any(n.class_name == "node" for n in f["nodes"])),
    ("process-groups",
     "one location group `MPI Rank r` of type PROCESS per rank, under its node",
     lambda f: all(str(g.location_group_type).endswith("PROCESS") and g.system_tree_parent.class_name == "node"
                   for g in f["groups"] if rank_of(g.name) is not None)
     and any(rank_of(g.name) is not None for g in f["groups"])),
    ("master-thread",
     "a rank's first thread is `Master thread`, CPU_THREAD",
     lambda f: all(any(n == "Master thread" and t.endswith("CPU_THREAD") for n, t, g2, _ in f["locations"] if g2 == g.name)
                   for g in f["groups"] if rank_of(g.name) is not None)),
    ("location-ids",
     "location id = thread << 32 | rank: the master threads are 0..n-1",
     lambda f: all(ref == rank_of(g) for n, t, g, ref in f["locations"]
                   if n == "Master thread" and rank_of(g) is not None)),
    ("mpi-regions",
     "MPI regions: paradigm MPI, no description, source file `MPI`",
     lambda f: all(r.description == "" and r.source_file == "MPI"
                   for r in f["regions"] if str(r.paradigm).endswith("MPI"))
     and any(str(r.paradigm).endswith("MPI") for r in f["regions"])),
    ("comm-name-template",
     "the MPI paradigm's COMM_NAME_TEMPLATE is `Comm ${id}`, RMA_WIN_NAME_TEMPLATE `Win ${id}`",
     lambda f: str(f["paradigm_props"].get(("Paradigm.MPI", "ParadigmProperty.COMM_NAME_TEMPLATE"))) == "Comm ${id}"
     and str(f["paradigm_props"].get(("Paradigm.MPI", "ParadigmProperty.RMA_WIN_NAME_TEMPLATE"))) == "Win ${id}"),
    ("comm-locations-group",
     "the COMM_LOCATIONS group of MPI is unnamed",
     lambda f: [n for n, t, p in f["loc_groups"] if t.endswith("COMM_LOCATIONS") and p.endswith("MPI")] == [""]),
    ("world-and-self",
     "communicators `MPI_COMM_WORLD` and `MPI_COMM_SELF`",
     lambda f: {"MPI_COMM_WORLD", "MPI_COMM_SELF"} <= set(f["comms"])),
    ("measurement-attributes",
     "attributes `ProcessId`, `ThreadId` (UINT64) and `SOURCE_CODE_LOCATION` are defined",
     lambda f: f["attributes"].get("ProcessId") == "Type.UINT64" and f["attributes"].get("ThreadId") == "Type.UINT64"
     and f["attributes"].get("SOURCE_CODE_LOCATION") == "Type.SOURCE_CODE_LOCATION"),
    ("program-region",
     "a region named after the executable, paradigm MEASUREMENT_SYSTEM, role ARTIFICIAL, the command line as "
     "canonical name",
     lambda f: any(str(r.paradigm).endswith("MEASUREMENT_SYSTEM") and str(r.region_role).endswith("ARTIFICIAL")
                   and r.canonical_name.split(" ")[0].endswith(r.name) for r in f["regions"])),
    ("program-begin-end",
     "each rank's master thread begins with ProgramBegin (the program, its arguments, a ProcessId attribute) and "
     "ends with ProgramEnd",
     lambda f: all(f["first"].get((g, ref)) == "ProgramBegin"
                   and [type(e).__name__ for e in f["program"][(g, ref)]] == ["ProgramBegin", "ProgramEnd"]
                   and any(a.name == "ProcessId" for a in f["program"][(g, ref)][0].attributes)
                   for n, t, g, ref in f["locations"] if n == "Master thread" and rank_of(g) is not None)),
    ("trace-properties",
     "the archive properties OTF2::MPI_COMMUNICATION_COMPLETE, THREAD_FORK_JOIN_EVENT_COMPLETE, "
     "THREAD_CREATE_WAIT_EVENT_COMPLETE, THREAD_LOCK_EVENT_COMPLETE, PTHREAD_LOCATION_REUSED are set",
     lambda f: all(f"OTF2::{p}" in f["properties"] for p in (
         "MPI_COMMUNICATION_COMPLETE", "THREAD_FORK_JOIN_EVENT_COMPLETE", "THREAD_CREATE_WAIT_EVENT_COMPLETE",
         "THREAD_LOCK_EVENT_COMPLETE", "PTHREAD_LOCATION_REUSED"))
     and f["properties"]["OTF2::MPI_COMMUNICATION_COMPLETE"] == "true"),
    ("comm-create-in-init",
     "MPI_Init holds CommCreate of MPI_COMM_WORLD and MPI_COMM_SELF and a CREATE_HANDLE collective; "
     "MPI_Finalize CommDestroy and DESTROY_HANDLE",
     None),
    ("process-x-threads",
     "a `Process x Threads` Cartesian topology and its communicator",
     lambda f: any("Process x Threads" in n for n in f["cart"])),
    ("local-definitions",
     "per-location local definitions with mapping tables to the global ids (Score-P unifies at the end of "
     "the run); location ids as Score-P's either way",
     None),
    ("clock-resolution",
     "timestamps in the ticks of the TSC (SCOREP_TIMER=tsc) and their resolution",
     None),
    ("mpi-event-time",
     "MPI event records (MpiSend, MpiRecv, MpiCollectiveBegin/End, ...) with a timestamp of their own, "
     "after their call's Enter and before its Leave",
     None),
]


def main():
    archive, doc = sys.argv[1], sys.argv[2]
    text = open(doc, encoding="utf-8").read()
    documented = set(re.findall(r"scorep-difference: ([a-z0-9-]+)", text))
    f = facts(archive)
    failed = 0
    for cid, what, check in CONVENTIONS:
        holds = bool(check(f)) if check else False
        if holds and cid in documented:
            print(f"FAIL {cid}: holds, but {doc} still calls it a difference: {what}")
            failed += 1
        elif holds:
            print(f"ok   {cid}: as Score-P: {what}")
        elif cid in documented:
            print(f"ok   {cid}: differs, documented: {what}")
        else:
            print(f"FAIL {cid}: differs from Score-P and is not documented in {doc}: {what}")
            failed += 1
    for cid in sorted(documented - {c[0] for c in CONVENTIONS}):
        print(f"FAIL {cid}: documented as a difference but not a known convention")
        failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
