#!/usr/bin/env python3
"""transformers' GLM-OCR generation speed on random weights: the PyTorch side of
`inferencelayer bench-generate` (issue #23). Same config, same page (a patch grid of random
normalised pixel rows and the prompt GLM-OCR's processor builds around it), `generate` in the
given dtype with SDPA attention, exactly N new tokens (min_new_tokens = max_new_tokens, no stop),
P pages batched. JSON lines shaped like bench-generate's:

    python3 bench/torch_glm_ocr_bench.py --config bench/configs/glm-ocr.json --dtype bf16 \
        --grid 72x100 --pages 1,64 --new-tokens 128

Per point: time to first token (generate with one new token, wall, synchronised), the decode
rate P·(N−1) / (T(N) − T(1)), the wall time of the N-token run and pages per minute.
"""
import argparse
import json
import time
from pathlib import Path

import torch
import transformers
from transformers import GlmOcrConfig, GlmOcrForConditionalGeneration

DTYPES = {"fp32": torch.float32, "f32": torch.float32, "fp16": torch.float16, "f16": torch.float16,
          "bf16": torch.bfloat16}


def build(path, dtype):
    d = {k: v for k, v in json.loads(Path(path).read_text()).items() if not k.startswith("_")}
    cfg = GlmOcrConfig(**d)
    for c in (cfg, cfg.text_config, cfg.vision_config):
        c._attn_implementation = "sdpa"
    torch.set_default_dtype(dtype)
    with torch.device("cuda"):
        model = GlmOcrForConditionalGeneration(cfg)
    torch.set_default_dtype(torch.float32)
    return cfg, model.eval()


def page_inputs(cfg, gh, gw, pages, dtype):
    v = cfg.vision_config
    merge = v.spatial_merge_size
    dim = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size
    g = torch.Generator(device="cuda").manual_seed(7)
    rows = (torch.rand((gh * gw, dim), generator=g, device="cuda") * 3.94 - 1.79).to(dtype)
    ids = [59248, 59250, 59253, 198, cfg.image_start_token_id] + [cfg.image_token_id] * (gh * gw // (merge * merge))
    ids += [cfg.image_end_token_id, 1178, 47473, 25, 59254, 198]
    input_ids = torch.tensor([ids] * pages, device="cuda")
    return dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                mm_token_type_ids=(input_ids == cfg.image_token_id).to(torch.int32),
                pixel_values=rows.repeat(pages, 1), image_grid_thw=torch.tensor([[1, gh, gw]] * pages, device="cuda"))


@torch.no_grad()
def timed_generate(model, inputs, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(**inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                         pad_token_id=0)
    torch.cuda.synchronize()
    assert out.shape[1] == inputs["input_ids"].shape[1] + n, out.shape
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--grid", default="72x100")
    ap.add_argument("--pages", default="1,64")
    ap.add_argument("--new-tokens", type=int, default=128)
    a = ap.parse_args()
    dtype = DTYPES[a.dtype]
    gh, gw = (int(x) for x in a.grid.split("x"))
    cfg, model = build(a.config, dtype)
    for pages in [int(p) for p in a.pages.split(",")]:
        inputs = page_inputs(cfg, gh, gw, pages, dtype)
        timed_generate(model, inputs, 2)  # warm-up: kernels, allocator
        t1 = timed_generate(model, inputs, 1)
        tn = timed_generate(model, inputs, a.new_tokens)
        rate = pages * (a.new_tokens - 1) / max(tn - t1, 1e-9)
        print(json.dumps({"engine": "transformers", "transformers": transformers.__version__, "dtype": a.dtype,
                          "pages": pages, "grid": a.grid, "prompt_tokens": int(inputs["input_ids"].shape[1]),
                          "new_tokens": a.new_tokens, "ttft_ms_mean": t1 * 1000.0, "decode_tokens_per_s": rate,
                          "wall_s": tn, "pages_per_min": pages / tn * 60.0}), flush=True)
        del inputs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
