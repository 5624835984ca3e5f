#!/usr/bin/env python3
"""check_report.py CHROMIUM FILE.html FUSED UNFUSED: loads the page of `netc bench --compare
unfused,fused --report` in headless chromium and checks it: no console message (an error in the
page's script would be one), nothing fetched (no src or href attributes, no http URL but SVG's
namespace), the page's script ran and counted one time bar per fused group (FUSED kernels, one per
group), one stacked segment per unfused kernel (UNFUSED), two byte bars per group, an arena bar per
pipeline, and the roofline's points, which are the SVG's circles."""
import re
import subprocess
import sys

chromium, path, fused, unfused = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
page = open(path, encoding="utf-8").read()
assert not re.search(r"\s(src|href)\s*=", page), "the page refers to another file"
urls = set(re.findall(r"https?://[^\s\"'<>]+", page)) - {"http://www.w3.org/2000/svg"}
assert not urls, "the page names URLs: %s" % urls
run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                      "--dump-dom", "file://" + path], capture_output=True, text=True, timeout=120)
assert run.returncode == 0, run.stderr[-2000:]
console = [l for l in run.stderr.splitlines() if ":CONSOLE" in l]
assert not console, "console messages: %s" % console
body = re.search(r"<body([^>]*)>", run.stdout)
assert body, "no body in the DOM"
data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
assert data.get("ready") == "1", "the page's script did not run: %s" % data
got = {k: int(v) for k, v in data.items() if k != "ready"}
circles = len(re.findall(r"<circle\b[^>]*class=\"point\"", run.stdout))
want = {"fused-bars": fused, "unfused-segments": unfused, "byte-bars": 2 * fused, "arena-bars": 2,
        "points": circles}
assert got == want, "counted %s, want %s" % (got, want)
assert circles > 10, "%d roofline points" % circles
rows = re.findall(r"<tr><td>([^<]*)</td>", run.stdout)
assert rows == ["kernels per step", "bytes read per step", "bytes written per step", "arena bytes", "ms/step",
                "examples/s"], rows
print("report: %d fused bars, %d unfused segments, %d points" % (fused, unfused, circles))
