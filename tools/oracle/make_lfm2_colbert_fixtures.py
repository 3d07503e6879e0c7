#!/usr/bin/env python3
"""Reference fixture for inferencelayer's LFM2-ColBERT serving (a PyLate folder over the LFM2
trunk): per-token vectors of queries and documents, and MaxSim scores, with PyLate's arithmetic
written out here (PyLate is not installed where the fixtures are made; transformers' Lfm2Model is).

Run on a machine with torch, transformers 5.x, tokenizers and safetensors:

    python3 tools/oracle/make_lfm2_colbert_fixtures.py --out tests/fixtures --tokenizer tests/fixtures/qwen3-embed

The trunk is make_lfm2_fixtures.py's (hidden 64, conv / attention / conv / attention, GQA), with
the vocabulary grown by the two marker tokens PyLate adds ("[Q] ", "[D] ", appended to the
tokenizer as added tokens and to the embedding table as rows, as PyLate's resize does), plus:

  1_Dense       PyLate's Dense: linear 64 -> 24, no bias, identity activation, random weights.
  config_sentence_transformers.json
                query_prefix "[Q] ", document_prefix "[D] ", query_length 24, document_length 40,
                do_query_expansion true, attend_to_expansion_tokens true, skiplist_words =
                string.punctuation (PyLate's default, written out as PyLate saves it).
  tokenizer_config.json
                qwen3-embed's, with padding_side "right" (queries are expanded at their end).

PyLate's conventions, as colbert.py implements them (ColBERT.preprocess / encode):
  - a text is tokenized with the folder's tokenizer (special tokens added), truncated to
    length - 1 tokens (the marker takes the last place); queries are padded to query_length - 1
    with the mask token (the tokenizer has none here, so PyLate uses its EOS token, "<|im_end|>"),
    on the tokenizer's padding side; the marker id is inserted after the first token.
  - attention mask: 1 on every real token; on expansion tokens 1 when attend_to_expansion_tokens
    (this fixture), else 0.
  - the model: Lfm2Model -> Dense -> each row L2-normalised (torch.nn.functional.normalize).
  - queries keep every row (expansion rows included); documents drop the rows whose id is a
    skiplist word's id (tokenizer.convert_tokens_to_ids of each word).
  - MaxSim: for each query row the largest dot product with a kept document row, summed over the
    query rows (pylate.scores.colbert_scores of one query and one document; rank.rerank pads the
    documents of a query with zero rows, which changes nothing unless every dot product of a query
    row is negative, so the scores here are the unpadded ones).

The committed 1_Dense/model.safetensors was rewritten by tools/oracle/rebuild_lfm2_colbert_dense.py
(the device run's transfer left the folder out): the same torch.randn draw, checked against the
vectors this script recorded.

expected.json (kind "colbert"): "queries" and "documents", each case with text, input_ids (after
the marker and expansion), vectors (one per kept row) and for documents "keep" (1 per token, 0 for
a skiplist token); "scores"[q][d]; "prefix_ids", "mask_id", "skiplist_ids". Also, for whoever adds
attend_to_expansion_tokens = false: "queries_masked_expansion", the query vectors with the
expansion tokens masked (attention mask 0), computed in one padded batch of all queries, which is
how PyLate encodes queries; a query alone is compared with it and the difference printed (0 with
transformers 5.17: masked rows are zeroed before each convolution either way). Expansion rows there
attend to the text and the marker only, and their convolution output is zero.
"""

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import string  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_fixtures as mf  # noqa: E402
from make_fixtures import check_close, check_not_degenerate, dir_size, flist, mark_random, note, write_json  # noqa: E402
import make_lfm2_fixtures as lf  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import AddedToken, Tokenizer  # noqa: E402

import transformers  # noqa: E402
from transformers import Lfm2Model  # noqa: E402

SEED = 2131
OUT_DIM = 24
QUERY_PREFIX = "[Q] "
DOCUMENT_PREFIX = "[D] "
QUERY_LENGTH = 24
DOCUMENT_LENGTH = 40
SKIPLIST = list(string.punctuation)
EOS = "<|im_end|>"

QUERIES = [
    "what is the capital of france?",
    "a",
    "How do plants make food from sunlight, water and air, and why does it matter for every animal on earth?",
    "Café naïve: Zürich!",
]
DOCUMENTS = [
    "Paris is the capital and most populous city of France.",
    "Plants make food by photosynthesis: light, water, and carbon dioxide become sugar (and oxygen).",
    "It's 2024; we'll pay $1,234.56 — don't WAIT!!! I'M sure they've LEFT.",
    "b",
    "The quick brown fox jumps over the lazy dog. The market opened early, and traders, brokers, clerks and "
    "couriers filled the hall; by noon the prices had doubled, halved, and doubled again.",
]


def tokenize(tok, text, length, prefix_id, mask_id, expand):
    """PyLate's preprocess for one text: truncation to length - 1, expansion, marker after the first token."""
    tok.no_padding()
    tok.enable_truncation(max_length=length - 1)
    ids = list(tok.encode(text).ids)
    attn = [1] * len(ids)
    if expand and len(ids) < length - 1:  # padding_side "right"
        k = length - 1 - len(ids)
        ids += [mask_id] * k
        attn += [0] * k
    tok.no_truncation()
    ids = ids[:1] + [prefix_id] + ids[1:]
    attn = attn[:1] + [1] + attn[1:]
    return ids, attn


@torch.no_grad()
def vectors(model, dense_w, ids, mask):
    t = torch.tensor(ids) if not isinstance(ids, torch.Tensor) else ids
    if t.dim() == 1:
        t = t[None]
    m = torch.tensor(mask) if not isinstance(mask, torch.Tensor) else mask
    if m.dim() == 1:
        m = m[None]
    h = model(input_ids=t, attention_mask=m, use_cache=False).last_hidden_state.float()
    y = h @ dense_w.T
    return torch.nn.functional.normalize(y, p=2, dim=-1)


def maxsim(q, d):
    s = q.double() @ d.double().T
    return float(s.max(dim=1).values.sum())


def build(out, tok_dir):
    folder = out / "lfm2-colbert"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    tok = Tokenizer.from_file(str(Path(tok_dir) / "tokenizer.json"))
    base_vocab = tok.get_vocab_size(with_added_tokens=True)
    # PyLate: tokenizer.add_tokens([query_prefix, document_prefix]) (plain added tokens), then
    # resize_token_embeddings(len(tokenizer)).
    tok.add_tokens([AddedToken(QUERY_PREFIX, normalized=True), AddedToken(DOCUMENT_PREFIX, normalized=True)])
    tok.save(str(folder / "tokenizer.json"))
    tc = json.loads((Path(tok_dir) / "tokenizer_config.json").read_text(encoding="utf-8"))
    tc["padding_side"] = "right"
    tc["eos_token"] = EOS
    tc.pop("mask_token", None)
    write_json(folder / "tokenizer_config.json", tc)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    V = tok.get_vocab_size(with_added_tokens=True)
    q_id, d_id, mask_id = tok.token_to_id(QUERY_PREFIX), tok.token_to_id(DOCUMENT_PREFIX), tok.token_to_id(EOS)
    print(f"vocab {base_vocab} -> {V}; [Q] {q_id}, [D] {d_id}, mask (EOS) {mask_id}", flush=True)
    assert V == base_vocab + 2 and None not in (q_id, d_id, mask_id)
    skip_ids = sorted({i for i in (tok.token_to_id(w) for w in SKIPLIST) if i is not None})
    print(f"skiplist ids ({len(skip_ids)} of {len(SKIPLIST)} words in the vocabulary): {skip_ids}", flush=True)

    cfg = lf.lfm2_config(V, tok.token_to_id(lf.q3.ENDOFTEXT))
    torch.manual_seed(SEED)
    model = Lfm2Model(cfg)
    lf.randomize_lfm2(model, SEED)
    model.eval()
    lf.check_geometry(model)
    model.save_pretrained(str(folder))
    mark_random(folder)
    hf = mf.hf_from_pretrained(Lfm2Model, folder)

    g = torch.Generator().manual_seed(SEED + 1)
    dense_w = torch.randn((OUT_DIM, lf.HIDDEN), generator=g) * (1.2 / lf.HIDDEN ** 0.5)
    (folder / "1_Dense").mkdir()
    save_file({"linear.weight": dense_w.contiguous()}, str(folder / "1_Dense" / "model.safetensors"))
    write_json(folder / "1_Dense" / "config.json",
               {"in_features": lf.HIDDEN, "out_features": OUT_DIM, "bias": False,
                "activation_function": "torch.nn.modules.linear.Identity"})
    write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}])
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": 511, "do_lower_case": False})
    write_json(folder / "config_sentence_transformers.json", {
        "__version__": {"sentence_transformers": "6.0.1", "pylate": "1.3.0"},
        "prompts": {}, "default_prompt_name": None, "similarity_fn_name": "MaxSim",
        "query_prefix": QUERY_PREFIX, "document_prefix": DOCUMENT_PREFIX,
        "query_length": QUERY_LENGTH, "document_length": DOCUMENT_LENGTH,
        "attend_to_expansion_tokens": True, "skiplist_words": SKIPLIST, "do_query_expansion": True})

    queries, qvecs = [], []
    for text in QUERIES:
        ids, attn = tokenize(tok, text, QUERY_LENGTH, q_id, mask_id, True)
        assert len(ids) == QUERY_LENGTH
        v = vectors(hf, dense_w, ids, [1] * len(ids))[0]  # attend_to_expansion_tokens: mask all ones
        queries.append({"text": text, "input_ids": ids, "expansion": [1 - a for a in attn], "vectors": flist(v.numpy())})
        qvecs.append(v)
    # The trunk's last hidden state of the first query's ids (embed --output-kind hidden).
    queries[0]["hidden"] = flist(lf.last_hidden(hf, queries[0]["input_ids"])[0].numpy())
    documents, dvecs = [], []
    for text in DOCUMENTS:
        ids, _ = tokenize(tok, text, DOCUMENT_LENGTH, d_id, mask_id, False)
        keep = [0 if i in skip_ids else 1 for i in ids]
        v = vectors(hf, dense_w, ids, [1] * len(ids))[0]
        kept = v[torch.tensor(keep, dtype=torch.bool)]
        documents.append({"text": text, "input_ids": ids, "keep": keep, "vectors": flist(kept.numpy())})
        dvecs.append(kept)
    print(f"query lengths {[len(q['input_ids']) for q in queries]}, document lengths "
          f"{[len(d['input_ids']) for d in documents]}, kept {[sum(d['keep']) for d in documents]}", flush=True)
    assert any(len(d["input_ids"]) == DOCUMENT_LENGTH for d in documents), "no document reaches document_length"
    assert any(sum(d["keep"]) < len(d["keep"]) for d in documents), "no skiplist token in the documents"
    scores = [[maxsim(q, d) for d in dvecs] for q in qvecs]
    print("scores:", np.array(scores), flush=True)

    # A batch of documents (right-padded, padded rows masked) against each alone: the engine's
    # ragged batches assume these agree.
    worst = 0.0
    try:
        L = max(len(d["input_ids"]) for d in documents)
        ids = torch.full((len(documents), L), mask_id, dtype=torch.long)
        m = torch.zeros((len(documents), L), dtype=torch.long)
        for i, d in enumerate(documents):
            n = len(d["input_ids"])
            ids[i, :n] = torch.tensor(d["input_ids"])
            m[i, :n] = 1
        vb = vectors(hf, dense_w, ids, m)
        for i, d in enumerate(documents):
            kept = vb[i, : len(d["input_ids"])][torch.tensor(d["keep"], dtype=torch.bool)]
            worst = max(worst, check_close(f"document {i} in a batch", kept.numpy(), dvecs[i].numpy(), 1e-4))
    except Exception:
        traceback.print_exc()
        note("lfm2-colbert: the batched document check failed")

    # attend_to_expansion_tokens = false, as PyLate runs it (a padded batch of every query), kept
    # for a later implementation; and how far a query alone is from that (the convolution's mask).
    masked, alone_diff = [], 0.0
    try:
        ids = torch.tensor([q["input_ids"] for q in queries])
        m = torch.tensor([[1 - e for e in q["expansion"]] for q in queries])
        vb = vectors(hf, dense_w, ids, m)
        for i in range(len(queries)):
            masked.append(flist(vb[i].numpy()))
            va = vectors(hf, dense_w, ids[i], m[i])[0]
            alone_diff = max(alone_diff, float((va - vb[i]).abs().max()))
        print(f"masked expansion: a query alone vs in the batch differs by up to {alone_diff:.3g}", flush=True)
    except Exception:
        traceback.print_exc()
        note("lfm2-colbert: masked-expansion vectors not computed")

    spread = check_not_degenerate("lfm2-colbert", [q["vectors"][0] for q in queries])
    expected = {
        "kind": "colbert",
        "model": folder.name,
        "architecture": "Lfm2Model",
        "query_length": QUERY_LENGTH,
        "document_length": DOCUMENT_LENGTH,
        "prefix_ids": {"query": q_id, "document": d_id},
        "mask_id": mask_id,
        "skiplist_ids": skip_ids,
        "generator": {"transformers": transformers.__version__, "torch": torch.__version__,
                      "tokenizers": __import__("tokenizers").__version__},
        "queries": queries,
        "documents": documents,
        "scores": scores,
        "queries_masked_expansion": masked,
        "masked_expansion_alone_vs_batch": alone_diff,
    }
    write_json(folder / "expected.json", expected, indent=None)
    return folder, {"batch_max_abs_diff": worst, "spread": spread}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures")
    ap.add_argument("--tokenizer", default="tests/fixtures/qwen3-embed")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    folder, stats = build(out, args.tokenizer)
    print("\n== summary ==")
    for k, v in stats.items():
        print(f"   {k}: {v}")
    print(f"{folder.name}: {dir_size(folder) / 1024:.0f} KiB")
    for p in sorted(folder.rglob("*")):
        print(f"   {p.relative_to(folder)}  {p.stat().st_size if p.is_file() else ''}")
    if mf.NOTES:
        print("\nnotes:")
        for n in mf.NOTES:
            print(" -", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
