#!/usr/bin/env python3
"""Asserts that a `netc train` log shows learning: the loss of the last progress line is below
--max-loss-ratio (default 0.5) times the first, and the held-out accuracy reaches --min-accuracy.
--no-eval is for runs without a held-out evaluation (`--overfit-batch`, synthetic data): only the
loss is checked, and an evaluation line is an error. --lowest judges the lowest loss after the
first instead of the last: for a batch-norm network overfitting a batch of 2 with momentum, whose
loss falls by orders of magnitude and can jump back at any step as rounding moves it."""
import re
import sys


def option(name, default=None):
    if name not in sys.argv:
        return default
    return float(sys.argv[sys.argv.index(name) + 1])


def main():
    path = sys.argv[1]
    no_eval = "--no-eval" in sys.argv
    min_acc = option("--min-accuracy")
    ratio = option("--max-loss-ratio", 0.5)
    if no_eval == (min_acc is not None):
        sys.exit("give either --min-accuracy A or --no-eval")
    text = open(path).read()
    losses = [float(m) for m in re.findall(r"^step\s.*?\bloss\s+([0-9.]+)", text, re.M)]
    accs = [float(m) for m in re.findall(r"^eval:.*?accuracy\s+([0-9.]+)%", text, re.M)]
    if len(losses) < 2 or (no_eval and accs) or (not no_eval and not accs):
        want = "no eval line" if no_eval else "an eval line"
        sys.exit(f"{path}: expected progress lines and {want}, got:\n{text}")
    judged = min(losses[1:]) if "--lowest" in sys.argv else losses[-1]
    if not judged < ratio * losses[0]:
        sys.exit(f"{path}: the loss did not fall below {ratio} of its first value: {losses}")
    if not no_eval and accs[-1] < min_acc:
        sys.exit(f"{path}: held-out accuracy {accs[-1]}% is below {min_acc}%")
    tail = "" if no_eval else f", held-out accuracy {accs[-1]}%"
    print(f"loss {losses[0]} -> {judged} (ratio {judged / losses[0]:.3f}){tail}")


main()
