#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's LFM2 trunk (model_type "lfm2", the trunk of
LFM2-ColBERT), produced by `transformers`.

The companion of make_fixtures.py and make_qwen3_fixtures.py (whose helpers, texts and id cases it
imports): a tiny random-weight Lfm2Model folder and what transformers computes for it, committed
under tests/fixtures so CI (no Python ML stack) checks the C++ backends against it.

Run on a machine with torch, transformers 5.x, tokenizers and safetensors:

    python3 tools/oracle/make_lfm2_fixtures.py --out tests/fixtures --tokenizer tests/fixtures/qwen3-embed

Everything runs on the CPU in float32 with eager attention; seeds are fixed.

Model geometry: hidden 64, 4 layers of kinds conv, full_attention, conv, full_attention
(layer_types), 4 attention heads of head_dim 16 with 2 key-value heads (GQA), conv_L_cache 3 (no
conv bias), norm_eps 1e-5, rope theta 1e6, max_position_embeddings 512. The MLP width goes through
Lfm2MLP's whole rule: intermediate_size 200, block_auto_adjust_ff_dim true -> int(2 * 200 / 3) =
133, block_ffn_dim_multiplier 1.25 -> int(166.25) = 166, block_multiple_of 32 -> 192 (asserted on
the built model). Every parameter is random (norm weights 1 + 0.2 N, the embedding 0.5 N,
matrices 1.2 N / sqrt(fan_in), the depthwise conv filters 0.6 N).

Tokenizer: the qwen3-embed fixture's tokenizer.json and tokenizer_config.json (byte-level BPE of
600 tokens + 5 added, "<|endoftext|>" appended to every text), copied as they are; vocab_size 605.

Folder written under --out:
  lfm2-hidden   config.json (Lfm2Model, marked "inferencelayer_random_weights": true),
                model.safetensors (f32, no prefix), tokenizer files. No sentence-transformers
                modules: sentence-transformers serves such a folder with mean pooling, not
                normalised, which the expected pooled vectors are (the mean of the last hidden
                state's rows, checked against SentenceTransformer.encode where it loads the folder).
                expected.json (kind "embedding", pooling "mean"): per text case text, input_ids,
                pooled, hidden (Lfm2Model's last_hidden_state, embedding_norm applied, for the text
                alone: cases 0-2 and the longest); id_cases from raw ids (pooled, and hidden up to
                HIDDEN_ID_MAX_LEN tokens). A right-padded batch of all texts is checked against the
                texts alone (transformers zeroes padded rows before each conv and masks padded keys).
"""

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
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
from make_fixtures import check_close, check_not_degenerate, dir_size, f9, flist, mark_random, note, read_json, write_json  # noqa: E402
import make_qwen3_fixtures as q3  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import transformers  # noqa: E402
from transformers import Lfm2Config, Lfm2Model  # noqa: E402

HIDDEN = 64
LAYER_TYPES = ["conv", "full_attention", "conv", "full_attention"]
HEADS = 4
KV_HEADS = 2
CONV_L = 3
NORM_EPS = 1e-5
ROPE_THETA = 1_000_000.0
MAX_POS = 512
FF_DIM = 200
FF_MULTIPLIER = 1.25
FF_MULTIPLE_OF = 32
FF_EXPECTED = 192
SEED = 2121
HIDDEN_TEXT_CASES = 3
HIDDEN_ID_MAX_LEN = 33
BATCH_TOL = 1e-4


def lfm2_config(vocab_size, pad_id):
    cfg = Lfm2Config(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=FF_DIM,
        num_hidden_layers=len(LAYER_TYPES),
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=MAX_POS,
        norm_eps=NORM_EPS,
        conv_bias=False,
        conv_L_cache=CONV_L,
        block_multiple_of=FF_MULTIPLE_OF,
        block_ffn_dim_multiplier=FF_MULTIPLIER,
        block_auto_adjust_ff_dim=True,
        layer_types=list(LAYER_TYPES),
        rope_theta=ROPE_THETA,
        pad_token_id=pad_id,
        bos_token_id=pad_id,
        eos_token_id=pad_id,
        tie_word_embeddings=True,
    )
    cfg.architectures = ["Lfm2Model"]
    mf.set_eager(cfg)
    return cfg


@torch.no_grad()
def randomize_lfm2(model, seed):
    g = torch.Generator().manual_seed(seed)
    names = []
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if name.endswith("norm.weight"):
            v = 1.0 + 0.2 * r
        elif "embed_tokens" in name:
            v = 0.5 * r
        elif name.endswith("conv.conv.weight"):
            v = 0.6 * r
        elif p.dim() == 2:
            v = r * (1.2 / math.sqrt(p.shape[1]))
        else:
            v = 0.2 * r
        p.copy_(v.to(p.dtype))
        names.append(name)
    for name, p in model.named_parameters():
        if p.numel() > 1 and bool(torch.all(p == p.flatten()[0])):
            raise AssertionError(f"{name} is constant after randomize")
    return names


def check_geometry(model):
    kinds = []
    for i, layer in enumerate(model.layers):
        attn = hasattr(layer, "self_attn") and getattr(layer, "is_attention_layer", True)
        kinds.append("full_attention" if hasattr(layer, "self_attn") else "conv")
        w1 = layer.feed_forward.w1.weight
        if w1.shape[0] != FF_EXPECTED:
            raise AssertionError(f"layer {i}: MLP width {w1.shape[0]}, expected {FF_EXPECTED}")
    if kinds != LAYER_TYPES:
        raise AssertionError(f"layer kinds {kinds}, expected {LAYER_TYPES}")
    conv = model.layers[0].conv
    if tuple(conv.conv.weight.shape) != (HIDDEN, 1, CONV_L):
        raise AssertionError(f"conv weight {tuple(conv.conv.weight.shape)}")
    if conv.conv.bias is not None or conv.in_proj.bias is not None:
        raise AssertionError("conv layer has a bias")
    a = model.layers[1].self_attn
    if a.k_proj.weight.shape[0] != KV_HEADS * (HIDDEN // HEADS):
        raise AssertionError("k_proj is not GQA-shaped")


@torch.no_grad()
def last_hidden(model, ids, mask=None):
    t = torch.tensor([ids]) if not isinstance(ids, torch.Tensor) else ids
    m = torch.ones_like(t) if mask is None else mask
    return model(input_ids=t, attention_mask=m, use_cache=False).last_hidden_state.float()


def build(out, tok_dir):
    folder = out / "lfm2-hidden"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(tok_dir) / name, folder / name)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    V = tok.get_vocab_size(with_added_tokens=True)
    eos_id = tok.token_to_id(q3.ENDOFTEXT)
    cfg = lfm2_config(V, eos_id)
    torch.manual_seed(SEED)
    model = Lfm2Model(cfg)
    names = randomize_lfm2(model, SEED)
    model.eval()
    check_geometry(model)
    model.save_pretrained(str(folder))
    mark_random(folder)
    print("config.json as saved:\n" + (folder / "config.json").read_text(encoding="utf-8"), flush=True)

    hf = mf.hf_from_pretrained(Lfm2Model, folder)
    check_geometry(hf)
    a, b = hf.state_dict(), model.state_dict()
    if set(a) != set(b) or any(not torch.equal(a[k], b[k]) for k in a):
        raise AssertionError("reloaded weights differ")
    print(f"parameters randomized: {len(names)}; tensors: {sorted(a)}", flush=True)

    cases = []
    lengths = []
    for i, text in enumerate(q3.EMBED_TEXTS):
        ids = tok.encode(text).ids
        h = last_hidden(hf, ids)[0]
        pooled = h.mean(dim=0)
        case = {"text": text, "input_ids": ids, "pooled": flist(pooled.numpy())}
        lengths.append(len(ids))
        cases.append((case, h))
    longest = int(np.argmax(lengths))
    out_cases = []
    for i, (case, h) in enumerate(cases):
        if i < HIDDEN_TEXT_CASES or i == longest:
            case["hidden"] = flist(h.numpy())
        out_cases.append(case)
    print(f"text token counts: {lengths}", flush=True)

    # A right-padded batch of every text against each text alone: the ragged-batch semantics the
    # engine implements (zero conv history before a sequence, padded keys masked).
    worst = 0.0
    try:
        L = max(lengths)
        ids = torch.full((len(cases), L), eos_id, dtype=torch.long)
        mask = torch.zeros((len(cases), L), dtype=torch.long)
        for i, (case, _) in enumerate(cases):
            n = len(case["input_ids"])
            ids[i, :n] = torch.tensor(case["input_ids"])
            mask[i, :n] = 1
        hb = last_hidden(hf, ids, mask)
        for i, (case, h) in enumerate(cases):
            n = len(case["input_ids"])
            worst = max(worst, check_close(f"lfm2 batch row {i}", hb[i, :n].numpy(), h.numpy(), BATCH_TOL))
    except Exception:
        traceback.print_exc()
        note("lfm2: the padded-batch check failed (see the traceback)")

    # sentence-transformers on the plain folder: Transformer + mean Pooling.
    st_checked = False
    try:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"attn_implementation": "eager"})
        print(f"sentence-transformers modules: {st}", flush=True)
        for i, (case, _) in enumerate(cases):
            got = st.encode([case["text"]], convert_to_numpy=True, normalize_embeddings=False)[0]
            check_close(f"lfm2 ST case {i}", np.asarray(got, dtype=np.float32), np.asarray(case["pooled"], dtype=np.float32))
        st_checked = True
    except Exception:
        traceback.print_exc()
        note("lfm2: SentenceTransformer did not load / match the plain folder; pooled = mean of the hidden rows")
    for name in ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json"):
        if (folder / name).exists():
            raise AssertionError(f"{name} appeared in the folder")

    id_cases = []
    for ids in q3.qwen_id_cases(V, eos_id, SEED + 1000):
        h = last_hidden(hf, ids)[0]
        case = {"input_ids": ids, "pooled": flist(h.mean(dim=0).numpy())}
        if len(ids) <= HIDDEN_ID_MAX_LEN:
            case["hidden"] = flist(h.numpy())
        id_cases.append(case)

    spread = check_not_degenerate("lfm2-hidden", [c["pooled"] for c in out_cases])
    expected = {
        "kind": "embedding",
        "model": folder.name,
        "architecture": "Lfm2Model",
        "pooling": "mean",
        "normalized": False,
        "layer_types": LAYER_TYPES,
        "intermediate": FF_EXPECTED,
        "sentence_transformers_checked": st_checked,
        "generator": {"transformers": transformers.__version__, "torch": torch.__version__,
                      "tokenizers": __import__("tokenizers").__version__},
        "cases": out_cases,
        "id_cases": id_cases,
    }
    write_json(folder / "expected.json", expected, indent=None)
    return folder, {"token_counts": lengths, "batch_max_abs_diff": worst, "spread": spread, "st_checked": st_checked}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures")
    ap.add_argument("--tokenizer", default="tests/fixtures/qwen3-embed", help="folder with the qwen3 tokenizer files")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    folder, stats = build(out, args.tokenizer)
    print("\n== summary ==")
    for k, v in stats.items():
        print(f"   {k}: {v}")
    print(f"{folder.name}: {dir_size(folder) / 1024:.0f} KiB")
    for p in sorted(folder.iterdir()):
        print(f"   {p.name}  {p.stat().st_size} B")
    if mf.NOTES:
        print("\nnotes:")
        for n in mf.NOTES:
            print(" -", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
