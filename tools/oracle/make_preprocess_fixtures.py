#!/usr/bin/env python3
"""Fixtures for image preprocessing (issue #22 item 2): what transformers' image processors and
Pillow / torchvision's resizes give, for tests/image/preprocess_test.cc and resize_test.cc.

Two phases:
  images     writes the test images (synthetic photo-like and document-like content, drawn here
             with numpy + PIL, so they are ours to commit) as PNG. Needs numpy and Pillow only.
  reference  runs transformers' AutoImageProcessor (its default backend and the PIL backend) on
             those PNGs for several preprocessor configs, and Pillow / torchvision on small
             synthetic inputs for the resize unit tests; writes expected.json / resize_expected.json
             and a debug tarball with every full array (not committed). Also prints the versions,
             the lines of transformers' auto module that choose the backend, and which class
             AutoImageProcessor / AutoProcessor instantiate for several files. Needs transformers,
             torch, torchvision.
  pillow-resize  only the Pillow half of resize_expected.json (for development without torch).

    python3 make_preprocess_fixtures.py images --out tests/fixtures/images/preprocess
    python3 make_preprocess_fixtures.py reference --images tests/fixtures/images/preprocess --out OUTDIR
    cp OUTDIR/expected.json OUTDIR/resize_expected.json tests/fixtures/images/preprocess/

The committed fixtures came from transformers 5.17.0, Pillow 12.3.0, torch 2.11.0, torchvision
0.26.0 on the H200 machine's CPU (capability AVX512); Pillow 9.4 gives the same resize bytes.
The committed PNGs were drawn with Debian's Pillow 9.4 (one bitmap font); Pillow >= 10.1 draws
other glyphs, so the PNGs, not this script, are the test's input.
"""
import argparse
import io
import json
import os
import tarfile
import tempfile

import numpy as np


# ---------------------------------------------------------------------------------------------
# Phase 1: images
# ---------------------------------------------------------------------------------------------

def photo_like(width, height, seed):
    """Smooth colour gradients, a few sharp-edged shapes, and mild noise in textured patches."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / max(width - 1, 1), y / max(height - 1, 1)
    img = np.stack([
        90 + 120 * u + 30 * np.sin(6.0 * v + seed),
        60 + 100 * v + 40 * np.cos(5.0 * u * v + seed),
        200 - 150 * u * v + 20 * np.sin(9.0 * (u + v)),
    ], axis=-1)
    pil = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(pil)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = x0 + int(rng.integers(4, max(5, width // 3))), y0 + int(rng.integers(4, max(5, height // 3)))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.integers(0, 2):
            draw.rectangle([x0, y0, x1, y1], fill=colour)
        else:
            draw.ellipse([x0, y0, x1, y1], fill=colour)
    for _ in range(4):
        draw.line([tuple(int(t) for t in rng.integers(0, [width, height])) for _ in range(2)],
                  fill=tuple(int(c) for c in rng.integers(0, 256, 3)), width=int(rng.integers(1, 4)))
    arr = np.asarray(pil).astype(np.int16)
    # Noise only in a band: noise everywhere would make the PNGs too large to commit.
    band = slice(height // 3, height // 3 + max(2, height // 5))
    arr[band] += rng.integers(-12, 13, arr[band].shape).astype(np.int16)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")


def document_like(width, height, seed):
    """Black text of several sizes on white, thin ruling lines, a grey table: a scanned page."""
    from PIL import Image, ImageDraw, ImageFont
    rng = np.random.default_rng(seed)
    pil = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(pil)
    words = ("invoice total amount date paid the of and to in for on with as by at from "
             "preprocessing resize bicubic antialias siglip 2026 no. 4711 EUR 12.50").split()
    y = 10
    sizes = [10, 14, 20, 11, 9, 16]
    while y < height - 20:
        size = sizes[int(rng.integers(0, len(sizes)))]
        try:
            font = ImageFont.load_default(size=size)
        except TypeError:  # Pillow < 10.1 has one bitmap font size
            font = ImageFont.load_default()
        line = " ".join(words[int(i)] for i in rng.integers(0, len(words), 12))
        draw.text((12, y), line, fill=(0, 0, 0), font=font)
        y += size + 6
        if rng.integers(0, 5) == 0:
            draw.line([(8, y), (width - 8, y)], fill=(0, 0, 0), width=1)
            y += 4
    draw.rectangle([width // 2, height // 2, width - 20, height // 2 + 60], outline=(80, 80, 80),
                   fill=(235, 235, 235))
    return pil


IMAGES = [
    # name, kind, width, height: landscape, portrait with odd sizes, a wide strip, a thumbnail
    # (upscaled by every config), a page and a receipt.
    ("photo_320x240", "photo", 320, 240),
    ("photo_181x263", "photo", 181, 263),
    ("photo_512x128", "photo", 512, 128),
    ("photo_64x48", "photo", 64, 48),
    ("doc_600x780", "document", 600, 780),
    ("doc_300x1000", "document", 300, 1000),
    ("photo_800x533", "photo", 800, 533),
    ("doc_1240x1754", "document", 1240, 1754),
]


def make_images(out):
    os.makedirs(out, exist_ok=True)
    total = 0
    for i, (name, kind, w, h) in enumerate(IMAGES):
        img = photo_like(w, h, 7 + i) if kind == "photo" else document_like(w, h, 7 + i)
        path = os.path.join(out, name + ".png")
        img.save(path, optimize=True)
        total += os.path.getsize(path)
        print(f"{path}: {os.path.getsize(path)} bytes")
    print(f"total {total} bytes")


# ---------------------------------------------------------------------------------------------
# Phase 2: references
# ---------------------------------------------------------------------------------------------

# preprocessor_config.json contents as published folders have them.
CONFIGS = {
    # google/siglip-base-patch16-224
    "siglip_224": {
        "do_normalize": True, "do_rescale": True, "do_resize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "SiglipImageProcessor", "processor_class": "SiglipProcessor",
        "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": 224, "width": 224},
    },
    # google/siglip-so400m-patch14-384
    "siglip_384": {
        "do_normalize": True, "do_rescale": True, "do_resize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "SiglipImageProcessor", "processor_class": "SiglipProcessor",
        "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": 384, "width": 384},
    },
    # openai/clip-vit-base-patch32 (the legacy form: ints, feature_extractor_type)
    "clip_224": {
        "crop_size": 224, "do_center_crop": True, "do_normalize": True, "do_resize": True,
        "feature_extractor_type": "CLIPFeatureExtractor",
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711], "resample": 3, "size": 224,
    },
    # a SigLIP 2 fixed-resolution-like folder: bilinear, 256
    "siglip_bilinear_256": {
        "do_normalize": True, "do_rescale": True, "do_resize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "SiglipImageProcessorFast", "processor_class": "SiglipProcessor",
        "resample": 2, "rescale_factor": 0.00392156862745098, "size": {"height": 256, "width": 256},
    },
}


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


SAMPLES = 48


def sample_positions(n):
    # deterministic positions, the same LCG as the C++ test
    pos, state = [], 12345
    for _ in range(SAMPLES):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        pos.append(state % n)
    return pos


def describe(arr_f32, arr_u8):
    flat = arr_f32.reshape(-1)
    return {
        "shape": list(arr_f32.shape),
        "float_fnv1a64": fnv1a64(flat.astype("<f4").tobytes()),
        "uint8_fnv1a64": fnv1a64(arr_u8.astype(np.uint8).tobytes()),
        "samples": [[int(p), float(flat[p])] for p in sample_positions(flat.size)],
    }


def to_numpy(pv):
    if hasattr(pv, "numpy"):
        pv = pv.cpu().numpy()
    return np.asarray(pv)


def synthetic(width, height):
    """The resize unit tests' input, computable in C++ too: noise and a gradient, interleaved."""
    img = np.zeros((height, width, 3), dtype=np.uint8)
    for y in range(height):
        for x in range(width):
            for c in range(3):
                if (x // 3 + y // 2) % 3 == 0:
                    v = (x * 255 // max(width - 1, 1) + c * 40) % 256
                else:
                    h = ((x * 73856093) ^ (y * 19349663) ^ (c * 83492791)) & 0xFFFFFFFF
                    h = (h * 2654435761) & 0xFFFFFFFF
                    v = (h >> 24) & 0xFF
                img[y, x, c] = v
    return img


RESIZE_CASES = [
    # (in_w, in_h, out_w, out_h)
    (23, 17, 7, 5), (23, 17, 31, 29), (23, 17, 23, 9), (23, 17, 40, 17), (23, 17, 11, 40),
    (5, 3, 13, 11), (301, 211, 17, 13), (301, 211, 224, 224), (97, 301, 64, 33), (2, 2, 1, 1),
]


def encode_pixels(img):
    """Small outputs in full (hex), large ones as a hash: keeps the committed JSON small."""
    data = np.ascontiguousarray(img).tobytes()
    return {"hex": data.hex()} if len(data) <= 4096 else {"fnv1a64": fnv1a64(data)}


def pillow_resize(out):
    """Only the Pillow half of resize_expected.json, for development where torch is absent."""
    import PIL
    from PIL import Image
    filters = {"nearest": Image.NEAREST, "box": Image.BOX, "bilinear": Image.BILINEAR,
               "hamming": Image.HAMMING, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}
    cases = []
    for (iw, ih, ow, oh) in RESIZE_CASES:
        src = synthetic(iw, ih)
        for fname, f in filters.items():
            out_img = np.asarray(Image.fromarray(src, "RGB").resize((ow, oh), resample=f))
            cases.append({"lib": "pillow", "filter": fname, "in": [iw, ih], "out": [ow, oh],
                          **encode_pixels(out_img)})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "resize_expected.json"), "w") as fh:
        json.dump({"info": {"pillow": PIL.__version__}, "cases": cases}, fh)


def reference(images_dir, out):
    import PIL
    from PIL import Image
    import torch
    import torchvision
    import transformers
    from transformers import AutoImageProcessor
    from torchvision.transforms.v2 import functional as tvF
    from torchvision.transforms import InterpolationMode

    info = {
        "transformers": transformers.__version__, "pillow": PIL.__version__,
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "numpy": np.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    print("versions:", json.dumps(info), flush=True)
    # Evidence for the backend question: the lines of the auto module that choose it.
    import inspect
    import transformers.models.auto.image_processing_auto as auto_mod
    lines = [f"{i}: {l}" for i, l in enumerate(inspect.getsource(auto_mod).splitlines())
             if ("use_fast" in l or "backend" in l) and not l.strip().startswith("#")]
    print("image_processing_auto.py lines naming use_fast/backend:", len(lines))
    print("\n".join(lines[:80]), flush=True)
    try:
        print("SiglipImageProcessor MRO:", [c.__name__ for c in transformers.SiglipImageProcessor.__mro__][:5],
              inspect.getsourcefile(transformers.SiglipImageProcessor), flush=True)
    except Exception as e:  # noqa: BLE001
        print("SiglipImageProcessor:", e, flush=True)
    os.makedirs(out, exist_ok=True)
    debug = {}  # name -> bytes, packed into one tarball

    # --- which class does AutoImageProcessor pick? -------------------------------------------
    work = tempfile.mkdtemp()
    picks = {}
    variants = {
        "siglip(type SiglipImageProcessor)": dict(CONFIGS["siglip_224"]),
        "siglip(type SiglipImageProcessorFast)": dict(CONFIGS["siglip_224"], image_processor_type="SiglipImageProcessorFast"),
        "siglip(type SiglipImageProcessorPil)": dict(CONFIGS["siglip_224"], image_processor_type="SiglipImageProcessorPil"),
        "siglip(use_fast false)": dict(CONFIGS["siglip_224"], use_fast=False),
        "siglip(use_fast true)": dict(CONFIGS["siglip_224"], use_fast=True),
        "siglip(backend pil)": dict(CONFIGS["siglip_224"], backend="pil"),
        "clip(feature_extractor_type only)": dict(CONFIGS["clip_224"]),
        "clip(type CLIPImageProcessor)": dict(CONFIGS["clip_224"], image_processor_type="CLIPImageProcessor"),
    }
    for label, cfg in variants.items():
        d = os.path.join(work, "v" + str(len(picks)))
        os.makedirs(d)
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(cfg, f)
        row = {}
        for how, kwargs in [("default", {}), ("use_fast=False", {"use_fast": False}),
                            ("backend=pil", {"backend": "pil"})]:
            try:
                p = AutoImageProcessor.from_pretrained(d, **kwargs)
                row[how] = type(p).__name__ + " backend=" + str(getattr(p, "backend", "?"))
            except Exception as e:  # noqa: BLE001 - record what happened
                row[how] = "ERROR " + type(e).__name__ + ": " + str(e)[:200]
        try:
            from transformers import AutoProcessor
            p = AutoProcessor.from_pretrained(d)
            ip = getattr(p, "image_processor", p)
            row["AutoProcessor"] = type(p).__name__ + " / " + type(ip).__name__
        except Exception as e:  # noqa: BLE001
            row["AutoProcessor"] = "ERROR " + type(e).__name__ + ": " + str(e)[:200]
        picks[label] = row
        print("pick", label, json.dumps(row), flush=True)
    info["picks"] = picks

    # --- processors on the test images --------------------------------------------------------
    expected = {"info": info, "configs": CONFIGS, "cases": []}
    names = sorted(f for f in os.listdir(images_dir) if f.endswith(".png"))
    for cfg_name, cfg in CONFIGS.items():
        d = os.path.join(work, cfg_name)
        os.makedirs(d)
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(cfg, f)
        procs = {}
        try:
            procs["default"] = AutoImageProcessor.from_pretrained(d)
        except Exception as e:  # noqa: BLE001
            print("ERROR default", cfg_name, e, flush=True)
        for how, kwargs in [("backend=pil", {"backend": "pil"}), ("use_fast=False", {"use_fast": False})]:
            try:
                p = AutoImageProcessor.from_pretrained(d, **kwargs)
                if getattr(p, "backend", None) == "pil":
                    procs["pil"] = p
                    break
            except Exception as e:  # noqa: BLE001
                print("ERROR", how, cfg_name, e, flush=True)
        if "pil" not in procs:
            try:
                cls = getattr(transformers, type(procs["default"]).__name__.replace("Fast", "") + "Pil")
                procs["pil"] = cls.from_pretrained(d)
            except Exception as e:  # noqa: BLE001
                print("ERROR pil class", cfg_name, e, flush=True)
        for backend, proc in procs.items():
            print(cfg_name, backend, type(proc).__name__, flush=True)
            for name in names:
                img = Image.open(os.path.join(images_dir, name))
                img.load()
                try:
                    pv = to_numpy(proc(img, return_tensors="pt")["pixel_values"])[0].astype(np.float32)
                    u8 = to_numpy(proc(img, do_rescale=False, do_normalize=False,
                                       return_tensors="pt")["pixel_values"])[0]
                except Exception as e:  # noqa: BLE001
                    print("ERROR", cfg_name, backend, name, e, flush=True)
                    continue
                case = {"config": cfg_name, "backend": backend, "class": type(proc).__name__,
                        "image": name, "uint8_dtype": str(u8.dtype)}
                case.update(describe(pv, np.rint(u8.astype(np.float64)).astype(np.uint8)))
                expected["cases"].append(case)
                debug[f"{cfg_name}.{backend}.{name}.f32"] = pv.astype("<f4").tobytes()
                debug[f"{cfg_name}.{backend}.{name}.u8"] = np.asarray(u8).astype(np.uint8).tobytes()
        # how far the two backends are apart, per config (the answer to "by how much")
        if "default" in procs and "pil" in procs:
            worst_f, worst_u = 0.0, 0
            for name in names:
                a = debug.get(f"{cfg_name}.default.{name}.f32")
                b = debug.get(f"{cfg_name}.pil.{name}.f32")
                ua = debug.get(f"{cfg_name}.default.{name}.u8")
                ub = debug.get(f"{cfg_name}.pil.{name}.u8")
                if a is None or b is None or len(a) != len(b):
                    continue
                fa, fb = np.frombuffer(a, "<f4"), np.frombuffer(b, "<f4")
                da = np.abs(np.frombuffer(ua, np.uint8).astype(int) - np.frombuffer(ub, np.uint8).astype(int))
                worst_f = max(worst_f, float(np.max(np.abs(fa - fb))))
                worst_u = max(worst_u, int(da.max()))
                print(f"  {cfg_name} {name}: default vs pil: uint8 max {int(da.max())}, "
                      f"{int((da > 0).sum())} of {da.size} differ; float max {float(np.max(np.abs(fa - fb))):.3g}",
                      flush=True)
            expected.setdefault("backend_gap", {})[cfg_name] = {"float_max_abs": worst_f, "uint8_max_abs": worst_u}

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)

    # --- resize alone: Pillow and torchvision on synthetic inputs ----------------------------
    pil_filters = {"nearest": Image.Resampling.NEAREST, "box": Image.Resampling.BOX,
                   "bilinear": Image.Resampling.BILINEAR, "hamming": Image.Resampling.HAMMING,
                   "bicubic": Image.Resampling.BICUBIC, "lanczos": Image.Resampling.LANCZOS}
    tv_filters = {"bilinear": InterpolationMode.BILINEAR, "bicubic": InterpolationMode.BICUBIC}
    resize = {"info": info, "cases": []}
    for (iw, ih, ow, oh) in RESIZE_CASES:
        src = synthetic(iw, ih)
        for fname, f in pil_filters.items():
            out_img = np.asarray(Image.fromarray(src, "RGB").resize((ow, oh), resample=f))
            resize["cases"].append({"lib": "pillow", "filter": fname, "in": [iw, ih], "out": [ow, oh],
                                    **encode_pixels(out_img)})
            debug[f"resize.pillow.{fname}.{iw}x{ih}-{ow}x{oh}.u8"] = out_img.tobytes()
        t = torch.from_numpy(src).permute(2, 0, 1).contiguous()
        for fname, f in tv_filters.items():
            # As the processor calls it: a stacked batch (N x C x H x W, channels-first).
            try:
                r = tvF.resize(t.unsqueeze(0), [oh, ow], interpolation=f, antialias=True)[0]
            except RuntimeError as e:  # torch 2.11 asserts on some shapes (a 1x1 output)
                print("torchvision resize failed", iw, ih, ow, oh, fname, str(e)[:160], flush=True)
                resize["cases"].append({"lib": "torchvision", "filter": fname, "in": [iw, ih],
                                        "out": [ow, oh], "error": str(e)[:160]})
                continue
            assert r.dtype == torch.uint8
            out_img = r.permute(1, 2, 0).contiguous().numpy()
            resize["cases"].append({"lib": "torchvision", "filter": fname, "in": [iw, ih], "out": [ow, oh],
                                    **encode_pixels(out_img)})
            debug[f"resize.torchvision.{fname}.{iw}x{ih}-{ow}x{oh}.u8"] = out_img.tobytes()
            try:
                rb = tvF.resize(torch.stack([t, t]), [oh, ow], interpolation=f, antialias=True)
            except RuntimeError as e:
                print("torchvision batch-of-2 resize failed", iw, ih, ow, oh, fname, flush=True)
                continue
            if not torch.equal(rb[0], r):
                print("NOTE: batch of 2 differs from batch of 1", iw, ih, ow, oh, fname, flush=True)
    with open(os.path.join(out, "resize_expected.json"), "w") as f:
        json.dump(resize, f)

    with tarfile.open(os.path.join(out, "debug.tar.gz"), "w:gz") as tar:
        for name, data in debug.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    print("wrote", out, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["images", "reference", "pillow-resize"])
    ap.add_argument("--images", default="tests/fixtures/images/preprocess")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.phase == "images":
        make_images(args.out)
    elif args.phase == "pillow-resize":
        pillow_resize(args.out)
    else:
        reference(args.images, args.out)


if __name__ == "__main__":
    main()
