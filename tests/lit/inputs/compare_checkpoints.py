"""compare_checkpoints.py A B TOL: every tensor of safetensors file A is in B with the same shape,
and its F32 values agree within TOL (max |a - b| / (1 + max |a|)). Prints the worst tensor."""
import json
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in head.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["shape"], struct.unpack("<%df" % ((end - b) // 4), body[b:end]))
    return out


a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
worst, where = 0.0, ""
for name, (shape, va) in a.items():
    if name not in b or b[name][0] != shape:
        sys.exit("tensor %s: missing or shaped differently in %s" % (name, sys.argv[2]))
    vb = b[name][1]
    scale = 1 + max(abs(v) for v in va)
    err = max(abs(x - y) for x, y in zip(va, vb)) / scale
    if err > worst:
        worst, where = err, name
print("tensors %d, worst %s %.3g" % (len(a), where, worst))
sys.exit(0 if worst <= tol else 1)
