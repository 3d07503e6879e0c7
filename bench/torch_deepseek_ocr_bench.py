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
def timed_generate(model, ids, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                         do_sample=False, eos_token_id=None, pad_token_id=0)
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
    a = ap.parse_args()
    dtype = DTYPES[a.dtype]
    cfg, model = build(a.config, dtype)
    g = torch.Generator(device="cuda").manual_seed(7)
    for pages in [int(p) for p in a.pages.split(",")]:
        ids = torch.randint(100, 100000, (pages, a.text_tokens), generator=g, device="cuda")
        timed_generate(model, ids, 2)  # warm-up: kernels, allocator
        t1 = timed_generate(model, ids, 1)
        tn = timed_generate(model, ids, a.new_tokens)
        rate = pages * (a.new_tokens - 1) / max(tn - t1, 1e-9)
        print(json.dumps({"engine": "transformers", "transformers": transformers.__version__, "dtype": a.dtype,
                          "pages": pages, "prompt_tokens": a.text_tokens, "new_tokens": a.new_tokens,
                          "ttft_ms_mean": t1 * 1000.0, "decode_tokens_per_s": rate, "wall_s": tn}), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
