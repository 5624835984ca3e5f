"""onnx_bn_stats.py MODEL.onnx CHECKPOINT: every BatchNormalization of the exported MODEL is in
inference form (no training_mode, one output) and reads as its mean and variance initializers
equal to the checkpoint's LAYER.running_mean and LAYER.running_var, which training moved from
their starting 0 and 1. One line per batch norm; exit 1 otherwise."""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def load_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {k: np.frombuffer(body[e["data_offsets"][0]:e["data_offsets"][1]], np.float32).reshape(e["shape"])
            for k, e in head.items() if k != "__metadata__"}


def main():
    m, ck = onnx.load(sys.argv[1]), load_safetensors(sys.argv[2])
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    bad = not bns
    for n in bns:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        layer = n.input[3][:-len(".running_mean")]
        ok = (attrs.get("training_mode", 0) == 0 and len(n.output) == 1 and n.input[3] == layer + ".running_mean"
              and n.input[4] == layer + ".running_var")
        for stat, start in (("running_mean", 0.0), ("running_var", 1.0)):
            name = layer + "." + stat
            ok = ok and name in inits and (inits[name] == ck[name]).all() and np.abs(ck[name] - start).min() > 0
        print("%s %s momentum %.6g epsilon %.6g" % ("ok" if ok else "FAIL", layer, attrs["momentum"], attrs["epsilon"]))
        bad |= not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
