#!/usr/bin/env python3
"""Fixture for inferencelayer's GLM-OCR vision tower (models/glm_ocr_vision): a tiny
GlmOcrVisionModel from transformers 5.17 (eager attention, f32) with EVERY parameter randomised
(norm weights around 1, biases non-zero), run on three images in one call with non-square grids
(h/w swaps show) and one of two frames (one attention sequence per frame, as transformers'
cu_seqlens makes them).

Writes into --out:
  config.json, model.safetensors   the model as GlmOcrVisionModel.save_pretrained writes it
  expected.json                    inputs and outputs:
      grid_thw            [[t, h, w], ...]
      pixel_values        [n, C·T·P·P] patch rows in the processor's merge-window order
      patch_embed         patch embedding output [n, hidden] (a forward hook)
      hidden_states_count how many entries output_hidden_states gave (transformers 5.17: one per
                          block and the downsample rows last)
      post_layernorm      post-norm output [n, hidden] (a forward hook)
      last_hidden_state   the 2×2 downsample output [n/4, out_hidden]
      pooler_output       the merger rows [n/4, out_hidden]

    python3 tools/oracle/make_glm_ocr_vision.py --out tests/fixtures/glm-ocr-vision

The committed fixture came from a run (H200 machine, transformers 5.17.0, torch 2.11.0) of this
script when it also recorded two more fields, dropped from expected.json afterwards: the last
entry of output_hidden_states (in 5.17 that is the downsample output again, not a block's) and a
hook on rotary_pos_emb's input (not the position ids in 5.17).
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import transformers


def rows(t):
    # 9 significant digits round-trip an f32 and keep the JSON small.
    return [[float(f"{v:.9g}") for v in r] for r in t.detach().float().reshape(t.shape[0], -1).tolist()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    from transformers.models.glm_ocr.configuration_glm_ocr import GlmOcrVisionConfig
    from transformers.models.glm_ocr.modeling_glm_ocr import GlmOcrVisionModel

    torch.manual_seed(23)
    cfg = GlmOcrVisionConfig(depth=2, hidden_size=64, num_heads=2, intermediate_size=96, out_hidden_size=48,
                             patch_size=4, temporal_patch_size=2, spatial_merge_size=2, in_channels=3,
                             rms_norm_eps=1e-5, hidden_act="silu", attention_bias=True)
    cfg._attn_implementation = "eager"
    model = GlmOcrVisionModel(cfg).eval()
    try:
        model.set_attn_implementation("eager")
    except Exception as e:  # older spelling: the config field set above
        print("set_attn_implementation:", e)
    print("attn implementation:", model.config._attn_implementation, flush=True)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.25 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn_like(p))
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn_like(p) * (1.5 / fan_in ** 0.5))
            print(f"  {name} {tuple(p.shape)}", flush=True)
    model.save_pretrained(str(out))
    print("saved:", sorted(x.name for x in out.iterdir()), flush=True)

    grid = torch.tensor([[1, 4, 6], [1, 6, 4], [2, 2, 4]], dtype=torch.long)
    n = int((grid[:, 0] * grid[:, 1] * grid[:, 2]).sum())
    patch_dim = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size ** 2
    pixel_values = torch.randn(n, patch_dim) * 1.2

    captured = {}
    h1 = model.patch_embed.register_forward_hook(lambda m, i, o: captured.__setitem__("patch_embed", o))
    h2 = model.post_layernorm.register_forward_hook(lambda m, i, o: captured.__setitem__("post_layernorm", o))
    with torch.no_grad():
        res = model(hidden_states=pixel_values, grid_thw=grid, output_hidden_states=True)
    for h in (h1, h2):
        h.remove()
    hidden = res.hidden_states if getattr(res, "hidden_states", None) is not None else ()
    print("pooler_output", tuple(res.pooler_output.shape), "last_hidden_state", tuple(res.last_hidden_state.shape),
          "hidden_states", [tuple(h.shape) for h in hidden], flush=True)
    expected = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "grid_thw": grid.tolist(),
        "pixel_values": rows(pixel_values),
        "patch_embed": rows(captured["patch_embed"]),
        "hidden_states_count": len(hidden),
        "post_layernorm": rows(captured["post_layernorm"]),
        "last_hidden_state": rows(res.last_hidden_state),
        "pooler_output": rows(res.pooler_output),
    }
    (out / "expected.json").write_text(json.dumps(expected) + "\n")
    print("pooler_output[0][:6]", expected["pooler_output"][0][:6], flush=True)
    for f in sorted(out.iterdir()):
        print(f"{f.name}: {f.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
