#!/usr/bin/env python3
"""make_npy.py DIR: .npy arrays for netc's data = npy, written without NumPy (the format is a
magic, a header dict and the raw little-endian data). DIR/train and DIR/val each hold x.npy
(float32 [n, 6]), y.npy (float64 [n, 2]: a fixed linear map of x plus a little noise) and
label.npy (int64 [n]: which of y's two values is larger); and for a network of three inputs, a.npy
(float32 [n, 4]), b.npy (float64 [n, 3]) and t.npy (float64 [n, 2]: a fixed linear map of a and b
plus a little noise). --bad writes a few broken files
beside them for the error messages."""
import os
import random
import struct
import sys


def write(path, descr, shape, values):
    fmt = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i"}[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def main():
    root = sys.argv[1]
    rng = random.Random(3)
    w = [[rng.uniform(-1, 1) for _ in range(2)] for _ in range(6)]
    for split, n in (("train", 256), ("val", 64)):
        os.makedirs(os.path.join(root, split), exist_ok=True)
        x = [[rng.uniform(-1, 1) for _ in range(6)] for _ in range(n)]
        y = [[sum(x[i][k] * w[k][j] for k in range(6)) + rng.gauss(0, 0.01) for j in range(2)] for i in range(n)]
        write(os.path.join(root, split, "x.npy"), "<f4", (n, 6), [v for row in x for v in row])
        write(os.path.join(root, split, "y.npy"), "<f8", (n, 2), [v for row in y for v in row])
        write(os.path.join(root, split, "label.npy"), "<i8", (n,), [int(row[1] > row[0]) for row in y])
    mixed = random.Random(5)
    v = [[mixed.uniform(-1, 1) for _ in range(2)] for _ in range(7)]
    for split, n in (("train", 256), ("val", 64)):
        ab = [[mixed.uniform(-1, 1) for _ in range(7)] for _ in range(n)]
        t = [[sum(row[k] * v[k][j] for k in range(7)) + mixed.gauss(0, 0.01) for j in range(2)] for row in ab]
        write(os.path.join(root, split, "a.npy"), "<f4", (n, 4), [x for row in ab for x in row[:4]])
        write(os.path.join(root, split, "b.npy"), "<f8", (n, 3), [x for row in ab for x in row[4:]])
        write(os.path.join(root, split, "t.npy"), "<f8", (n, 2), [x for row in t for x in row])
    if "--bad" in sys.argv:
        bad = os.path.join(root, "bad")
        os.makedirs(bad, exist_ok=True)
        write(os.path.join(bad, "x.npy"), "<f4", (4, 5), [0.5] * 20)
        write(os.path.join(bad, "y.npy"), "<f8", (4, 2), [0.5] * 8)
        write(os.path.join(bad, "label.npy"), "<i4", (4,), [0, 1, 7, 0])
        with open(os.path.join(bad, "short.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00")


main()
