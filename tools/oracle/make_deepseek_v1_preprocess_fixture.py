#!/usr/bin/env python3
"""Fixture for DeepSeek-OCR v1's page views (issue #26), for tests/image/deepseek_preprocess_test.cc.

transformers 5.17 has no DeepSeek-OCR (v1) processor, so this script runs v1's reference steps
(the original `infer` of deepseek-ai/DeepSeek-OCR, as ../shared/spec/deepencoder.md §3 gives them)
through Pillow itself, the library the reference calls; needs only Pillow:

    python3 tools/oracle/make_deepseek_v1_preprocess_fixture.py --out tests/fixtures/images/deepseek-v1/expected.json

Per mode (base_size, image_size, crop_mode: tiny 512/512/no, small 640/640/no, base 1024/1024/no,
large 1280/1280/no, gundam 1024/640/yes):
- crop mode: a page within 640 × 640 has no tiles; otherwise the tile grid (i across, j down) is
  the candidate (2 <= i·j <= 6, sorted by i·j) closest in aspect, an exact tie replacing the best
  only when the page covers more than half of the candidate's tiles; the page is resized to
  (640·i, 640·j) with Image.resize's default filter and cut into 640 × 640 tiles, row-major; the
  global view is ImageOps.pad(page, (1024, 1024), color=(127, 127, 127));
- otherwise: a page for image_size <= 640 is first resized to image_size² (stretched), then the
  view is ImageOps.pad(page, (image_size, image_size), color=(127, 127, 127)).
Each view is recorded as the SHA-256 of its uint8 values in CHW order (normalisation,
(x / 255 − 0.5) / 0.5, is exact arithmetic the C++ test checks separately). The synthetic pages are
computable in C++ too: pixel (y, x, c) = (7x + 13y + 50c + (x·y mod 17)) mod 256.
"""
import argparse
import hashlib
import json

import PIL
from PIL import Image, ImageOps

MODES = {"tiny": (512, 512, False), "small": (640, 640, False), "base": (1024, 1024, False),
         "large": (1280, 1280, False), "gundam": (1024, 640, True)}
SIZES = [(200, 300), (640, 500), (700, 1000), (500, 1600), (997, 1000), (1250, 1000), (1700, 1200), (3000, 900)]
GREY = (127, 127, 127)


def page(h, w):
    data = bytearray(h * w * 3)
    i = 0
    for y in range(h):
        for x in range(w):
            base = (7 * x + 13 * y + (x * y) % 17)
            data[i] = base % 256
            data[i + 1] = (base + 50) % 256
            data[i + 2] = (base + 100) % 256
            i += 3
    return Image.frombytes("RGB", (w, h), bytes(data))


def closest_grid(width, height, tile, lo=2, hi=6):
    ratios = sorted({(i, j) for n in range(lo, hi + 1) for i in range(1, n + 1) for j in range(1, n + 1)
                     if lo <= i * j <= hi}, key=lambda r: r[0] * r[1])
    aspect = width / height
    best, best_diff = (1, 1), float("inf")
    for r in ratios:
        diff = abs(aspect - r[0] / r[1])
        if diff < best_diff:
            best, best_diff = r, diff
        elif diff == best_diff and width * height > 0.5 * tile * tile * r[0] * r[1]:
            best = r
    return best


def chw_sha(views):
    h = hashlib.sha256()
    for v in views:
        for band in v.split():
            h.update(band.tobytes())
    return h.hexdigest()


def views(img, mode):
    base_size, image_size, crop = MODES[mode]
    tiles, grid = [], [1, 1]
    if crop:
        if not (img.width <= image_size and img.height <= image_size):
            i, j = closest_grid(img.width, img.height, image_size)
            grid = [i, j]
            resized = img.resize((image_size * i, image_size * j))
            for k in range(i * j):
                x, y = (k % i) * image_size, (k // i) * image_size
                tiles.append(resized.crop((x, y, x + image_size, y + image_size)))
        glob = ImageOps.pad(img, (base_size, base_size), color=GREY)
    else:
        if image_size <= 640:
            img = img.resize((image_size, image_size))
        glob = ImageOps.pad(img, (image_size, image_size), color=GREY)
    rec = dict(tiles=len(tiles), grid=grid, global_side=glob.width, global_sha256=chw_sha([glob]))
    if tiles:
        rec["tiles_sha256"] = chw_sha(tiles)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = []
    for h, w in SIZES:
        img = page(h, w)
        cases.append(dict(height=h, width=w, modes={m: views(img, m) for m in MODES}))
    out = dict(pillow=PIL.__version__, pixel="(7x + 13y + 50c + (x*y mod 17)) mod 256",
               steps="deepencoder.md section 3 through Pillow: Image.resize default filter, ImageOps.pad", cases=cases)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
