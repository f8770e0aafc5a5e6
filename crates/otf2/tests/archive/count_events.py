"""Reads an OTF2 archive with OTF2's own Python bindings and prints, one
fact per line, what the Rust test compares with what it wrote:

    count <location> <EventClass> <n>
    send <location> <receiver> <communicator name> <tag> <length>
    recv <location> <sender> <communicator name> <tag> <length>
    put <location> <window name> <remote> <bytes> <matching id>
    collective <location> <operation> <communicator name> <sent> <received>
    metric <location> <value> ...
    attr <location> <attribute name> <value>
    events <location> <number_of_events of the location definition>
"""
import collections
import sys

import otf2


def main(anchor):
    counts = collections.Counter()
    with otf2.reader.open(anchor) as trace:
        for location in trace.definitions.locations:
            print("events", location._ref, location.number_of_events)
        for location, event in trace.events:
            loc = location._ref
            kind = type(event).__name__
            counts[(loc, kind)] += 1
            if kind == "MpiSend":
                print("send", loc, event.receiver, event.communicator.name, event.msg_tag, event.msg_length)
            elif kind == "MpiRecv":
                print("recv", loc, event.sender, event.communicator.name, event.msg_tag, event.msg_length)
            elif kind == "RmaPut":
                print("put", loc, event.win.name, event.remote, event.bytes, event.matching_id)
            elif kind == "MpiCollectiveEnd":
                print("collective", loc, str(event.collective_op).split(".")[-1], event.communicator.name,
                      event.size_sent, event.size_received)
            elif kind == "Metric":
                print("metric", loc, *event.values)
            if event.attributes:
                for attribute, value in event.attributes.items():
                    print("attr", loc, attribute.name, value)
    for (loc, kind), n in sorted(counts.items()):
        print("count", loc, kind, n)


if __name__ == "__main__":
    main(sys.argv[1])
