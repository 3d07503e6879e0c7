#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's DeepSeek-OCR-2 and DeepSeek-OCR (v1) (issue #26, item 5),
produced by transformers 5.17.

Two tiny random-weight model folders and what the reference computes for a few views given as
pixel tensors (no image decoding, no processor: the fixture isolates the model):

  deepseek-ocr2/  DeepseekOcr2ForConditionalGeneration, saved with save_pretrained (config.json,
                  generation_config.json, model.safetensors in transformers 5.17's layout).
  deepseek-ocr/   DeepSeek-OCR v1 composed from transformers modules by
                  tools/oracle/deepseek_ocr_v1_reference.py (its docstring says exactly what the
                  glue does); model.safetensors under the ORIGINAL deepseek-ai/DeepSeek-OCR key
                  names (model.sam_model.*, model.vision_model.*, model.projector.layers.*,
                  model.image_newline, model.view_seperator, model.layers.*, lm_head), a
                  config.json of our own in the original's shape (see v1_config_json; field names
                  inferred, not read from the published file).

Run on a machine with torch, transformers 5.17, numpy and safetensors (CPU is enough):

    python3 tools/oracle/make_deepseek_ocr_fixtures.py --out OUTDIR [--tar FILE.tar] [--only ocr2|v1]

e.g. on the GPU machine (folders in /tmp, only the tar and the log under $OUT):

    set -o pipefail; python3 tools/oracle/make_deepseek_ocr_fixtures.py --out /tmp/dsocr \
        --tar $OUT/dsocr.tar 2>&1 | tee $OUT/dsocr.log

then here: tar -xf dsocr.tar -C tests/fixtures  (-> tests/fixtures/deepseek-ocr2, deepseek-ocr).

Everything runs on the CPU in float32 with eager attention; seeds are fixed.

Geometry (shared SAM shape; every size differs from its neighbours so a swapped dimension shows):
  SAM: width 128, 2 heads (head_dim 64), 2 layers: layer 0 windowed (window 5), layer 1 global;
       patch 4, image_size 64 (pos_embed table 16 x 16), mlp_dim 64, neck 32 channels,
       LN eps 1e-6; down-sampling convs [48, 64] (OCR-2) / [32, 64] (v1, the 512:1024 ratio).
  OCR-2 encoder (Qwen2-style): hidden 64 (= SAM output), 2 layers, 2 heads of 32, 1 KV head,
       intermediate 96, rope theta 10000, learnable queries 144 (768 branch) / 256 (1024 branch).
  v1 CLIP: width 64, 2 layers, 2 heads of 32, ffn 112, quick_gelu, eps 1e-5, position table for a
       4 x 4 grid (17 rows); projector 128 -> 64.
  Decoder (both): vocab 320, hidden 64, 3 layers ["dense", "sparse", "sparse"], 4 heads of 16 (MHA),
       dense intermediate 96, 6 routed experts of 16, top-2 greedy, 2 shared experts (one MLP of 32),
       routed_scaling_factor 1.0, rms eps 1e-6, rope theta 10000, untied lm_head.
  ids: BOS 0, EOS 1, image token 300, "\\n" 10, prompt text 20..25.
Views (pixel sizes at patch 4):
  64 px  -> SAM grid 16: the table's own size (no resizing); windows pad 16 -> 20; out grid 4.
  80 px  -> grid 20: pos_embed resized 16 -> 20, global rel-pos 31 -> 39 rows, windows divide
            exactly; out grid 5 (CLIP table 4 -> 5 in v1).
  48 px  -> grid 12 (tiles): pos_embed DOWN-sized 16 -> 12 (antialias matters), rel-pos 31 -> 23,
            windows pad 12 -> 15; out grid 3 (CLIP table 4 -> 3 in v1).
Cases: "native" (64 px global), "resized" (80 px global), "tiled" (64 px global + 48 px tiles:
  OCR-2 2 tiles; v1 3 across x 2 down). Note: with these sizes every OCR-2 view has <= 144 SAM
  output patches, so OCR-2 always takes its 144-query ("768") branch; the 256-query branch needs
  > 144 patches (a 13 x 13 output grid, 208 px at patch 4) and is not covered.

Every parameter is random: norm weights 1 + 0.2 N and norm biases 0.2 N (SAM LayerNorms and
LayerNorm2d, CLIP LayerNorms, RMSNorms), pos_embed / CLIP class and position rows / OCR-2
queries / image_newline / view separator / token embeddings 0.5 N, rel_pos tables 0.2 N,
matrices and convolutions 1.2 N / sqrt(fan_in) (fan_in = last dim for the packed 3-D expert
tensors), other biases 0.2 N. Pixels are U(-1, 1) rounded to 4 decimals, float32.

Outputs per folder: expected.json {"transformers", "torch", "model", "geometry",
"generation": {"new_tokens", "note"}, "cases": [case...]}, with each case:
  name, input_ids [L], and the pixel inputs under the processor's names:
    OCR-2: pixel_values {"npy"} [1,3,S,S], pixel_values_local {"npy"} [n,3,s,s] (tiled only),
           num_local_patches [n] (tiled only);
    v1:    pixel_values {"npy"} [1,3,S,S], pixel_values_local {"npy"} [n,3,s,s], num_local_crops [n],
           image_spatial_crop [[wt, ht]] (tiled only);
  sam {"npy"}: SAM output after the down-sampling convs of the global view, NCHW [1,C,h,w];
  sam_local {"npy"}: same for the tiles [n,C,h',w'] (tiled only);
  vision {"npy"}: the rows written over the image placeholders, in order [N, D]; vision_rows N;
  last_logits [V]: logits of the prompt's last position; greedy [20]: greedy tokens (argmax,
  no EOS stop); step_logits {"npy"} [20, V]: the last position's logits at each greedy step
  (step 0 = last_logits); OCR-2 also generate_greedy (model.generate(do_sample=False,
  eos_token_id=None), KV-cached) with generate_matches (its tokens equal greedy's), or
  generate_error when transformers' generate could not run (greedy stays the reference).
  {"npy": "f.npy"} = a NumPy .npy file (float32, C order) next to expected.json.
inputs.jsonl: one line per case with only the model inputs (the fields above under the
processor's names), for `generate --input`.
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
import tarfile  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import transformers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

SEED = 2626
VOCAB = 320
BOS, EOS, IMG, NL = 0, 1, 300, 10
PROMPT_TEXT = [20, 21, 22, 23, 24, 25]
NEW_TOKENS = 20

SAM_COMMON = dict(hidden_size=128, num_attention_heads=2, num_hidden_layers=2, global_attn_indexes=[1],
                  window_size=5, patch_size=4, image_size=64, mlp_dim=64, output_channels=32,
                  layer_norm_eps=1e-6, use_abs_pos=True, use_rel_pos=True, qkv_bias=True, hidden_act="gelu")
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=16, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=6, num_experts_per_tok=2,
            n_shared_experts=2, routed_scaling_factor=1.0, topk_method="greedy",
            mlp_layer_types=["dense", "sparse", "sparse"], hidden_act="silu", rms_norm_eps=1e-6,
            max_position_embeddings=2048, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False, attention_bias=False)
ENCODER = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
               num_key_value_heads=1, hidden_act="silu", max_position_embeddings=512, rms_norm_eps=1e-6,
               rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
CLIP = dict(hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=2)
CLIP_TABLE_GRID = 4
GLOBAL_NATIVE, GLOBAL_RESIZED, TILE = 64, 80, 48
OCR2_TILES = 2
V1_TILES = (3, 2)  # (wt across, ht down)


def expect(cond, what):
    if not cond:
        raise AssertionError("transformers is not as this tool expects: " + what)


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


def save_npy(d, name, t):
    a = np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))
    np.save(str(d / name), a, allow_pickle=False)
    return {"npy": name}


SPECIAL_HALF = ("pos_embed", "class_embedding", "position_embedding", "query_768", "query_1024",
                "view_separator", "view_seperator", "image_newline", "embed_tokens")


@torch.no_grad()
def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    names = []
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if "rel_pos_" in name:
            v = 0.2 * r
        elif any(s in name for s in SPECIAL_HALF):
            v = 0.5 * r
        elif "norm" in name.lower():
            v = 1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r
        elif p.dim() == 3:
            v = r * (1.2 / math.sqrt(p.shape[-1]))
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


def pixels(g, n, side):
    x = torch.rand((n, 3, side, side), generator=g, dtype=torch.float32) * 2.0 - 1.0
    return (torch.round(x * 10000.0) / 10000.0).contiguous()


def prompt(n_rows):
    return [BOS] + [IMG] * n_rows + [NL] + PROMPT_TEXT


def scatter_prompt(emb, ids, rows, prompt_len):
    """Write rows over the image ids of the first prompt_len positions (generated ids never count)."""
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[:, :prompt_len] = ids[:, :prompt_len] == IMG
    expect(int(mask.sum()) == rows.shape[0], f"{int(mask.sum())} placeholders for {rows.shape[0]} rows")
    return emb.masked_scatter(mask.unsqueeze(-1).expand_as(emb), rows.to(emb.dtype))


def folder_size(d):
    return sum(f.stat().st_size for f in d.iterdir())


# ----------------------------------------------------------------------------------------------
# DeepSeek-OCR-2
# ----------------------------------------------------------------------------------------------

def ocr2_config():
    from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import DeepseekOcr2Config
    import deepseek_ocr_v1_reference as R
    sam = dict(SAM_COMMON, downsample_channels=[48, 64])
    text = R.text_config_kwargs(TEXT)
    cfg = DeepseekOcr2Config(vision_config=dict(sam_config=sam, encoder_config=ENCODER), text_config=text,
                             image_token_id=IMG, tie_word_embeddings=False)
    cfg.architectures = ["DeepseekOcr2ForConditionalGeneration"]
    for c in (cfg, cfg.text_config, cfg.vision_config, cfg.vision_config.sam_config,
              cfg.vision_config.encoder_config):
        c._attn_implementation = "eager"
    sc = cfg.vision_config.sam_config
    for k, v in sam.items():
        got = getattr(sc, k)
        if isinstance(v, (list, tuple)):
            got, v = list(got), list(v)
        expect(got == v, f"DeepseekOcr2SamVisionConfig.{k} = {got!r}, wanted {v!r}")
    for k, v in text.items():
        if not isinstance(v, dict):
            expect(getattr(cfg.text_config, k) == v, f"DeepseekOcr2TextConfig.{k} = {getattr(cfg.text_config, k)!r}")
    expect(cfg.image_token_id == IMG, "image_token_id")
    expect(cfg.vision_config.encoder_config.hidden_size == sam["downsample_channels"][1], "encoder width")
    return cfg


def check_ocr2_structure(model, cfg):
    from transformers.models.deepseek_ocr2 import modeling_deepseek_ocr2 as M
    import deepseek_ocr_v1_reference as R
    sam = model.model.vision_tower.sam_encoder
    expect(isinstance(sam, M.DeepseekOcr2SamVisionEncoder), "vision_tower.sam_encoder class")
    sc = cfg.vision_config.sam_config
    for i, layer in enumerate(sam.layers):
        expect(type(layer.attn) is M.DeepseekOcr2SamVisionAttention, f"SAM layer {i}: {type(layer.attn).__name__}")
        want = 0 if i in sc.global_attn_indexes else sc.window_size
        expect(layer.window_size == want, f"SAM layer {i} window {layer.window_size} != {want}")
    expect(tuple(sam.pos_embed.shape) == (1, 16, 16, 128), f"pos_embed {tuple(sam.pos_embed.shape)}")
    expect(tuple(sam.layers[1].attn.rel_pos_h.shape) == (31, 64), "global rel_pos_h shape")
    expect(tuple(sam.layers[0].attn.rel_pos_h.shape) == (9, 64), "windowed rel_pos_h shape")
    vt = model.model.vision_tower
    expect(tuple(vt.query_768_resolution.weight.shape) == (144, 64), "query_768_resolution")
    expect(tuple(vt.query_1024_resolution.weight.shape) == (256, 64), "query_1024_resolution")
    expect(tuple(model.model.view_separator.shape) == (64,), "view_separator")
    for i, layer in enumerate(model.model.language_model.layers):
        kind = R.layer_kind(cfg.text_config, i)
        expect(kind == TEXT["mlp_layer_types"][i], f"decoder layer {i} kind {kind}")
        cls = M.DeepseekOcr2TextMoe if kind == "sparse" else M.DeepseekOcr2TextMLP
        expect(type(layer.mlp) is cls, f"decoder layer {i} mlp {type(layer.mlp).__name__}")
    expect(model.lm_head.weight.data_ptr() != model.model.language_model.embed_tokens.weight.data_ptr(),
           "lm_head tied to embed_tokens")


@torch.no_grad()
def ocr2_case(hf, d, name, g, global_side, n_tiles):
    pv = pixels(g, 1, global_side)
    pvl = pixels(g, n_tiles, TILE) if n_tiles else None
    nlp = [n_tiles] if n_tiles else None
    sam = hf.model.vision_tower.sam_encoder(pv).last_hidden_state
    expect(sam.dim() == 4 and sam.shape[1] == 64, f"SAM output {tuple(sam.shape)}")
    sam_l = hf.model.vision_tower.sam_encoder(pvl).last_hidden_state if n_tiles else None
    feats = hf.model.get_image_features(pixel_values=pv, pixel_values_local=pvl, num_local_patches=nlp,
                                        return_dict=True).pooler_output
    expect(isinstance(feats, (list, tuple)) and len(feats) == 1, "pooler_output is one entry per image")
    rows = feats[0]

    def nq(s):
        return 144 if s.shape[2] * s.shape[3] <= 144 else 256
    want_rows = nq(sam) + (n_tiles * nq(sam_l) if n_tiles else 0) + 1
    expect(rows.shape == (want_rows, TEXT["hidden_size"]), f"vision rows {tuple(rows.shape)} != {want_rows}")
    ids = prompt(rows.shape[0])
    input_ids = torch.tensor([ids])
    kw = dict(pixel_values=pv)
    if n_tiles:
        kw.update(pixel_values_local=pvl, num_local_patches=nlp)
    direct = hf(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False, **kw).logits[0, -1]

    lm = hf.model.language_model
    cur = input_ids
    toks, steps = [], []
    for _ in range(NEW_TOKENS):
        emb = scatter_prompt(lm.embed_tokens(cur), cur, rows, len(ids))
        last = hf.lm_head(lm(inputs_embeds=emb, use_cache=False).last_hidden_state)[0, -1]
        steps.append(last)
        t = int(torch.argmax(last))
        toks.append(t)
        cur = torch.cat([cur, torch.tensor([[t]])], dim=1)
    steps = torch.stack(steps)
    diff = float((steps[0] - direct).abs().max())
    expect(diff < 1e-4, f"{name}: model forward vs embed+scatter path differ by {diff}")

    rec = dict(name=name, global_size=global_side, tile_size=TILE if n_tiles else None, input_ids=ids,
               pixel_values=save_npy(d, f"{name}_pixel_values.npy", pv), pixel_values_shape=list(pv.shape))
    inp = dict(input_ids=ids, pixel_values=rec["pixel_values"])
    if n_tiles:
        rec["pixel_values_local"] = save_npy(d, f"{name}_pixel_values_local.npy", pvl)
        rec["pixel_values_local_shape"] = list(pvl.shape)
        rec["num_local_patches"] = nlp
        inp.update(pixel_values_local=rec["pixel_values_local"], num_local_patches=nlp)
    rec["sam"] = save_npy(d, f"{name}_sam.npy", sam)
    rec["sam_shape"] = list(sam.shape)
    if n_tiles:
        rec["sam_local"] = save_npy(d, f"{name}_sam_local.npy", sam_l)
        rec["sam_local_shape"] = list(sam_l.shape)
    rec["vision"] = save_npy(d, f"{name}_vision.npy", rows)
    rec["vision_rows"] = int(rows.shape[0])
    rec["last_logits"] = flist(steps[0].numpy())
    rec["greedy"] = toks
    rec["step_logits"] = save_npy(d, f"{name}_step_logits.npy", steps)
    try:
        gen = hf.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=NEW_TOKENS,
                          do_sample=False, eos_token_id=None, pad_token_id=0, **kw)
        gtoks = gen[0, len(ids):].tolist()
        rec["generate_greedy"] = gtoks
        n = min(len(gtoks), len(toks))
        rec["generate_matches"] = gtoks[:n] == toks[:n]
        if not rec["generate_matches"]:
            print(f"   WARNING {name}: generate {gtoks} != recomputed greedy {toks}", flush=True)
    except Exception as e:  # generate's multimodal plumbing is not what this fixture checks
        rec["generate_error"] = f"{type(e).__name__}: {e}"[:300]
        print(f"   generate failed ({rec['generate_error']}); greedy is the recomputed one", flush=True)
    print(f"ocr2 {name}: sam {tuple(sam.shape)}"
          f"{' local ' + str(tuple(sam_l.shape)) if n_tiles else ''}, rows {rows.shape[0]}, "
          f"prompt {len(ids)}, greedy {toks}", flush=True)
    return rec, inp


@torch.no_grad()
def text_case(hf, name, ids):
    """A prompt without images: the decoder alone (greedy by recomputing, as for the image cases)."""
    lm = hf.model.language_model
    cur = torch.tensor([ids])
    toks, steps = [], []
    for _ in range(NEW_TOKENS):
        last = hf.lm_head(lm(input_ids=cur, use_cache=False).last_hidden_state)[0, -1]
        steps.append(last)
        t = int(torch.argmax(last))
        toks.append(t)
        cur = torch.cat([cur, torch.tensor([[t]])], dim=1)
    direct = hf(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
    diff = float((steps[0] - direct).abs().max())
    expect(diff < 1e-4, f"{name}: model forward vs language model path differ by {diff}")
    print(f"ocr2 text case {name}: prompt {len(ids)}, greedy {toks}", flush=True)
    return dict(name=name, input_ids=ids, last_logits=flist(steps[0].numpy()), greedy=toks,
                step_logits=[flist(x.numpy()) for x in steps])


@torch.no_grad()
def build_ocr2(out):
    from safetensors.torch import load_file
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2ForConditionalGeneration
    d = out / "deepseek-ocr2"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    cfg = ocr2_config()
    torch.manual_seed(SEED)
    model = DeepseekOcr2ForConditionalGeneration(cfg)
    check_ocr2_structure(model, cfg)
    names = randomize(model, SEED)
    model.eval()
    model.generation_config.bos_token_id = BOS
    model.generation_config.eos_token_id = EOS
    model.generation_config.pad_token_id = 0
    model.save_pretrained(str(d))
    cfgj = json.loads((d / "config.json").read_text())
    cfgj["inferencelayer_random_weights"] = True
    write_json(d / "config.json", cfgj)
    print("ocr2 parameters randomized:", len(names), flush=True)
    print("ocr2 config.json:\n" + (d / "config.json").read_text(), flush=True)
    st = load_file(str(d / "model.safetensors"))
    print("ocr2 checkpoint tensors:", len(st), flush=True)
    for k in sorted(st):
        print(f"   {k} {tuple(st[k].shape)}", flush=True)

    hf = DeepseekOcr2ForConditionalGeneration.from_pretrained(str(d), dtype=torch.float32, attn_implementation="eager")
    hf.eval()
    check_ocr2_structure(hf, hf.config)
    a, b = dict(model.state_dict()), dict(hf.state_dict())
    expect(sorted(a) == sorted(b), "state dict keys changed by save/load")
    for k in a:
        expect(torch.equal(a[k], b[k]), f"{k} changed by save/load")

    g = torch.Generator().manual_seed(SEED + 1)
    records, inputs = [], []
    for name, side, nt in (("native", GLOBAL_NATIVE, 0), ("resized", GLOBAL_RESIZED, 0),
                           ("tiled", GLOBAL_NATIVE, OCR2_TILES)):
        rec, inp = ocr2_case(hf, d, name, g, side, nt)
        records.append(rec)
        inputs.append(inp)
    expected = dict(transformers=transformers.__version__, torch=torch.__version__,
                    model="DeepseekOcr2ForConditionalGeneration",
                    geometry=dict(sam=dict(SAM_COMMON, downsample_channels=[48, 64]), encoder=ENCODER, text=TEXT,
                                  image_token_id=IMG, bos=BOS, eos=EOS),
                    generation=dict(new_tokens=NEW_TOKENS,
                                    note="greedy = argmax of the last position, whole sequence recomputed each "
                                         "step, no EOS stop; generated ids equal to the image id are text"),
                    cases=records,
                    text_cases=[text_case(hf, "text", [BOS] + PROMPT_TEXT),
                                text_case(hf, "text_long", [BOS] + [(7 * i + 3) % 290 + 5 for i in range(37)])])
    write_json(d / "expected.json", expected)
    with open(d / "inputs.jsonl", "w", encoding="utf-8") as f:
        for inp in inputs:
            f.write(json.dumps(inp) + "\n")
    print(f"wrote {d}: {sorted(p.name for p in d.iterdir())}, {folder_size(d)} bytes", flush=True)
    return d


# ----------------------------------------------------------------------------------------------
# DeepSeek-OCR v1
# ----------------------------------------------------------------------------------------------

def v1_config_json(sam, text):
    """config.json in the shape of deepseek-ai/DeepSeek-OCR's: language_config (repeated at the top
    level, as the original does), vision_config.width, projector_config."""
    lang = dict(vocab_size=text["vocab_size"], hidden_size=text["hidden_size"],
                intermediate_size=text["intermediate_size"], moe_intermediate_size=text["moe_intermediate_size"],
                num_hidden_layers=text["num_hidden_layers"], num_attention_heads=text["num_attention_heads"],
                num_key_value_heads=text["num_key_value_heads"], n_routed_experts=text["n_routed_experts"],
                n_shared_experts=text["n_shared_experts"], num_experts_per_tok=text["num_experts_per_tok"],
                first_k_dense_replace=text["mlp_layer_types"].index("sparse"), moe_layer_freq=1,
                routed_scaling_factor=text["routed_scaling_factor"], topk_method="greedy", scoring_func="softmax",
                norm_topk_prob=False, n_group=1, topk_group=1, use_mla=False, hidden_act="silu",
                rms_norm_eps=text["rms_norm_eps"], rope_theta=text["rope_parameters"]["rope_theta"],
                max_position_embeddings=text["max_position_embeddings"], bos_token_id=BOS, eos_token_id=EOS,
                attention_bias=False, tie_word_embeddings=False, model_type="deepseek_v2",
                architectures=["DeepseekV2ForCausalLM"])
    # The original folder's vision_config: vision_config.width.{sam_vit_b, clip-l-14-224} with the
    # fields its config.json carries (width, layers, heads, global_attn_indexes,
    # downsample_channels; CLIP's image_size / patch_size give its position grid), plus, for this
    # tiny geometry, the reference code's constants the real config leaves out (SAM's patch_size,
    # image_size, window_size, mlp_dim, out_chans, layer_norm_eps; CLIP's intermediate_size).
    clip_patch = 14
    vision = dict(model_type="vision", model_name="deeplip_b_l", image_size=sam["image_size"], width={
        "sam_vit_b": dict(width=sam["hidden_size"], layers=sam["num_hidden_layers"], heads=sam["num_attention_heads"],
                          global_attn_indexes=sam["global_attn_indexes"],
                          downsample_channels=sam["downsample_channels"], patch_size=sam["patch_size"],
                          image_size=sam["image_size"], window_size=sam["window_size"], mlp_dim=sam["mlp_dim"],
                          out_chans=sam["output_channels"], layer_norm_eps=sam["layer_norm_eps"]),
        "clip-l-14-224": dict(width=CLIP["hidden_size"], layers=CLIP["num_hidden_layers"],
                              heads=CLIP["num_attention_heads"], image_size=CLIP_TABLE_GRID * clip_patch,
                              patch_size=clip_patch, intermediate_size=CLIP["intermediate_size"])})
    cfg = dict(architectures=["DeepseekOCRForCausalLM"], model_type="deepseek_vl_v2",
               language_config=lang, vision_config=vision,
               projector_config=dict(projector_type="linear", model_type="mlp_projector",
                                     input_dim=2 * CLIP["hidden_size"], n_embed=text["hidden_size"]),
               tile_tag="2D", global_view_pos="head", candidate_resolutions=[[TILE, TILE]],
               image_token_id=IMG, inferencelayer_random_weights=True,
               inferencelayer_note="tiny DeepSeek-OCR v1 composed by tools/oracle/deepseek_ocr_v1_reference.py")
    cfg.update({k: v for k, v in lang.items() if k not in ("model_type", "architectures")})
    return cfg


@torch.no_grad()
def build_v1(out):
    from safetensors.torch import load_file, save_file
    import deepseek_ocr_v1_reference as R
    d = out / "deepseek-ocr"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    sam = dict(SAM_COMMON, downsample_channels=[32, 64])
    sam_cfg, clip_cfg, text_cfg = R.make_configs(sam, CLIP, TEXT)
    torch.manual_seed(SEED + 10)
    model = R.DeepseekOcrV1Reference(sam_cfg, clip_cfg, text_cfg, CLIP_TABLE_GRID, IMG)
    names = randomize(model, SEED + 10)
    model.eval()
    print("v1 parameters randomized:", len(names), flush=True)
    orig = model.to_original_state_dict()
    save_file(orig, str(d / "model.safetensors"), metadata={"format": "pt"})
    write_json(d / "config.json", v1_config_json(sam, TEXT))
    write_json(d / "generation_config.json", dict(bos_token_id=BOS, eos_token_id=EOS, do_sample=False))
    print("v1 checkpoint tensors:", len(orig), flush=True)
    for k in sorted(orig):
        print(f"   {k} {tuple(orig[k].shape)}", flush=True)

    # Round trip through the original names into a fresh module, which then computes everything.
    torch.manual_seed(SEED + 11)
    ref = R.DeepseekOcrV1Reference(sam_cfg, clip_cfg, text_cfg, CLIP_TABLE_GRID, IMG)
    ref.from_original_state_dict(load_file(str(d / "model.safetensors")))
    ref.eval()
    a, b = model.state_dict(), ref.state_dict()
    for k in a:
        expect(torch.equal(a[k], b[k]), f"v1 {k} changed by the original-name round trip")

    g = torch.Generator().manual_seed(SEED + 12)
    records, inputs = [], []
    for name, side, tiles in (("native", GLOBAL_NATIVE, None), ("resized", GLOBAL_RESIZED, None),
                              ("tiled", GLOBAL_NATIVE, V1_TILES)):
        pv = pixels(g, 1, side)
        pvl = pixels(g, tiles[0] * tiles[1], TILE) if tiles else None
        rows, sam_g, sam_l = ref.vision_rows(pv, pvl, tiles)
        n = sam_g.shape[2]
        want = n * (n + 1) + 1
        if tiles:
            m = sam_l.shape[2]
            want += (tiles[1] * m) * (tiles[0] * m + 1)
        expect(rows.shape == (want, TEXT["hidden_size"]), f"v1 rows {tuple(rows.shape)} != {want}")
        ids = prompt(rows.shape[0])
        input_ids = torch.tensor([ids])
        cur = input_ids
        toks, steps = [], []
        for _ in range(NEW_TOKENS):
            emb = scatter_prompt(ref.language_model.embed_tokens(cur), cur, rows, len(ids))
            last = ref.lm_head(ref.language_model(inputs_embeds=emb, use_cache=False).last_hidden_state)[0, -1]
            steps.append(last)
            t = int(torch.argmax(last))
            toks.append(t)
            cur = torch.cat([cur, torch.tensor([[t]])], dim=1)
        steps = torch.stack(steps)
        first = ref.logits(input_ids, rows)[0, -1]
        expect(float((first - steps[0]).abs().max()) < 1e-5, "v1 logits paths differ")
        rec = dict(name=name, global_size=side, tile_size=TILE if tiles else None, input_ids=ids,
                   pixel_values=save_npy(d, f"{name}_pixel_values.npy", pv), pixel_values_shape=list(pv.shape))
        inp = dict(input_ids=ids, pixel_values=rec["pixel_values"])
        if tiles:
            rec["pixel_values_local"] = save_npy(d, f"{name}_pixel_values_local.npy", pvl)
            rec["pixel_values_local_shape"] = list(pvl.shape)
            rec["num_local_crops"] = [tiles[0] * tiles[1]]
            rec["image_spatial_crop"] = [list(tiles)]
            inp.update(pixel_values_local=rec["pixel_values_local"], num_local_crops=rec["num_local_crops"],
                       image_spatial_crop=rec["image_spatial_crop"])
        rec["sam"] = save_npy(d, f"{name}_sam.npy", sam_g)
        rec["sam_shape"] = list(sam_g.shape)
        if tiles:
            rec["sam_local"] = save_npy(d, f"{name}_sam_local.npy", sam_l)
            rec["sam_local_shape"] = list(sam_l.shape)
        rec["vision"] = save_npy(d, f"{name}_vision.npy", rows)
        rec["vision_rows"] = int(rows.shape[0])
        rec["last_logits"] = flist(steps[0].numpy())
        rec["greedy"] = toks
        rec["step_logits"] = save_npy(d, f"{name}_step_logits.npy", steps)
        print(f"v1 {name}: sam {tuple(sam_g.shape)}{' local ' + str(tuple(sam_l.shape)) if tiles else ''}, "
              f"rows {rows.shape[0]}, prompt {len(ids)}, greedy {toks}", flush=True)
        records.append(rec)
        inputs.append(inp)
    expected = dict(transformers=transformers.__version__, torch=torch.__version__,
                    model="DeepSeek-OCR v1 (tools/oracle/deepseek_ocr_v1_reference.py)",
                    geometry=dict(sam=sam, clip=dict(CLIP, position_grid=CLIP_TABLE_GRID, hidden_act="quick_gelu",
                                                     layer_norm_eps=1e-5),
                                  text=TEXT, image_token_id=IMG, bos=BOS, eos=EOS),
                    generation=dict(new_tokens=NEW_TOKENS,
                                    note="greedy = argmax of the last position, whole sequence recomputed each "
                                         "step, no EOS stop; generated ids equal to the image id are text"),
                    cases=records)
    write_json(d / "expected.json", expected)
    with open(d / "inputs.jsonl", "w", encoding="utf-8") as f:
        for inp in inputs:
            f.write(json.dumps(inp) + "\n")
    print(f"wrote {d}: {sorted(p.name for p in d.iterdir())}, {folder_size(d)} bytes", flush=True)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tar", type=Path, default=None, help="also pack the folders into this tar file")
    ap.add_argument("--only", choices=["ocr2", "v1"], default=None)
    a = ap.parse_args()
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)
    if not transformers.__version__.startswith("5.17"):
        print("WARNING: written against transformers 5.17", flush=True)
    torch.set_num_threads(4)
    a.out.mkdir(parents=True, exist_ok=True)
    done = []
    failed = False
    for which, fn in (("ocr2", build_ocr2), ("v1", build_v1)):
        if a.only and a.only != which:
            continue
        try:
            done.append(fn(a.out))
        except Exception:
            traceback.print_exc()
            print(f"FAILED: {which}", flush=True)
            failed = True
    if a.tar and done:
        with tarfile.open(str(a.tar), "w") as t:
            for d in done:
                t.add(str(d), arcname=d.name)
        print(f"packed {[d.name for d in done]} into {a.tar} ({a.tar.stat().st_size} bytes)", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
