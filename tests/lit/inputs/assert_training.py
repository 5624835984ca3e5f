#!/usr/bin/env python3
"""Asserts that a `netc train` log shows learning: the loss of the last progress line is below
--max-loss-ratio (default 0.5) times the first, and the held-out accuracy reaches --min-accuracy."""
import re
import sys


def main():
    path = sys.argv[1]
    min_acc = float(sys.argv[sys.argv.index("--min-accuracy") + 1])
    ratio = float(sys.argv[sys.argv.index("--max-loss-ratio") + 1]) if "--max-loss-ratio" in sys.argv else 0.5
    text = open(path).read()
    losses = [float(m) for m in re.findall(r"^step\s.*?\bloss\s+([0-9.]+)", text, re.M)]
    accs = [float(m) for m in re.findall(r"^eval:.*?accuracy\s+([0-9.]+)%", text, re.M)]
    if len(losses) < 2 or not accs:
        sys.exit(f"{path}: expected progress lines and an eval line, got:\n{text}")
    if not losses[-1] < ratio * losses[0]:
        sys.exit(f"{path}: the loss did not fall below {ratio} of its first value: {losses}")
    if accs[-1] < min_acc:
        sys.exit(f"{path}: held-out accuracy {accs[-1]}% is below {min_acc}%")
    print(f"loss {losses[0]} -> {losses[-1]}, held-out accuracy {accs[-1]}%")


main()
