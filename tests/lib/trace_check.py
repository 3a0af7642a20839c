#!/usr/bin/env python3
# trace_check.py TRACE... - the rules a Chrome trace-event file must keep
# for every viewer to draw it whole (chrome://tracing, Chrome DevTools,
# Perfetto); prints one line per broken rule and exits 1 if any broke.
#
# - Slices ("ph": "X") of one thread never overlap: each starts at or
#   after the end of the one before, computed as the viewers do (ts + dur
#   in doubles), or lies wholly inside it.
# - Each flow (cat, name, id) has one start ("s") and one end ("f"); the
#   start comes first in the file (chrome://tracing drops an end it reads
#   before its start) and the end's ts is later (DevTools keys a flow's
#   events by ts: two at one ts make one, and the arrow is dropped).
# - Each flow event sits at the ts of a slice of its thread with its
#   category (DevTools binds by pid, tid, cat and ts) and the end has
#   "bp": "e" (bind to that slice, not to the next one).
import json
import sys
from collections import defaultdict


def check(path):
    errors = []
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    threads = defaultdict(list)
    starts = set()
    flows = defaultdict(list)
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph == "X":
            threads[(e["pid"], e["tid"])].append(e)
            starts.add((e["pid"], e["tid"], e.get("cat"), e["ts"]))
        elif ph in ("s", "f"):
            flows[(e.get("cat"), e.get("name"), e["id"])].append((i, e))
    for (pid, tid), slices in threads.items():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in slices:
            if e["dur"] < 0:
                errors.append("pid %s tid %s: %s has a negative dur"
                              % (pid, tid, e["name"]))
            while open_ends and open_ends[-1][0] <= e["ts"]:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1][0]:
                errors.append("pid %s tid %s: %s (ts %r, end %r) overlaps "
                              "%s (end %r)" % (pid, tid, e["name"], e["ts"],
                                               end, open_ends[-1][1],
                                               open_ends[-1][0]))
            open_ends.append((end, e["name"]))
    for key, evs in flows.items():
        phases = [e["ph"] for _, e in evs]
        if phases != ["s", "f"]:
            errors.append("flow %s: events %s in file order, want s then f"
                          % (key, phases))
            continue
        (_, s), (_, f) = evs
        if not f["ts"] > s["ts"]:
            errors.append("flow %s: ends at ts %r, not after its start %r"
                          % (key, f["ts"], s["ts"]))
        if f.get("bp") != "e":
            errors.append("flow %s: the end lacks \"bp\": \"e\"" % (key,))
        for e in (s, f):
            if (e["pid"], e["tid"], e.get("cat"), e["ts"]) not in starts:
                errors.append("flow %s: its '%s' at pid %s tid %s ts %r "
                              "starts no slice of category %r there"
                              % (key, e["ph"], e["pid"], e["tid"], e["ts"],
                                 e.get("cat")))
    return errors, sum(len(s) for s in threads.values()), len(flows)


def main():
    bad = 0
    for path in sys.argv[1:]:
        errors, nslices, nflows = check(path)
        for msg in errors[:10]:
            print("%s: %s" % (path, msg))
        if len(errors) > 10:
            print("%s: ... %d more" % (path, len(errors) - 10))
        if errors:
            bad += 1
        else:
            print("%s: ok, %d slices, %d flows" % (path, nslices, nflows))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
