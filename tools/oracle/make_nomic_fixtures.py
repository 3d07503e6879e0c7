#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's nomic-bert models (the layout of nomic-embed-text v1 /
v1.5: model_type "nomic_bert", a GPT2Config-style config with its own field names, tensors named as
nomic-ai's contrib modeling file names them).

The released checkpoints load in transformers only through remote code (config.json's auto_map to
nomic-ai/nomic-bert-2048's modeling_hf_nomic_bert.py), which the GPU machine cannot fetch (no
network). So the reference forward pass is written out here in plain torch, following that file's
arithmetic step by step (NomicBertModel with add_pooling_layer=False, as from_pretrained builds it):

    x = word_embeddings[ids] + token_type_embeddings[type ids (zeros)]   (no position table: rotary)
    x = emb_ln(x)
    per layer (post-norm, prenorm false):
        qkv = Wqkv(x)  -> q | k | v, each n_head heads of head_dim = n_embd / n_head
        rotary embeddings on the first rotary_dim = head_dim * rotary_emb_fraction columns of each
        q and k head: inv_freq = 1 / base ** (arange(0, rotary_dim, 2) / rotary_dim) in float32,
        angle = position * inv_freq (float32), pairs (j, j + rotary_dim/2) (rotate-half) or
        (2j, 2j + 1) (rotary_emb_interleaved); positions 0.. from each sequence's start
        attention: softmax(q k^T / sqrt(head_dim) + additive padding mask) v, bidirectional
        x = norm1(out_proj(ctx) + x)          (out_proj's bias follows qkv_proj_bias)
        gated MLP (swiglu / geglu): fc2( fc11(x) * act(fc12(x)) ), act silu / exact gelu, the
        hidden width n_inner rounded up to a multiple of 256 (NomciBertGatedMLP's multiple_of);
        plain MLP (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh): fc2(gelu(fc1(x))), exact gelu
        x = norm2(mlp + x)
    last_hidden_state = x (no final norm)

Sentence-transformers' module stack of the release (Transformer, Pooling mean, Normalize) is
written as the Hub folder has it, but sentence-transformers cannot run this folder here either
(its Transformer module needs the remote model class), so pooled vectors are computed by this
script from the last hidden state: the mean over the text's tokens, L2-normalised. Where the
installed transformers has a native NomicBertModel, the run also tries it on the folder and, built
from the variant's geometry, with the release tensors mapped by role (native_converted), and
prints what it gives. The 2026-12-01 run (transformers 5.17.0): its NomicBertConfig reads the
release config.json as hidden_size 768 (n_embd and the others are not its fields), so
from_pretrained on the folder fails on shapes, and sentence-transformers with it; built as
native_converted builds it (SwiGLU gate_proj / up_proj / down_proj, bias-free projections,
post_attention_layernorm / post_mlp_layernorm), it gave nomic-embed's last hidden states with a max
abs difference of 0. Its MLP is always gated, so the plain-GELU variant has no counterpart there.

Tokenizer: tests/fixtures/bert-mean's WordPiece tokenizer.json (nomic uses bert-base-uncased's
pipeline), copied unchanged; tokenizer_config.json model_max_length 512.

Folders written under --out (each with expected.json; config.json marked
"inferencelayer_random_weights": true):
  nomic-embed       n_embd 64, 2 layers, 4 heads (head_dim 16), n_inner 96 (so the MLP tensors are
                    256 wide, as the contrib class rounds), swiglu, rotary_emb_fraction 1.0,
                    rotate-half, rotary_emb_base 1000, no biases (as nomic-embed-text-v1.5),
                    prompts search_query: / search_document: (default_prompt_name null).
  nomic-embed-rot-torch
                    n_embd 48, 2 layers, 4 heads (head_dim 12), n_inner 128, activation_function
                    gelu_new (the plain MLP fc2(gelu(fc1(x))); the contrib block passes F.gelu, so
                    every plain GELU name is the exact erf form there),
                    rotary_emb_fraction 0.5 (rotary_dim 6), interleaved pairs, rotary_emb_base
                    10000, qkv_proj_bias / mlp_fc1_bias / mlp_fc2_bias true.
The committed tests/fixtures/nomic-embed-rot has this geometry but comes from
make_nomic_rot_fixture.py (plain Python, float64, its own random weights): the device run that
wrote nomic-embed brought back one folder's files only. nomic-embed-rot-torch is this script's
torch counterpart, not committed.
Every parameter random (norm weights 1 + 0.2 N, norm biases and linear biases 0.2 N, embeddings
0.5 N, matrices 1.2 N / sqrt(fan_in)); float32; seeds fixed.

expected.json (kind "embedding", pooling "mean"): cases with text, input_ids, token_type_ids,
offsets (UTF-8 bytes), pooled, pooled_dim32 (pooled[:32], sentence-transformers' truncate_dim,
not renormalised), hidden (first cases and the longest); prompted cases with input_text and
prompt_name; id_cases (input_ids, token_type_ids zeros, pooled, hidden up to 33 tokens).
"""

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
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
from make_fixtures import byte_offsets, check_close, check_not_degenerate, flist, note, read_json, write_json  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import transformers  # noqa: E402

torch.set_num_threads(1)

MAX_LEN = 512
MATRYOSHKA_DIM = 32
PROMPTS = {"query": "search_query: ", "document": "search_document: ", "classification": "classification: ",
           "clustering": "clustering: "}
HIDDEN_CASES = 3
HIDDEN_ID_MAX_LEN = 33
ID_CASE_LENGTHS = [1, 5, 33, 64, 150]
BATCH_TOL = 1e-5

VARIANTS = {
    "nomic-embed": dict(n_embd=64, n_layer=2, n_head=4, n_inner=96, activation_function="swiglu",
                        rotary_emb_fraction=1.0, rotary_emb_interleaved=False, rotary_emb_base=1000,
                        qkv_proj_bias=False, mlp_fc1_bias=False, mlp_fc2_bias=False, seed=901),
    "nomic-embed-rot-torch": dict(n_embd=48, n_layer=2, n_head=4, n_inner=128, activation_function="gelu_new",
                            rotary_emb_fraction=0.5, rotary_emb_interleaved=True, rotary_emb_base=10000,
                            qkv_proj_bias=True, mlp_fc1_bias=True, mlp_fc2_bias=True, seed=902),
}

LONG_BASE = mf.EMBED_TEXTS[-1]
PROMPT_CASES = [("what is the capital of france?", "query"),
                ("Paris is the capital and most populous city of France.", "document")]


def gated(v):
    return v["activation_function"] in ("swiglu", "geglu", "glu")


def mlp_width(v):
    hidden = v["n_inner"] if v["n_inner"] is not None else (int(8 * v["n_embd"] / 3) if gated(v) else 4 * v["n_embd"])
    if gated(v):
        hidden = (hidden + 255) // 256 * 256
    return hidden


def release_config(v, vocab):
    """config.json as nomic-embed-text-v1.5 writes it, with this geometry."""
    return {
        "_name_or_path": "nomic-ai/nomic-bert-2048",
        "activation_function": v["activation_function"],
        "architectures": ["NomicBertModel"],
        "attn_pdrop": 0.0,
        "auto_map": {
            "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
            "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
            "AutoModelForMaskedLM": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertForPreTraining",
        },
        "bos_token_id": None,
        "causal": False,
        "dense_seq_output": True,
        "embd_pdrop": 0.0,
        "eos_token_id": None,
        "fused_bias_fc": True,
        "fused_dropout_add_ln": True,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-12,
        "max_trained_positions": 2048,
        "mlp_fc1_bias": v["mlp_fc1_bias"],
        "mlp_fc2_bias": v["mlp_fc2_bias"],
        "model_type": "nomic_bert",
        "n_embd": v["n_embd"],
        "n_head": v["n_head"],
        "n_inner": v["n_inner"],
        "n_layer": v["n_layer"],
        "n_positions": 8192,
        "pad_vocab_size_multiple": 64 if vocab % 64 == 0 else 1,
        "parallel_block": False,
        "parallel_block_tied_norm": False,
        "prenorm": False,
        "qkv_proj_bias": v["qkv_proj_bias"],
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.0,
        "rotary_emb_base": v["rotary_emb_base"],
        "rotary_emb_fraction": v["rotary_emb_fraction"],
        "rotary_emb_interleaved": v["rotary_emb_interleaved"],
        "rotary_emb_scale_base": None,
        "rotary_scaling_factor": None,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.0,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "torch_dtype": "float32",
        "transformers_version": transformers.__version__,
        "type_vocab_size": 2,
        "use_cache": True,
        "use_flash_attn": True,
        "use_rms_norm": False,
        "use_xentropy": True,
        "vocab_size": vocab,
        "inferencelayer_random_weights": True,
    }


def make_weights(v, vocab):
    """Every tensor of the release layout (no prefix), random."""
    H, I = v["n_embd"], mlp_width(v)
    g = torch.Generator().manual_seed(v["seed"])

    def mat(o, i):
        return torch.randn(o, i, generator=g) * (1.2 / math.sqrt(i))

    def vec(n, around=0.0):
        return around + 0.2 * torch.randn(n, generator=g)

    w = {"embeddings.word_embeddings.weight": 0.5 * torch.randn(vocab, H, generator=g),
         "embeddings.token_type_embeddings.weight": 0.5 * torch.randn(2, H, generator=g),
         "emb_ln.weight": vec(H, 1.0), "emb_ln.bias": vec(H)}
    for n in range(v["n_layer"]):
        p = f"encoder.layers.{n}."
        w[p + "attn.Wqkv.weight"] = mat(3 * H, H)
        w[p + "attn.out_proj.weight"] = mat(H, H)
        if v["qkv_proj_bias"]:
            w[p + "attn.Wqkv.bias"] = vec(3 * H)
            w[p + "attn.out_proj.bias"] = vec(H)
        fc1 = ["fc11", "fc12"] if gated(v) else ["fc1"]
        for f in fc1:
            w[p + f"mlp.{f}.weight"] = mat(I, H)
        w[p + "mlp.fc2.weight"] = mat(H, I)
        if v["mlp_fc1_bias"]:
            for f in fc1:
                w[p + f"mlp.{f}.bias"] = vec(I)
        if v["mlp_fc2_bias"]:
            w[p + "mlp.fc2.bias"] = vec(H)
        for norm in ("norm1", "norm2"):
            w[p + norm + ".weight"] = vec(H, 1.0)
            w[p + norm + ".bias"] = vec(H)
    return {k: t.float().contiguous() for k, t in w.items()}


def rotate(x, cos, sin, interleaved):
    """x [B, L, h, d]: the first 2 * cos.shape[-1] columns rotated (contrib apply_rotary_emb)."""
    ro = cos.shape[-1] * 2
    if interleaved:
        c = cos.repeat_interleave(2, dim=-1)[None, :, None, :]
        s = sin.repeat_interleave(2, dim=-1)[None, :, None, :]
        xr = x[..., :ro]
        x1, x2 = xr[..., ::2], xr[..., 1::2]
        rot = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        c = torch.cat([cos, cos], dim=-1)[None, :, None, :]
        s = torch.cat([sin, sin], dim=-1)[None, :, None, :]
        xr = x[..., :ro]
        x1, x2 = xr.chunk(2, dim=-1)
        rot = torch.cat((-x2, x1), dim=-1)
    return torch.cat([xr * c + rot * s, x[..., ro:]], dim=-1)


@torch.no_grad()
def forward(v, w, ids, mask=None):
    """Last hidden state [B, L, H] for ids [B, L] (right padded, mask [B, L] of 0 / 1)."""
    H, nh = v["n_embd"], v["n_head"]
    hd = H // nh
    B, L = ids.shape
    if mask is None:
        mask = torch.ones_like(ids)
    eps = 1e-12
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
    x = F.layer_norm(x, (H,), w["emb_ln.weight"], w["emb_ln.bias"], eps)
    add_mask = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    rdim = int(hd * v["rotary_emb_fraction"])
    inv_freq = 1.0 / (float(v["rotary_emb_base"]) ** (torch.arange(0, rdim, 2, dtype=torch.float32) / rdim))
    freqs = torch.outer(torch.arange(L, dtype=torch.float32), inv_freq)
    cos, sin = torch.cos(freqs), torch.sin(freqs)
    act = F.silu if v["activation_function"] == "swiglu" else F.gelu
    for n in range(v["n_layer"]):
        p = f"encoder.layers.{n}."
        qkv = F.linear(x, w[p + "attn.Wqkv.weight"], w.get(p + "attn.Wqkv.bias"))
        qkv = qkv.view(B, L, 3, nh, hd)
        q, k, val = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        if rdim > 0:
            q = rotate(q, cos, sin, v["rotary_emb_interleaved"])
            k = rotate(k, cos, sin, v["rotary_emb_interleaved"])
        q, k, val = (t.permute(0, 2, 1, 3) for t in (q, k, val))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + add_mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), val).permute(0, 2, 1, 3).reshape(B, L, H)
        attn = F.linear(ctx, w[p + "attn.out_proj.weight"], w.get(p + "attn.out_proj.bias"))
        x = F.layer_norm(attn + x, (H,), w[p + "norm1.weight"], w[p + "norm1.bias"], eps)
        if gated(v):
            y = F.linear(x, w[p + "mlp.fc11.weight"], w.get(p + "mlp.fc11.bias"))
            gate = F.linear(x, w[p + "mlp.fc12.weight"], w.get(p + "mlp.fc12.bias"))
            y = y * act(gate)
        else:
            y = F.gelu(F.linear(x, w[p + "mlp.fc1.weight"], w.get(p + "mlp.fc1.bias")))
        mlp = F.linear(y, w[p + "mlp.fc2.weight"], w.get(p + "mlp.fc2.bias"))
        x = F.layer_norm(mlp + x, (H,), w[p + "norm2.weight"], w[p + "norm2.bias"], eps)
    return x


def mean_pooled(hidden):
    h = torch.from_numpy(np.asarray(hidden, dtype=np.float32))
    return F.normalize(h.mean(0)[None], p=2, dim=1)[0].numpy()


def write_st_files(folder, v):
    write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    pool = {"word_embedding_dimension": v["n_embd"]}
    for mode, key in mf.LEGACY_POOLING_KEYS:
        pool[key] = mode == "mean"
    pool["include_prompt"] = True
    # No 2_Normalize folder: Normalize has no config, and the Hub repository (git) holds no empty
    # folder either.
    (folder / "1_Pooling").mkdir(exist_ok=True)
    write_json(folder / "1_Pooling" / "config.json", pool)
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": MAX_LEN, "do_lower_case": False})
    write_json(folder / "config_sentence_transformers.json", {
        "__version__": {"sentence_transformers": "2.4.0.dev0", "transformers": "4.37.2", "pytorch": "2.1.0+cu121"},
        "prompts": dict(PROMPTS), "default_prompt_name": None, "similarity_fn_name": "cosine"})


def write_tokenizer(folder, src_dir):
    shutil.copy(src_dir / "tokenizer.json", folder / "tokenizer.json")
    write_json(folder / "special_tokens_map.json", {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]",
                                                    "sep_token": "[SEP]", "unk_token": "[UNK]"})
    write_json(folder / "tokenizer_config.json", {
        "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "do_lower_case": True, "mask_token": "[MASK]",
        "model_max_length": MAX_LEN, "pad_token": "[PAD]", "sep_token": "[SEP]", "strip_accents": None,
        "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]",
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"]})


def try_native_transformers(folder, v, w, ids):
    """Informational: what the installed transformers' own nomic_bert class makes of the folder."""
    try:
        from transformers import AutoConfig, AutoModel
        cfg = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
        print(f"  transformers AutoConfig: {type(cfg).__name__}, hidden_size "
              f"{getattr(cfg, 'hidden_size', None)}, layers {getattr(cfg, 'num_hidden_layers', None)}", flush=True)
        m, info = AutoModel.from_pretrained(str(folder), output_loading_info=True, dtype=torch.float32, trust_remote_code=False,
                                            attn_implementation="eager")
        m.eval()
        print(f"  transformers AutoModel: {type(m).__name__}; missing {len(info.get('missing_keys', []))} "
              f"{sorted(info.get('missing_keys', []))[:6]}, unexpected {len(info.get('unexpected_keys', []))} "
              f"{sorted(info.get('unexpected_keys', []))[:6]}", flush=True)
        with torch.no_grad():
            t = torch.tensor([ids])
            out = m(input_ids=t, attention_mask=torch.ones_like(t)).last_hidden_state[0].float().numpy()
        ref = forward(v, w, t)[0].numpy()
        d = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else None
        print(f"  transformers native vs contrib arithmetic: shape {out.shape} vs {ref.shape}, max abs diff {d}",
              flush=True)
        return d
    except Exception as e:  # noqa: BLE001
        print(f"  transformers native class not usable on the release folder: {type(e).__name__}: "
              f"{str(e)[:300]}", flush=True)
        return None


def native_converted(v, w, ids_list):
    """Informational: transformers' own NomicBertModel (hidden_size / q_proj ... names) built from
    this variant's geometry, its parameters filled from the release tensors by role (q / k / v
    from Wqkv's row blocks, o from out_proj, gate from fc12, up from fc11, down from fc2, the
    embedding norm from emb_ln, each layer's two norms in registration order from norm1, norm2),
    and its last hidden states compared with the contrib arithmetic. Prints what it finds."""
    try:
        from transformers import NomicBertConfig, NomicBertModel
    except Exception as e:  # noqa: BLE001
        print(f"  native: no NomicBertModel ({type(e).__name__}: {e})", flush=True)
        return None
    try:
        H, nh = v["n_embd"], v["n_head"]
        kw = dict(vocab_size=w["embeddings.word_embeddings.weight"].shape[0], hidden_size=H, num_hidden_layers=v["n_layer"],
                  num_attention_heads=nh, intermediate_size=mlp_width(v),
                  hidden_act="silu" if v["activation_function"] == "swiglu" else "gelu", layer_norm_eps=1e-12,
                  type_vocab_size=2, max_position_embeddings=8192, rotary_emb_fraction=v["rotary_emb_fraction"],
                  rotary_emb_base=v["rotary_emb_base"], rotary_emb_interleaved=v["rotary_emb_interleaved"],
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        theta = float(v["rotary_emb_base"])
        m = None
        for extra in ({"rope_parameters": {"rope_type": "default", "rope_theta": theta}}, {"rope_theta": theta}, {}):
            try:
                cfg = NomicBertConfig(**kw, **extra)
                cfg._attn_implementation = "eager"
                m = NomicBertModel(cfg).eval()
                print(f"  native: NomicBertConfig took {sorted(extra)}; config {cfg.to_dict()}", flush=True)
                break
            except Exception as e:  # noqa: BLE001
                print(f"  native: NomicBertConfig({sorted(extra)}) failed: {type(e).__name__}: {e}", flush=True)
        if m is None:
            return None
        names = [n for n, _ in m.named_parameters()]
        print(f"  native: {len(names)} parameters, e.g. {names[:14]}", flush=True)
        sd = {}
        for n, p in m.named_parameters():
            parts = n.split(".")
            layer = next((int(x) for x in parts if x.isdigit()), None)
            src = None
            lp = f"encoder.layers.{layer}." if layer is not None else None
            if "word_embeddings" in n:
                src = w["embeddings.word_embeddings.weight"]
            elif "position_embeddings" in n:  # an absolute table the release does not have: zeros
                src = torch.zeros_like(p)
                print(f"  native: {n} set to zeros (the release has no position table)", flush=True)
            elif "token_type_embeddings" in n:
                src = w["embeddings.token_type_embeddings.weight"]
            elif layer is None and ("LayerNorm" in n or "norm" in n.lower()):
                src = w["emb_ln." + parts[-1]]
            elif layer is not None:
                kind = parts[-1]
                blocks = {"q_proj": 0, "k_proj": 1, "v_proj": 2, "query": 0, "key": 1, "value": 2}
                role = next((r for r in blocks if f".{r}." in "." + n), None)
                if role is not None:
                    full = w.get(lp + "attn.Wqkv." + kind)
                    b = blocks[role]
                    src = None if full is None else full[b * H:(b + 1) * H]
                elif "o_proj" in n or "out_proj" in n or ("attention" in n and "output.dense" in n):
                    src = w.get(lp + "attn.out_proj." + kind)
                elif "gate_proj" in n:
                    src = w.get(lp + "mlp.fc12." + kind)
                elif "up_proj" in n:
                    src = w.get(lp + "mlp.fc11." + kind)
                elif "down_proj" in n:
                    src = w.get(lp + "mlp.fc2." + kind)
            if src is None and layer is not None and p.dim() == 1 and p.shape[0] == H and "proj" not in n:
                src = "NORM"
            sd[n] = src
        # Per layer, norms in registration order: norm1 then norm2.
        for layer in range(v["n_layer"]):
            norm_names = [n for n in names if sd.get(n) == "NORM" and f".{layer}." in n]
            mods = []
            for n in norm_names:
                mod = n.rsplit(".", 1)[0]
                if mod not in mods:
                    mods.append(mod)
            if len(mods) != 2:
                print(f"  native: layer {layer} has norms {mods}; cannot map", flush=True)
                return None
            for i, mod in enumerate(mods):
                for n in norm_names:
                    if n.rsplit(".", 1)[0] == mod:
                        sd[n] = w[f"encoder.layers.{layer}.norm{i + 1}." + n.rsplit(".", 1)[1]]
        unmapped = [n for n, t in sd.items() if t is None or isinstance(t, str)]
        if unmapped:
            print(f"  native: unmapped parameters {unmapped[:10]}", flush=True)
            return None
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.copy_(sd[n].reshape(p.shape))
        worst = 0.0
        for ids in ids_list:
            t = torch.tensor([ids])
            with torch.no_grad():
                out = m(input_ids=t, attention_mask=torch.ones_like(t)).last_hidden_state[0].float().numpy()
            worst = max(worst, float(np.max(np.abs(out - forward(v, w, t)[0].numpy()))))
        print(f"  native NomicBertModel with the release tensors mapped by role vs the contrib arithmetic: "
              f"max abs diff {worst:.3g} over {len(ids_list)} inputs", flush=True)
        return worst
    except Exception as e:  # noqa: BLE001
        print(f"  native conversion failed: {type(e).__name__}: {str(e)[:400]}", flush=True)
        traceback.print_exc(limit=4)
        return None


def build(out, name, v, tok_dir):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    vocab = tok.get_vocab_size()
    w = make_weights(v, vocab)
    save_file(w, str(folder / "model.safetensors"), metadata={"format": "pt"})
    write_json(folder / "config.json", release_config(v, vocab))
    write_st_files(folder, v)
    write_tokenizer(folder, tok_dir)

    # One long text: the market paragraph repeated until it passes 250 tokens, below MAX_LEN.
    long_text = LONG_BASE
    while len(tok.encode(long_text).ids) < 250 and len(tok.encode(long_text + " " + LONG_BASE).ids) <= MAX_LEN:
        long_text += " " + LONG_BASE
    texts = list(mf.EMBED_TEXTS) + [long_text]
    cases, singles, all_ids = [], [], []
    items = [(t, None) for t in texts] + list(PROMPT_CASES)
    for i, (text, prompt_name) in enumerate(items):
        full = text if prompt_name is None else PROMPTS[prompt_name] + text
        enc = tok.encode(full)
        ids = list(enc.ids)
        if len(ids) > MAX_LEN:
            raise AssertionError(f"{name}: case {i} longer than {MAX_LEN}")
        hidden = forward(v, w, torch.tensor([ids]))[0].numpy()
        pooled = mean_pooled(hidden)
        case = {"text": full}
        if prompt_name is not None:
            case["input_text"] = text
            case["prompt_name"] = prompt_name
        case.update({"input_ids": ids, "token_type_ids": [0] * len(ids), "offsets": byte_offsets(enc, full),
                     "pooled": flist(pooled), "pooled_dim32": flist(pooled[:MATRYOSHKA_DIM])})
        cases.append(case)
        singles.append(hidden)
        all_ids.append(ids)
    lengths = [len(x) for x in all_ids]
    longest = int(np.argmax(lengths))
    for i, c in enumerate(cases):
        if i < HIDDEN_CASES or i == longest:
            c["hidden"] = flist(singles[i])
    if max(lengths) < 150:
        raise AssertionError(f"{name}: want a case past 150 tokens, got {lengths}")

    # Self-check: a right-padded batch with the additive mask gives the one-at-a-time rows.
    Lm = max(lengths)
    b_ids = torch.zeros((len(all_ids), Lm), dtype=torch.long)
    b_mask = torch.zeros_like(b_ids)
    for i, ids in enumerate(all_ids):
        b_ids[i, :len(ids)] = torch.tensor(ids)
        b_mask[i, :len(ids)] = 1
    bh = forward(v, w, b_ids, b_mask).numpy()
    worst = 0.0
    for i, ids in enumerate(all_ids):
        worst = max(worst, check_close(f"{name} padded batch row {i}", bh[i, :len(ids)], singles[i], BATCH_TOL))

    rng = np.random.default_rng(v["seed"] + 1000)
    id_cases = []
    for L in ID_CASE_LENGTHS:
        ids = [int(x) for x in rng.integers(5, vocab, size=L).tolist()]
        ids[0] = 2
        hidden = forward(v, w, torch.tensor([ids]))[0].numpy()
        c = {"input_ids": ids, "token_type_ids": [0] * L, "pooled": flist(mean_pooled(hidden))}
        if L <= HIDDEN_ID_MAX_LEN:
            c["hidden"] = flist(hidden)
        id_cases.append(c)

    spread = check_not_degenerate(name, [c["pooled"] for c in cases])
    native = try_native_transformers(folder, v, w, all_ids[0])
    converted = native_converted(v, w, [all_ids[0], all_ids[longest]])
    st_note = None
    try:
        st = mf.st_load(folder)
        got = mf.st_encode(st, [texts[0]])[0]
        st_note = f"sentence-transformers loaded the folder; case 0 max abs diff {mf.max_abs(got, cases[0]['pooled']):.3g}"
    except Exception as e:  # noqa: BLE001
        st_note = f"sentence-transformers cannot load the folder: {type(e).__name__}: {str(e)[:200]}"
    print(f"  {st_note}", flush=True)

    expected = {
        "kind": "embedding",
        "model": name,
        "architecture": "NomicBertModel",
        "pooling": "mean",
        "normalize": True,
        "include_prompt": True,
        "max_length": MAX_LEN,
        "prompts": dict(PROMPTS),
        "matryoshka_dim": MATRYOSHKA_DIM,
        "matryoshka_renormalized": False,
        "reference": "contrib modeling_hf_nomic_bert.py arithmetic written out in tools/oracle/make_nomic_fixtures.py",
        "generator": {"torch": torch.__version__, "transformers": transformers.__version__,
                      "tokenizers": __import__("tokenizers").__version__},
        "cases": cases,
        "id_cases": id_cases,
    }
    write_json(folder / "expected.json", expected, indent=None)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"{name}: {len(cases)} cases, lengths {lengths}, batch self-check {worst:.3g}, spread {spread:.3g}, "
          f"native transformers on the folder: diff {native}; converted: diff {converted}; {size} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer-from", default=str(HERE.parent.parent / "tests" / "fixtures" / "bert-mean"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}", flush=True)
    try:  # the installed transformers' own nomic_bert sources, for reading next to the fixtures
        import transformers.models.nomic_bert as nb
        dst = out.parent / "native_nomic_bert"
        dst.mkdir(parents=True, exist_ok=True)
        for f in Path(nb.__file__).parent.glob("*.py"):
            shutil.copy(f, dst / f.name)
        cm = Path(transformers.__file__).parent / "conversion_mapping.py"
        if cm.exists():
            shutil.copy(cm, dst / "conversion_mapping.py")
    except Exception as e:  # noqa: BLE001
        print(f"no native nomic_bert sources: {e}")
    failed = []
    for name, v in VARIANTS.items():
        try:
            build(out, name, v, Path(args.tokenizer_from))
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            failed.append(name)
    for n in mf.NOTES:
        print("note:", n)
    if failed:
        print("FAILED:", failed)
        sys.exit(1)


if __name__ == "__main__":
    main()
