#!/usr/bin/env python3
"""Reads a Cube profile (.cubex) with pycubexr, the Extra-P project's
independent reader of the CUBE4 format, and prints facts about it as JSON
for the integration tests (crates/gputrace/tests/integration/profile.rs).

Usage: cube_facts.py PROFILE.cubex

Facts:
  metrics    unique name -> [kind (INCLUSIVE/EXCLUSIVE), data type, unit]
  locations  in column order: name, type, group (name), group_type, rank
             (the group's)
  cnodes     every call path ("prog/MPI_Send"): id, region, paradigm,
             parent path (null at the root), children paths
  stored     metric -> path -> values per location, as stored
  inclusive  metric -> path -> values per location, inclusive (pycubexr's
             conversion for exclusive metrics; the stored values otherwise)
  exclusive  metric -> path -> values per location, exclusive (pycubexr's
             conversion for inclusive metrics; the stored values otherwise)
  children   metric -> the unique names of its children in the metric tree

Before printing, it checks the sums of both trees, as CubeLib reads them
(cube_sanity's "No negative exclusive metrics"), and exits with status 1
and the first violations on stderr where one fails:
  - along the call tree, no exclusive value is negative: an inclusive
    metric's value at a call path is at least its children's together;
  - along the metric tree, where CubeLib takes what is stored as inclusive
    (a parent's value holds its children's), a parent's value is at least
    the sum of its children's at every call path and location, both
    inclusive and exclusive along the call tree, so that no metric's own
    share is negative.
"""

import json
import sys

from pycubexr import CubexParser
from pycubexr.utils.exceptions import MissingMetricError


def number(v):
    v = v.item() if hasattr(v, "item") else v
    return v


def tolerance(values):
    """Rounding allowed in a sum of doubles: relative to its largest term."""
    return 1e-9 * max([abs(v) for v in values] + [1.0])


def check_sums(facts):
    """The violations of the trees' sums (see the module's docstring)."""
    bad = []
    for m, rows in facts["exclusive"].items():
        for p, row in rows.items():
            incl = facts["inclusive"][m][p]
            for i, v in enumerate(row):
                if v < -tolerance(incl):
                    bad.append(f"{m} at {p}, location {i}: exclusive {v} < 0 (inclusive {incl[i]})")
    for m, children in facts["children"].items():
        children = [c for c in children if c in facts["stored"]]
        if not children or m not in facts["stored"]:
            continue
        for view in ("inclusive", "exclusive"):
            for p, row in facts[view][m].items():
                for i, v in enumerate(row):
                    parts = [facts[view][c][p][i] for c in children]
                    if v - sum(parts) < -tolerance([v] + parts):
                        bad.append(
                            f"{m} at {p}, location {i}: {view} {v} < its children's "
                            f"{' + '.join(f'{c} {x}' for c, x in zip(children, parts))} (own share {v - sum(parts)})"
                        )
    return bad


def main(path):
    with CubexParser(path) as cube:
        facts = {
            "metrics": {},
            "locations": [],
            "cnodes": {},
            "stored": {},
            "inclusive": {},
            "exclusive": {},
            "children": {},
        }
        for m in cube.all_metrics():
            facts["metrics"][m.name] = [m.metric_type, m.data_type, m.units]
            facts["children"][m.name] = [c.name for c in m.childs]
        # The system tree: pycubexr keeps it parsed; locations of a group
        # in the order of the data's columns.
        columns = {loc.id: i for i, loc in enumerate(cube.get_locations())}
        root_node = cube._anchor_result.system_tree_nodes[0]
        rows = [None] * len(columns)
        for group in root_node.all_location_groups():
            for loc in group.all_locations():
                rows[columns[loc.id]] = {
                    "id": loc.id,
                    "name": loc.name,
                    "type": loc.type,
                    "group": group.name,
                    "group_type": group.type,
                    "rank": int(group.rank),
                }
        facts["locations"] = rows
        assert all(r is not None and r["id"] == i for i, r in enumerate(rows)), rows

        paths = {}

        def walk(cnode, prefix):
            name = cube.get_region(cnode).name
            path = f"{prefix}/{name}" if prefix else name
            if path in paths.values():
                raise SystemExit(f"two call paths {path}")
            paths[cnode.id] = path
            region = cube.get_region(cnode)
            facts["cnodes"][path] = {
                "id": cnode.id,
                "region": name,
                "paradigm": region.paradigm,
                "parent": prefix or None,
                "children": [],
            }
            for child in cnode.get_children():
                facts["cnodes"][path]["children"].append(walk(child, path))
            return path

        roots = cube.get_root_cnodes()
        assert len(roots) == 1
        walk(roots[0], "")

        for m in cube.all_metrics():
            try:
                values = cube.get_metric_values(m)
            except MissingMetricError:
                continue
            stored, incl, excl = {}, {}, {}
            for cnode in cube.all_cnodes():
                p = paths[cnode.id]
                stored[p] = [number(v) for v in values.cnode_values(cnode)]
                incl[p] = [number(v) for v in values.cnode_values(cnode, convert_to_inclusive=True)]
                excl[p] = [number(v) for v in values.cnode_values(cnode, convert_to_exclusive=True)]
            facts["stored"][m.name] = stored
            facts["inclusive"][m.name] = incl
            facts["exclusive"][m.name] = excl
        bad = check_sums(facts)
        if bad:
            more = f"\n... and {len(bad) - 20} more" if len(bad) > 20 else ""
            sys.exit(f"{path}: {len(bad)} values break the sums of the metric or call tree:\n" + "\n".join(bad[:20]) + more)
        json.dump(facts, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
