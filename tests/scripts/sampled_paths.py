"""Samples per call path of an OTF2 archive (CallingContextSample events),
read with the OTF2 Python reader: one line per path, `count | a > b > c`,
outermost first; `--rank` prefixes each with the rank of its location."""

import collections
import sys

import otf2
from otf2.events import CallingContextSample


def main():
    counts = collections.Counter()
    by_rank = "--rank" in sys.argv
    with otf2.reader.open(sys.argv[1]) as t:
        for loc, ev in t.events:
            if not isinstance(ev, CallingContextSample):
                continue
            names, c = [], ev.calling_context
            while c is not None:
                names.append(c.region.name)
                c = c.parent
            path = " > ".join(reversed(names))
            if by_rank:
                path = f"{loc.group.name} | {path}"
            counts[path] += 1
    for path, n in sorted(counts.items(), key=lambda x: -x[1]):
        print(n, "|", path)


if __name__ == "__main__":
    main()
