"""tiny_mnist.py DIR [TRAIN [TEST]]: writes a small MNIST set in the IDX format (random pixels and
labels from a fixed seed; TRAIN and TEST examples, default 80 and 16), so that a test's epochs are
a few steps long. Also a module: write(dir, train, test) and MODEL, a small .net model on it."""
import os
import random
import struct
import sys

# a small model: dense layers and dropout (the dropout key must continue on resume), Adam
MODEL = """network small {{
	input image: f32[batch, 1, 28, 28]
	input label: i32[batch]
	flatten
	fc1 = dense(16)
	relu
	dropout(0.25)
	fc2 = dense(10)
	scores = log_softmax(dim=1)
	loss nll_loss(scores, label)
}}
train {{
	optimizer = adam(lr=0.01)
	batch = 16
	data = mnist{extra}
}}
"""


def write(folder, train=80, test=16, seed=7):
    r = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        pixels = bytes(r.randrange(256) for _ in range(n * 28 * 28))
        labels = bytes(r.randrange(10) for _ in range(n))
        with open(os.path.join(folder, prefix + "-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28) + pixels)
        with open(os.path.join(folder, prefix + "-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + labels)


def model(path, extra=""):
    """Writes MODEL to path with extra lines in its train section ("\\n\\tsteps = 3")."""
    with open(path, "w") as f:
        f.write(MODEL.format(extra=extra))
    return path


if __name__ == "__main__":
    write(sys.argv[1], *(int(a) for a in sys.argv[2:]))
