#!/usr/bin/env python3
"""PyTorch/transformers image-tower benchmark on random weights (the SigLIP side of issue #22).

Two measurements per batch size, JSON lines on stdout shaped like torch_bench.py's:
  - the tower: SiglipVisionModel (vision tower + attention-pooling head) on random pixel_values
    already on the device, p50 of CUDA-event timings, images per second;
  - end to end ("e2e": true): JPEG bytes in memory -> PIL open + exif_transpose + convert("RGB")
    (what transformers.image_utils.load_image does) -> the image processor transformers picks
    for the folder by default (AutoImageProcessor on a preprocessor_config.json like the Hub's)
    -> the tower -> pooled vectors on the host, wall-clock per batch.

    python3 bench/torch_image_bench.py --config bench/configs/siglip-base-patch16-224.json \
        --dtype fp16 --batches 1,64 [--e2e] [--jpeg 640x480]
"""
import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from PIL import Image, ImageOps
from transformers import AutoImageProcessor, SiglipVisionConfig, SiglipVisionModel

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def vision_config(path, attn):
    d = json.loads(Path(path).read_text())
    v = d.get("vision_config", d)
    cfg = SiglipVisionConfig(**{k: x for k, x in v.items() if k not in ("model_type", "architectures")})
    cfg._attn_implementation = attn
    return cfg


def synthetic_jpegs(n, w, h, seed):
    """Photo-like JPEGs (smooth gradients, noise, edges), quality 90, as a camera or a scan gives."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        base = np.stack([x / w * 255, y / h * 255, (x + y) / (w + h) * 255], axis=-1)
        img = base * rng.uniform(0.5, 1.0, size=3) + rng.normal(0, 18, size=(h, w, 3))
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(0.1, 0.4) * min(w, h)
        img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.uniform(0, 255, size=3)
        buf = io.BytesIO()
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def processor_for(cfg):
    """The processor transformers instantiates for a SigLIP folder with the Hub's preprocessor config."""
    with tempfile.TemporaryDirectory() as d:
        Path(d, "preprocessor_config.json").write_text(json.dumps({
            "do_normalize": True, "do_rescale": True, "do_resize": True,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
            "image_processor_type": "SiglipImageProcessor", "processor_class": "SiglipProcessor",
            "resample": 3, "rescale_factor": 1 / 255,
            "size": {"height": cfg.image_size, "width": cfg.image_size}}))
        return AutoImageProcessor.from_pretrained(d)


def cuda_times(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return np.asarray(times)


def wall_times(fn, warmup, iters, sync):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        if sync:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return np.asarray(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--e2e", action="store_true", help="also time JPEG bytes -> vectors")
    ap.add_argument("--jpeg", default="640x480", help="WxH of the synthetic JPEGs")
    ap.add_argument("--name", default=None)
    ap.add_argument("--save-jpegs", default=None, metavar="DIR",
                    help="write the e2e JPEGs of the largest batch here (for inferencelayer bench --images)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = vision_config(args.config, args.attn)
    dtype = DTYPES[args.dtype]
    model = SiglipVisionModel(cfg).to(args.device, dtype).eval()
    name = args.name or Path(args.config).stem
    n_patches = (cfg.image_size // cfg.patch_size) ** 2
    cuda = args.device == "cuda"
    print(json.dumps({"env": {"torch": torch.__version__, "transformers": transformers.__version__,
                              "gpu": torch.cuda.get_device_name(0) if cuda else None,
                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
                              "threads": torch.get_num_threads()}}), file=sys.stderr, flush=True)
    jw, jh = (int(v) for v in args.jpeg.split("x"))
    processor = processor_for(cfg) if args.e2e else None
    if processor is not None:
        print(json.dumps({"processor": type(processor).__name__}), file=sys.stderr, flush=True)
    for b in (int(v) for v in args.batches.split(",")):
        base = {"impl": "torch", "model": name, "device": args.device, "dtype": args.dtype, "attn": args.attn,
                "threads": torch.get_num_threads(), "batch": b, "len": n_patches, "images": True}
        pixels = torch.randn(b, 3, cfg.image_size, cfg.image_size, device=args.device, dtype=dtype)
        with torch.inference_mode():
            step = lambda: model(pixel_values=pixels).pooler_output
            t = cuda_times(step, args.warmup, args.iters) if cuda else wall_times(step, args.warmup, args.iters, False)
        p50 = float(np.percentile(t, 50))
        print(json.dumps({**base, "p50_ms": round(p50, 4), "p90_ms": round(float(np.percentile(t, 90)), 4),
                          "images_per_s": round(b / (p50 / 1e3), 1), "iters": args.iters}), flush=True)
        if processor is None:
            continue
        jpegs = synthetic_jpegs(b, jw, jh, seed=b)
        if args.save_jpegs:
            Path(args.save_jpegs).mkdir(parents=True, exist_ok=True)
            for i, j in enumerate(jpegs):
                Path(args.save_jpegs, f"img_{i:03d}.jpg").write_bytes(j)

        def e2e():
            imgs = [ImageOps.exif_transpose(Image.open(io.BytesIO(j))).convert("RGB") for j in jpegs]
            pv = processor(images=imgs, return_tensors="pt")["pixel_values"].to(args.device, dtype)
            with torch.inference_mode():
                return model(pixel_values=pv).pooler_output.float().cpu()

        t = wall_times(e2e, 2, max(5, args.iters // 4), cuda)
        p50 = float(np.percentile(t, 50))
        print(json.dumps({**base, "e2e": True, "jpeg": args.jpeg, "p50_ms": round(p50, 4),
                          "images_per_s": round(b / (p50 / 1e3), 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
