#!/usr/bin/env python3
"""Fixtures for GLM-OCR's image preprocessing and prompt positions (issue #23), for
tests/image/glm_preprocess_test.cc and tests/models/glm_ocr_prompt_test.cc.

Runs on a machine with transformers 5.17, torch, torchvision (no network needed):

    python3 make_glm_preprocess_fixtures.py --repo . --out OUTDIR
    cp OUTDIR/preprocess_expected.json tests/fixtures/images/glm/
    cp OUTDIR/rope_expected.json tests/fixtures/glm-ocr/

What it does:
  1. Which class and backend AutoImageProcessor picks for a GLM-OCR folder (config.json with
     model_type glm_ocr, preprocessor_config.json naming Glm46VImageProcessor, Glm4vImageProcessor,
     or nothing), and what a file with top-level min_pixels / max_pixels (no size) turns into.
  2. The processor's pixel_values and image_grid_thw, through both backends (torchvision default
     and the Pil class), for two preprocessor configs on our committed test PNGs
     (tests/fixtures/images/preprocess) and on synthetic images computable in C++ too (tiny ones,
     a portrait page, a page above the pixel budget), plus the errors it raises (aspect > 200).
     Each case keeps the SHA-256 of the float32 rows, the SHA-256 of the rows without
     rescale/normalise (the resized uint8 values, patchified), the grid and 48 sampled values.
  3. GlmOcrModel.get_rope_index on a tiny randomly initialised GlmOcrModel: the 3-axis position
     ids and rope delta for several prompts (one image, two images of different grids with text
     between them, text only, the real OCR prompt's shape), and the processor's
     create_mm_token_type_ids on the same ids.
"""
import argparse
import hashlib
import inspect
import io
import json
import os
import tarfile
import tempfile
import traceback
import types

import numpy as np


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SAMPLES = 48


def sample_positions(n):
    pos, state = [], 12345
    for _ in range(SAMPLES):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        pos.append(state % n)
    return pos


# ------------------------------------------------------------------------------------------
# Synthetic images, the same formulas as tests/image/glm_preprocess_test.cc
# ------------------------------------------------------------------------------------------

M32 = np.uint64(0xFFFFFFFF)


def hash32(a, b, c):
    a = a.astype(np.uint64)
    b = b.astype(np.uint64)
    c = np.uint64(c) if np.isscalar(c) else c.astype(np.uint64)
    h = ((a * np.uint64(73856093)) & M32) ^ ((b * np.uint64(19349663)) & M32) ^ ((c * np.uint64(83492791)) & M32)
    return (h * np.uint64(2654435761)) & M32


def synthetic(width, height):
    """Bands of a horizontal gradient among hashed noise (resize_test.cc's synthetic())."""
    y, x = np.mgrid[0:height, 0:width]
    img = np.zeros((height, width, 3), dtype=np.uint8)
    band = ((x // 3 + y // 2) % 3) == 0
    for c in range(3):
        grad = (x * 255 // max(width - 1, 1) + c * 40) % 256
        noise = (hash32(x, y, c) >> np.uint64(24)) & np.uint64(0xFF)
        img[..., c] = np.where(band, grad, noise.astype(np.int64)).astype(np.uint8)
    return img


def page(width, height):
    """A text page: lines of 4-px 'glyph' blocks of dark ink on near-white paper."""
    y, x = np.mgrid[0:height, 0:width]
    line = y // 16
    in_text = ((y % 16) < 10) & ((line % 5) != 4) & (x >= 24) & (x < width - 24)
    word = ((hash32(x // 4, line, 7) >> np.uint64(20)) & np.uint64(7)) < np.uint64(5)
    ink = in_text & word & (((x + y) % 3) != 0)
    img = np.zeros((height, width, 3), dtype=np.uint8)
    for c in range(3):
        img[..., c] = np.where(ink, 20 + 10 * c, 250 - 3 * c).astype(np.uint8)
    return img


SYNTHETIC = [
    # name, kind, width, height
    ("syn_20x15", "synthetic", 20, 15),      # both sides below 28: upscaled, then the min budget
    ("syn_27x90", "synthetic", 27, 90),      # one side below 28
    ("syn_200x9", "synthetic", 200, 9),      # int() truncation of the upscale
    ("syn_250x57", "synthetic", 250, 57),    # no side a multiple of 28
    ("page_1000x1400", "page", 1000, 1400),  # a portrait page, inside the default budget
    ("page_2480x3508", "page", 2480, 3508),  # A4 at 300 dpi: above the default max_pixels
    ("syn_600x2", "synthetic", 600, 2),      # aspect ratio above 200 after the upscale: refused
    ("syn_5700x28", "synthetic", 5700, 28),  # aspect 203.6: refused
]

PNGS = ["photo_320x240", "photo_181x263", "photo_512x128", "photo_64x48", "doc_600x780",
        "doc_300x1000", "photo_800x533", "doc_1240x1754"]

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

CONFIGS = {
    # The shape GLM-OCR's folder has (Glm46V processor, CLIP mean/std, size with the pixel budget).
    "glm_ocr": {
        "size": {"shortest_edge": 12544, "longest_edge": 9633792},
        "do_rescale": True, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
        "image_processor_type": "Glm46VImageProcessor", "processor_class": "Glm46VProcessor",
    },
    # A small budget so that most test images are scaled up or down.
    "small_budget": {
        "size": {"shortest_edge": 80000, "longest_edge": 180000},
        "do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 0.00392156862745098,
        "do_normalize": True, "do_convert_rgb": True,
        "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
        "image_processor_type": "Glm46VImageProcessor",
    },
}


def to_numpy(t):
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    return np.asarray(t)


def write_folder(root, name, preprocessor, model_type="glm_ocr"):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": model_type, "architectures": ["GlmOcrForConditionalGeneration"]}, f)
    if preprocessor is not None:
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(preprocessor, f)
    return d


def picks(work, info):
    from transformers import AutoImageProcessor
    out = {}
    base = dict(CONFIGS["glm_ocr"])
    variants = {
        "type Glm46VImageProcessor": base,
        "type Glm4vImageProcessor": dict(base, image_processor_type="Glm4vImageProcessor"),
        "type Glm46VImageProcessorFast": dict(base, image_processor_type="Glm46VImageProcessorFast"),
        "no type (model_type glm_ocr)": {k: v for k, v in base.items() if k != "image_processor_type"},
        "min_pixels/max_pixels, no size": dict({k: v for k, v in base.items() if k != "size"},
                                               min_pixels=20000, max_pixels=400000),
    }
    for i, (label, cfg) in enumerate(variants.items()):
        d = write_folder(work, f"pick{i}", cfg)
        row = {}
        for how, kwargs in [("default", {}), ("use_fast=False", {"use_fast": False}), ("backend=pil", {"backend": "pil"})]:
            try:
                p = AutoImageProcessor.from_pretrained(d, **kwargs)
                row[how] = (f"{type(p).__name__} backend={getattr(p, 'backend', '?')} size={p.size}"
                            f" min_pixels={getattr(p, 'min_pixels', None)} max_pixels={getattr(p, 'max_pixels', None)}")
                if how == "default" and "min_pixels" in label:
                    g = p(np.zeros((600, 900, 3), np.uint8), return_tensors="pt")["image_grid_thw"].tolist()
                    row["grid_of_900x600"] = g
            except Exception as e:  # noqa: BLE001
                row[how] = "ERROR " + type(e).__name__ + ": " + str(e)[:300]
        out[label] = row
        print("pick", label, json.dumps(row), flush=True)
    info["picks"] = out
    try:
        import transformers.models.auto.image_processing_auto as auto_mod
        names = getattr(auto_mod, "IMAGE_PROCESSOR_MAPPING_NAMES", {})
        info["auto_mapping"] = {k: str(names.get(k)) for k in ("glm_ocr", "glm46v", "glm4v")}
        print("auto mapping:", info["auto_mapping"], flush=True)
    except Exception as e:  # noqa: BLE001
        print("auto mapping lookup failed", e, flush=True)


def preprocess_cases(repo, work, info, debug):
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor

    images = {}
    for name in PNGS:
        img = Image.open(os.path.join(repo, "tests/fixtures/images/preprocess", name + ".png"))
        img.load()
        images[name] = img.convert("RGB")
    for name, kind, w, h in SYNTHETIC:
        arr = synthetic(w, h) if kind == "synthetic" else page(w, h)
        images[name] = Image.fromarray(arr, "RGB")
        info.setdefault("synthetic_sha256", {})[name] = sha256(arr.tobytes())

    cases = []
    for cfg_name, cfg in CONFIGS.items():
        d = write_folder(work, "cfg_" + cfg_name, cfg)
        procs = {}
        procs["default"] = AutoImageProcessor.from_pretrained(d)
        try:
            p = AutoImageProcessor.from_pretrained(d, backend="pil")
            if getattr(p, "backend", None) != "pil":
                raise RuntimeError(f"backend=pil gave {type(p).__name__} backend={getattr(p, 'backend', '?')}")
            procs["pil"] = p
        except Exception as e:  # noqa: BLE001
            print("backend=pil failed:", e, flush=True)
            for cls_name in ("Glm46VImageProcessorPil", "Glm4vImageProcessorPil"):
                cls = getattr(transformers, cls_name, None)
                if cls is not None:
                    procs["pil"] = cls.from_pretrained(d)
                    break
        for backend, proc in procs.items():
            print(cfg_name, backend, type(proc).__name__, getattr(proc, "backend", "?"), flush=True)
            for name, img in images.items():
                case = {"config": cfg_name, "backend": backend, "class": type(proc).__name__, "image": name,
                        "width": img.size[0], "height": img.size[1]}
                try:
                    out = proc(img, return_tensors="pt")
                    raw = proc(img, do_rescale=False, do_normalize=False, return_tensors="pt")
                except Exception as e:  # noqa: BLE001
                    case["error"] = type(e).__name__ + ": " + str(e)[:300]
                    print("  ", name, "ERROR", case["error"], flush=True)
                    cases.append(case)
                    continue
                pv = to_numpy(out["pixel_values"]).astype(np.float32)
                rv = to_numpy(raw["pixel_values"])
                case["raw_dtype"] = str(rv.dtype)
                rv = rv.astype(np.float32)
                grid = [int(v) for v in to_numpy(out["image_grid_thw"]).reshape(-1)]
                case["grid_thw"] = grid
                case["shape"] = list(pv.shape)
                case["float_sha256"] = sha256(pv.astype("<f4").tobytes())
                case["raw_sha256"] = sha256(rv.astype("<f4").tobytes())
                flat = pv.reshape(-1)
                case["samples"] = [[int(p), float(flat[p])] for p in sample_positions(flat.size)]
                # both temporal halves of every row are the same frame
                r = pv.reshape(pv.shape[0], 3, 2, -1)
                case["temporal_copies_equal"] = bool(np.array_equal(r[:, :, 0], r[:, :, 1]))
                cases.append(case)
                print("  ", name, img.size, "grid", grid, "shape", list(pv.shape), flush=True)
                if pv.size <= 60000:
                    debug[f"{cfg_name}.{backend}.{name}.f32"] = pv.astype("<f4").tobytes()
                    debug[f"{cfg_name}.{backend}.{name}.raw.f32"] = rv.astype("<f4").tobytes()
        # backend gap
        if "default" in procs and "pil" in procs:
            worst = 0.0
            for name in images:
                a = debug.get(f"{cfg_name}.default.{name}.f32")
                b = debug.get(f"{cfg_name}.pil.{name}.f32")
                if a and b and len(a) == len(b):
                    worst = max(worst, float(np.max(np.abs(np.frombuffer(a, "<f4") - np.frombuffer(b, "<f4")))))
            info.setdefault("backend_gap_float_max_abs", {})[cfg_name] = worst
            print(cfg_name, "backend gap (float max abs over small cases):", worst, flush=True)
    return cases


def rope_cases(info):
    import torch
    from transformers import GlmOcrConfig
    from transformers.models.glm_ocr import modeling_glm_ocr as mg

    model = None
    try:
        cfg = GlmOcrConfig(
            text_config=dict(vocab_size=59392, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=2, num_key_value_heads=1, head_dim=16),
            vision_config=dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=64, out_hidden_size=32,
                               spatial_merge_size=2, patch_size=14, temporal_patch_size=2),
        )
        torch.manual_seed(0)
        model = mg.GlmOcrModel(cfg).eval()
        info["rope_model"] = "GlmOcrModel(tiny config), randomly initialised"
    except Exception as e:  # noqa: BLE001
        print("tiny GlmOcrModel failed, calling get_rope_index unbound:", e, flush=True)
        traceback.print_exc()
        ns = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=types.SimpleNamespace(spatial_merge_size=2)))
        ns.get_vision_position_ids = types.MethodType(mg.GlmOcrModel.get_vision_position_ids, ns)
        model = types.SimpleNamespace(get_rope_index=types.MethodType(mg.GlmOcrModel.get_rope_index, ns))
        info["rope_model"] = "GlmOcrModel.get_rope_index unbound (tiny model failed)"
    try:  # printed for the record (not written into the fixtures)
        print(inspect.getsource(mg.GlmOcrModel.get_rope_index), flush=True)
    except Exception:  # noqa: BLE001
        pass

    from transformers.models.glm46v.processing_glm46v import Glm46VProcessor
    IMG, BEG, END = 59280, 59256, 59257
    proc_ns = types.SimpleNamespace(video_start_id=59258, video_end_id=59259, image_token_id=IMG)

    def text(n, base=100):
        return [base + i for i in range(n)]

    def image(t, h, w):
        return [BEG] + [IMG] * (t * h * w // 4) + [END]

    prompts = {
        "one_image_6x10": ([59248, 59250, 59253, 10] + image(1, 6, 10) + [3649, 7404, 49600, 58, 59254, 10],
                           [[1, 6, 10]]),
        "two_images_4x8_10x6": (text(3) + image(1, 4, 8) + text(5, 300) + image(1, 10, 6) + text(4, 500),
                                [[1, 4, 8], [1, 10, 6]]),
        "image_first_8x4": (image(1, 8, 4) + text(2), [[1, 8, 4]]),
        "text_only": (text(9), None),
        # the real OCR prompt for a 1000x1400 page under the default budget: grid [1, 100, 72]
        "ocr_page_100x72": ([59248, 59250, 59253, 10] + image(1, 100, 72) + [3649, 7404, 49600, 58, 59254, 10],
                            [[1, 100, 72]]),
    }
    out = {}
    for name, (ids, grids) in prompts.items():
        mm = Glm46VProcessor.create_mm_token_type_ids(proc_ns, [ids])[0]
        input_ids = torch.tensor([ids], dtype=torch.long)
        mm_t = torch.tensor([mm], dtype=torch.int)
        g = torch.tensor(grids, dtype=torch.long) if grids else None
        try:
            pos, delta = model.get_rope_index(input_ids, mm_token_type_ids=mm_t, image_grid_thw=g)
        except Exception as e:  # noqa: BLE001
            out[name] = {"error": type(e).__name__ + ": " + str(e)[:300]}
            print("rope", name, "ERROR", out[name], flush=True)
            continue
        pos = pos[:, 0].tolist()
        entry = {"input_ids": ids, "grids": grids, "mm_token_type_ids": mm, "delta": int(delta.reshape(-1)[0])}
        if len(ids) <= 400:
            entry["positions"] = pos
        else:
            flat = np.asarray(pos, dtype=np.int64)
            entry["positions_sha256"] = sha256(flat.astype("<i8").tobytes())
            entry["positions_head"] = [row[:12] for row in pos]
            entry["positions_tail"] = [row[-12:] for row in pos]
        out[name] = entry
        print("rope", name, "len", len(ids), "delta", entry["delta"], flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=".")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import PIL
    import torch
    import torchvision
    import transformers
    info = {"transformers": transformers.__version__, "torch": torch.__version__,
            "torchvision": torchvision.__version__, "pillow": PIL.__version__, "numpy": np.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    print("versions:", json.dumps(info), flush=True)
    work = tempfile.mkdtemp()
    debug = {}
    sources = io.StringIO()
    for mod_name, attrs in [("transformers.models.glm46v.image_processing_glm46v", ["Glm46VImageProcessor"]),
                            ("transformers.models.glm46v.image_processing_pil_glm46v", ["Glm46VImageProcessorPil"]),
                            ("transformers.image_processing_backends", ["TorchvisionBackend", "PilBackend"])]:
        try:
            mod = __import__(mod_name, fromlist=["x"])
            for a in attrs:
                if hasattr(mod, a):
                    sources.write(f"\n#### {mod_name}.{a}\n" + inspect.getsource(getattr(mod, a)))
        except Exception as e:  # noqa: BLE001
            sources.write(f"\n#### {mod_name}: {e}\n")
    with open(os.path.join(args.out, "sources.txt"), "w") as f:
        f.write(sources.getvalue())

    try:
        picks(work, info)
    except Exception:  # noqa: BLE001
        traceback.print_exc()

    expected = {"info": info, "configs": CONFIGS, "synthetic": SYNTHETIC, "cases": []}
    try:
        expected["cases"] = preprocess_cases(args.repo, work, info, debug)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    with open(os.path.join(args.out, "preprocess_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)

    try:
        rope = rope_cases(info)
        with open(os.path.join(args.out, "rope_expected.json"), "w") as f:
            json.dump({"info": {k: info[k] for k in ("transformers", "torch", "rope_model") if k in info},
                       "cases": rope}, f)
    except Exception:  # noqa: BLE001
        traceback.print_exc()

    with tarfile.open(os.path.join(args.out, "debug.tar.gz"), "w:gz") as tar:
        for name, data in debug.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    print("done", flush=True)


if __name__ == "__main__":
    main()
