#!/usr/bin/env python3
"""make_folder.py DIR: a small ImageFolder tree for netc's data = folder, made with Pillow.
DIR/train/<class>/ and DIR/val/<class>/ hold images of three classes that a small network tells
apart (a red disc, a green bar, a blue frame, at random places and sizes on noise), as JPEG and
PNG (grey, palette and RGBA among them), of varied sizes and aspect ratios; DIR/train/disc also
holds a damaged JPEG and a text file named .png, which netc must skip with a warning each.
--flat: the classes right under DIR (no held-out set)."""
import os
import random
import sys

from PIL import Image, ImageDraw


def draw(cls, rng):
    w, h = rng.randint(40, 90), rng.randint(40, 90)
    noise = bytes(rng.randint(60, 140) for _ in range(w * h * 3))
    img = Image.frombytes("RGB", (w, h), noise)
    d = ImageDraw.Draw(img)
    cx, cy, r = rng.randint(w // 3, 2 * w // 3), rng.randint(h // 3, 2 * h // 3), min(w, h) // rng.randint(3, 5)
    if cls == "disc":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(230, 30, 30))
    elif cls == "bar":
        d.rectangle([cx - r // 3, 0, cx + r // 3, h], fill=(30, 220, 30))
    else:
        d.rectangle([cx - r, cy - r, cx + r, cy + r], outline=(30, 30, 230), width=max(2, r // 3))
    return img


def save(img, path, k):
    kind = k % 5
    if kind == 0:
        img.save(path + ".jpg", quality=90)
    elif kind == 1:
        img.save(path + ".png")
    elif kind == 2:
        img.convert("RGBA").save(path + ".PNG")
    elif kind == 3:
        img.convert("P").save(path + ".png")
    else:
        img.save(path + ".jpeg", quality=75)


def main():
    root = sys.argv[1]
    flat = "--flat" in sys.argv
    rng = random.Random(7)
    splits = [("", 24)] if flat else [("train", 24), ("val", 8)]
    for split, count in splits:
        for cls in ("disc", "bar", "frame"):
            folder = os.path.join(root, split, cls)
            os.makedirs(folder, exist_ok=True)
            for k in range(count):
                save(draw(cls, rng), os.path.join(folder, "%s%03d" % (cls, k)), k)
    bad = os.path.join(root, "" if flat else "train", "disc")
    with open(os.path.join(bad, "damaged.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0" + bytes(40))
    with open(os.path.join(bad, "notes.png"), "w") as f:
        f.write("not an image\n")


main()
