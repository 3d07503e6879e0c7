#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's DeBERTa-v2 / v3 models, produced by `transformers` /
`sentence-transformers`.

The companion of make_fixtures.py (whose helpers it imports, with its MAX_LEN, EMBED_TEXTS,
CE_PAIRS and ID_CASE_LENGTHS set to this file's values; the BERT-family folders are not touched):
tiny random-weight DeBERTa folders, a small Unigram (SentencePiece-style) tokenizer trained here
with the `tokenizers` library in DeBERTa-v3's pipeline, and what transformers /
sentence-transformers compute for them, committed under tests/fixtures so CI (no Python ML stack)
can check the C++ backends against them.

Run on a machine with torch, transformers 5.x, sentence-transformers, tokenizers and safetensors:

    python3 tools/oracle/make_deberta_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed; every parameter is
random (make_fixtures.randomize: norm weights 1 + 0.2 N, biases 0.2 N, embedding tables 0.5 N,
matrices 1.2 N / sqrt(fan_in)).

Tokenizer (tokenizer.json, DeBERTa-v3's converted pipeline without the precompiled charsmap):
normalizer Sequence[Strip, Replace(" {2,}" -> " ")], Metaspace pre-tokenizer (prepend_scheme
"always", split true), Unigram of UNIGRAM_VOCAB pieces trained on train_corpus.txt with
[PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 first (as in deberta-v3) and [MASK] added after the vocabulary;
TemplateProcessing "[CLS]:0 $A:0 [SEP]:0" / pair "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1";
Metaspace decoder. model_max_length MAX_LEN (128; the longest texts are truncated there).

Folders written under --out (each with expected.json; config.json marked
"inferencelayer_random_weights": true):
  deberta-embed   DeBERTa-v3 geometry (type_vocab_size 0, position_biased_input false,
                  max_position_embeddings 128 = MAX_LEN,
                  relative_attention, share_att_key, pos_att_type "p2c|c2p", norm_rel_ebd
                  "layer_norm", position_buckets 16, max_relative_positions 64: relative distances
                  past 8 fall in log buckets and past 63 clamp at the table's edge), hidden 64,
                  2 layers, 4 heads, intermediate 128, gelu, layer_norm_eps 1e-7; a
                  sentence-transformers folder (Transformer + mean Pooling + Normalize, prompt
                  "query: "). expected.json as make_fixtures' embedding folders.
  deberta-ce      The same geometry as DebertaV2ForSequenceClassification, num_labels 1
                  (ContextPooler: dense + gelu on the [CLS] row, then the classifier).
  deberta-v2-conv-ce  deberta-v2-ce's geometry plus the ConvLayer after the first layer
                  (conv_kernel_size 3, conv_groups 2, conv_act "gelu"; transformers' ConvLayer: a
                  Conv1d over each sequence with zero padding, then LayerNorm(layer 0 + conv)).
  deberta-v2-embproj-ce  deberta-v2-ce's geometry with num_labels 1, embedding_size 40 (the word,
                  position and segment tables 40 wide; embed_proj, no bias, maps their sum to the
                  hidden 64 before the LayerNorm) and pos_att_type "c2p|p2c|p2p" (transformers
                  computes c2p and p2c and counts them in the scale; p2p is read nowhere).
  deberta-v2-ce   The DeBERTa-v2 variants: num_labels 3 with id2label, share_att_key false
                  (separate pos_key_proj), pos_att_type "c2p" only (scale sqrt(d * 2)),
                  position_biased_input true (absolute position table, max_position_embeddings
                  128), type_vocab_size 2 (pairs' second segment type 1), no position buckets
                  (position_buckets -1, max_relative_positions 24: raw distances clamped at 24),
                  norm_rel_ebd "none", pooler_hidden_act "tanh".
Every expected.json also holds "rel_index": for d = i - j in [-rel_index_span, rel_index_span],
the row m of the relative tables both the c2p and the p2c terms read, as transformers computes it
(build_relative_position, then clamp(bucket + span, 0, 2 span - 1)).
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
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_fixtures as mf  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

import transformers  # noqa: E402
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, DebertaV2Model  # noqa: E402

MAX_LEN = 128
HIDDEN = 64
LAYERS = 2
HEADS = 4
INTERMEDIATE = 128
UNIGRAM_VOCAB = 700
SPECIALS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]  # ids 0..3, as deberta-v3's spm vocabulary
EMBED_SEED = 909
CE_SEED = 910
V2_CE_SEED = 911
V2_CONV_CE_SEED = 912
V2_EMBPROJ_CE_SEED = 913
EMBEDDING_SIZE = 40  # deberta-v2-embproj-ce's tables (hidden 64)

LONG_VALLEY = (
    "Long before the railway reached the valley, the village lived from wool, cheese and the small trade of "
    "travellers crossing the pass. In winter the road closed for weeks; families stored grain, smoked meat and "
    "firewood, and the school met in the church because it was the only building warm enough. When the first "
    "train arrived in 1911, everything changed: merchants from Zürich and Milan opened shops, a hotel with forty "
    "rooms was built beside the station, and young people left for the cities."
)
LONG_MARKET = mf.EMBED_TEXTS[-1]

EMBED_TEXTS = mf.EMBED_TEXTS[:-1] + [
    "  two   inner   runs  of spaces collapse  ",
    LONG_VALLEY.split(" When the first")[0],  # between the bucket edge and MAX_LEN
    LONG_MARKET,  # past MAX_LEN: truncated
    LONG_VALLEY,  # past MAX_LEN: truncated (the two keep different first MAX_LEN tokens)
]
CE_PAIRS = mf.CE_PAIRS + [
    ("Where did the merchants come from when the railway arrived?", LONG_VALLEY),
    ("Which museums near the harbour show ancient coins?", LONG_MARKET + " " + LONG_VALLEY),  # truncated
]


def training_lines():
    with open(HERE / "train_corpus.txt", encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


def build_tokenizer():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=UNIGRAM_VOCAB, special_tokens=list(SPECIALS), unk_token="[UNK]",
                                      show_progress=False, max_piece_length=8)
    tok.train_from_iterator(training_lines(), trainer=trainer)
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    tok.add_special_tokens(["[MASK]"])
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return tok


def deberta_config(vocab_size, variant, num_labels=None):
    kw = dict(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        hidden_act="gelu",
        layer_norm_eps=1e-7,
        pad_token_id=0,
        relative_attention=True,
        pooler_hidden_size=HIDDEN,
        pooler_dropout=0.0,
    )
    if variant == "v3":
        # max_position_embeddings = MAX_LEN: with position_biased_input false and
        # max_relative_positions given, transformers reads it nowhere, and it is the longest input
        # the engine accepts (it truncates there, as the tokenizer's model_max_length does).
        kw.update(max_position_embeddings=MAX_LEN, type_vocab_size=0, position_biased_input=False, position_buckets=16,
                  max_relative_positions=64, pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
                  pooler_hidden_act="gelu")
    else:
        kw.update(max_position_embeddings=MAX_LEN, type_vocab_size=2, position_biased_input=True, position_buckets=-1,
                  max_relative_positions=24, pos_att_type="c2p", share_att_key=False, norm_rel_ebd="none",
                  pooler_hidden_act="tanh")
    if variant == "v2-embproj":
        # Tables narrower than hidden (embed_proj maps their sum to hidden, no bias), and "p2p" in
        # pos_att_type, which transformers' DebertaV2 reads nowhere (the engine must ignore it too).
        kw.update(embedding_size=EMBEDDING_SIZE, pos_att_type="c2p|p2c|p2p")
    if variant == "v2-conv":
        # DeBERTa-v2 xlarge's ConvLayer after the first layer (its release: kernel 3, gelu), here with
        # two groups so the grouped weight layout is exercised too.
        kw.update(conv_kernel_size=3, conv_groups=2, conv_act="gelu")
    if num_labels is not None:
        kw["num_labels"] = num_labels
    if num_labels == 3:
        kw["id2label"] = {0: "contradiction", 1: "entailment", 2: "neutral"}
        kw["label2id"] = {"contradiction": 0, "entailment": 1, "neutral": 2}
    cfg = DebertaV2Config(**kw)
    mf.set_eager(cfg)
    return cfg


def rel_index_table(cfg, n):
    """m(i - j) for i - j in [-(n-1), n-1], from transformers' own build_relative_position."""
    from transformers.models.deberta_v2 import modeling_deberta_v2 as md

    max_rel = cfg.max_relative_positions if cfg.max_relative_positions >= 1 else cfg.max_position_embeddings
    buckets = cfg.position_buckets
    span = buckets if buckets > 0 else max_rel
    try:
        rel = md.build_relative_position(torch.zeros(1, n, 1), torch.zeros(1, n, 1), bucket_size=buckets,
                                         max_position=max_rel)
    except TypeError:
        rel = md.build_relative_position(n, n, bucket_size=buckets, max_position=max_rel)
    rel = rel.reshape(n, n).long()
    idx = torch.clamp(rel + span, 0, 2 * span - 1)
    # row i = n-1, keys j = 0..n-1 give d = n-1 .. 0; row 0 gives d = 0 .. -(n-1)
    table = {}
    for j in range(n):
        table[(n - 1) - j] = int(idx[n - 1, j])
        table[-j] = int(idx[0, j])
    # p2c reads clamp(-bucket(j - i) + span): the same row (bucket() is odd); checked here
    for i in range(n):
        for j in range(n):
            p2c = int(torch.clamp(-rel[j, i] + span, 0, 2 * span - 1))
            if p2c != int(idx[i, j]):
                raise AssertionError(f"p2c index differs from c2p index at i={i} j={j}")
    return {"rel_index_span": n - 1, "rel_index": [table[d] for d in range(-(n - 1), n)], "att_span": span}


def add_to_expected(folder, cfg, extra):
    p = folder / "expected.json"
    e = mf.read_json(p)
    e.update(rel_index_table(cfg, MAX_LEN + 8))
    e["architecture"] = extra
    mf.write_json(p, e, indent=None)


def build_embed_folder(out, tok, V):
    folder = out / "deberta-embed"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = deberta_config(V, "v3")
    model = DebertaV2Model(cfg)
    n = mf.randomize(model, EMBED_SEED)
    model.eval()
    model.save_pretrained(str(folder))
    mf.save_tokenizer(tok, folder, "bert")
    mf.mark_random(folder)

    Transformer, Pooling, Normalize, SentenceTransformer = mf.st_modules()
    tr = Transformer(str(folder), model_kwargs=mf.load_kwargs())
    pl = Pooling(HIDDEN, pooling_mode="mean")
    st = SentenceTransformer(modules=[tr, pl, Normalize()], device="cpu", prompts={"query": "query: "})
    try:
        st.save(str(folder), create_model_card=False)
    except TypeError:
        st.save(str(folder))
    readme = folder / "README.md"
    if readme.exists():
        readme.unlink()
    mf.fix_tokenizer_files(folder, "bert")
    mf.mark_random(folder)

    def fix_prompts(c):
        prompts = c.get("prompts") or {}
        prompts["query"] = "query: "
        c["prompts"] = prompts

    cst = folder / "config_sentence_transformers.json"
    if cst.exists():
        mf.patch_json(cst, fix_prompts)
    else:
        mf.write_json(cst, {"prompts": {"query": "query: "}, "default_prompt_name": None})
    mf.remove_empty_dirs(folder)
    return folder, cfg, n


def build_ce(out, name, tok, V, variant, num_labels, seed):
    cfg = deberta_config(V, variant, num_labels)
    folder = mf.build_ce_folder(out, name, tok, "bert", DebertaV2ForSequenceClassification, cfg, seed)
    return folder, cfg


def check_bucket_edge(name, folder, cfg):
    e = mf.read_json(folder / "expected.json")
    lens = [len(c["input_ids"]) for c in e["cases"] + e.get("id_cases", [])]
    max_rel = cfg.max_relative_positions if cfg.max_relative_positions >= 1 else cfg.max_position_embeddings
    edge = max_rel if cfg.position_buckets <= 0 else max_rel
    if max(lens) <= edge:
        raise AssertionError(f"{name}: no sequence passes the relative table's edge ({max(lens)} <= {edge})")
    return {"lengths": lens}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures")
    ap.add_argument("--tar", default=None, help="also pack the folders written into this .tar.gz")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"tokenizers {__import__('tokenizers').__version__}", flush=True)

    # make_fixtures' expectation writers read these module globals.
    mf.MAX_LEN = MAX_LEN
    mf.HIDDEN = HIDDEN
    mf.EMBED_TEXTS = EMBED_TEXTS
    mf.CE_PAIRS = CE_PAIRS
    mf.ID_CASE_LENGTHS = [1, 5, 33, 100]

    tok = build_tokenizer()
    V = tok.get_vocab_size(with_added_tokens=True)
    cls_id = tok.token_to_id("[CLS]")
    trunc = mf.truncating_copy(tok)
    print(f"unigram vocabulary {V} (with [MASK] {tok.token_to_id('[MASK]')})", flush=True)
    for t in EMBED_TEXTS:
        enc = tok.encode(t)
        print(f"  {len(enc.ids):4d} tokens: {t[:60]!r} -> {enc.tokens[:12]}", flush=True)

    summary = {}
    failures = []
    jobs = []

    def job_embed():
        folder, cfg, n = build_embed_folder(out, tok, V)
        s = mf.expected_embedding(folder, trunc, "mean", V, cls_id, EMBED_SEED)
        add_to_expected(folder, cfg, "DebertaV2Model")
        s.update(check_bucket_edge("deberta-embed", folder, cfg))
        s["parameters_randomized"] = n
        return "deberta-embed", s

    def job_ce():
        folder, cfg = build_ce(out, "deberta-ce", tok, V, "v3", 1, CE_SEED)
        s = mf.expected_ce(folder, trunc, V, cls_id, True, CE_SEED)
        add_to_expected(folder, cfg, "DebertaV2ForSequenceClassification")
        s.update(check_bucket_edge("deberta-ce", folder, cfg))
        return "deberta-ce", s

    def job_v2_ce():
        folder, cfg = build_ce(out, "deberta-v2-ce", tok, V, "v2", 3, V2_CE_SEED)
        s = mf.expected_ce(folder, trunc, V, cls_id, True, V2_CE_SEED)
        add_to_expected(folder, cfg, "DebertaV2ForSequenceClassification")
        s.update(check_bucket_edge("deberta-v2-ce", folder, cfg))
        return "deberta-v2-ce", s

    def job_v2_conv_ce():
        folder, cfg = build_ce(out, "deberta-v2-conv-ce", tok, V, "v2-conv", 3, V2_CONV_CE_SEED)
        s = mf.expected_ce(folder, trunc, V, cls_id, True, V2_CONV_CE_SEED)
        add_to_expected(folder, cfg, "DebertaV2ForSequenceClassification")
        s.update(check_bucket_edge("deberta-v2-conv-ce", folder, cfg))
        model = DebertaV2ForSequenceClassification.from_pretrained(str(folder))
        assert model.deberta.encoder.conv is not None, "the ConvLayer was not built"
        return "deberta-v2-conv-ce", s

    def job_v2_embproj_ce():
        folder, cfg = build_ce(out, "deberta-v2-embproj-ce", tok, V, "v2-embproj", 1, V2_EMBPROJ_CE_SEED)
        s = mf.expected_ce(folder, trunc, V, cls_id, True, V2_EMBPROJ_CE_SEED)
        add_to_expected(folder, cfg, "DebertaV2ForSequenceClassification")
        s.update(check_bucket_edge("deberta-v2-embproj-ce", folder, cfg))
        model = DebertaV2ForSequenceClassification.from_pretrained(str(folder))
        emb = model.deberta.embeddings
        assert emb.word_embeddings.weight.shape[1] == EMBEDDING_SIZE and hasattr(emb, "embed_proj"), "no embed_proj"
        s["pos_att_type"] = str(model.config.pos_att_type)
        return "deberta-v2-embproj-ce", s

    jobs = [job_embed, job_ce, job_v2_ce, job_v2_conv_ce, job_v2_embproj_ce]
    only = os.environ.get("DEBERTA_ONLY")
    if only == "conv":
        jobs = [job_v2_conv_ce]
    elif only == "embproj":
        jobs = [job_v2_embproj_ce]
    for job in jobs:
        try:
            name, s = job()
            summary[name] = s
        except Exception:  # keep the folders that work; report the rest
            failures.append(traceback.format_exc())
            print(traceback.format_exc(), flush=True)

    print("\n== summary ==")
    for name, s in summary.items():
        print(name)
        for k, v in s.items():
            print(f"   {k}: {v:.3g}" if isinstance(v, float) else f"   {k}: {v}")
        folder = out / name
        print(f"   size {mf.dir_size(folder) / 1024:.0f} KiB; files:",
              sorted(str(p.relative_to(folder)) for p in folder.rglob('*') if p.is_file()))
        for k, v in mf.safetensors_tensors(folder / "model.safetensors").items():
            print(f"     {k} {v.dtype} {list(v.shape)}")
        print("   config.json:", (folder / "config.json").read_text(encoding="utf-8").replace("\n", " "))
    if mf.NOTES:
        print("\nnotes:")
        for n in mf.NOTES:
            print(" -", n)
    if args.tar:
        import tarfile

        with tarfile.open(args.tar, "w:gz") as t:
            for name in summary:
                t.add(out / name, arcname=name)
        print(f"wrote {args.tar}")
    if failures:
        print(f"\n{len(failures)} folder(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
