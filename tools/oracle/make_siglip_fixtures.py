#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's SigLIP (model_type "siglip" and "siglip_vision_model"),
produced by `transformers`.

The companion of make_fixtures.py (whose helpers it imports): a tiny random-weight SiglipModel
folder (vision and text towers), the vision tower saved alone as a SiglipVisionModel folder (as
vision-language models ship it), and what transformers computes for them, committed under
tests/fixtures so CI (no Python ML stack) checks the C++ backends against it.

Run on a machine with torch, transformers 5.x and safetensors:

    python3 tools/oracle/make_siglip_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed.

Geometry: images 3 x 32 x 32, patch 8 (a 4 x 4 grid: 16 patch tokens), hidden 32, 2 layers, 4
heads, MLP 72, gelu_pytorch_tanh, layer_norm_eps 1e-6, the MAP head (vision_use_head). Text
tower: vocab 99, 16 positions, hidden 32, 2 layers, 4 heads, projection 32. Every parameter is
random (norm weights 1 + 0.2 N, biases 0.2 N, embeddings and the probe 0.5 N, matrices and the
patch convolution 1.2 N / sqrt(fan_in), logit_scale log 10 + 0.1 N, logit_bias -5 + N).

Pixel values: drawn from a seeded N(0, 1) (a preprocessed image is (x - 0.5) / 0.5, so values in
[-1, 1]: N(0, 1) covers that and more), ROUNDED TO 4 DECIMALS BEFORE transformers sees them, so
the committed values are exactly the inputs (compact: ~7 characters a value).

Texts: SigLIP's own tokenizer (SentencePiece) cannot be built here without network, so the text
cases are token ids, already padded with the pad id to max_position_embeddings as
SiglipProcessor(padding="max_length") gives them (no attention mask, as SigLIP was trained).

Folders written under --out:
  siglip-joint   config.json (SiglipModel), model.safetensors, expected.json:
                 image_cases: pixel_values [3][32][32], pooled (vision pooler_output, the MAP
                 head's row), hidden (vision last_hidden_state, post_layernorm applied);
                 text_cases: input_ids, pooled (text pooler_output: the head of the last row);
                 logits_per_image [images][texts] for image x text pairs.
  siglip-vision  config.json (SiglipVisionModel), model.safetensors (transformers 5.17 saves its
                 tensors without the "vision_model." prefix), expected.json: the same image_cases
                 (checked equal to the joint model's). The committed folder's expected.json was
                 written from siglip-joint's image cases after checking its tensors byte-identical
                 to the joint's vision_model.* (the run that made it stopped at the reload check on
                 an attribute name, fixed since).
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_fixtures as mf  # noqa: E402
from make_fixtures import check_close, dir_size, flist, mark_random, write_json  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import transformers  # noqa: E402
from transformers import SiglipConfig, SiglipModel, SiglipVisionModel  # noqa: E402

IMAGE = 32
PATCH = 8
CHANNELS = 3
HIDDEN = 32
LAYERS = 2
HEADS = 4
MLP = 72
EPS = 1e-6
VOCAB = 99
TEXT_POS = 16
PAD_ID = 1
SEED = 2222
N_IMAGES = 4


def siglip_config(vocab=VOCAB, text_pos=TEXT_POS):
    vision = dict(hidden_size=HIDDEN, intermediate_size=MLP, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  num_channels=CHANNELS, image_size=IMAGE, patch_size=PATCH, hidden_act="gelu_pytorch_tanh",
                  layer_norm_eps=EPS)
    text = dict(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=MLP, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, max_position_embeddings=text_pos, hidden_act="gelu_pytorch_tanh",
                layer_norm_eps=EPS, pad_token_id=PAD_ID, bos_token_id=PAD_ID, eos_token_id=PAD_ID,
                projection_size=HIDDEN)
    cfg = SiglipConfig(text_config=text, vision_config=vision)
    cfg.architectures = ["SiglipModel"]
    mf.set_eager(cfg)
    for sub in (cfg.text_config, cfg.vision_config):
        mf.set_eager(sub)
    return cfg


@torch.no_grad()
def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    names = []
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if mf.is_norm_param(name):
            v = 1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r
        elif name.endswith("logit_scale"):
            v = math.log(10.0) + 0.1 * r
        elif name.endswith("logit_bias"):
            v = -5.0 + r
        elif "embedding.weight" in name and p.dim() == 2 or name.endswith("probe"):
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


def images(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((N_IMAGES, CHANNELS, IMAGE, IMAGE), generator=g, dtype=torch.float32)
    return torch.round(x * 10000.0) / 10000.0


def text_ids(seed):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in (3, 7, 12, TEXT_POS):  # real tokens, then pads up to max_length (the last: none)
        ids = torch.randint(2, VOCAB, (n,), generator=g).tolist()
        rows.append(ids + [PAD_ID] * (TEXT_POS - n))
    return rows


def pixel_list(img):
    return [[[float(f"{v:.4f}") for v in row] for row in ch] for ch in img.tolist()]


@torch.no_grad()
def vision_outputs(vision_model, pv):
    out = vision_model(pixel_values=pv)
    return out.pooler_output.float(), out.last_hidden_state.float()


@torch.no_grad()
def build(out):
    joint_dir = out / "siglip-joint"
    vis_dir = out / "siglip-vision"
    for d in (joint_dir, vis_dir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    cfg = siglip_config()
    torch.manual_seed(SEED)
    model = SiglipModel(cfg)
    names = randomize(model, SEED)
    model.eval()
    model.save_pretrained(str(joint_dir))
    mark_random(joint_dir)
    print("joint config.json:\n" + (joint_dir / "config.json").read_text(encoding="utf-8"), flush=True)
    print(f"parameters randomized: {len(names)}: {names}", flush=True)

    hf = mf.hf_from_pretrained(SiglipModel, joint_dir)
    pv = images(SEED + 1)
    ids = text_ids(SEED + 2)

    # The MAP head and post_layernorm, image by image and as one batch.
    pooled, hidden = vision_outputs(hf.vision_model, pv)
    for i in range(N_IMAGES):
        p1, h1 = vision_outputs(hf.vision_model, pv[i:i + 1])
        check_close(f"image {i} alone vs batch pooled", p1[0].numpy(), pooled[i].numpy(), 1e-5)
        check_close(f"image {i} alone vs batch hidden", h1[0].numpy(), hidden[i].numpy(), 1e-5)
    # A hand-written MAP head against transformers' (what the C++ plan computes).
    vm = hf.vision_model
    head = vm.head
    Hd = HIDDEN // HEADS
    W, B = head.attention.in_proj_weight, head.attention.in_proj_bias
    q = head.probe[0, 0] @ W[:HIDDEN].T + B[:HIDDEN]
    k = hidden @ W[HIDDEN:2 * HIDDEN].T + B[HIDDEN:2 * HIDDEN]
    v = hidden @ W[2 * HIDDEN:].T + B[2 * HIDDEN:]
    ctx = []
    for h in range(HEADS):
        s = (k[:, :, h * Hd:(h + 1) * Hd] @ q[h * Hd:(h + 1) * Hd]) / math.sqrt(Hd)
        a = torch.softmax(s, dim=-1)
        ctx.append(torch.einsum("bn,bnd->bd", a, v[:, :, h * Hd:(h + 1) * Hd]))
    r = head.attention.out_proj(torch.cat(ctx, dim=-1))
    mine = r + head.mlp(head.layernorm(r))
    check_close("hand-written MAP head", mine.numpy(), pooled.numpy(), 1e-5)

    text_out = hf.text_model(input_ids=torch.tensor(ids))
    text_pooled = text_out.pooler_output.float()
    full = hf(input_ids=torch.tensor(ids), pixel_values=pv)
    logits = full.logits_per_image.float()
    ie = pooled / pooled.norm(dim=-1, keepdim=True)
    te = text_pooled / text_pooled.norm(dim=-1, keepdim=True)
    mine_logits = ie @ te.T * hf.logit_scale.exp() + hf.logit_bias
    check_close("logits by hand", mine_logits.numpy(), logits.numpy(), 1e-4)
    print("logit_scale", float(hf.logit_scale), "logit_bias", float(hf.logit_bias), flush=True)

    image_cases = []
    for i in range(N_IMAGES):
        image_cases.append({"pixel_values": pixel_list(pv[i]), "pooled": flist(pooled[i].numpy()),
                            "hidden": flist(hidden[i].numpy())})
    text_cases = [{"input_ids": row, "pooled": flist(text_pooled[j].numpy())} for j, row in enumerate(ids)]
    write_json(joint_dir / "expected.json",
               {"kind": "siglip", "image_cases": image_cases, "text_cases": text_cases,
                "logit_scale": float(hf.logit_scale), "logit_bias": float(hf.logit_bias),
                "logits_per_image": flist(logits.numpy())}, indent=None)

    # The vision tower alone, as vision-language models ship it.
    vis = SiglipVisionModel(cfg.vision_config)
    # transformers 5.17's SiglipVisionModel names its parameters without the "vision_model."
    # prefix the joint model (and older releases) use: take whichever names it has.
    target = set(vis.state_dict())
    sd = {}
    for k, v in model.state_dict().items():
        if not k.startswith("vision_model."):
            continue
        short = k[len("vision_model."):]
        sd[k if k in target else short] = v
    vis.load_state_dict(sd, strict=True)
    vis.config.architectures = ["SiglipVisionModel"]
    vis.eval()
    vis.save_pretrained(str(vis_dir))
    mark_random(vis_dir)
    print("vision config.json:\n" + (vis_dir / "config.json").read_text(encoding="utf-8"), flush=True)
    hv = mf.hf_from_pretrained(SiglipVisionModel, vis_dir)
    # 5.17's SiglipVisionModel is the vision transformer itself (older releases wrap it as
    # .vision_model).
    p2, h2 = vision_outputs(getattr(hv, "vision_model", hv), pv)
    check_close("vision folder vs joint pooled", p2.numpy(), pooled.numpy(), 1e-6)
    check_close("vision folder vs joint hidden", h2.numpy(), hidden.numpy(), 1e-6)
    write_json(vis_dir / "expected.json", {"kind": "siglip", "image_cases": image_cases}, indent=None)
    from safetensors import safe_open
    with safe_open(str(vis_dir / "model.safetensors"), "pt") as f:
        print("vision folder tensors:", sorted(f.keys())[:6], "...", flush=True)
    for d in (joint_dir, vis_dir):
        print(d.name, "bytes", dir_size(d), sorted(p.name for p in d.iterdir()), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    print("torch", torch.__version__, "transformers", transformers.__version__, "numpy", np.__version__, flush=True)
    torch.set_grad_enabled(False)
    try:
        build(Path(args.out))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    for n in mf.NOTES:
        print("NOTE:", n)


if __name__ == "__main__":
    main()
