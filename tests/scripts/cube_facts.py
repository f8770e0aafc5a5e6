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
"""

import json
import sys

from pycubexr import CubexParser
from pycubexr.utils.exceptions import MissingMetricError


def number(v):
    v = v.item() if hasattr(v, "item") else v
    return v


def main(path):
    with CubexParser(path) as cube:
        facts = {"metrics": {}, "locations": [], "cnodes": {}, "stored": {}, "inclusive": {}, "exclusive": {}}
        for m in cube.all_metrics():
            facts["metrics"][m.name] = [m.metric_type, m.data_type, m.units]
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
        json.dump(facts, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
