"""onnx_cases.py: ONNX models built with onnx's helper API, and a float64 NumPy reference of the
operators netc imports, to check `netc import` against.

  onnx_cases.py --netc NETC --dir DIR GROUP...   for each case of the groups: the model (random
      weights, a fixed seed), `netc eval MODEL.onnx --input` on random images, and the output
      compared with the reference; one line per case, exit 1 on a mismatch
  onnx_cases.py --bad DIR                        writes malformed and unsupported models for the
      error tests
  onnx_cases.py --model NAME --dir DIR           writes one case's model (and x.npy, y_ref.npy)
  onnx_cases.py --reference MODEL X.npy Y.npy    checks MODEL with onnx's checker and writes the
      reference output for the images in X.npy (and with --random SHAPE, writes X.npy first)
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH = 3

# ---- the reference: ONNX's semantics in float64 ----


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def out_size(size, k, s, pb, pe, d, ceil):
    span = size + pb + pe - d * (k - 1) - 1
    out = span // s + 1
    if ceil and span % s:
        out += 1
        if (out - 1) * s >= size + pb:
            out -= 1
    return out


def conv(x, w, b, node):
    k = w.shape[2:]
    s = attr(node, "strides", [1, 1])
    d = attr(node, "dilations", [1, 1])
    p = list(attr(node, "pads", [0, 0, 0, 0]))
    if attr(node, "auto_pad", b"NOTSET") in (b"SAME_UPPER", b"SAME_LOWER"):
        for a in range(2):
            size = x.shape[2 + a]
            total = max((-(-size // s[a]) - 1) * s[a] + (k[a] - 1) * d[a] + 1 - size, 0)
            p[a], p[a + 2] = total // 2, total - total // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    ho = out_size(x.shape[2], k[0], s[0], p[0], p[2], d[0], False)
    wo = out_size(x.shape[3], k[1], s[1], p[1], p[3], d[1], False)
    y = np.zeros((x.shape[0], w.shape[0], ho, wo))
    g = attr(node, "group", 1)
    cg, mg = x.shape[1] // g, w.shape[0] // g  # input and output channels per group
    for i in range(k[0]):
        for j in range(k[1]):
            patch = xp[:, :, i * d[0]:i * d[0] + s[0] * (ho - 1) + 1:s[0], j * d[1]:j * d[1] + s[1] * (wo - 1) + 1:s[1]]
            for q in range(g):
                y[:, q * mg:(q + 1) * mg] += np.einsum("nchw,mc->nmhw", patch[:, q * cg:(q + 1) * cg],
                                                       w[q * mg:(q + 1) * mg, :, i, j])
    return y + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def conv_transpose(x, w, b, node):
    """Each input pixel scatters its weighted kernel into the output (ONNX's ConvTranspose, one
    group), then the pads are cut off each end."""
    k = w.shape[2:]
    s = attr(node, "strides", [1, 1])
    d = attr(node, "dilations", [1, 1])
    p = attr(node, "pads", [0, 0, 0, 0])
    op = attr(node, "output_padding", [0, 0])
    n, _, h, wd = x.shape
    full = [(size - 1) * s[a] + d[a] * (k[a] - 1) + 1 + op[a] for a, size in enumerate((h, wd))]
    y = np.zeros((n, w.shape[1], full[0], full[1]))
    for i in range(k[0]):
        for j in range(k[1]):
            contrib = np.einsum("nchw,cm->nmhw", x, w[:, :, i, j])
            y[:, :, i * d[0]:i * d[0] + s[0] * (h - 1) + 1:s[0], j * d[1]:j * d[1] + s[1] * (wd - 1) + 1:s[1]] += contrib
    y = y[:, :, p[0]:full[0] - p[2], p[1]:full[1] - p[3]]
    return y + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def layer_norm(x, scale, bias, node):
    axis = attr(node, "axis", -1)
    axes = tuple(range(axis % x.ndim, x.ndim))
    d = x - x.mean(axis=axes, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + attr(node, "epsilon", 1e-5)) * scale
    return y + (bias if bias is not None else 0)


def pool(x, node, kind):
    k = attr(node, "kernel_shape", None)
    s = attr(node, "strides", [1, 1])
    p = attr(node, "pads", [0, 0, 0, 0])
    ceil = attr(node, "ceil_mode", 0)
    include = attr(node, "count_include_pad", 0)
    n, c, h, w = x.shape
    ho = out_size(h, k[0], s[0], p[0], p[2], 1, ceil)
    wo = out_size(w, k[1], s[1], p[1], p[3], 1, ceil)
    y = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = h0 + k[0], w0 + k[1]
            win = x[:, :, max(h0, 0):min(h1, h), max(w0, 0):min(w1, w)]
            if kind == "max":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                # counting padding: the window clipped to the padded input, as PyTorch
                count = ((min(h1, h + p[2]) - h0) * (min(w1, w + p[3]) - w0) if include
                         else win.shape[2] * win.shape[3])
                y[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return y


def lrn(x, node):
    size = attr(node, "size", None)
    alpha, beta, bias = attr(node, "alpha", 1e-4), attr(node, "beta", 0.75), attr(node, "bias", 1.0)
    sq = np.zeros_like(x)
    c = x.shape[1]
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c, ch + (size - 1) // 2 + 1)
        sq[:, ch] = (x[:, lo:hi] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def reshape(x, shape, allowzero):
    shape = [x.shape[i] if v == 0 and not allowzero else v for i, v in enumerate(shape)]
    return x.reshape(shape)


def gelu(x, approximate):
    if approximate == b"tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def run_reference(model, x):
    g = model.graph
    v = {t.name: numpy_helper.to_array(t).astype(np.float64) if t.data_type != TensorProto.INT64
         else numpy_helper.to_array(t) for t in g.initializer}
    v[g.input[0].name] = x.astype(np.float64)
    for n in g.node:
        i = [v[name] if name else None for name in n.input]
        op = n.op_type
        unary = {"Relu": lambda a: np.maximum(a, 0), "Sigmoid": lambda a: 1 / (1 + np.exp(-a)), "Tanh": np.tanh,
                 "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Neg": np.negative, "Identity": lambda a: a,
                 "Dropout": lambda a: a, "GlobalAveragePool": lambda a: a.mean(axis=(2, 3), keepdims=True)}
        binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum,
                  "Min": np.minimum}
        if op in unary:
            y = unary[op](i[0])
        elif op in binary:
            y = binary[op](i[0], i[1])
        elif op == "LeakyRelu":
            y = np.where(i[0] > 0, i[0], attr(n, "alpha", 0.01) * i[0])
        elif op == "Gelu":
            y = gelu(i[0], attr(n, "approximate", b"none"))
        elif op == "Conv":
            y = conv(i[0], i[1], i[2] if len(i) > 2 else None, n)
        elif op == "ConvTranspose":
            y = conv_transpose(i[0], i[1], i[2] if len(i) > 2 else None, n)
        elif op == "LayerNormalization":
            y = layer_norm(i[0], i[1], i[2] if len(i) > 2 else None, n)
        elif op == "Transpose":
            y = i[0].transpose(attr(n, "perm", None))
        elif op == "MaxPool":
            y = pool(i[0], n, "max")
        elif op == "AveragePool":
            y = pool(i[0], n, "avg")
        elif op == "Gemm":
            a, b = i[0], i[1].T if attr(n, "transB", 0) else i[1]
            y = attr(n, "alpha", 1.0) * a @ b + (attr(n, "beta", 1.0) * i[2] if len(i) > 2 else 0)
        elif op == "MatMul":
            y = i[0] @ i[1]
        elif op == "BatchNormalization":
            sh = (1, -1, 1, 1)
            y = ((i[0] - i[3].reshape(sh)) / np.sqrt(i[4].reshape(sh) + attr(n, "epsilon", 1e-5)) * i[1].reshape(sh)
                 + i[2].reshape(sh))
        elif op == "LRN":
            y = lrn(i[0], n)
        elif op == "Flatten":
            y = i[0].reshape(i[0].shape[0], -1)
        elif op == "Reshape":
            y = reshape(i[0], list(i[1]), attr(n, "allowzero", 0))
        elif op == "Concat":
            y = np.concatenate(i, axis=attr(n, "axis", None))
        elif op == "Softmax":
            y = softmax(i[0], attr(n, "axis", -1))
        elif op == "LogSoftmax":
            y = np.log(softmax(i[0], attr(n, "axis", -1)))
        elif op == "Pad":
            p = list(i[1])
            r = len(p) // 2
            y = np.pad(i[0], [(p[d], p[d + r]) for d in range(r)])
        elif op == "Cast":
            y = i[0].astype(np.float64)
        elif op == "Constant":
            y = numpy_helper.to_array(attr(n, "value", None))
        else:
            raise SystemExit("onnx_cases.py: no reference for " + op)
        v[n.output[0]] = y
    return v[g.output[0].name]


# ---- the cases ----

class Builder:
    """Nodes, initializers and a random generator for one model."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def weight(self, name, shape, scale=0.5):
        # uniform away from zero: no numerics on zeros
        a = self.rng.uniform(0.2, 1.0, shape) * self.rng.choice([-1, 1], shape) * scale
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    def const(self, name, values, dtype=np.int64):
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def stem(self, shape):
        """The input through a layer with parameters (netc trains only networks that have some): a
        dense layer for [N, F], a 1x1 convolution for [N, C, H, W]."""
        if len(shape) == 1:
            return self.node("Gemm", ["x", self.weight("stem.weight", (shape[0], shape[0])),
                                      self.weight("stem.bias", (shape[0],))], transB=1)
        return self.node("Conv", ["x", self.weight("stem.weight", (shape[0], shape[0], 1, 1)),
                                  self.weight("stem.bias", (shape[0],))])

    def node(self, op, inputs, outputs=1, name=None, **attrs):
        self.count += 1
        outs = ["%s_out%d_%d" % (op.lower(), self.count, k) for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name or "/%s_%d" % (op, self.count), **attrs))
        return outs[0] if outputs == 1 else outs

    def model(self, x_shape, out, opset=17, check=True):
        outputs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", "classes"])]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + list(x_shape))]
        g = helper.make_graph(self.nodes, "case", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx_cases.py")
        if check and opset <= 17:  # the newest opset Debian's onnx (1.12) checks
            onnx.checker.check_model(m)
        return m


def flat(b, y):
    return b.node("Flatten", [y], axis=1)


def case_unary(op, shape=(6,), opset=17, pre=None, **attrs):
    def make(b):
        x = b.stem(shape)
        x = b.node(pre, [x]) if pre else x
        return (shape, b.node(op, [x], **attrs), opset)
    return make


def case_softmax(b):
    # not the last node: a final Softmax is left to the loss (netc's output is its logits)
    y = b.node("Softmax", [b.stem((6,))], axis=1)
    return ((6,), b.node("Mul", [y, b.weight("c", (), 1.0)]), 17)


def case_binary(op, other="Sigmoid", shape=(4, 5, 5), broadcast=False):
    def make(b):
        x = b.stem(shape)
        y = b.node(other, [x])
        if broadcast:
            y = b.node("GlobalAveragePool", [y])
        return (shape, flat(b, b.node(op, [x, y])), 17)
    return make


def case_scalar(op):
    def make(b):
        return ((6,), b.node(op, [b.stem((6,)), b.weight("c", (), 1.0)]), 17)
    return make


def case_conv(**attrs):
    def make(b):
        w = b.weight("conv.weight", (5, 3, 3, 3))
        bias = [b.weight("conv.bias", (5,))] if attrs.pop("bias", True) else []
        return ((3, 9, 9), flat(b, b.node("Conv", ["x", w] + bias, **attrs)), 17)
    return make


def case_conv_add_bias(b):
    y = b.node("Conv", ["x", b.weight("conv.weight", (5, 3, 3, 3))], pads=[1, 1, 1, 1])
    return ((3, 6, 6), flat(b, b.node("Add", [y, b.weight("conv_b", (1, 5, 1, 1))])), 17)


def case_pad_conv(b):
    y = b.node("Pad", ["x", b.const("pads", [0, 0, 2, 2, 0, 0, 2, 2])])
    return ((3, 6, 6), flat(b, b.node("Conv", [y, b.weight("conv.weight", (4, 3, 3, 3))], strides=[2, 2])), 17)


def case_conv_grouped(groups, out):
    def make(b):
        w = b.weight("conv.weight", (out, 6 // groups, 3, 3))
        y = b.node("Conv", [b.stem((6, 7, 7)), w, b.weight("conv.bias", (out,))], group=groups, pads=[1, 1, 1, 1],
                   strides=[2, 2])
        return ((6, 7, 7), flat(b, y), 17)
    return make


def case_conv_transpose(kernel, bias, **attrs):
    def make(b):
        w = b.weight("up.weight", (3, 4) + kernel)
        bias_in = [b.weight("up.bias", (4,))] if bias else []
        return ((3, 5, 5), flat(b, b.node("ConvTranspose", ["x", w] + bias_in, **attrs)), 17)
    return make


def stack(b, shape):
    """[N, C, H, W] through the stem, as the stack of matrices [N, C H, W]."""
    return b.node("Reshape", [b.stem(shape), b.const("stack", [0, shape[0] * shape[1], shape[2]])])


def case_transpose(shape, perm):
    def make(b):
        x = stack(b, shape) if len(perm) == 3 else b.stem(shape)
        return (shape, flat(b, b.node("Transpose", [x], perm=perm)), 17)
    return make


def case_matmul_stacks(rank):
    def make(b):
        shape = (2, 4, 5)
        a = stack(b, shape) if rank == 3 else b.stem(shape)
        t = b.node("Sigmoid", [b.node("Transpose", [a], perm=[0, 2, 1] if rank == 3 else [0, 1, 3, 2])])
        return (shape, flat(b, b.node("MatMul", [a, t])), 17)
    return make


def case_layer_norm(bias):
    def make(b):
        ins = [stack(b, (2, 3, 6)), b.weight("ln.weight", (6,))] + ([b.weight("ln.bias", (6,))] if bias else [])
        return ((2, 3, 6), flat(b, b.node("LayerNormalization", ins, axis=-1, epsilon=1e-3)), 17)
    return make


def case_pool(op, **attrs):
    def make(b):
        return ((2, 9, 9), flat(b, b.node(op, [b.stem((2, 9, 9))], **attrs)), 17)
    return make


def case_gemm(b):
    y = b.node("Gemm", ["x", b.weight("fc.weight", (6, 7)), b.weight("fc.bias", (7,))], alpha=0.5, beta=2.0)
    return ((6,), y, 17)


def case_matmul_add(b):
    y = b.node("MatMul", ["x", b.weight("fc.weight", (6, 7))])
    return ((6,), b.node("Add", [y, b.weight("fc_bias", (7,))]), 17)


def case_batch_norm(b):
    c = 4
    ins = ["x", b.weight("bn.weight", (c,)), b.weight("bn.bias", (c,)), b.weight("bn.mean", (c,)),
           b.const("bn.var", b.rng.uniform(0.5, 2.0, c), np.float32)]
    return ((c, 5, 5), flat(b, b.node("BatchNormalization", ins, epsilon=1e-3, momentum=0.8)), 17)


def case_reshape(b):
    y = b.node("Reshape", [b.stem((2, 6, 2)), b.const("shape", [0, 4, -1])])
    y = b.node("Relu", [y])
    return ((2, 6, 2), b.node("Reshape", [y, b.const("shape2", [-1, 24])]), 17)


def case_constant_reshape(b):
    shape = b.node("Constant", [], value=numpy_helper.from_array(np.array([0, -1], np.int64)))
    return ((3, 4, 4), b.node("Reshape", [b.stem((3, 4, 4)), shape]), 17)


def case_concat(k):
    def make(b):
        x = b.stem((2, 4, 4))
        ins = [b.node(["Relu", "Sigmoid", "Tanh", "Neg", "Exp"][i % 5], [x]) for i in range(k)]
        return ((2, 4, 4), flat(b, b.node("Concat", ins, axis=1)), 17)
    return make


def case_dropout(b):
    return ((6,), b.node("Dropout", [b.stem((6,)), b.const("ratio", 0.3, np.float32)]), 17)


def case_mnist(b):
    """PyTorch's MNIST example as torch.onnx.export writes it (the names models/mnist.net has)."""
    y = b.node("Conv", ["x", b.weight("conv1.weight", (32, 1, 3, 3)), b.weight("conv1.bias", (32,))],
               name="/conv1/Conv", kernel_shape=[3, 3])
    y = b.node("Relu", [y], name="/Relu")
    y = b.node("Conv", [y, b.weight("conv2.weight", (64, 32, 3, 3), 0.1), b.weight("conv2.bias", (64,))],
               name="/conv2/Conv", kernel_shape=[3, 3])
    y = b.node("Relu", [y], name="/Relu_1")
    y = b.node("MaxPool", [y], name="/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    y = b.node("Dropout", [y, b.const("p1", 0.25, np.float32)], name="/dropout1/Dropout")
    y = b.node("Flatten", [y], name="/Flatten", axis=1)
    y = b.node("Gemm", [y, b.weight("fc1.weight", (128, 9216), 0.02), b.weight("fc1.bias", (128,))],
               name="/fc1/Gemm", transB=1)
    y = b.node("Relu", [y], name="/Relu_2")
    y = b.node("Gemm", [y, b.weight("fc2.weight", (10, 128), 0.1), b.weight("fc2.bias", (10,))],
               name="/fc2/Gemm", transB=1)
    return ((1, 28, 28), b.node("LogSoftmax", [y], name="/LogSoftmax", axis=1), 17)


def case_cifar10_tf(b):
    """models/cifar10_tf.net's network, its LRNs in ONNX's form (alpha per window element)."""
    y = b.node("Conv", ["x", b.weight("conv1.weight", (64, 3, 5, 5), 0.2), b.weight("conv1.bias", (64,))],
               name="/conv1/Conv", pads=[2, 2, 2, 2])
    y = b.node("Relu", [y])
    y = b.node("MaxPool", [y], name="/pool1/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("LRN", [y], name="/norm1/LRN", size=9, alpha=0.001, beta=0.75, bias=1.0)
    y = b.node("Conv", [y, b.weight("conv2.weight", (64, 64, 5, 5), 0.05), b.weight("conv2.bias", (64,))],
               name="/conv2/Conv", pads=[2, 2, 2, 2])
    y = b.node("Relu", [y])
    y = b.node("LRN", [y], name="/norm2/LRN", size=9, alpha=0.001, beta=0.75, bias=1.0)
    y = b.node("MaxPool", [y], name="/pool2/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("Flatten", [y], axis=1)
    y = b.node("Gemm", [y, b.weight("local3.weight", (384, 2304), 0.03), b.weight("local3.bias", (384,))], transB=1)
    y = b.node("Relu", [y])
    y = b.node("Gemm", [y, b.weight("local4.weight", (192, 384), 0.05), b.weight("local4.bias", (192,))], transB=1)
    y = b.node("Relu", [y])
    y = b.node("Gemm", [y, b.weight("softmax_linear.weight", (10, 192), 0.1), b.weight("softmax_linear.bias", (10,))],
               transB=1)
    return ((3, 24, 24), y, 17)


GROUPS = {
    "elementwise": {
        "relu": case_unary("Relu"), "sigmoid": case_unary("Sigmoid"), "tanh": case_unary("Tanh"),
        "exp": case_unary("Exp"), "log": case_unary("Log", pre="Sigmoid"), "sqrt": case_unary("Sqrt", pre="Sigmoid"),
        "neg": case_unary("Neg"), "leaky_relu": case_unary("LeakyRelu", alpha=0.2),
        "gelu": case_unary("Gelu", opset=20), "gelu_tanh": case_unary("Gelu", opset=20, approximate="tanh"),
        "identity": case_unary("Identity", pre="Tanh"), "dropout": case_dropout,
        "softmax": case_softmax, "log_softmax": case_unary("LogSoftmax", axis=-1),
        "add": case_binary("Add"), "sub": case_binary("Sub", "Tanh"), "mul": case_binary("Mul"),
        "div": case_binary("Div"), "max": case_binary("Max", "Tanh"), "min": case_binary("Min", "Tanh"),
        "add_broadcast": case_binary("Add", broadcast=True), "mul_scalar": case_scalar("Mul"),
        "div_scalar": case_scalar("Div"),
    },
    "windows": {
        "conv": case_conv(pads=[1, 1, 1, 1], strides=[2, 2]), "conv_dilated": case_conv(dilations=[2, 2], bias=False),
        "conv_same": case_conv(auto_pad="SAME_UPPER"), "conv_add_bias": case_conv_add_bias, "pad_conv": case_pad_conv,
        "max_pool": case_pool("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        "max_pool_ceil": case_pool("MaxPool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        "avg_pool": case_pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        "avg_pool_include_pad": case_pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                          count_include_pad=1),
        "avg_pool_ceil": case_pool("AveragePool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        "global_avg_pool": case_pool("GlobalAveragePool"),
        "lrn": case_pool("LRN", size=3, alpha=0.01, beta=0.6, bias=1.5),
        "conv_grouped": case_conv_grouped(2, 4), "conv_depthwise": case_conv_grouped(6, 12),
        "conv_transpose": case_conv_transpose((3, 3), True, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        "conv_transpose_rect": case_conv_transpose((2, 3), False, dilations=[2, 1], strides=[1, 2]),
    },
    "layers": {
        "gemm": case_gemm, "matmul_add": case_matmul_add, "batch_norm": case_batch_norm,
        "flatten": case_pool("Flatten", axis=1), "reshape": case_reshape, "constant": case_constant_reshape,
        "concat2": case_concat(2), "concat3": case_concat(3), "concat4": case_concat(4), "concat5": case_concat(5),
        "transpose": case_transpose((2, 3, 4), [0, 2, 1]), "permute": case_transpose((2, 3, 4), [0, 3, 1, 2]),
        "matmul_stacks": case_matmul_stacks(3), "matmul_stacks4": case_matmul_stacks(4),
        "layer_norm": case_layer_norm(True), "layer_norm_no_bias": case_layer_norm(False),
    },
    "models": {"mnist": case_mnist, "cifar10_tf": case_cifar10_tf},
}


def build(name, seed=1):
    for group in GROUPS.values():
        if name in group:
            b = Builder(seed)
            shape, out, opset = group[name](b)
            return b.model(shape, out, opset), shape
    raise SystemExit("onnx_cases.py: no case " + name)


def write_case(name, folder):
    m, shape = build(name)
    path = os.path.join(folder, name + ".onnx")
    onnx.save(m, path)
    x = np.random.default_rng(2).uniform(-2, 2, (BATCH,) + tuple(shape)).astype(np.float32)
    np.save(os.path.join(folder, name + ".x.npy"), x)
    y = run_reference(m, x)
    np.save(os.path.join(folder, name + ".ref.npy"), y.astype(np.float32))
    return path, x, y


def compare(name, got, want):
    if got.shape != want.shape:
        return "shape %s, reference %s" % (got.shape, want.shape)
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want).max() / scale
    return None if err <= 1e-4 else "largest error %.3g of the largest value" % err


def check(netc, folder, names):
    bad = 0
    for name in names:
        path, x, want = write_case(name, folder)
        out = os.path.join(folder, name + ".y.npy")
        r = subprocess.run([netc, "eval", path, "--batch", str(BATCH), "--input", os.path.join(folder, name + ".x.npy"),
                            "-o", out, "--quiet"], capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s: netc eval exit %d: %s" % (name, r.returncode, r.stderr.strip()))
            bad += 1
            continue
        why = compare(name, np.load(out), want)
        print(("FAIL %s: %s" % (name, why)) if why else "ok %s" % name)
        bad += why is not None
    return bad


# ---- models netc must refuse ----

def write_bad(folder):
    def tensor(name, data_type, dims, **data):
        # helper.make_tensor checks what these tensors are made to break
        t = TensorProto(name=name, data_type=data_type, dims=dims)
        for field, values in data.items():
            getattr(t, field).extend(values)
        return t

    def save(name, b, shape, out, opset=17, valid=True):
        # valid: the model passes onnx's checker and only netc lacks something
        onnx.save(b.model(shape, out, opset, check=valid), os.path.join(folder, name + ".onnx"))

    b = Builder(3)
    save("grouped", b, (4, 5, 5),
         flat(b, b.node("ConvTranspose", ["x", b.weight("w", (4, 2, 3, 3))], name="grouped", group=2)))
    b = Builder(3)
    save("unsupported", b, (6,), b.node("Erf", [b.stem((6,))], name="/e/Erf"))
    b = Builder(3)
    save("batch_transpose", b, (2, 3, 4), flat(b, b.node("Transpose", [b.stem((2, 3, 4))], name="bt", perm=[1, 0, 2, 3])))
    b = Builder(3)
    x = b.stem((2, 3, 4))
    y, t = b.node("Reshape", [x, b.const("s", [0, 1, 6, 4])]), b.node("Transpose", [x], perm=[0, 1, 3, 2])
    save("matmul_broadcast", b, (2, 3, 4), flat(b, b.node("MatMul", [y, t], name="mm")))
    b = Builder(3)
    save("dangling", b, (6,), b.node("Add", ["x", "nowhere"], name="dangling_add"), valid=False)
    b = Builder(3)
    b.inits.append(tensor("big.weight", TensorProto.FLOAT, [1 << 21, 1 << 21], float_data=[1.0]))
    save("huge_dims", b, (1 << 21,), b.node("Gemm", ["x", "big.weight"], name="huge", transB=1), valid=False)
    b = Builder(3)
    b.inits.append(tensor("w.weight", TensorProto.FLOAT, [4, 3, 3, 3], float_data=[1.0, 2.0]))
    save("short_data", b, (3, 8, 8), flat(b, b.node("Conv", ["x", "w.weight"], name="short")), valid=False)
    b = Builder(3)
    b.inits.append(tensor("w.weight", TensorProto.STRING, [4, 3, 3, 3], string_data=[b"a"] * 108))
    save("wrong_type", b, (3, 8, 8), flat(b, b.node("Conv", ["x", "w.weight"], name="strings")), valid=False)
    b = Builder(3)
    save("huge_input", b, (1 << 30, 1 << 30), b.node("Relu", ["x"]))
    b = Builder(3)
    save("old_opset", b, (6,), b.node("Relu", [b.stem((6,))]), opset=11)
    b = Builder(3)
    save("conv_output", b, (3, 8, 8), b.node("Conv", ["x", b.weight("c.weight", (2, 3, 3, 3))]))

    m, _ = build("mnist")
    data = m.SerializeToString()
    with open(os.path.join(folder, "truncated.onnx"), "wb") as f:
        f.write(data[:len(data) // 2])
    with open(os.path.join(folder, "text.onnx"), "w") as f:
        f.write("network m { }\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--netc")
    p.add_argument("--dir", required=False)
    p.add_argument("--bad")
    p.add_argument("--model")
    p.add_argument("--reference", nargs=3, metavar=("MODEL", "X", "Y"))
    p.add_argument("--random", help="comma-separated shape of the images --reference draws")
    p.add_argument("groups", nargs="*")
    a = p.parse_args()
    if a.reference:
        model, x, y = a.reference
        m = onnx.load(model)
        onnx.checker.check_model(m)
        if a.random:
            shape = tuple(int(d) for d in a.random.split(","))
            np.save(x, np.random.default_rng(5).uniform(-2, 2, shape).astype(np.float32))
        np.save(y, run_reference(m, np.load(x)).astype(np.float32))
        return 0
    if a.bad:
        os.makedirs(a.bad, exist_ok=True)
        write_bad(a.bad)
        return 0
    os.makedirs(a.dir, exist_ok=True)
    if a.model:
        write_case(a.model, a.dir)
        return 0
    names = [n for g in a.groups for n in GROUPS[g]]
    return 1 if check(a.netc, a.dir, names) else 0


if __name__ == "__main__":
    sys.exit(main())
