#!/usr/bin/env python3
"""The PyTorch side of the MNIST CNN benchmark: the same training step as `netc bench
models/mnist.net` (the PyTorch examples network, Adadelta, NLL loss), timed the same way: warm-up
steps, then the median over repeats of N steps. Run with Debian's python3-torch (CPU)."""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    model = Net().to(dev)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    x = torch.randn(a.batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    forward = torch.compile(model) if a.compile else model

    def step():
        opt.zero_grad()
        loss = F.nll_loss(forward(x), y)
        loss.backward()
        opt.step()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    sync()
    times = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        for _ in range(a.steps):
            step()
        sync()
        times.append((time.perf_counter() - t) * 1000 / a.steps)
    ms = statistics.median(times)
    where = torch.cuda.get_device_name() if dev.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, batch {a.batch}{', torch.compile' if a.compile else ''}")
    print(f"ms/step: {ms:.3f} (median of {a.repeats} repeats of {a.steps} steps; min {min(times):.3f}, max {max(times):.3f})")
    print(f"examples/s: {a.batch * 1000 / ms:.0f}")


if __name__ == "__main__":
    main()
