#!/usr/bin/env python3
"""Fixture for DeepSeek-OCR-2's image processor (issue #26), for tests/image/deepseek_preprocess_test.cc.

Runs on the GPU machine (transformers 5.17, torch, torchvision; no network):

    python3 tools/oracle/make_deepseek_preprocess_fixtures.py --out tests/fixtures/images/deepseek/expected.json

Synthetic RGB pages computable in C++ too (pixel (y, x, c) = (7x + 13y + 50c + (x·y mod 17)) mod 256),
of sizes that cover: no tiles (max side ≤ 768), tiles on several grids, an extreme aspect, a side
just past 768, and the exact tie of aspect differences (1000 × 1250: (2, 2) and (3, 2) are both
0.25 away). Through DeepseekOcr2ImageProcessor (the default, torchvision backend) and the Pil
class: num_local_patches, the global view's and the tiles' shapes, the SHA-256 of their uint8
values (pixel_values de-normalised: round((v · 0.5 + 0.5) · 255), checked to round-trip exactly)
and 48 sampled float values each.
"""
import argparse
import hashlib
import json

import numpy as np
import torch
import transformers
from transformers.models.deepseek_ocr2.image_processing_deepseek_ocr2 import DeepseekOcr2ImageProcessor

try:
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import DeepseekOcr2ImageProcessorPil
except Exception:  # noqa: BLE001 - the Pil class may live elsewhere; recorded as absent
    DeepseekOcr2ImageProcessorPil = None

SIZES = [(200, 300), (768, 500), (700, 1000), (500, 1600), (800, 800), (1250, 1000), (1700, 1200), (3000, 900)]
SAMPLES = 48


def page(h, w):
    y = np.arange(h, dtype=np.int64)[:, None, None]
    x = np.arange(w, dtype=np.int64)[None, :, None]
    c = np.arange(3, dtype=np.int64)[None, None, :]
    return ((7 * x + 13 * y + 50 * c + (x * y) % 17) % 256).astype(np.uint8)


def positions(n):
    out, state = [], 12345
    for _ in range(SAMPLES):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(state % n)
    return out


def describe(t):
    a = t.detach().to(torch.float32).cpu().numpy()
    u = np.round((a * 0.5 + 0.5) * 255.0)
    back = (u / 255.0 - 0.5) / 0.5
    err = float(np.abs(back - a).max())
    assert err < 1e-5, f"de-normalisation does not round-trip ({err})"
    flat = a.reshape(-1)
    pos = positions(flat.size)
    return dict(shape=list(a.shape), sha256_uint8=hashlib.sha256(u.astype(np.uint8).tobytes()).hexdigest(),
                samples=[[int(p), float(flat[p])] for p in pos])


def run(proc, h, w):
    out = proc(images=[page(h, w)], return_tensors="pt")
    rec = dict(num_local_patches=[int(n) for n in out["num_local_patches"]], global_view=describe(out["pixel_values"]))
    if "pixel_values_local" in out:
        rec["tiles"] = describe(out["pixel_values_local"])
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    procs = {"torchvision": DeepseekOcr2ImageProcessor()}
    if DeepseekOcr2ImageProcessorPil is not None:
        procs["pil"] = DeepseekOcr2ImageProcessorPil()
    cases = []
    for h, w in SIZES:
        case = dict(height=h, width=w)
        for name, p in procs.items():
            case[name] = run(p, h, w)
        print(h, w, {k: case[k]["num_local_patches"] for k in procs}, flush=True)
        cases.append(case)
    p = procs["torchvision"]
    doc = dict(transformers=transformers.__version__, torch=torch.__version__,
               processor=dict(size=dict(p.size), tile_size=p.tile_size, min_patches=p.min_patches,
                              max_patches=p.max_patches, background_color=list(p.background_color),
                              resample=int(p.resample), image_mean=list(p.image_mean), image_std=list(p.image_std)),
               pixel="(7x + 13y + 50c + (x*y mod 17)) mod 256", cases=cases)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
