"""onnx_torch.py DIR: a small ResNet-like PyTorch model (batch norm, residual adds, adaptive average
pooling, dropout) exported by torch.onnx.export as PyTorch writes models, with random images and
PyTorch's own outputs for them: DIR/tnet.onnx, DIR/tx.npy, DIR/tref.npy."""
import os
import sys
import torch, torch.nn as nn, numpy as np
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False); s.bn1 = nn.BatchNorm2d(8)
        s.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False); s.bn2 = nn.BatchNorm2d(8)
    def forward(s, x):
        y = torch.relu(s.bn1(s.conv1(x)))
        return torch.relu(s.bn2(s.conv2(y)) + x)
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Conv2d(3, 8, 7, stride=2, padding=3); s.pool = nn.MaxPool2d(3, 2, 1)
        s.layer1 = nn.Sequential(Block(), Block()); s.avg = nn.AdaptiveAvgPool2d((1,1)); s.fc = nn.Linear(8, 10)
        s.drop = nn.Dropout(0.5)
    def forward(s, x):
        x = s.layer1(s.pool(torch.relu(s.stem(x))))
        return s.fc(s.drop(torch.flatten(s.avg(x), 1)))
torch.manual_seed(0)
m = Net().eval()
for mod in m.modules():
    if isinstance(mod, nn.BatchNorm2d):
        mod.running_mean.uniform_(-0.5, 0.5); mod.running_var.uniform_(0.5, 2)
x = torch.randn(1, 3, 32, 32)
torch.onnx.export(m, x, os.path.join(sys.argv[1], "tnet.onnx"), opset_version=17, input_names=["image"], output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
xs = np.random.default_rng(1).uniform(-2, 2, (4, 3, 32, 32)).astype(np.float32)
np.save(os.path.join(sys.argv[1], "tx.npy"), xs)
np.save(os.path.join(sys.argv[1], "tref.npy"), m(torch.from_numpy(xs)).detach().numpy())
