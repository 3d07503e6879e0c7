#!/usr/bin/env python3
"""PyTorch + transformers baseline for inferencelayer's benchmarks.

Builds a model from a real model's config.json with random weights (no download), then times
`torch.inference_mode()` forwards on random token ids for each batch x length point and prints one
JSON line per point:

  {"impl": "torch", "model", "device", "dtype", "attn", "threads", "batch", "len",
   "p50_ms", "p90_ms", "tokens_per_s", ...}

Example:
  python3 bench/torch_bench.py --config bench/configs/bge-base.json --device cuda --dtype fp16 \
      --attn sdpa --grid 1x16,32x128,128x256 --mixed 32:8:512

Fixed-shape points use no padding (all-ones mask). A --mixed B:min:max point draws B random lengths
in [min, max], pads them to the longest (as PyTorch users must) and counts only the real tokens in
tokens_per_s. Timing: CUDA events around each forward (synchronised); CPU: perf_counter.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def parse_grid(s):
    points = []
    for item in s.split(","):
        item = item.strip()
        if not item:
            continue
        b, l = item.lower().split("x")
        points.append((int(b), int(l)))
    return points


def parse_mixed(s):
    parts = [int(v) for v in s.split(":")]
    if len(parts) != 3 or not (1 <= parts[1] <= parts[2]) or parts[0] < 1:
        raise argparse.ArgumentTypeError("--mixed wants B:min:max with 1 <= min <= max")
    return tuple(parts)


def nomic_release_to_transformers(d):
    """nomic-embed-text's release config (the contrib class's GPT2-style names) in the names of
    transformers' own NomicBertConfig, which would otherwise ignore them and keep its defaults."""
    act = {"swiglu": "silu", "geglu": "gelu"}.get(d.get("activation_function"), d.get("activation_function", "gelu"))
    return {
        "architectures": ["NomicBertModel"],
        "vocab_size": d["vocab_size"],
        "hidden_size": d["n_embd"],
        "num_hidden_layers": d["n_layer"],
        "num_attention_heads": d["n_head"],
        "intermediate_size": d.get("n_inner") or 4 * d["n_embd"],
        "hidden_act": act,
        "layer_norm_eps": d.get("layer_norm_epsilon", 1e-12),
        "type_vocab_size": d.get("type_vocab_size", 2),
        "max_position_embeddings": d.get("n_positions", 2048),
        "rope_parameters": {"rope_type": "default", "rope_theta": float(d.get("rotary_emb_base", 1000))},
    }


def load_config(path, attn):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")}
    model_type = d.pop("model_type")
    if model_type == "nomic_bert" and "n_embd" in d:
        d = nomic_release_to_transformers(d)
    archs = d.get("architectures") or []
    cfg = AutoConfig.for_model(model_type, **d)
    try:
        cfg._attn_implementation = attn
    except Exception:
        cfg._attn_implementation_internal = attn
    return cfg, (archs[0] if archs else "")


def build_model(cfg, arch, device, dtype, attn):
    cls = AutoModelForSequenceClassification if arch.endswith("ForSequenceClassification") else AutoModel
    # Construct straight on the target device: random init of a 560M-parameter model on the CPU
    # takes longer than the whole benchmark.
    with torch.device(device):
        try:
            model = cls.from_config(cfg, attn_implementation=attn)
        except TypeError:
            model = cls.from_config(cfg)
        except ValueError as e:
            # An architecture without an SDPA path in transformers (DebertaV2 in 5.17) runs its
            # eager attention: that is PyTorch's best for it, and the records say so ("attn").
            if attn != "sdpa" or "scaled_dot_product_attention" not in str(e):
                raise
            print(json.dumps({"warning": f"{cfg.model_type}: no SDPA in transformers, eager attention"}),
                  file=sys.stderr, flush=True)
            cfg._attn_implementation = "eager"
            model = cls.from_config(cfg, attn_implementation="eager")
    model = model.to(device=device, dtype=dtype).eval()
    got = getattr(model.config, "_attn_implementation", None)
    if got != attn:
        print(json.dumps({"warning": f"attention implementation is {got!r}, asked for {attn!r}"}),
              file=sys.stderr, flush=True)
    return model


def position_limit(cfg):
    """Longest sequence the position table allows (XLM-R numbers positions from pad_token_id + 1)."""
    limit = int(getattr(cfg, "max_position_embeddings", 512))
    if getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= int(getattr(cfg, "pad_token_id", 1) or 0) + 1
    return limit


def random_inputs(cfg, lengths, device, gen):
    """Random ids (never a special/pad id), right-padded to the longest length."""
    B, L = len(lengths), max(lengths)
    vocab = int(cfg.vocab_size)
    pad = int(getattr(cfg, "pad_token_id", 0) or 0)
    ids = torch.randint(5, vocab, (B, L), generator=gen, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        ids[i, n:] = pad
    inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if int(getattr(cfg, "type_vocab_size", 0) or 0) > 0:
        inputs["token_type_ids"] = torch.zeros((B, L), dtype=torch.long, device=device)
    return inputs


def time_forward(model, inputs, device, warmup, iters):
    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            model(**inputs)
        if device == "cuda":
            torch.cuda.synchronize()
            for _ in range(iters):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                model(**inputs)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
        else:
            for _ in range(iters):
                t0 = time.perf_counter()
                model(**inputs)
                times.append((time.perf_counter() - t0) * 1e3)
    return np.asarray(times, dtype=np.float64)


def main():
    ap = argparse.ArgumentParser(description="PyTorch/transformers forward-pass benchmark on random weights")
    ap.add_argument("--config", required=True, help="config.json of the model to imitate")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--grid", default="1x16,1x64,32x128", help="comma list of BxL points")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--mixed", type=parse_mixed, default=None, metavar="B:MIN:MAX",
                    help="add a padded point of B random lengths in [MIN, MAX]")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 for fp32 matmuls on CUDA")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default=None, help="model name in the output (default: config file stem)")
    args = ap.parse_args()

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_bench: --device cuda but CUDA is not available")
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    name = args.name or Path(args.config).stem
    cfg, arch = load_config(args.config, args.attn)
    dtype = DTYPES[args.dtype]
    model = build_model(cfg, arch, args.device, dtype, args.attn)
    attn_used = getattr(model.config, "_attn_implementation", None) or args.attn
    limit = position_limit(cfg)
    env = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
        "arch": arch or cfg.model_type,
    }
    print(json.dumps({"env": env}), file=sys.stderr, flush=True)

    points = [(b, [l] * b, False) for b, l in parse_grid(args.grid)]
    if args.mixed:
        B, lo, hi = args.mixed
        rng = np.random.default_rng(args.seed)
        points.append((B, [int(v) for v in rng.integers(lo, hi + 1, size=B)], True))

    for b, lengths, mixed in points:
        L = max(lengths)
        base = {"impl": "torch", "model": name, "device": args.device, "dtype": args.dtype, "attn": attn_used,
                "threads": threads, "batch": b, "len": L}
        if L > limit:
            print(json.dumps({**base, "skipped": f"length {L} exceeds the position table ({limit})"}), flush=True)
            continue
        inputs = random_inputs(cfg, lengths, args.device, gen)
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            t = time_forward(model, inputs, args.device, args.warmup, args.iters)
        except torch.cuda.OutOfMemoryError as e:
            print(json.dumps({**base, "skipped": f"out of memory: {e}".splitlines()[0]}), flush=True)
            torch.cuda.empty_cache()
            continue
        real = int(sum(lengths))
        p50 = float(np.percentile(t, 50))
        rec = {
            **base,
            "p50_ms": round(p50, 4),
            "p90_ms": round(float(np.percentile(t, 90)), 4),
            "p99_ms": round(float(np.percentile(t, 99)), 4),
            "mean_ms": round(float(t.mean()), 4),
            "tokens_per_s": round(real / (p50 / 1e3), 1),
            "iters": int(args.iters),
        }
        if mixed:
            rec["mixed"] = True
            rec["real_tokens"] = real
            rec["min_len"] = int(min(lengths))
        if args.device == "cuda":
            rec["peak_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
