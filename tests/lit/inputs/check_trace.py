#!/usr/bin/env python3
"""check_trace.py FILE.json KERNELS [GFLOPS GBS]: FILE is a Chrome trace (the Trace Event format's JSON object
form) as `netc bench --trace` writes it: metadata naming the process and its tracks, KERNELS
complete events ("ph": "X") of category kernel on one track, laid end to end from 0 with
non-negative durations and the compiler's counts as args, and one event for the whole step that
spans them. With GFLOPS and GBS (the peaks given to bench), every counted kernel's roofline share
is the least time its FLOPs and bytes take at those peaks over its duration."""
import json
import sys

path, want = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    trace = json.load(f)
events = trace["traceEvents"]
meta = [e for e in events if e["ph"] == "M"]
assert {e["name"] for e in meta} == {"process_name", "thread_name"}, meta
kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
assert len(kernels) == want, "%d kernel events, not %d" % (len(kernels), want)
end = 0.0
for e in kernels:
    for field in ("name", "ts", "dur", "pid", "tid", "args"):
        assert field in e, "%s lacks %s" % (e, field)
    assert e["name"].startswith("k"), e
    assert e["dur"] >= 0 and abs(e["ts"] - end) < 0.01, "%s does not follow at %.3f" % (e, end)
    assert (e["pid"], e["tid"]) == (kernels[0]["pid"], kernels[0]["tid"]), e
    end = e["ts"] + e["dur"]
counted = [e for e in kernels if "flops" in e["args"]]
assert counted and all(e["args"]["bytes"] > 0 for e in counted), "no kernel has the compiler's counts"
assert any(e["args"]["flops"] > 0 for e in counted)
if len(sys.argv) > 3:
    gflops, gbs = float(sys.argv[3]), float(sys.argv[4])
    for e in counted:
        if e["dur"] < 1:
            continue  # microseconds with 3 decimals: too coarse to recompute the share
        want = max(e["args"]["flops"] / (gflops * 1e3), e["args"]["bytes"] / (gbs * 1e3)) / e["dur"]
        got = e["args"].get("roofline_share", 0)
        assert abs(got - want) <= 1e-4 + 1e-2 * want, "%s: roofline share %g, not %g" % (e["name"], got, want)
steps = [e for e in events if e["ph"] == "X" and e["cat"] == "step"]
assert len(steps) == 1 and abs(steps[0]["dur"] - end) < 0.01, steps
print("%s: %d kernels over %.3f ms" % (path, len(kernels), end / 1e3))
