#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's GLM-OCR (model_type "glm_ocr",
GlmOcrForConditionalGeneration), produced by `transformers`.

A tiny random-weight GlmOcrForConditionalGeneration folder and what transformers computes for a
few prompts with images: the vision tower's merger rows, the M-RoPE position ids and rope delta,
the logits of the prompt's last position, and greedy continuations (plain, with a repetition
penalty, with no_repeat_ngram_size). Committed under tests/fixtures/glm-ocr so CI (no Python ML
stack) checks the C++ backends against it.

Run on a machine with torch, transformers 5.x and safetensors:

    python3 tools/oracle/make_glm_ocr_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed.

Geometry (every size differs from the others so a swapped dimension shows):
  text: vocab 256, hidden 48, 2 layers, 4 heads of head_dim 32 (4 x 32 = 128 != hidden), 2 KV
        heads, intermediate 80, rms eps 1e-5, rope theta 10000, partial_rotary_factor 0.5 (16
        rotary dims, 8 frequencies), mrope_section [2, 3, 3], untied lm_head.
  vision: depth 2, hidden 64, 2 heads (head_dim 32), intermediate 96, out_hidden 48 (= text
        hidden), patch 4, temporal patch 2, merge 2, 3 channels: patch rows of 3*2*4*4 = 96.
  ids: [gMASK] 240, <sop> 241, <|user|> 242, <|assistant|> 243, end ids 244 and 245,
       <|begin_of_image|> 248, <|end_of_image|> 249, <|image|> 250, video 251 / 252 / 253.
The saved checkpoint also holds two tensors of a multi-token-prediction layer
(model.language_model.layers.2.*, one past num_hidden_layers, as the released checkpoint's
layers.16), which transformers ignores on load and so must the engine.

Every parameter is random (norm weights 1 + 0.2 N, embeddings 0.5 N, matrices and convolutions
1.2 N / sqrt(fan_in), biases 0.2 N). Pixel rows are N(0, 1) ROUNDED TO 4 DECIMALS before
transformers sees them, so the committed values are exactly the inputs.

expected.json: {"cases": [{name, input_ids, mm_token_type_ids, image_grid_thw [[t,h,w]...],
pixel_values [[96 values] per patch row], vision [[48] per merged row], position_ids [3][L],
rope_delta, last_logits [256], greedy [20], greedy_repetition_penalty_1_3 [20],
greedy_no_repeat_ngram_2 [20]}], "generation": {...}}.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import transformers  # noqa: E402
from transformers import GlmOcrConfig, GlmOcrForConditionalGeneration  # noqa: E402

SEED = 2323
VOCAB = 256
GMASK, SOP, USER, ASSISTANT = 240, 241, 242, 243
END_IDS = [244, 245]
IMG_START, IMG_END, IMG = 248, 249, 250
NEW_TOKENS = 20


def f9(x):
    return float(f"{float(x):.9g}")


def flist(a):
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 1:
        return [f9(v) for v in a.tolist()]
    return [flist(r) for r in a]


def write_json(p, obj):
    with open(p, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def glm_config():
    text = dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, hidden_act="silu", max_position_embeddings=1024,
                rms_norm_eps=1e-5, pad_token_id=0,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                                 "mrope_section": [2, 3, 3]})
    vision = dict(depth=2, hidden_size=64, num_heads=2, intermediate_size=96, out_hidden_size=48, patch_size=4,
                  temporal_patch_size=2, spatial_merge_size=2, in_channels=3, rms_norm_eps=1e-5, hidden_act="silu",
                  attention_bias=True)
    cfg = GlmOcrConfig(text_config=text, vision_config=vision, image_token_id=IMG, image_start_token_id=IMG_START,
                       image_end_token_id=IMG_END, video_token_id=251, video_start_token_id=252,
                       video_end_token_id=253, tie_word_embeddings=False)
    cfg.architectures = ["GlmOcrForConditionalGeneration"]
    for c in (cfg, cfg.text_config, cfg.vision_config):
        c._attn_implementation = "eager"
    return cfg


def is_norm(name):
    return "norm" in name.lower()


@torch.no_grad()
def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    names = []
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if is_norm(name):
            v = 1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r
        elif "embed_tokens" in name:
            v = 0.5 * r
        elif p.dim() >= 2:
            v = r * (1.2 / math.sqrt(p[0].numel()))
        else:
            v = 0.2 * r
        p.copy_(v.to(p.dtype))
        names.append(name)
    for name, p in model.named_parameters():
        if p.numel() > 1 and bool(torch.all(p == p.flatten()[0])):
            raise AssertionError(f"{name} is constant after randomize")
    return names


def image_rows(grid, g):
    t, h, w = grid
    x = torch.randn((t * h * w, 96), generator=g, dtype=torch.float32)
    return torch.round(x * 10000.0) / 10000.0


def image_run(grid):
    t, h, w = grid
    return [IMG_START] + [IMG] * (t * h * w // 4) + [IMG_END]


def cases(g):
    out = []
    # A page: one image (non-square grid), a task prompt, the generation prompt.
    out.append(("page", [GMASK, SOP, USER, 10] + image_run([1, 4, 6]) + [31, 32, 33, 34, ASSISTANT, 10], [[1, 4, 6]]))
    # A tall image (h > w) and a longer task text.
    out.append(("tall", [GMASK, SOP, USER, 10] + image_run([1, 8, 4]) + [40, 41, 42, 43, 44, 45, 46, ASSISTANT, 10],
                [[1, 8, 4]]))
    # Two images with text between them: two position jumps.
    out.append(("two_images", [GMASK, SOP, USER, 10] + image_run([1, 4, 4]) + [50, 51] + image_run([1, 4, 6]) +
                [52, ASSISTANT, 10], [[1, 4, 4], [1, 4, 6]]))
    # Text only: plain positions on all three axes.
    out.append(("text", [GMASK, SOP, USER, 60, 61, 62, 63, 64, ASSISTANT, 10], []))
    result = []
    for name, ids, grids in out:
        rows = torch.cat([image_rows(gr, g) for gr in grids]) if grids else None
        result.append((name, ids, grids, rows))
    return result


@torch.no_grad()
def greedy(model, inputs, **kw):
    gen = model.generate(**inputs, max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=None, pad_token_id=0,
                         **kw)
    n = inputs["input_ids"].shape[1]
    toks = gen[0, n:].tolist()
    assert len(toks) == NEW_TOKENS, (len(toks), kw)
    return toks


@torch.no_grad()
def build(out):
    d = out / "glm-ocr"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    cfg = glm_config()
    torch.manual_seed(SEED)
    model = GlmOcrForConditionalGeneration(cfg)
    names = randomize(model, SEED)
    model.eval()
    model.generation_config.eos_token_id = END_IDS
    model.generation_config.pad_token_id = 0
    model.save_pretrained(str(d))
    print("parameters randomized:", len(names), flush=True)
    print("config.json:\n" + (d / "config.json").read_text(), flush=True)
    print("generation_config.json:\n" + (d / "generation_config.json").read_text(), flush=True)
    q = model.model.language_model.layers[0].self_attn.q_proj.weight
    print("q_proj", tuple(q.shape), "lm_head", tuple(model.lm_head.weight.shape), flush=True)
    assert tuple(q.shape) == (128, 48), q.shape

    # The multi-token-prediction layer of the released checkpoint, imitated: a layer past
    # num_hidden_layers that transformers ignores (and so must the engine).
    from safetensors.torch import load_file, save_file
    st = load_file(str(d / "model.safetensors"))
    print("checkpoint tensors:", len(st), sorted(st)[:8], "...", flush=True)
    gmtp = torch.Generator().manual_seed(SEED + 9)
    st["model.language_model.layers.2.eh_proj.weight"] = torch.randn((48, 96), generator=gmtp)
    st["model.language_model.layers.2.enorm.weight"] = torch.randn((48,), generator=gmtp)
    save_file(st, str(d / "model.safetensors"), metadata={"format": "pt"})
    cfgj = json.loads((d / "config.json").read_text())
    cfgj["inferencelayer_random_weights"] = True
    write_json(d / "config.json", cfgj)

    hf = GlmOcrForConditionalGeneration.from_pretrained(str(d), dtype=torch.float32, attn_implementation="eager")
    hf.eval()
    for (n1, p1), (n2, p2) in zip(sorted(model.state_dict().items()), sorted(hf.state_dict().items())):
        assert n1 == n2 and torch.equal(p1, p2), (n1, n2)

    g = torch.Generator().manual_seed(SEED + 1)
    records = []
    for name, ids, grids, rows in cases(g):
        input_ids = torch.tensor([ids])
        mm = (input_ids == IMG).to(torch.int32)
        inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), mm_token_type_ids=mm)
        rec = dict(name=name, input_ids=ids, mm_token_type_ids=mm[0].tolist(), image_grid_thw=grids)
        if grids:
            thw = torch.tensor(grids)
            inputs.update(pixel_values=rows, image_grid_thw=thw)
            rec["pixel_values"] = [[float(f"{v:.4f}") for v in r] for r in rows.tolist()]
            feats = hf.model.get_image_features(rows, thw).pooler_output
            vis = torch.cat(list(feats), dim=0)
            assert vis.shape[0] == sum(t * h * w // 4 for t, h, w in grids), vis.shape
            rec["vision"] = flist(vis.numpy())
            pos, delta = hf.model.get_rope_index(input_ids, mm_token_type_ids=mm, image_grid_thw=thw)
        else:
            pos = torch.arange(len(ids)).view(1, 1, -1).expand(3, 1, -1)
            delta = torch.zeros(1, 1, dtype=torch.long)
        rec["position_ids"] = pos[:, 0].tolist()
        rec["rope_delta"] = int(delta.flatten()[0])
        hf.model.rope_deltas = None
        logits = hf(**inputs).logits[0, -1]
        hf.model.rope_deltas = None
        rec["last_logits"] = flist(logits.numpy())
        rec["greedy"] = greedy(hf, inputs)
        # The first greedy token is the argmax of the prompt's last logits.
        assert rec["greedy"][0] == int(torch.argmax(logits)), (rec["greedy"][0], int(torch.argmax(logits)))
        rec["greedy_repetition_penalty_1_3"] = greedy(hf, inputs, repetition_penalty=1.3)
        rec["greedy_no_repeat_ngram_2"] = greedy(hf, inputs, no_repeat_ngram_size=2)
        print(f"{name}: {len(ids)} prompt tokens, grids {grids}, delta {rec['rope_delta']}, greedy {rec['greedy']}",
              flush=True)
        print(f"   rp1.3 {rec['greedy_repetition_penalty_1_3']}", flush=True)
        print(f"   nr2   {rec['greedy_no_repeat_ngram_2']}", flush=True)
        records.append(rec)

    # Batch invariance in transformers itself is not checked here (left padding changes the
    # positions path); the engine's own tests batch the cases together.
    expected = dict(
        transformers=transformers.__version__, torch=torch.__version__,
        generation=dict(end_ids=END_IDS, max_new_tokens=NEW_TOKENS, note="greedy runs with eos_token_id=None"),
        cases=records)
    write_json(d / "expected.json", expected)
    total = sum(f.stat().st_size for f in d.iterdir())
    print(f"wrote {d}: {sorted(p.name for p in d.iterdir())}, {total} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)
    torch.set_num_threads(4)
    try:
        build(a.out)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
