#!/usr/bin/env python3
"""make_data_seeds.py: the seeds of fuzz_npy and fuzz_image (fuzz/corpus/npy, fuzz/corpus/image),
small files of each layout their readers take. A .npy seed is one byte (the input's dtype pick)
then the file; an image seed three bytes (channels, height, width of the model's input) then the
file. The images need Pillow (python3-pil)."""
import io
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(descr, shape, values, version=1):
    fmt = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i", "<i2": "h", "|i1": "b", "|u1": "B", "|b1": "?"}[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    head = 10 if version == 1 else 12
    header += " " * (63 - (head + len(header)) % 64) + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + struct.pack("<%d%s" % (len(values), fmt), *values)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy_seeds():
    out = os.path.join(HERE, "corpus", "npy")
    write(out, "f4_2x3", b"\x00" + npy("<f4", (2, 3), [0.5, -1.25, 2, 3, 4.5, -6]))
    write(out, "f8_3_v2", b"\x03" + npy("<f8", (3,), [1.5, 2.5, -3.5], version=2))
    write(out, "i8_labels", b"\x1c" + npy("<i8", (4,), [0, 2, 1, 3]))
    write(out, "u1_2x2x2", b"\x01" + npy("|u1", (2, 2, 2), list(range(8))))
    write(out, "b1_i2", b"\x02" + npy("|b1", (3, 1), [True, False, True]))
    write(out, "i4_i32_input", b"\x04" + npy("<i4", (2, 2), [7, -3, 0, 12]))


def image_seeds():
    from PIL import Image
    out = os.path.join(HERE, "corpus", "image")
    img = Image.new("RGB", (7, 5))
    img.putdata([((x * 37) % 256, (y * 53) % 256, (x * y * 11) % 256) for y in range(5) for x in range(7)])

    def save(name, im, prefix, **kw):
        buf = io.BytesIO()
        im.save(buf, **kw)
        write(out, name, prefix + buf.getvalue())

    save("rgb.jpg", img, b"\x01\x06\x08", format="JPEG", quality=90)
    save("grey_progressive.jpg", img.convert("L"), b"\x00\x03\x03", format="JPEG", progressive=True)
    save("rgb.png", img, b"\x01\x04\x09", format="PNG")
    save("palette.png", img.convert("P"), b"\x00\x02\x05", format="PNG")
    save("rgba_interlaced.png", img.convert("RGBA"), b"\x01\x05\x05", format="PNG", interlace=1)
    save("grey16.png", img.convert("L").convert("I").point(lambda v: v * 257).convert("I;16"), b"\x01\x01\x27", format="PNG")
    save("tall.png", img.resize((1, 30)), b"\x01\x27\x01", format="PNG")


npy_seeds()
try:
    image_seeds()
except ImportError:
    sys.exit("make_data_seeds.py: the image seeds need Pillow (python3-pil)")
