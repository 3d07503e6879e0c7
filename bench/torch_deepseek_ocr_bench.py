#!/usr/bin/env python3
"""transformers' DeepSeek-OCR-2 decoding speed on random weights: the PyTorch side of
`inferencelayer bench-generate --text-tokens` (issue #26). Same config, text-only prompts of the
same length (the decoder alone: the mixture of experts through the KV cache), `generate` in the
given dtype with SDPA attention, exactly N new tokens, P prompts batched. JSON lines shaped like
bench-generate's:

    python3 bench/torch_deepseek_ocr_bench.py --config bench/configs/deepseek-ocr2.json --dtype bf16 \
        --text-tokens 64 --pages 1,64 --new-tokens 128

Per point: time to first token (generate with one new token), the decode rate
P·(N−1) / (T(N) − T(1)), the wall time of the N-token run.

With --views (bench-generate's option: view sides in SAM patches, tiles first, then the global
view; 64 = a 1024-pixel page, 48,48,64 = two 768-pixel tiles and the global view) the prompts are
pages instead: random pixel_values (+ pixel_values_local, num_local_patches), the image token
repeated for the page's rows, and the vision tower alone is timed too (vision_ms_per_page: the
P pages' get_image_features, divided by P).
"""
import argparse
import json
import time
from pathlib import Path

import torch
import transformers
from transformers import DeepseekOcr2Config, DeepseekOcr2ForConditionalGeneration

DTYPES = {"fp32": torch.float32, "f32": torch.float32, "fp16": torch.float16, "f16": torch.float16,
          "bf16": torch.bfloat16}


def build(path, dtype):
    d = {k: v for k, v in json.loads(Path(path).read_text()).items() if not k.startswith("_")}
    cfg = DeepseekOcr2Config(**d)
    for c in (cfg, cfg.text_config, cfg.vision_config, cfg.vision_config.sam_config, cfg.vision_config.encoder_config):
        c._attn_implementation = "sdpa"
    torch.set_default_dtype(dtype)
    with torch.device("cuda"):
        model = DeepseekOcr2ForConditionalGeneration(cfg)
    torch.set_default_dtype(torch.float32)
    return cfg, model.eval()


@torch.no_grad()
def timed_generate(model, ids, n, extra=None):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                         do_sample=False, eos_token_id=None, pad_token_id=0, **(extra or {}))
    torch.cuda.synchronize()
    assert out.shape[1] == ids.shape[1] + n, out.shape
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--text-tokens", type=int, default=64)
    ap.add_argument("--pages", default="1,64")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--views", default="")
    a = ap.parse_args()
    dtype = DTYPES[a.dtype]
    cfg, model = build(a.config, dtype)
    g = torch.Generator(device="cuda").manual_seed(7)
    sides = [int(v) for v in a.views.split(",")] if a.views else []
    patch = cfg.vision_config.sam_config.patch_size
    for pages in [int(p) for p in a.pages.split(",")]:
        extra, point = {}, {}
        if sides:
            glob, tiles = sides[-1], sides[:-1]
            queries = lambda side: (((side - 1) // 2) // 2 + 1) ** 2  # after SAM's two stride-2 convolutions
            rows = sum(queries(t) for t in tiles) + queries(glob) + 1
            text = torch.randint(100, 100000, (pages, 8), generator=g, device="cuda")
            image = torch.full((pages, rows), cfg.image_token_id, device="cuda")
            ids = torch.cat([torch.zeros((pages, 1), dtype=text.dtype, device="cuda"), image, text], dim=1)
            extra["pixel_values"] = torch.randn((pages, 3, glob * patch, glob * patch), generator=g, device="cuda",
                                                dtype=dtype)
            if tiles:
                assert len(set(tiles)) == 1, "tiles of one size"
                extra["pixel_values_local"] = torch.randn((pages * len(tiles), 3, tiles[0] * patch, tiles[0] * patch),
                                                          generator=g, device="cuda", dtype=dtype)
                extra["num_local_patches"] = [len(tiles)] * pages
            with torch.no_grad():
                model.model.get_image_features(**extra)  # warm-up
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                model.model.get_image_features(**extra)
                torch.cuda.synchronize()
            point["views"] = a.views
            point["vision_ms_per_page"] = (time.perf_counter() - t0) * 1000.0 / pages
        else:
            ids = torch.randint(100, 100000, (pages, a.text_tokens), generator=g, device="cuda")
        timed_generate(model, ids, 2, extra)  # warm-up: kernels, allocator
        t1 = timed_generate(model, ids, 1, extra)
        tn = timed_generate(model, ids, a.new_tokens, extra)
        rate = pages * (a.new_tokens - 1) / max(tn - t1, 1e-9)
        print(json.dumps({"engine": "transformers", "transformers": transformers.__version__, "dtype": a.dtype,
                          "pages": pages, **point, "prompt_tokens": ids.shape[1], "new_tokens": a.new_tokens,
                          "ttft_ms_mean": t1 * 1000.0, "decode_tokens_per_s": rate, "wall_s": tn,
                          "pages_per_min": pages / tn * 60.0}), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
