#!/bin/sh
# make_seeds.sh [NETC]: writes the binary seeds of fuzz/corpus/ and fuzz/ckpt.bundle again with the
# given netc (default build/netc), after a change to the bundle or checkpoint format. The text
# seeds (the frontend's) are the repository's .net files themselves; regressions are kept as
# they were found.
set -e
cd "$(dirname "$0")"
netc=${1:-../build/netc}
[ -x "$netc" ] || { echo "make_seeds.sh: no netc at $netc (build it, or pass its path)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bundles: tests/lit/inputs/tiny.net for the host, and ckpt.net in NHWC (a weight stored OHWI)
"$netc" compile ../tests/lit/inputs/tiny.net --target host -o corpus/bundle/tiny.bundle >/dev/null
"$netc" compile ckpt.net --target host --layout nhwc -o ckpt.bundle >/dev/null
# a checkpoint of ckpt.net after two steps, as `netc train --save` writes it
"$netc" train ckpt.bundle --data synthetic --steps 2 --threads 1 --quiet --save corpus/checkpoint/ckpt.safetensors >/dev/null

python3 - <<'PY'
import gzip, json, struct, zlib

HEAD = 12  # a section's u64 length and u32 CRC-32

def section(body):
    return struct.pack("<QI", len(body), zlib.crc32(body)) + body

def small_code(src, dst, keep=64):
    """The bundle with each code object cut to its first bytes: the reader checks no code, and the
    fuzzer's mutations then land in the tables it does check."""
    b = open(src, "rb").read()
    out, pos = bytearray(b[:12]), 12
    for _ in range(3):  # header, buffer table, input list: copied
        n = struct.unpack_from("<Q", b, pos)[0]
        out += b[pos:pos + HEAD + n]
        pos += HEAD + n
    end = pos + HEAD + struct.unpack_from("<Q", b, pos)[0]
    pos += HEAD
    count = struct.unpack_from("<I", b, pos)[0]
    code = bytearray(b[pos:pos + 4])
    pos += 4
    for _ in range(count):
        code += b[pos:pos + 72]  # target, arch, kind, wave
        size = struct.unpack_from("<Q", b, pos + 72)[0]
        data = b[pos + 80:pos + 80 + size][:keep]
        code += struct.pack("<Q", len(data)) + data
        pos += 80 + size
        for _ in range(3):  # training, evaluation, accumulation kernel lists
            n = struct.unpack_from("<Q", b, pos)[0]
            code += b[pos:pos + HEAD + n]
            pos += HEAD + n
    assert pos == end, "the bundle format changed: update small_code"
    out += section(bytes(code))
    out += b[end:]  # rooflines, group counts and tensor maps: copied
    open(dst, "wb").write(out)

small_code("corpus/bundle/tiny.bundle", "corpus/bundle/tiny_small_code.bundle")
small_code("ckpt.bundle", "corpus/bundle/ckpt_nhwc_small_code.bundle")

# the checkpoint without its optimizer state (as a PyTorch export has): the "missing state" path
ck = open("corpus/checkpoint/ckpt.safetensors", "rb").read()
n = struct.unpack_from("<Q", ck)[0]
head, data = json.loads(ck[8:8 + n]), ck[8 + n:]
weights, out = {"__metadata__": head["__metadata__"]}, b""
for name, e in head.items():
    if name != "__metadata__" and name.endswith((".weight", ".bias")):
        begin, end = e["data_offsets"]
        weights[name] = dict(e, data_offsets=[len(out), len(out) + end - begin])
        out += data[begin:end]
text = json.dumps(weights, separators=(",", ":")).encode()
open("corpus/checkpoint/weights_only.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + out)

SEP = b"--NETC-FILE--"

def idx_images(n, h, w, seed):
    return struct.pack(">IIII", 0x803, n, h, w) + bytes((seed * 31 + i * 7) % 256 for i in range(n * h * w))

def idx_labels(n, seed):
    return struct.pack(">II", 0x801, n) + bytes((seed + i) % 10 for i in range(n))

# MNIST: 3 training and 2 test images of 5x4 pixels; the same with every file gzipped
files = [idx_images(3, 5, 4, 1), idx_labels(3, 1), idx_images(2, 5, 4, 2), idx_labels(2, 2)]
open("corpus/idx/plain", "wb").write(SEP.join(files))
open("corpus/idx/gzipped", "wb").write(SEP.join(gzip.compress(f, mtime=0) for f in files))

def cifar_record(label, seed):
    return bytes([label]) + bytes((seed * 13 + i * 5) % 256 for i in range(3 * 32 * 32))

# CIFAR-10: one record in each of the six files; whole 32x32 images, and 24x24 crops
records = [cifar_record(i % 10, i) for i in range(6)]
open("corpus/cifar/whole", "wb").write(bytes([32, 32]) + SEP.join(records))
open("corpus/cifar/crop", "wb").write(bytes([24, 24]) + SEP.join(records))
PY
ls -l corpus/bundle corpus/checkpoint corpus/idx corpus/cifar ckpt.bundle
