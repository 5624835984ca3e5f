"""onnx_compare.py NAME MODEL.onnx X.npy NETC_Y.npy [--random SHAPE]: runs MODEL.onnx on the images
X.npy in onnxruntime (its CPU provider: plain float32, no TF32) and prints how far netc's output
NETC_Y.npy is from it: the largest absolute difference, that over the largest |y| (rel), and how
many images have the same argmax. Where onnxruntime is not installed, the float64 NumPy reference
of tests/lit/inputs/onnx_cases.py stands in (small models only: it is slow). Exit 1 when rel is
above TOL (environment, default 1e-4) or an output is not finite.

--random SHAPE writes X.npy first (N(0, 1) images, seed 0, SHAPE comma-separated) and exits.
"""
import os
import sys

import numpy as np


def reference(model, x):
    try:
        import onnxruntime as ort
        s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        return s.run(None, {s.get_inputs()[0].name: x})[0], "onnxruntime " + ort.__version__
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lit", "inputs"))
        import onnx
        import onnx_cases
        return onnx_cases.run_reference(onnx.load(model), x), "numpy float64 reference"


def main():
    if len(sys.argv) >= 4 and sys.argv[2] == "--random":
        shape = tuple(int(d) for d in sys.argv[3].split(","))
        np.save(sys.argv[1], np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        return 0
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    name, model, xs, ys = sys.argv[1:]
    x, got = np.load(xs), np.load(ys)
    want, by = reference(model, x)
    tol = float(os.environ.get("TOL", "1e-4"))
    if got.shape != want.shape:
        print("%-22s FAIL  netc's output is %s, %s's %s" % (name, got.shape, by, want.shape))
        return 1
    finite = np.isfinite(got).all() and np.isfinite(want).all()
    diff = np.abs(got.astype(np.float64) - want)
    scale = max(float(np.abs(want).max()), 1e-30)
    rel = float(diff.max()) / scale
    same = int((got.argmax(axis=1) == want.argmax(axis=1)).sum())
    ok = finite and rel <= tol
    print("%-22s %s  max abs %.3g  rel %.3g (largest |y| %.3g)  argmax %d/%d  against %s"
          % (name, "ok  " if ok else "FAIL", float(diff.max()), rel, scale, same, len(x), by))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
