#!/usr/bin/env python3
"""onnx_roundtrip.py: torchvision models through netc's ONNX import and export, checked against
onnxruntime (issue 16). For each model:

  1. torch.onnx.export of the torchvision model (random weights, evaluation mode, opset 17, the
     batch dimension symbolic);
  2. netc import, and netc's forward pass of the imported model on random images against
     onnxruntime's of the exported file;
  3. netc train --init from the imported weights for --steps steps (synthetic ImageNet-shaped
     data, --device, default the CPU);
  4. netc export of the trained model, run in onnxruntime, against netc eval of the same
     checkpoint on the same images.

Needs torch, torchvision, onnx, onnxruntime and a built netc. From the repository root:
  python3 scripts/gpu/onnx_roundtrip.py --netc build/netc [--models alexnet,vgg16,resnet18,googlenet]
      [--steps 20] [--batch 8] [--device cpu|cuda] [--out DIR]
Prints one line per stage and a table; exit 1 when an output differs by more than --tol (1e-4
of the output's largest value) or a stage fails.

PyTorch's exporter folds each batch norm into the convolution before it when it exports a model
in evaluation mode, so the imported ResNet-18 and GoogLeNet train without batch norm; their
convolutions carry the folded scale and shift.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np


def run(cmd):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout, time.time() - t


def torchvision_model(name):
    import torchvision
    if name == "googlenet":
        return torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True)
    return getattr(torchvision.models, name)(weights=None)


def export_torch(name, path):
    import torch
    torch.manual_seed(0)
    m = torchvision_model(name).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(m, x, path, opset_version=17, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})


def ort_run(path, x):
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def losses(log):
    """The training losses of netc train's progress lines ("loss 6.9078")."""
    out = []
    for line in log.splitlines():
        parts = line.replace(",", " ").split()
        for i, p in enumerate(parts[:-1]):
            if p == "loss":
                try:
                    out.append(float(parts[i + 1]))
                except ValueError:
                    pass
    return out


def roundtrip(a, name):
    d = os.path.join(a.out, name)
    os.makedirs(d, exist_ok=True)
    src, net, ckpt = (os.path.join(d, f) for f in ("torch.onnx", "model.net", "model.safetensors"))
    row = {"model": name}
    t = time.time()
    export_torch(name, src)
    row["export_s"] = time.time() - t
    print("%s: torch.onnx.export -> %s" % (name, src), flush=True)
    out, row["import_s"] = run([a.netc, "import", src, "-o", net])
    print("%s: %s" % (name, out.strip()), flush=True)
    x = np.random.default_rng(1).uniform(-2, 2, (a.batch, 3, 224, 224)).astype(np.float32)
    xp = os.path.join(d, "x.npy")
    np.save(xp, x)
    y = os.path.join(d, "netc_before.npy")
    run([a.netc, "eval", src, "--batch", str(a.batch), "--input", xp, "-o", y, "--device", a.device, "--quiet"])
    row["before"] = rel_err(np.load(y), ort_run(src, x))
    print("%s: imported forward vs onnxruntime: %.3g" % (name, row["before"]), flush=True)
    trained = os.path.join(d, "trained.safetensors")
    log, row["train_s"] = run([a.netc, "train", net, "--init", ckpt, "--steps", str(a.steps), "--batch", str(a.batch),
                               "--data", "synthetic", "--device", a.device, "--log-every", "1", "--save", trained])
    ls = losses(log)
    row["loss_first"], row["loss_last"] = (ls[0], ls[-1]) if ls else (float("nan"), float("nan"))
    print("%s: trained %d steps, loss %.4f -> %.4f" % (name, a.steps, row["loss_first"], row["loss_last"]), flush=True)
    exported = os.path.join(d, "netc.onnx")
    run([a.netc, "export", net, "--checkpoint", trained, "-o", exported, "--quiet"])
    import onnx
    onnx.checker.check_model(onnx.load(exported))
    y = os.path.join(d, "netc_after.npy")
    run([a.netc, "eval", net, "--checkpoint", trained, "--batch", str(a.batch), "--input", xp, "-o", y,
         "--device", a.device, "--quiet"])
    row["after"] = rel_err(np.load(y), ort_run(exported, x))
    print("%s: trained model, netc vs onnxruntime on its export: %.3g" % (name, row["after"]), flush=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--netc", default="build/netc")
    p.add_argument("--models", default="alexnet,vgg16,resnet18,googlenet")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--out", default="onnx_roundtrip")
    a = p.parse_args()
    rows, bad = [], 0
    for name in a.models.split(","):
        try:
            rows.append(roundtrip(a, name))
        except Exception as e:  # one model's failure is reported, the others still run
            print("%s: FAILED: %s" % (name, e), flush=True)
            rows.append({"model": name, "error": str(e).splitlines()[0]})
            bad += 1
    print("\n| model | imported vs onnxruntime | trained export vs netc | loss step 1 -> %d | import s | train s |"
          % a.steps)
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print("| %s | failed: %s | | | | |" % (r["model"], r["error"]))
            continue
        ok = r["before"] <= a.tol and r["after"] <= a.tol
        bad += not ok
        print("| %s | %.2g | %.2g | %.4f -> %.4f | %.1f | %.1f |%s" % (r["model"], r["before"], r["after"], r["loss_first"],
              r["loss_last"], r["import_s"], r["train_s"], "" if ok else " MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
