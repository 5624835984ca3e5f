#!/usr/bin/env python3
"""Asserts that a `netc train` log shows learning: the loss of the last progress line is well below
the first, and the held-out accuracy reaches --min-accuracy."""
import re
import sys


def main():
    path = sys.argv[1]
    min_acc = float(sys.argv[sys.argv.index("--min-accuracy") + 1])
    text = open(path).read()
    losses = [float(m) for m in re.findall(r"^step\s.*?\bloss\s+([0-9.]+)", text, re.M)]
    accs = [float(m) for m in re.findall(r"^eval:.*?accuracy\s+([0-9.]+)%", text, re.M)]
    if len(losses) < 2 or not accs:
        sys.exit(f"{path}: expected progress lines and an eval line, got:\n{text}")
    if not losses[-1] < 0.5 * losses[0]:
        sys.exit(f"{path}: the loss did not fall by half: {losses}")
    if accs[-1] < min_acc:
        sys.exit(f"{path}: held-out accuracy {accs[-1]}% is below {min_acc}%")
    print(f"loss {losses[0]} -> {losses[-1]}, held-out accuracy {accs[-1]}%")


main()
