#!/usr/bin/env python3
"""damage_entries.py DIR: flips the last byte of every kernel-cache entry under DIR (DIR/xx/...),
as a disk error would; fails if there is none."""
import glob
import sys

entries = glob.glob(sys.argv[1] + "/*/*")
if not entries:
    sys.exit("damage_entries: no entries under " + sys.argv[1])
for path in entries:
    with open(path, "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)[0]
        f.seek(-1, 2)
        f.write(bytes([last ^ 0xFF]))
