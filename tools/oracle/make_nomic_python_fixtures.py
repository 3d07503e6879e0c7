#!/usr/bin/env python3
"""Two nomic-bert fixture folders made without torch (plain Python 3, no third-party package):

tests/fixtures/nomic-embed-rot: the nomic-bert forms nomic-embed-text v1.5 does not use, checked
against a reference written out in plain Python (float64).

tests/fixtures/nomic-embed-hf: tests/fixtures/nomic-embed re-saved in the layout transformers'
own NomicBertModel (5.x) saves: config.json with hidden_size / num_hidden_layers /
num_attention_heads / intermediate_size (the 256 the release's n_inner 96 rounds to) / hidden_act
silu / layer_norm_eps / rope_parameters {rope_type default, rope_theta 1000}, and tensors
embeddings.{word_embeddings, token_type_embeddings, LayerNorm}, layers.N.self_attn.{q,k,v,o}_proj
(Wqkv's three row blocks; out_proj), layers.N.mlp.gate_proj (fc12), up_proj (fc11), down_proj
(fc2), layers.N.post_attention_layernorm (norm1), post_mlp_layernorm (norm2). Its expected.json is
nomic-embed's: make_nomic_fixtures.py's run built transformers 5.17's NomicBertModel from a
NomicBertConfig with these values, filled it with nomic-embed's tensors mapped this way, and got
nomic-embed's last hidden states with a max abs difference of 0 (that run's log). The folder
itself was not loaded by transformers (the device run's file limit; see below).

Why a second generator: make_nomic_fixtures.py writes this folder too (torch, on the GPU machine),
but the device run that produced nomic-embed brought back only one folder's files. This script
builds the same geometry without torch so the engine's partial / interleaved rotary embeddings,
biases and plain-GELU MLP are checked against an independent reference now. Its weights come
from Python's `random` (so they differ from the torch script's); the arithmetic is the contrib
modeling_hf_nomic_bert.py forward pass, as make_nomic_fixtures.py's docstring spells it out, in
float64 except where the contrib code rounds to float32 on purpose: inv_freq and position ·
inv_freq (its pos_idx_in_fp32 path), emulated here with struct.

Geometry: n_embd 48, 2 layers, 4 heads (head_dim 12), n_inner 128, activation_function gelu_new
(the contrib block passes F.gelu, so the plain MLP fc2(gelu(fc1(x))) with the exact erf GELU),
rotary_emb_fraction 0.5 (rotary_dim 6 of 12), rotary_emb_interleaved true (pairs 2j, 2j + 1),
rotary_emb_base 10000, qkv_proj_bias / mlp_fc1_bias / mlp_fc2_bias true (Wqkv, out_proj, fc1, fc2
biases), layer_norm_epsilon 1e-12, type_vocab_size 2 (row 0 added). Every parameter random (norm
weights 1 + 0.2 N, biases 0.2 N, embeddings 0.5 N, matrices 1.2 N / sqrt(fan_in)).

Inputs: the text cases of tests/fixtures/nomic-embed/expected.json (the same tokenizer.json, so
their input_ids and offsets, from the tokenizers library, carry over), and random id cases.

    python3 tools/oracle/make_nomic_python_fixtures.py --out tests/fixtures
"""

import argparse
import json
import math
import random
import shutil
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 902
H, LAYERS, HEADS, INNER = 48, 2, 4, 128
HD = H // HEADS
RDIM = 6
BASE = 10000.0
EPS = 1e-12
MATRYOSHKA_DIM = 32
ID_CASE_LENGTHS = [1, 5, 33, 64, 150]
HIDDEN_ID_MAX_LEN = 33
HIDDEN_CASES = 3


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f9(x):
    return float(f"{f32(x):.9g}")


def make_weights(vocab, rng):
    def gauss(n, scale, around=0.0):
        return [around + scale * rng.gauss(0.0, 1.0) for _ in range(n)]

    def mat(o, i):
        return [gauss(i, 1.2 / math.sqrt(i)) for _ in range(o)]

    w = {"embeddings.word_embeddings.weight": [gauss(H, 0.5) for _ in range(vocab)],
         "embeddings.token_type_embeddings.weight": [gauss(H, 0.5) for _ in range(2)],
         "emb_ln.weight": gauss(H, 0.2, 1.0), "emb_ln.bias": gauss(H, 0.2)}
    for n in range(LAYERS):
        p = f"encoder.layers.{n}."
        w[p + "attn.Wqkv.weight"] = mat(3 * H, H)
        w[p + "attn.Wqkv.bias"] = gauss(3 * H, 0.2)
        w[p + "attn.out_proj.weight"] = mat(H, H)
        w[p + "attn.out_proj.bias"] = gauss(H, 0.2)
        w[p + "mlp.fc1.weight"] = mat(INNER, H)
        w[p + "mlp.fc1.bias"] = gauss(INNER, 0.2)
        w[p + "mlp.fc2.weight"] = mat(H, INNER)
        w[p + "mlp.fc2.bias"] = gauss(H, 0.2)
        for norm in ("norm1", "norm2"):
            w[p + norm + ".weight"] = gauss(H, 0.2, 1.0)
            w[p + norm + ".bias"] = gauss(H, 0.2)
    # Stored as float32: the reference computes with the stored (rounded) values.
    return {k: ([[f32(x) for x in r] for r in v] if isinstance(v[0], list) else [f32(x) for x in v])
            for k, v in w.items()}


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        v = tensors[name]
        shape = [len(v), len(v[0])] if isinstance(v[0], list) else [len(v)]
        flat = [x for r in v for x in r] if isinstance(v[0], list) else v
        blob = struct.pack(f"<{len(flat)}f", *flat)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def linear(x, w, b):
    return [[sum(wi * xi for wi, xi in zip(row, xr)) + (b[o] if b else 0.0) for o, row in enumerate(w)] for xr in x]


def layer_norm(x, g, b):
    out = []
    for r in x:
        m = sum(r) / len(r)
        var = sum((v - m) ** 2 for v in r) / len(r)
        s = 1.0 / math.sqrt(var + EPS)
        out.append([(v - m) * s * gi + bi for v, gi, bi in zip(r, g, b)])
    return out


def gelu(v):
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def rope_tables(L):
    # contrib: inv_freq = 1 / base ** (arange(0, dim, 2) / dim) in float32; freqs = outer(t, inv_freq)
    inv = [f32(1.0 / f32(BASE ** f32(j / RDIM))) for j in range(0, RDIM, 2)]
    return [[f32(f32(float(p)) * i) for i in inv] for p in range(L)]


def rotate_interleaved(vec, angles):
    out = list(vec)
    for j, a in enumerate(angles):
        c, s = math.cos(a), math.sin(a)
        x0, x1 = vec[2 * j], vec[2 * j + 1]
        out[2 * j] = x0 * c - x1 * s
        out[2 * j + 1] = x1 * c + x0 * s
    return out


def forward(w, ids):
    L = len(ids)
    x = [[a + b for a, b in zip(w["embeddings.word_embeddings.weight"][t], w["embeddings.token_type_embeddings.weight"][0])]
         for t in ids]
    x = layer_norm(x, w["emb_ln.weight"], w["emb_ln.bias"])
    angles = rope_tables(L)
    for n in range(LAYERS):
        p = f"encoder.layers.{n}."
        qkv = linear(x, w[p + "attn.Wqkv.weight"], w[p + "attn.Wqkv.bias"])
        ctx = [[0.0] * H for _ in range(L)]
        for h in range(HEADS):
            q, k, v = [], [], []
            for i in range(L):
                qh = qkv[i][h * HD:(h + 1) * HD]
                kh = qkv[i][H + h * HD:H + (h + 1) * HD]
                q.append(rotate_interleaved(qh[:RDIM], angles[i]) + qh[RDIM:])
                k.append(rotate_interleaved(kh[:RDIM], angles[i]) + kh[RDIM:])
                v.append(qkv[i][2 * H + h * HD:2 * H + (h + 1) * HD])
            scale = 1.0 / math.sqrt(HD)
            for i in range(L):
                s = [sum(a * b for a, b in zip(q[i], k[j])) * scale for j in range(L)]
                m = max(s)
                e = [math.exp(t - m) for t in s]
                z = sum(e)
                for d in range(HD):
                    ctx[i][h * HD + d] = sum(e[j] * v[j][d] for j in range(L)) / z
        attn = linear(ctx, w[p + "attn.out_proj.weight"], w[p + "attn.out_proj.bias"])
        x = layer_norm([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(attn, x)], w[p + "norm1.weight"],
                       w[p + "norm1.bias"])
        up = [[gelu(v) for v in r] for r in linear(x, w[p + "mlp.fc1.weight"], w[p + "mlp.fc1.bias"])]
        mlp = linear(up, w[p + "mlp.fc2.weight"], w[p + "mlp.fc2.bias"])
        x = layer_norm([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(mlp, x)], w[p + "norm2.weight"],
                       w[p + "norm2.bias"])
    return x


def pooled(hidden):
    m = [sum(r[d] for r in hidden) / len(hidden) for d in range(H)]
    n = math.sqrt(sum(v * v for v in m))
    return [v / n for v in m]


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["shape"], data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in header.items()}


def write_safetensors_bytes(path, tensors):
    header, offset = {}, 0
    for name in sorted(tensors):
        shape, blob = tensors[name]
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name in sorted(tensors):
            f.write(tensors[name][1])


def make_hf_layout(out, fixtures):
    src = fixtures / "nomic-embed"
    folder = Path(out) / "nomic-embed-hf"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(src, folder)
    release = json.loads((src / "config.json").read_text())
    t = read_safetensors(src / "model.safetensors")
    h, heads = release["n_embd"], release["n_head"]
    inner = t["encoder.layers.0.mlp.fc11.weight"][0][0]
    config = {
        "architectures": ["NomicBertModel"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": None,
        "classifier_dropout": None,
        "dtype": "float32",
        "eos_token_id": None,
        "head_dim": h // heads,
        "hidden_act": "silu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": h,
        "initializer_range": 0.02,
        "intermediate_size": inner,
        "layer_norm_eps": release["layer_norm_epsilon"],
        "max_position_embeddings": release["n_positions"],
        "model_type": "nomic_bert",
        "num_attention_heads": heads,
        "num_hidden_layers": release["n_layer"],
        "pad_token_id": 0,
        "rope_parameters": {"rope_theta": float(release["rotary_emb_base"]), "rope_type": "default"},
        "tie_word_embeddings": True,
        "transformers_version": "5.17.0",
        "type_vocab_size": release["type_vocab_size"],
        "vocab_size": release["vocab_size"],
        "inferencelayer_random_weights": True,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    out_t = {
        "embeddings.word_embeddings.weight": t["embeddings.word_embeddings.weight"],
        "embeddings.token_type_embeddings.weight": t["embeddings.token_type_embeddings.weight"],
        "embeddings.LayerNorm.weight": t["emb_ln.weight"],
        "embeddings.LayerNorm.bias": t["emb_ln.bias"],
    }
    row = h * 4  # bytes of one f32 row of Wqkv
    for n in range(release["n_layer"]):
        a, b = f"encoder.layers.{n}.", f"layers.{n}."
        shape, blob = t[a + "attn.Wqkv.weight"]
        assert shape == [3 * h, h]
        for i, part in enumerate(("q_proj", "k_proj", "v_proj")):
            out_t[b + f"self_attn.{part}.weight"] = ([h, h], blob[i * h * row:(i + 1) * h * row])
        out_t[b + "self_attn.o_proj.weight"] = t[a + "attn.out_proj.weight"]
        out_t[b + "mlp.gate_proj.weight"] = t[a + "mlp.fc12.weight"]
        out_t[b + "mlp.up_proj.weight"] = t[a + "mlp.fc11.weight"]
        out_t[b + "mlp.down_proj.weight"] = t[a + "mlp.fc2.weight"]
        for mine, theirs in (("norm1", "post_attention_layernorm"), ("norm2", "post_mlp_layernorm")):
            for kind in ("weight", "bias"):
                out_t[b + f"{theirs}.{kind}"] = t[a + f"{mine}.{kind}"]
    assert len(out_t) == len(t) + 2 * release["n_layer"], (len(out_t), len(t))
    write_safetensors_bytes(folder / "model.safetensors", out_t)
    expected = json.loads((src / "expected.json").read_text())
    # A subset keeps the folder small: the cases with hidden states, the prompted ones, every id case.
    expected["cases"] = [c for c in expected["cases"] if "hidden" in c or "prompt_name" in c]
    expected["model"] = "nomic-embed-hf"
    expected["reference"] = ("nomic-embed's expected.json: transformers 5.17's NomicBertModel with these tensors gives "
                             "the same last hidden states (max abs diff 0, make_nomic_fixtures.py's run)")
    with open(folder / "expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {folder}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    fixtures = HERE.parent.parent / "tests" / "fixtures"
    src = fixtures / "nomic-embed"
    folder = Path(args.out) / "nomic-embed-rot"
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "1_Pooling").mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "modules.json",
                 "sentence_bert_config.json", "config_sentence_transformers.json"):
        shutil.copy(src / name, folder / name)
    pool = json.loads((src / "1_Pooling" / "config.json").read_text())
    pool["word_embedding_dimension"] = H
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    config = json.loads((src / "config.json").read_text())
    config.update({"n_embd": H, "n_layer": LAYERS, "n_head": HEADS, "n_inner": INNER, "activation_function": "gelu_new",
                   "rotary_emb_fraction": 0.5, "rotary_emb_interleaved": True, "rotary_emb_base": 10000,
                   "qkv_proj_bias": True, "mlp_fc1_bias": True, "mlp_fc2_bias": True})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    src_expected = json.loads((src / "expected.json").read_text())
    vocab = config["vocab_size"]
    rng = random.Random(SEED)
    w = make_weights(vocab, rng)
    save_safetensors(folder / "model.safetensors", w)

    cases = []
    lengths = [len(c["input_ids"]) for c in src_expected["cases"]]
    longest = max(range(len(lengths)), key=lambda i: lengths[i])
    for i, c in enumerate(src_expected["cases"]):
        hidden = forward(w, c["input_ids"])
        p = pooled(hidden)
        case = {k: c[k] for k in ("text", "input_text", "prompt_name", "input_ids", "token_type_ids", "offsets") if k in c}
        case.update({"pooled": [f9(v) for v in p], "pooled_dim32": [f9(v) for v in p[:MATRYOSHKA_DIM]]})
        if i < HIDDEN_CASES or i == longest:
            case["hidden"] = [[f9(v) for v in r] for r in hidden]
        cases.append(case)
        print(f"case {i}: {len(c['input_ids'])} tokens", flush=True)
    id_rng = random.Random(SEED + 1000)
    id_cases = []
    for L in ID_CASE_LENGTHS:
        ids = [id_rng.randrange(5, vocab) for _ in range(L)]
        ids[0] = 2
        hidden = forward(w, ids)
        c = {"input_ids": ids, "token_type_ids": [0] * L, "pooled": [f9(v) for v in pooled(hidden)]}
        if L <= HIDDEN_ID_MAX_LEN:
            c["hidden"] = [[f9(v) for v in r] for r in hidden]
        id_cases.append(c)
    expected = {k: v for k, v in src_expected.items() if k not in ("cases", "id_cases", "generator", "reference", "model")}
    expected.update({"model": "nomic-embed-rot",
                     "reference": "contrib modeling_hf_nomic_bert.py arithmetic in float64 plain Python "
                                  "(tools/oracle/make_nomic_rot_fixture.py)",
                     "generator": {"python": "float64, struct-emulated float32 rotary angles"},
                     "cases": cases, "id_cases": id_cases})
    with open(folder / "expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {folder}")
    make_hf_layout(args.out, fixtures)


if __name__ == "__main__":
    main()
