#!/usr/bin/env python3
"""The PyTorch side of netc's benchmarks: every model of models/*.net as an idiomatic PyTorch
nn.Module with the loss and optimizer of its train section, timed as `netc bench` times a
training step.

Timing is `netc bench`'s (runtime/train.c, rt_bench): --warmup steps, then --repeats timings of
--steps steps each, the device synchronized at the end of each repeat, and the median of the
repeats in ms per step. Like `netc bench`, the steps run on one fixed random batch that stays on
the device (images uniform in [-1, 1), random labels, made once before the warm-up), so no data
loading and no host-to-device copy is timed.

    python3 scripts/bench_pytorch.py --model mnist --threads 2            # one model, CPU
    python3 scripts/bench_pytorch.py --device cuda --precision tf32 --csv # every model
    python3 scripts/bench_pytorch.py --check-params --netc build/netc     # counts against netc

--precision: fp32 turns TF32 off for cuDNN convolutions and cuBLAS matmuls
(torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 False); tf32 turns it
on for both (PyTorch's default is on for convolutions only); amp-fp16 and amp-bf16 run the forward pass under
torch.autocast (amp-fp16 with a GradScaler). --batch defaults to the batch of the model's train
section. Runs on PyTorch 1.13 (Debian's python3-torch) and 2.x; --compile needs 2.x.

Under torchrun (WORLD_SIZE set) every process is one rank of DistributedDataParallel on NCCL, on
the GPU of its LOCAL_RANK, with --batch examples per rank (as `netc bench --gpus N`); rank 0 prints,
and examples/s counts every rank's:

    torchrun --nproc_per_node 2 scripts/bench_pytorch.py --device cuda --model alexnet
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "models")
PRECISIONS = ("fp32", "tf32", "amp-fp16", "amp-bf16")

try:
	import torch
	import torch.nn as nn
	import torch.nn.functional as F
except ImportError:
	sys.exit("error: PyTorch is not installed for %s (import torch fails); on Debian: "
	         "apt-get install python3-torch" % sys.executable)


def tf_lrn(depth_radius, bias, alpha, beta):
	"""tf.nn.local_response_normalization (netc's `lrn`): x / (bias + alpha * sum of x^2 over
	channels c-r..c+r)^beta. PyTorch's LocalResponseNorm divides alpha by its window size, so
	alpha * size gives TensorFlow's LRN exactly (up to rounding)."""
	size = 2 * depth_radius + 1
	return nn.LocalResponseNorm(size, alpha=alpha * size, beta=beta, k=bias)


class MnistNet(nn.Module):
	"""models/mnist.net: the PyTorch examples MNIST network (examples/mnist/main.py)."""

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


class CifarSimple(nn.Module):
	"""models/cifar_simple.net: conv 3->16 3x3 pad 1, relu, max-pool 2, dense 4096->10."""

	def __init__(self):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
		self.fc = nn.Linear(16 * 16 * 16, 10)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.conv1(x)), 2)
		return self.fc(torch.flatten(x, 1))


class Cifar10TF(nn.Module):
	"""models/cifar10_tf.net: TensorFlow's CIFAR-10 tutorial inference() on 24x24 crops. SAME
	padding rendered symmetric as in the .net file (5x5 convs pad 2, 3/2 pools pad 1)."""

	def __init__(self):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 64, 5, padding=2)
		self.norm1 = tf_lrn(4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
		self.conv2 = nn.Conv2d(64, 64, 5, padding=2)
		self.norm2 = tf_lrn(4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
		self.local3 = nn.Linear(64 * 6 * 6, 384)
		self.local4 = nn.Linear(384, 192)
		self.softmax_linear = nn.Linear(192, 10)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.conv1(x)), 3, stride=2, padding=1)
		x = self.norm1(x)
		x = self.norm2(F.relu(self.conv2(x)))
		x = F.max_pool2d(x, 3, stride=2, padding=1)
		x = torch.flatten(x, 1)
		x = F.relu(self.local3(x))
		x = F.relu(self.local4(x))
		return self.softmax_linear(x)


class AlexNetBench(nn.Module):
	"""models/alexnet_bench.net: TensorFlow's alexnet_benchmark.py with its two LRNs (radius 2,
	bias 2, alpha 1e-4, beta 0.75); conv1's SAME padding rendered as a symmetric 4. The forward
	pass returns pool5; the loss is tf.nn.l2_loss(pool5) (l2_loss below)."""

	def __init__(self):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 64, 11, stride=4, padding=4)
		self.lrn1 = tf_lrn(2, bias=2.0, alpha=1e-4, beta=0.75)
		self.conv2 = nn.Conv2d(64, 192, 5, padding=2)
		self.lrn2 = tf_lrn(2, bias=2.0, alpha=1e-4, beta=0.75)
		self.conv3 = nn.Conv2d(192, 384, 3, padding=1)
		self.conv4 = nn.Conv2d(384, 256, 3, padding=1)
		self.conv5 = nn.Conv2d(256, 256, 3, padding=1)

	def forward(self, x):
		x = F.max_pool2d(self.lrn1(F.relu(self.conv1(x))), 3, stride=2)
		x = F.max_pool2d(self.lrn2(F.relu(self.conv2(x))), 3, stride=2)
		x = F.relu(self.conv3(x))
		x = F.relu(self.conv4(x))
		x = F.relu(self.conv5(x))
		return F.max_pool2d(x, 3, stride=2)


class AlexNet(nn.Module):
	"""models/alexnet.net: torchvision's alexnet. Its AdaptiveAvgPool2d((6, 6)) is the identity at
	224x224 and is left out, as in the .net file."""

	def __init__(self, num_classes=1000):
		super().__init__()
		self.features = nn.Sequential(
			nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
			nn.MaxPool2d(kernel_size=3, stride=2),
			nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
			nn.MaxPool2d(kernel_size=3, stride=2),
			nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
			nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
			nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
			nn.MaxPool2d(kernel_size=3, stride=2),
		)
		self.classifier = nn.Sequential(
			nn.Dropout(p=0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
			nn.Dropout(p=0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
			nn.Linear(4096, num_classes),
		)

	def forward(self, x):
		return self.classifier(torch.flatten(self.features(x), 1))


class NatureCNN(nn.Module):
	"""models/nature_cnn.net: the Atari network of Mnih et al. 2015, 6 actions, as a classifier."""

	def __init__(self, actions=6):
		super().__init__()
		self.conv1 = nn.Conv2d(4, 32, 8, stride=4)
		self.conv2 = nn.Conv2d(32, 64, 4, stride=2)
		self.conv3 = nn.Conv2d(64, 64, 3, stride=1)
		self.fc = nn.Linear(64 * 7 * 7, 512)
		self.actions = nn.Linear(512, actions)

	def forward(self, x):
		x = F.relu(self.conv1(x))
		x = F.relu(self.conv2(x))
		x = F.relu(self.conv3(x))
		x = F.relu(self.fc(torch.flatten(x, 1)))
		return self.actions(x)


class VGG16(nn.Module):
	"""models/vgg16.net: torchvision's vgg16 (configuration D). Its AdaptiveAvgPool2d((7, 7)) is
	the identity at 224x224 and is left out, as in the .net file."""

	CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]

	def __init__(self, num_classes=1000):
		super().__init__()
		layers, channels = [], 3
		for v in self.CFG:
			if v == "M":
				layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
			else:
				layers += [nn.Conv2d(channels, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
				channels = v
		self.features = nn.Sequential(*layers)
		self.classifier = nn.Sequential(
			nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(p=0.5),
			nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(p=0.5),
			nn.Linear(4096, num_classes),
		)

	def forward(self, x):
		return self.classifier(torch.flatten(self.features(x), 1))


class Inception(nn.Module):
	"""One inception block of bvlc_googlenet: 1x1; 1x1 -> 3x3; 1x1 -> 5x5; 3x3/1 max pool -> 1x1;
	every convolution followed by a ReLU, the four branches concatenated on channels."""

	def __init__(self, cin, c1, c3r, c3, c5r, c5, pool_proj):
		super().__init__()
		self.b1 = nn.Sequential(nn.Conv2d(cin, c1, 1), nn.ReLU(inplace=True))
		self.b3 = nn.Sequential(nn.Conv2d(cin, c3r, 1), nn.ReLU(inplace=True),
		                        nn.Conv2d(c3r, c3, 3, padding=1), nn.ReLU(inplace=True))
		self.b5 = nn.Sequential(nn.Conv2d(cin, c5r, 1), nn.ReLU(inplace=True),
		                        nn.Conv2d(c5r, c5, 5, padding=2), nn.ReLU(inplace=True))
		self.bp = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1),
		                        nn.Conv2d(cin, pool_proj, 1), nn.ReLU(inplace=True))

	def forward(self, x):
		return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


class GoogLeNet(nn.Module):
	"""models/googlenet.net: Caffe's bvlc_googlenet without the auxiliary classifiers. Caffe's LRN
	is PyTorch's LocalResponseNorm (alpha per window element, k 1); Caffe's pools round up
	(ceil_mode=True: 112 -> 56 -> 28 -> 14 -> 7)."""

	def __init__(self, num_classes=1000):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3)
		self.norm1 = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)
		self.conv2_reduce = nn.Conv2d(64, 64, 1)
		self.conv2 = nn.Conv2d(64, 192, 3, padding=1)
		self.norm2 = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)
		self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
		self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
		self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
		self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
		self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
		self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
		self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
		self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
		self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
		self.dropout = nn.Dropout(0.4)
		self.classifier = nn.Linear(1024, num_classes)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.conv1(x)), 3, stride=2, ceil_mode=True)
		x = self.norm1(x)
		x = F.relu(self.conv2(F.relu(self.conv2_reduce(x))))
		x = F.max_pool2d(self.norm2(x), 3, stride=2, ceil_mode=True)
		x = self.inception3b(self.inception3a(x))
		x = F.max_pool2d(x, 3, stride=2, ceil_mode=True)
		x = self.inception4a(x)
		x = self.inception4b(x)
		x = self.inception4c(x)
		x = self.inception4d(x)
		x = self.inception4e(x)
		x = F.max_pool2d(x, 3, stride=2, ceil_mode=True)
		x = self.inception5b(self.inception5a(x))
		x = F.avg_pool2d(x, 7, stride=1)
		x = torch.flatten(self.dropout(x), 1)
		return self.classifier(x)


class BasicBlock(nn.Module):
	"""torchvision's ResNet BasicBlock: two 3x3 convolutions with batch norm; a 1x1 strided projection
	when the plane or the width changes. shortcut="zeros" is the CIFAR ResNets' option A instead:
	the identity subsampled and padded with zero channels (after the input's, as resnet20.net)."""

	def __init__(self, cin, cout, stride, shortcut="project"):
		super().__init__()
		self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
		self.bn1 = nn.BatchNorm2d(cout)
		self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
		self.bn2 = nn.BatchNorm2d(cout)
		self.change = stride != 1 or cin != cout
		self.zeros = shortcut == "zeros"
		if self.change and not self.zeros:
			self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

	def forward(self, x):
		y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
		if not self.change:
			s = x
		elif self.zeros:
			s = x[:, :, ::2, ::2]
			s = torch.cat([s, torch.zeros_like(s)], 1)
		else:
			s = self.downsample(x)
		return F.relu(y + s)


class ResNet18(nn.Module):
	"""models/resnet18.net: torchvision's resnet18 (11,689,512 parameters)."""

	def __init__(self, num_classes=1000):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
		self.bn1 = nn.BatchNorm2d(64)
		blocks, cin = [], 64
		for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
			blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
			cin = cout
		self.blocks = nn.Sequential(*blocks)
		self.fc = nn.Linear(512, num_classes)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
		x = F.adaptive_avg_pool2d(self.blocks(x), 1)
		return self.fc(torch.flatten(x, 1))


class Bottleneck(nn.Module):
	"""torchvision's ResNet Bottleneck (v1.5: the stride on the 3x3): 1x1 reduce, 3x3, 1x1 expand
	to 4 times the width, a 1x1 strided projection where the plane or the width changes."""

	def __init__(self, cin, width, stride):
		super().__init__()
		cout = 4 * width
		self.body = nn.Sequential(
			nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
			nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
			nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
		self.downsample = None
		if stride != 1 or cin != cout:
			self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

	def forward(self, x):
		return F.relu(self.body(x) + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
	"""models/resnet50.net: torchvision's resnet50 (25,557,032 parameters)."""

	def __init__(self, num_classes=1000):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
		self.bn1 = nn.BatchNorm2d(64)
		blocks, cin = [], 64
		for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
			for b in range(n):
				blocks.append(Bottleneck(cin, width, stride if b == 0 else 1))
				cin = 4 * width
		self.blocks = nn.Sequential(*blocks)
		self.fc = nn.Linear(2048, num_classes)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
		return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(x), 1), 1))


class ResNet20(nn.Module):
	"""models/resnet20.net: the CIFAR ResNet-20 of He et al. 2016 with option A shortcuts."""

	def __init__(self, num_classes=10):
		super().__init__()
		self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
		self.bn1 = nn.BatchNorm2d(16)
		blocks, cin = [], 16
		for cout in (16, 32, 64):
			for b in range(3):
				blocks.append(BasicBlock(cin, cout, 2 if b == 0 and cout != 16 else 1, shortcut="zeros"))
				cin = cout
		self.blocks = nn.Sequential(*blocks)
		self.fc = nn.Linear(64, num_classes)

	def forward(self, x):
		x = self.blocks(F.relu(self.bn1(self.conv1(x))))
		return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
	"""torchvision's MobileNetV2 block: 1x1 expansion, 3x3 depthwise, 1x1 linear projection."""

	def __init__(self, cin, cout, stride, t):
		super().__init__()
		hidden = cin * t
		layers = []
		if t != 1:
			layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
		layers += [nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False),
		           nn.BatchNorm2d(hidden), nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
		self.conv = nn.Sequential(*layers)
		self.residual = stride == 1 and cin == cout

	def forward(self, x):
		return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
	"""models/mobilenet_v2.net: torchvision's mobilenet_v2 (3,504,872 parameters)."""

	def __init__(self, num_classes=1000):
		super().__init__()
		layers, cin = [nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
		for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
		                   (6, 160, 3, 2), (6, 320, 1, 1)):
			for i in range(n):
				layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
				cin = c
		layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
		self.features = nn.Sequential(*layers)
		self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

	def forward(self, x):
		return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class ViTBlock(nn.Module):
	"""A pre-norm transformer encoder block: multi-head self-attention, then an MLP with gelu."""

	def __init__(self, dim, heads, mlp):
		super().__init__()
		self.heads = heads
		self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
		self.q, self.k, self.v, self.proj = (nn.Linear(dim, dim) for _ in range(4))
		self.fc1, self.fc2 = nn.Linear(dim, mlp), nn.Linear(mlp, dim)

	def forward(self, x):
		b, t, d = x.shape
		h = self.ln1(x)
		q, k, v = (f(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for f in (self.q, self.k, self.v))
		a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
		x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
		return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
	"""models/vit.net: 4x4 patches of a 32x32 image, 64 features, 4 pre-norm blocks of 4 heads and
	an MLP of 128, mean pooling over the 64 tokens."""

	def __init__(self, num_classes=10, dim=64, depth=4, heads=4, mlp=128):
		super().__init__()
		self.patches = nn.Conv2d(3, dim, 4, stride=4)
		self.pos = nn.Parameter(torch.randn(1, 64, dim) * 0.02)
		self.blocks = nn.Sequential(*(ViTBlock(dim, heads, mlp) for _ in range(depth)))
		self.norm = nn.LayerNorm(dim)
		self.head = nn.Linear(dim, num_classes)

	def forward(self, x):
		x = self.patches(x).flatten(2).transpose(1, 2) + self.pos
		return self.head(self.norm(self.blocks(x)).mean(1))


class UNet(nn.Module):
	"""models/unet.net: two encoder stages, a bottleneck, a transposed convolution and a bilinear
	upsampling with skips, a 1x1 output. It returns the output minus the input, so that the
	harness's loss(out, label) is the mean squared error against the image (mse_to_input)."""

	def __init__(self):
		super().__init__()

		def stage(cin, cout):
			return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())
		self.enc1, self.enc2, self.mid = stage(1, 16), stage(16, 32), stage(32, 64)
		self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
		self.dec2, self.dec1 = stage(64, 32), stage(48, 16)
		self.out = nn.Conv2d(16, 1, 1)

	def forward(self, x):
		e1 = self.enc1(x)
		e2 = self.enc2(F.max_pool2d(e1, 2))
		m = self.mid(F.max_pool2d(e2, 2))
		d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
		up = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
		return self.out(self.dec1(torch.cat([up, e1], 1))) - x


def mse_to_input(diff, label):
	"""The mean squared error of an output already minus its target (UNet); the label is unread."""
	return diff.pow(2).mean()


def l2_loss(out, label):
	"""tf.nn.l2_loss: half the sum of squares; the label is not read."""
	return 0.5 * out.pow(2).sum()


def sgd(**kw):
	return lambda params: torch.optim.SGD(params, **kw)


# name: (module, input [C, H, W], classes, loss, optimizer of the train section)
MODELS = {
	"mnist": (MnistNet, (1, 28, 28), 10, F.nll_loss,
	          lambda params: torch.optim.Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0)),
	"cifar_simple": (CifarSimple, (3, 32, 32), 10, F.cross_entropy, sgd(lr=0.001)),
	"cifar10_tf": (Cifar10TF, (3, 24, 24), 10, F.cross_entropy, sgd(lr=0.1)),
	"alexnet_bench": (AlexNetBench, (3, 224, 224), 10, l2_loss, sgd(lr=0.0001)),
	"alexnet": (AlexNet, (3, 224, 224), 1000, F.cross_entropy,
	            sgd(lr=0.01, momentum=0.9, weight_decay=1e-4)),
	"nature_cnn": (NatureCNN, (4, 84, 84), 6, F.cross_entropy, sgd(lr=0.00025, momentum=0.95)),
	"vgg16": (VGG16, (3, 224, 224), 1000, F.cross_entropy,
	          sgd(lr=0.01, momentum=0.9, weight_decay=1e-4)),
	"googlenet": (GoogLeNet, (3, 224, 224), 1000, F.cross_entropy,
	              sgd(lr=0.01, momentum=0.9, weight_decay=2e-4)),
	"resnet18": (ResNet18, (3, 224, 224), 1000, F.cross_entropy, sgd(lr=0.1, momentum=0.9, weight_decay=1e-4)),
	"resnet50": (ResNet50, (3, 224, 224), 1000, F.cross_entropy, sgd(lr=0.1, momentum=0.9, weight_decay=1e-4)),
	"mobilenet_v2": (MobileNetV2, (3, 224, 224), 1000, F.cross_entropy,
	                 sgd(lr=0.045, momentum=0.9, weight_decay=4e-5)),
	"resnet20": (ResNet20, (3, 32, 32), 10, F.cross_entropy, sgd(lr=0.1, momentum=0.9, weight_decay=1e-4)),
	"vit": (ViT, (3, 32, 32), 10, F.cross_entropy, lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05)),
	"unet": (UNet, (1, 28, 28), 10, mse_to_input, lambda params: torch.optim.Adam(params, lr=1e-3)),
}


def net_file(name):
	path = os.path.join(MODELS_DIR, name + ".net")
	with open(path) as f:
		return path, f.read()


def train_section(text):
	m = re.search(r"^train\s*\{(.*?)^\}", text, re.S | re.M)
	return re.sub(r"#.*", "", m.group(1)) if m else ""


def net_batch(name):
	m = re.search(r"^\s*batch\s*=\s*(\d+)", train_section(net_file(name)[1]), re.M)
	return int(m.group(1)) if m else 64


def net_optimizer(name):
	"""The optimizer of the model's train section: its name and its arguments as numbers."""
	m = re.search(r"optimizer\s*=\s*(\w+)\s*\(([^)]*)\)", train_section(net_file(name)[1]))
	if not m:
		return "sgd", {}
	args = {}
	for arg in filter(None, (a.strip() for a in m.group(2).split(","))):
		key, value = (s.strip() for s in arg.split("=", 1))
		args[key] = {"true": True, "false": False}.get(value, None)
		if args[key] is None:
			args[key] = float(value)
	return m.group(1), args


def netc_params(netc, name):
	path = net_file(name)[0]
	r = subprocess.run([netc, "info", path, "--batch", "2"], stdout=subprocess.PIPE,
	                   stderr=subprocess.PIPE, universal_newlines=True)
	m = re.search(r"^parameters: (\d+)$", r.stdout, re.M)
	if r.returncode != 0 or not m:
		sys.exit("error: `%s info %s` failed: %s" % (netc, path, r.stderr.strip() or r.stdout.strip()))
	return int(m.group(1))


def check_params(names, netc):
	"""Prints each model's parameter count beside netc's, and whether the optimizer's settings are
	the train section's; returns False on any difference."""
	ok = True
	print("%-14s %12s %12s  %s" % ("model", "pytorch", "netc" if netc else "netc (no --netc)", "optimizer"))
	for name in names:
		module, _, _, _, make_opt = MODELS[name]
		model = module()
		count = sum(p.numel() for p in model.parameters())
		theirs = netc_params(netc, name) if netc else None
		opt_name, args = net_optimizer(name)
		opt = make_opt(model.parameters())
		diff = [k for k, v in args.items() if opt.defaults.get(k) != v]
		if type(opt).__name__.lower() != opt_name:
			diff.append("%s is not %s" % (type(opt).__name__, opt_name))
		same = theirs is None or theirs == count
		ok = ok and same and not diff
		print("%-14s %12d %12s  %s%s" % (name, count, "-" if theirs is None else theirs,
		                                 "%s(%s)" % (opt_name, ", ".join("%s=%g" % kv for kv in args.items())),
		                                 "" if same and not diff else "  MISMATCH " + " ".join(diff)))
	return ok


def grad_scaler(enabled):
	if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):  # PyTorch 2.3 and later
		return torch.amp.GradScaler("cuda", enabled=enabled)
	return torch.cuda.amp.GradScaler(enabled=enabled)


def set_tf32(on):
	"""TF32 on or off for cuDNN convolutions and cuBLAS matmuls. PyTorch 2.9 renamed the flags
	(allow_tf32 = True is fp32_precision = "tf32") and warns on the old names; set the new ones
	where they exist."""
	conv = getattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision", None)
	if conv is not None and hasattr(torch.backends.cuda.matmul, "fp32_precision"):
		torch.backends.cudnn.conv.fp32_precision = "tf32" if on else "ieee"
		torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"
	else:
		torch.backends.cudnn.allow_tf32 = on
		torch.backends.cuda.matmul.allow_tf32 = on


def torchrun_ranks():
	"""(rank, local rank, world size) from torchrun's variables; (0, 0, 1) without them."""
	return (int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")),
	        int(os.environ.get("WORLD_SIZE", "1")))


def bench(name, a, dev):
	"""Times one model's training step; returns the milliseconds per step of every repeat."""
	module, chw, classes, loss_fn, make_opt = MODELS[name]
	batch = a.batch or net_batch(name)
	torch.manual_seed(1)
	fmt = torch.channels_last if a.channels_last else torch.contiguous_format
	model = module().to(dev, memory_format=fmt)
	if torchrun_ranks()[2] > 1:
		model = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
	opt = make_opt(model.parameters())
	x = (torch.rand(batch, *chw, device=dev) * 2 - 1).contiguous(memory_format=fmt)
	y = torch.randint(0, classes, (batch,), device=dev)
	forward = torch.compile(model) if a.compile else model
	amp = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(a.precision)
	scaler = grad_scaler(a.precision == "amp-fp16")

	def step():
		opt.zero_grad()
		if amp is None:
			loss_fn(forward(x), y).backward()
			opt.step()
			return
		with torch.autocast(device_type=dev.type, dtype=amp):
			loss = loss_fn(forward(x), y)
		scaler.scale(loss).backward()
		scaler.step(opt)
		scaler.update()

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
	return batch, times


def main():
	p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
	                            formatter_class=argparse.RawDescriptionHelpFormatter)
	p.add_argument("--model", default="all", help="|".join(MODELS) + " or all (default)")
	p.add_argument("--batch", type=int, default=0, help="default: the batch of the model's train section")
	p.add_argument("--steps", type=int, default=20)
	p.add_argument("--repeats", type=int, default=5)
	p.add_argument("--warmup", type=int, default=5)
	p.add_argument("--threads", type=int, default=0, help="CPU threads (default: PyTorch's choice)")
	p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
	p.add_argument("--precision", default="fp32", choices=PRECISIONS)
	p.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2)")
	p.add_argument("--channels-last", action="store_true", help="NHWC model weights and input")
	p.add_argument("--cudnn-benchmark", action="store_true",
	               help="torch.backends.cudnn.benchmark = True: cuDNN times its algorithms per shape "
	               "during the warm-up (PyTorch's default is off)")
	p.add_argument("--csv", action="store_true", help="comma-separated values with a header row")
	p.add_argument("--check-params", action="store_true",
	               help="print parameter counts (beside netc's with --netc) and the optimizer; time nothing")
	p.add_argument("--netc", help="the netc binary that --check-params asks (`netc info`)")
	a = p.parse_args()
	if a.model != "all" and a.model not in MODELS:
		p.error("unknown model '%s': one of %s, or all" % (a.model, ", ".join(MODELS)))
	if min(a.steps, a.repeats) < 1 or a.warmup < 0 or a.batch < 0 or a.threads < 0:
		p.error("--steps and --repeats must be at least 1; --warmup, --batch and --threads not negative")
	names = list(MODELS) if a.model == "all" else [a.model]
	if a.check_params:
		sys.exit(0 if check_params(names, a.netc) else 1)
	if a.device == "cuda" and not torch.cuda.is_available():
		sys.exit("error: --device cuda: PyTorch %s sees no CUDA device" % torch.__version__)
	if a.precision == "amp-fp16" and a.device != "cuda":
		p.error("--precision amp-fp16 needs --device cuda (the GradScaler is CUDA's)")
	if a.compile and not hasattr(torch, "compile"):
		p.error("--compile needs PyTorch 2 (this is %s)" % torch.__version__)
	if a.threads:
		torch.set_num_threads(a.threads)
	set_tf32(a.precision == "tf32")
	torch.backends.cudnn.benchmark = a.cudnn_benchmark
	dev = torch.device(a.device)
	rank, local_rank, world = torchrun_ranks()
	if world > 1:
		if a.device != "cuda":
			p.error("under torchrun (WORLD_SIZE=%d) the ranks are GPUs: add --device cuda" % world)
		dev = torch.device("cuda", local_rank)
		torch.cuda.set_device(dev)
		torch.distributed.init_process_group("nccl")
		if rank != 0:  # rank 0 prints for all
			sys.stdout = open(os.devnull, "w")
	where = torch.cuda.get_device_name() if dev.type == "cuda" else "%d threads" % torch.get_num_threads()
	if world > 1:
		where += ", %d ranks (DistributedDataParallel, NCCL), examples/s counts every rank's" % world
	columns = ("model", "batch", "precision", "compiled", "channels_last", "cudnn_bench", "ms_per_step", "min_ms",
	           "max_ms", "examples_per_s")
	# with --csv the run's description goes to stderr, so stdout is the table alone
	print("torch %s, %s, median of %d repeats of %d steps after %d warm-up steps" %
	      (torch.__version__, where, a.repeats, a.steps, a.warmup), file=sys.stderr if a.csv else sys.stdout)
	print(",".join(columns) if a.csv else "%-14s %6s %9s %8s %13s %11s %11s %11s %11s %12s" % columns)
	for name in names:
		batch, times = bench(name, a, dev)
		ms = statistics.median(times)
		row = (name, batch, a.precision, "yes" if a.compile else "no", "yes" if a.channels_last else "no",
		       "yes" if a.cudnn_benchmark else "no", "%.3f" % ms, "%.3f" % min(times), "%.3f" % max(times), "%.0f" % (world * batch * 1000 / ms))
		print(",".join(str(v) for v in row) if a.csv else "%-14s %6s %9s %8s %13s %11s %11s %11s %11s %12s" % row)
		sys.stdout.flush()
	if world > 1:
		torch.distributed.destroy_process_group()


if __name__ == "__main__":
	main()
