#!/usr/bin/env python3
"""check_compile_trace.py FILE.json: FILE is the Chrome trace of `netc compile --trace`. Checks
that every slice has the Trace Event fields, starts at or after 0 with a non-negative duration,
sits on a named track, and that no two slices of one track overlap (a thread does one thing at a
time); prints the number of slices per category and of tracks, for FileCheck, and the passes'
names in order."""
import collections
import json
import sys

with open(sys.argv[1]) as f:
    events = json.load(f)["traceEvents"]
tracks = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
slices = [e for e in events if e["ph"] == "X"]
by_track = collections.defaultdict(list)
for e in slices:
    for field in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
        assert field in e, "%s lacks %s" % (e, field)
    assert e["ts"] >= 0 and e["dur"] >= 0, e
    assert e["tid"] in tracks, "slice on an unnamed track: %s" % e
    by_track[e["tid"]].append(e)
for tid, track in by_track.items():
    track.sort(key=lambda e: e["ts"])
    for a, b in zip(track, track[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 0.01, "track %d: %s overlaps %s" % (tid, a["name"], b["name"])
count = collections.Counter(e["cat"] for e in slices)
print(" ".join("%s=%d" % (cat, count[cat]) for cat in ("frontend", "pass", "lower+hash", "compile", "cache", "link")),
      "tracks=%d" % len(tracks))
print("passes:", ",".join(e["name"] for e in sorted(slices, key=lambda e: e["ts"]) if e["cat"] == "pass"))
