#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's ModernBERT models, produced by `transformers` /
`sentence-transformers`.

The companion of make_fixtures.py (whose helpers and WordPiece vocabulary it reuses; the BERT
folders are not touched): tiny random-weight ModernBERT folders and what transformers /
sentence-transformers compute for them, committed under tests/fixtures so CI (no Python ML
stack) can check the C++ backends against them.

Run on a machine with torch, transformers 5.x, sentence-transformers, tokenizers and safetensors:

    python3 tools/oracle/make_modernbert_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed.

Geometry (every folder): hidden 64, 3 layers, 4 heads of head_dim 16, intermediate 96 (the GeGLU
Wi is [192, 64]), local_attention 16 (a sliding layer's token sees 8 keys on each side), rope
thetas 160000 (global) and 10000 (local) as ModernBERT-base, norm_eps 1e-5,
max_position_embeddings 64 (= the tokenizer's model_max_length). Texts run up to 64 tokens, so
most of them are longer than the window; every run checks that the window changes the result
(the same model with local_attention 1024 gives other numbers).

Tokenizer: make_fixtures.py's WordPiece (bert flavour: [CLS] A [SEP] B:1 [SEP]:1, ids [PAD] 0,
[UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4), saved with model_input_names [input_ids, attention_mask] as
ModernBERT's tokenizer has: the model takes no token_type_ids, so none are recorded.
ModernBERT's own ByteLevel BPE is not reproduced; the model's pad / cls / sep ids come from the
tokenizer all the same.

Every parameter is random: norm weights 1 + 0.2 N, norm biases 0.2 N, tok_embeddings 0.5 N,
matrices 1.2 N / sqrt(fan_in), other biases 0.2 N.

Folders written under --out (each with expected.json and config.json marked
"inferencelayer_random_weights": true):
  modernbert-embed   ModernBertModel in a sentence-transformers folder (Transformer, mean Pooling,
                     Normalize). global_attn_every_n_layers 3 (layer 0 global, 1 and 2 sliding),
                     norm_bias false, no attention / MLP biases (ModernBERT-base's settings).
                     config.json as transformers 5 saves it (layer_types, rope_parameters).
                     expected.json (kind "embedding"): per text case input_ids, offsets, pooled
                     (SentenceTransformer.encode, normalized), hidden (last_hidden_state, the
                     final norm applied; the first cases and the longest); id_cases likewise.
  modernbert-ce      ModernBertForSequenceClassification, num_labels 1, classifier_pooling mean
                     (what ModernBERT-base's config and the rerankers fine-tuned from it say),
                     classifier_activation gelu, classifier_bias false, norm_bias false,
                     global_attn_every_n_layers 3. config.json rewritten in the Hub's older form
                     (global_rope_theta, local_rope_theta, global_attn_every_n_layers; no
                     layer_types, no rope_parameters), checked to load to the same logits.
                     expected.json (kind "cross_encoder"): per pair input_ids, offsets, scores
                     (raw logits), hidden (the encoder's last_hidden_state; first cases).
  modernbert-ce-cls  The same head with classifier_pooling cls, classifier_activation silu,
                     classifier_bias, norm_bias, attention_bias and mlp_bias all true, and
                     global_attn_every_n_layers 2 (layers 0 and 2 global, 1 sliding).
"""

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("RAYON_RS_NUM_CPUS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_fixtures as mf  # noqa: E402
from make_fixtures import (  # noqa: E402
    CE_PAIRS,
    EMBED_TEXTS,
    ID_CASE_LENGTHS,
    build_tokenizer,
    byte_offsets,
    check_close,
    check_not_degenerate,
    dir_size,
    flist,
    mark_random,
    note,
    patch_json,
    read_json,
    remove_empty_dirs,
    st_encode,
    st_load,
    st_modules,
    to_np,
    truncating_copy,
    write_json,
)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import transformers  # noqa: E402
from transformers import AutoTokenizer, ModernBertConfig, ModernBertForSequenceClassification, ModernBertModel  # noqa: E402

HIDDEN = 64
LAYERS = 3
HEADS = 4
INTERMEDIATE = 96
LOCAL_ATTENTION = 16
GLOBAL_THETA = 160000.0
LOCAL_THETA = 10000.0
NORM_EPS = 1e-5
MAX_LEN = mf.MAX_LEN  # 64
TOL = mf.TOL
HIDDEN_CASES = 3
INPUT_NAMES = ["input_ids", "attention_mask"]


def modernbert_config(vocab_size, tok, *, every_n, biases, num_labels=None, pooling="mean", cls_act="gelu"):
    kw = dict(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        hidden_activation="gelu",
        max_position_embeddings=MAX_LEN,
        norm_eps=NORM_EPS,
        norm_bias=biases,
        attention_bias=biases,
        mlp_bias=biases,
        global_attn_every_n_layers=every_n,
        local_attention=LOCAL_ATTENTION,
        global_rope_theta=GLOBAL_THETA,
        local_rope_theta=LOCAL_THETA,
        pad_token_id=tok.token_to_id("[PAD]"),
        cls_token_id=tok.token_to_id("[CLS]"),
        sep_token_id=tok.token_to_id("[SEP]"),
        bos_token_id=tok.token_to_id("[CLS]"),
        eos_token_id=tok.token_to_id("[SEP]"),
        classifier_pooling=pooling,
        classifier_activation=cls_act,
        classifier_bias=biases,
        reference_compile=False,
    )
    if num_labels is not None:
        kw["num_labels"] = num_labels
    cfg = ModernBertConfig(**kw)
    mf.set_eager(cfg)
    kinds = list(cfg.layer_types)
    want = ["full_attention" if i % every_n == 0 else "sliding_attention" for i in range(LAYERS)]
    assert kinds == want, (kinds, want)
    rp = cfg.rope_parameters
    if rp["full_attention"]["rope_theta"] != GLOBAL_THETA or rp["sliding_attention"]["rope_theta"] != LOCAL_THETA:
        note(f"rope_parameters {rp} do not hold the thetas asked for (config.json says what was used)")
    return cfg


@torch.no_grad()
def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    count = 0
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        leaf = name.rsplit(".", 2)
        is_norm = len(leaf) >= 2 and leaf[-2].endswith("norm")
        if is_norm:
            v = 1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r
        elif "tok_embeddings" in name:
            v = 0.5 * r
        elif p.dim() == 2:
            v = r * (1.2 / math.sqrt(p.shape[1]))
        else:
            v = 0.2 * r
        p.copy_(v.to(p.dtype))
        count += 1
    return count


def save_tokenizer(tok, folder):
    mf.save_tokenizer(tok, folder, "bert")

    def fix(c):
        c["model_input_names"] = INPUT_NAMES
        c["model_max_length"] = MAX_LEN

    patch_json(Path(folder) / "tokenizer_config.json", fix)


def tokenize(tok_trunc, hf_tok, text, pair=None):
    enc = tok_trunc.encode(text, pair) if pair is not None else tok_trunc.encode(text)
    ids = list(enc.ids)
    offs = byte_offsets(enc, text, pair)
    args = (text,) if pair is None else (text, pair)
    h = hf_tok(*args, truncation=True, max_length=MAX_LEN)
    if list(h["input_ids"]) != ids:
        raise AssertionError(f"transformers vs tokenizers ids differ for {text!r}/{pair!r}")
    if "token_type_ids" in h:
        raise AssertionError("the tokenizer returns token_type_ids; ModernBERT's does not")
    return ids, offs


def id_cases(vocab_size, cls_id, sep_id, seed):
    rng = np.random.default_rng(seed)
    out = []
    for L in ID_CASE_LENGTHS:
        ids = rng.integers(5, vocab_size, size=L).tolist()
        ids[0] = cls_id
        if L > 1:
            ids[-1] = sep_id
        out.append([int(v) for v in ids])
    return out


@torch.no_grad()
def hidden_of(base, ids):
    t = torch.tensor([ids], dtype=torch.long)
    return base(input_ids=t, attention_mask=torch.ones_like(t)).last_hidden_state[0].float().numpy()


@torch.no_grad()
def logits_of(model, ids):
    t = torch.tensor([ids], dtype=torch.long)
    return model(input_ids=t, attention_mask=torch.ones_like(t)).logits[0].float().numpy()


def pad(seqs, pad_id):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def window_matters(model_cls, folder, probe, fn):
    """The model with a window wider than any text must give other numbers on `probe` (a long
    input): otherwise the fixture would not test the sliding window at all."""
    wide = model_cls.from_pretrained(str(folder), **mf.load_kwargs(), local_attention=1024)
    wide.eval()
    a = fn(wide, probe)
    del wide
    return a


def load(model_cls, folder):
    m = mf.hf_from_pretrained(model_cls, folder)
    assert m.config.local_attention == LOCAL_ATTENTION, m.config.local_attention
    return m


def print_folder(folder):
    print(f"--- {folder.name}: {dir_size(folder)} bytes", flush=True)
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            print(f"  {p.relative_to(folder)} {p.stat().st_size}")
    print("  config.json:", json.dumps(read_json(folder / "config.json"), sort_keys=True))
    try:
        from safetensors import safe_open

        with safe_open(str(folder / "model.safetensors"), "np") as f:
            for k in sorted(f.keys()):
                print(f"  tensor {k} {list(f.get_slice(k).get_shape())}")
    except Exception as e:  # listing only
        print("  (tensor listing failed:", e, ")")


# ----------------------------------------------------------------------------------------------


def build_embed(out, tok, tok_trunc, V, seed):
    name = "modernbert-embed"
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = modernbert_config(V, tok, every_n=3, biases=False)
    model = ModernBertModel(cfg)
    n = randomize(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    save_tokenizer(tok, folder)
    mark_random(folder)

    Transformer, Pooling, Normalize, SentenceTransformer = st_modules()
    tr = Transformer(str(folder), model_kwargs=mf.load_kwargs())
    st = SentenceTransformer(modules=[tr, Pooling(HIDDEN, pooling_mode="mean"), Normalize()], device="cpu")
    try:
        st.save(str(folder), create_model_card=False)
    except TypeError:
        st.save(str(folder))
    readme = folder / "README.md"
    if readme.exists():
        readme.unlink()
    save_tokenizer(tok, folder)  # the ST save rewrites tokenizer files
    mark_random(folder)
    remove_empty_dirs(folder)
    # max_seq_length as the tokenizer's
    sbc = folder / "sentence_bert_config.json"
    if sbc.exists():
        patch_json(sbc, lambda c: c.update({"max_seq_length": MAX_LEN}))
    else:
        write_json(sbc, {"max_seq_length": MAX_LEN, "do_lower_case": False})

    st = st_load(folder)
    hf_tok = AutoTokenizer.from_pretrained(str(folder))
    hf = load(ModernBertModel, folder)
    stats = {"parameters": n}
    cases, all_ids, singles = [], [], []
    for i, text in enumerate(EMBED_TEXTS):
        ids, offs = tokenize(tok_trunc, hf_tok, text)
        hidden = hidden_of(hf, ids)
        mine = F.normalize(torch.from_numpy(hidden).mean(0)[None], p=2, dim=1)[0].numpy()
        pooled = st_encode(st, [text])[0]
        check_close(f"{name} case {i}: ST encode vs transformers + mean", pooled, mine)
        case = {"text": text, "input_ids": ids, "offsets": offs, "pooled": flist(pooled)}
        cases.append(case)
        all_ids.append(ids)
        singles.append(hidden)
    longest = max(range(len(all_ids)), key=lambda i: len(all_ids[i]))
    for i in list(range(HIDDEN_CASES)) + [longest]:
        cases[i]["hidden"] = flist(singles[i])
    lens = [len(x) for x in all_ids]
    stats["text_lengths"] = lens
    assert max(lens) == MAX_LEN, lens
    assert sum(1 for L in lens if L > LOCAL_ATTENTION) >= 5, lens

    b_ids, b_mask = pad(all_ids, cfg.pad_token_id)
    with torch.no_grad():
        bh = hf(input_ids=b_ids, attention_mask=b_mask).last_hidden_state.float().numpy()
    worst = 0.0
    for i, ids in enumerate(all_ids):
        worst = max(worst, check_close(f"{name} batch hidden {i}", bh[i, : len(ids)], singles[i]))
    stats["batch_max_abs_diff"] = worst

    wide = window_matters(ModernBertModel, folder, all_ids[longest], hidden_of)
    stats["window_effect"] = float(np.max(np.abs(wide - singles[longest])))
    assert stats["window_effect"] > 1e-2, stats["window_effect"]

    ids_list = []
    for ids in id_cases(V, tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), seed + 1000):
        hidden = hidden_of(hf, ids)
        pooled = F.normalize(torch.from_numpy(hidden).mean(0)[None], p=2, dim=1)[0].numpy()
        try:
            feats = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
            with torch.no_grad():
                emb = st(feats)["sentence_embedding"][0]
            check_close(f"{name} id case ST forward", to_np(emb), pooled)
        except AssertionError:
            raise
        except Exception as e:
            note(f"{name}: ST forward on id features not usable ({type(e).__name__}: {e})")
        ids_list.append({"input_ids": ids, "pooled": flist(pooled), "hidden": flist(hidden)})
    stats["spread"] = check_not_degenerate(name, [c["pooled"] for c in cases])
    write_json(folder / "expected.json", {
        "kind": "embedding",
        "model": name,
        "pooling": "mean",
        "normalize": True,
        "max_length": MAX_LEN,
        "generator": mf.st_generator(),
        "cases": cases,
        "id_cases": ids_list,
    }, indent=None)
    return folder, stats


def to_hub_form(folder, every_n):
    """config.json as the Hub's ModernBERT checkpoints write it (transformers 4.x)."""

    def fn(c):
        c.pop("layer_types", None)
        c.pop("rope_parameters", None)
        c["global_attn_every_n_layers"] = every_n
        c["global_rope_theta"] = GLOBAL_THETA
        c["local_rope_theta"] = LOCAL_THETA

    patch_json(folder / "config.json", fn)


def build_ce(out, name, tok, tok_trunc, V, seed, *, pooling, cls_act, biases, every_n, hub_form):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = modernbert_config(V, tok, every_n=every_n, biases=biases, num_labels=1, pooling=pooling, cls_act=cls_act)
    model = ModernBertForSequenceClassification(cfg)
    n = randomize(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    save_tokenizer(tok, folder)
    mark_random(folder)
    stats = {"parameters": n}

    hf_tok = AutoTokenizer.from_pretrained(str(folder))
    hf = load(ModernBertForSequenceClassification, folder)
    assert hf.config.classifier_pooling == pooling
    cases, all_ids, singles = [], [], []
    for i, (q, d) in enumerate(CE_PAIRS):
        ids, offs = tokenize(tok_trunc, hf_tok, q, d)
        logits = logits_of(hf, ids)
        assert logits.shape == (1,), logits.shape
        case = {"text": q, "pair": d, "input_ids": ids, "offsets": offs, "scores": flist(logits)}
        if i < HIDDEN_CASES:
            case["hidden"] = flist(hidden_of(hf.model, ids))
        cases.append(case)
        all_ids.append(ids)
        singles.append(logits)
    lens = [len(x) for x in all_ids]
    stats["pair_lengths"] = lens
    assert max(lens) == MAX_LEN, lens

    b_ids, b_mask = pad(all_ids, cfg.pad_token_id)
    with torch.no_grad():
        bl = hf(input_ids=b_ids, attention_mask=b_mask).logits.float().numpy()
    worst = 0.0
    for i in range(len(all_ids)):
        worst = max(worst, check_close(f"{name} batch logits {i}", bl[i], singles[i]))
    stats["batch_max_abs_diff"] = worst

    longest = max(range(len(all_ids)), key=lambda i: len(all_ids[i]))
    wide = window_matters(ModernBertForSequenceClassification, folder, all_ids[longest], logits_of)
    stats["window_effect"] = float(np.max(np.abs(wide - singles[longest])))
    assert stats["window_effect"] > 1e-3, stats["window_effect"]

    if hub_form:
        to_hub_form(folder, every_n)
        again = load(ModernBertForSequenceClassification, folder)
        assert list(again.config.layer_types) == list(hf.config.layer_types), again.config.layer_types
        for i, ids in enumerate(all_ids):
            check_close(f"{name} hub-form config, pair {i}", logits_of(again, ids), singles[i], tol=1e-6)
        stats["hub_form_checked"] = True

    # sentence-transformers' CrossEncoder on the folder, raw logits.
    stats["cross_encoder_checked"] = False
    try:
        from sentence_transformers import CrossEncoder

        ce = CrossEncoder(str(folder), device="cpu", activation_fn=torch.nn.Identity(), model_kwargs=mf.load_kwargs())
        pred = to_np(ce.predict([tuple(p) for p in CE_PAIRS], batch_size=4, show_progress_bar=False)).reshape(-1)
        ref = np.stack(singles).reshape(-1)
        d = float(np.max(np.abs(pred - ref)))
        if d <= TOL * max(1.0, float(np.abs(ref).max())):
            stats["cross_encoder_checked"] = True
        else:
            note(f"{name}: CrossEncoder.predict differs from transformers by {d:.3g}: {pred} vs {ref}")
            stats["cross_encoder_checked"] = f"MISMATCH {d:.3g}"
    except Exception as e:
        note(f"{name}: CrossEncoder cross-check skipped ({type(e).__name__}: {e})")

    ids_list = []
    for ids in id_cases(V, tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), seed + 1000):
        ids_list.append({"input_ids": ids, "scores": flist(logits_of(hf, ids)), "hidden": flist(hidden_of(hf.model, ids))})
    stats["spread"] = check_not_degenerate(name, [c["scores"] for c in cases])
    write_json(folder / "expected.json", {
        "kind": "cross_encoder",
        "model": name,
        "num_labels": 1,
        "activation": "none (raw logits)",
        "classifier_pooling": pooling,
        "max_length": MAX_LEN,
        "generator": {"transformers": transformers.__version__, "torch": torch.__version__},
        "cases": cases,
        "id_cases": ids_list,
    }, indent=None)
    return folder, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)
    with open(HERE / "wordpiece_vocab.txt", encoding="utf-8") as f:
        vocab_tokens = [ln.rstrip("\n") for ln in f if ln.rstrip("\n")]
    tok = build_tokenizer(vocab_tokens, "bert")
    tok_trunc = truncating_copy(tok)
    V = tok.get_vocab_size(with_added_tokens=True)
    print(f"vocabulary {V}; transformers {transformers.__version__}, torch {torch.__version__}", flush=True)

    jobs = [
        ("modernbert-embed", lambda: build_embed(out, tok, tok_trunc, V, 901)),
        ("modernbert-ce", lambda: build_ce(out, "modernbert-ce", tok, tok_trunc, V, 902, pooling="mean",
                                           cls_act="gelu", biases=False, every_n=3, hub_form=True)),
        ("modernbert-ce-cls", lambda: build_ce(out, "modernbert-ce-cls", tok, tok_trunc, V, 903, pooling="cls",
                                               cls_act="silu", biases=True, every_n=2, hub_form=False)),
    ]
    failed = []
    for name, job in jobs:
        try:
            folder, stats = job()
            print(f"=== {name}: {stats}", flush=True)
            print_folder(folder)
        except Exception:
            failed.append(name)
            print(f"!!! {name} failed:\n{traceback.format_exc()}", flush=True)
    for n in mf.NOTES:
        print("NOTE:", n)
    print("failed:", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
