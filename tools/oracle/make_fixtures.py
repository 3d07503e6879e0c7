#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's BERT-family models, produced by `transformers`.

Builds tiny random-weight Hugging Face model folders (every parameter randomised, norms and biases
included), a small trained WordPiece tokenizer, and the outputs that `transformers` /
`sentence-transformers` compute for them. The results are committed under tests/fixtures so CI,
which has no Python ML stack, can check the C++ CPU backend against the reference on every run.

Run on a machine with torch, transformers 5.x, sentence-transformers, tokenizers and safetensors:

    python3 tools/oracle/make_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed, and the WordPiece
vocabulary is read from wordpiece_vocab.txt (trained once from train_corpus.txt; --retrain-vocab
trains it again), so two runs write identical files.

Folders written under --out (each also gets expected.json):
  bert-mean        sentence-transformers folder: BertModel + mean pooling + Normalize, written in the
                   classic (v2/v3-era) module-config format that most Hub checkpoints use
  bert-mean-f16    bert-mean with the weights stored as float16 (expected = f16 weights upcast)
  bert-cls         sentence-transformers folder: CLS pooling, gelu_new, intermediate < 3*hidden,
                   module configs as the installed sentence-transformers writes them
  bert-mean-hd64   bert-mean's recipe at hidden 128 with 2 heads: head dim 64, the head dim of
                   bge-base / XLM-R, whose f16 / bf16 attention takes its own GPU kernels
                   (--only-hd64 builds just this folder)
  bert-ce          BertForSequenceClassification, num_labels 1 (plain save_pretrained folder)
  xlmr-ce          XLMRobertaForSequenceClassification, num_labels 1
  xlmr-ce2         XLMRobertaForSequenceClassification, num_labels 3
  jina-ce          xlmr-ce's weights renamed/fused into the jina-reranker-v2 "flash" layout
  tokenizer/wordpiece_cases.jsonl   the bert tokenizer applied to tools/oracle/tricky_lines.jsonl
"""

import os

# Before importing tokenizers / transformers: one thread for reproducible training and sums,
# and no attempt to reach the Hub.
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
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModel,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    XLMRobertaConfig,
    XLMRobertaForSequenceClassification,
)

HERE = Path(__file__).resolve().parent
MAX_LEN = 64
HIDDEN = 32
LAYERS = 2
HEADS = 4
VOCAB_TARGET = 800
TOL = 1e-5

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0..4
# XLM-R numbering: <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4 — pad must be 1 because XLM-R derives
# position ids from `input_ids != pad_token_id`.
XLMR_SPECIALS = ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]

NOTES = []  # things the summary should mention (API fallbacks taken etc.)


def note(msg):
    NOTES.append(msg)
    print("NOTE:", msg, flush=True)


# ----------------------------------------------------------------------------------------------
# small helpers


def f9(x):
    """A float32 value as a Python float with 9 significant digits (round-trips float32)."""
    return float(f"{float(x):.9g}")


def flist(a):
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 1:
        return [f9(v) for v in a.tolist()]
    return [flist(r) for r in a]


def read_json(p):
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def write_json(p, obj, indent=2):
    with open(p, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def patch_json(p, fn):
    obj = read_json(p)
    fn(obj)
    write_json(p, obj)


def char_to_byte_table(s):
    table = [0]
    for ch in s:
        table.append(table[-1] + len(ch.encode("utf-8")))
    return table


def byte_offsets(enc, text, pair=None):
    """tokenizers gives character offsets into the str each token came from; convert to UTF-8 bytes.

    Tokens of the pair index into the pair text; template special tokens are [0, 0]."""
    ta = char_to_byte_table(text)
    tb = char_to_byte_table(pair) if pair is not None else None
    out = []
    for (s, e), sid in zip(enc.offsets, enc.sequence_ids):
        if sid is None:
            out.append([0, 0])
        elif sid == 0:
            out.append([ta[s], ta[e]])
        else:
            out.append([tb[s], tb[e]])
    return out


def max_abs(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch {a.shape} vs {b.shape}")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def check_close(what, a, b, tol=TOL):
    d = max_abs(a, b)
    scale = max(1.0, float(np.max(np.abs(np.asarray(b, dtype=np.float64)))) if np.asarray(b).size else 1.0)
    if d > tol * scale:
        raise AssertionError(f"{what}: max abs diff {d:.3g} > {tol * scale:.3g}")
    return d


def to_np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=np.float32)


def dir_size(p):
    return sum(f.stat().st_size for f in Path(p).rglob("*") if f.is_file())


def remove_empty_dirs(folder):
    # Git does not keep empty folders (e.g. 2_Normalize/), so the committed fixture will not have
    # them either: reload from what will actually be committed.
    for d in sorted(Path(folder).rglob("*"), key=lambda p: -len(p.parts)):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


# ----------------------------------------------------------------------------------------------
# tokenizer


def train_vocab(lines):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=VOCAB_TARGET,
        min_frequency=1,
        special_tokens=list(BERT_SPECIALS),
        continuing_subword_prefix="##",
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer=trainer)
    by_id = sorted(tok.get_vocab(with_added_tokens=True).items(), key=lambda kv: kv[1])
    rest = [t for t, _ in by_id if t not in BERT_SPECIALS]
    return list(BERT_SPECIALS) + rest


def build_tokenizer(vocab_tokens, flavour):
    """flavour 'bert': [CLS] A [SEP] B:1 [SEP]:1.  'xlmr': XLM-R ids and template, all type ids 0."""
    if flavour == "bert":
        specials = BERT_SPECIALS
    elif flavour == "xlmr":
        specials = XLMR_SPECIALS
    else:
        raise ValueError(flavour)
    ordered = list(specials) + [t for t in vocab_tokens if t not in specials]
    vocab = {t: i for i, t in enumerate(ordered)}
    tok = Tokenizer(
        models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100)
    )
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(list(specials))
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    if flavour == "bert":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
        )
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 [SEP]:0 $B:0 [SEP]:0",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
        )
    tok.decoder = decoders.WordPiece(prefix="##")
    for t in specials:
        assert tok.token_to_id(t) == vocab[t], t
    return tok


def truncating_copy(tok):
    t = Tokenizer.from_str(tok.to_str())
    t.enable_truncation(max_length=MAX_LEN, strategy="longest_first")
    return t


def input_names(flavour):
    # The generic fast tokenizer class returns no token_type_ids unless told to; BertTokenizer
    # returns them, RobertaTokenizer/XLMRobertaTokenizer do not. sentence-transformers passes on
    # exactly what the tokenizer returns, so this decides the segment ids a CrossEncoder sees.
    if flavour == "bert":
        return ["input_ids", "token_type_ids", "attention_mask"]
    return ["input_ids", "attention_mask"]


def save_tokenizer(tok, folder, flavour):
    from transformers import PreTrainedTokenizerFast

    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=MAX_LEN,
        padding_side="right",
        truncation_side="right",
        model_input_names=input_names(flavour),
    )
    hf_tok.save_pretrained(str(folder))
    fix_tokenizer_files(folder, flavour)


def fix_tokenizer_files(folder, flavour):
    """Make the folder load with the generic fast tokenizer (tokenizer.json used verbatim) everywhere."""
    folder = Path(folder)
    p = folder / "tokenizer_config.json"
    tc = read_json(p) if p.exists() else {}
    # A model-specific class (BertTokenizer, XLMRobertaTokenizer) would rebuild the pipeline from the
    # vocabulary in transformers 5 instead of using tokenizer.json as is.
    tc["tokenizer_class"] = "PreTrainedTokenizerFast"
    for k in ("is_local", "local_files_only", "name_or_path", "_commit_hash"):
        tc.pop(k, None)  # loading arguments that a re-save leaks into the file
    tc["model_max_length"] = MAX_LEN
    tc["model_input_names"] = input_names(flavour)
    specials = {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    for k, v in specials.items():
        tc.setdefault(k, v)
    tc.setdefault("padding_side", "right")
    tc.setdefault("truncation_side", "right")
    write_json(p, tc)
    stm = folder / "special_tokens_map.json"
    if not stm.exists():
        write_json(stm, specials)


def tokenize_case(tok_trunc, hf_tok, text, pair=None):
    enc = tok_trunc.encode(text, pair) if pair is not None else tok_trunc.encode(text)
    ids = list(enc.ids)
    types = list(enc.type_ids)
    offs = byte_offsets(enc, text, pair)
    # The transformers tokenizer loaded from the folder must agree with the raw tokenizers library.
    args = (text,) if pair is None else (text, pair)
    h = hf_tok(*args, truncation=True, max_length=MAX_LEN, return_token_type_ids=True)
    if list(h["input_ids"]) != ids:
        raise AssertionError(f"transformers vs tokenizers ids differ for {text!r}/{pair!r}:\n{h['input_ids']}\n{ids}")
    if list(h["token_type_ids"]) != types:
        raise AssertionError(f"transformers vs tokenizers type ids differ for {text!r}/{pair!r}")
    return ids, types, offs


# ----------------------------------------------------------------------------------------------
# models


def set_eager(cfg):
    try:
        cfg._attn_implementation = "eager"
    except Exception:  # attribute handling differs between transformers versions
        note("config._attn_implementation not settable; setting _attn_implementation_internal")
        cfg._attn_implementation_internal = "eager"


def is_norm_param(name):
    n = name.lower()
    return "layernorm" in n or "layer_norm" in n or "emb_ln" in n or re.search(r"(^|\.)norm\d*\.", n) is not None


@torch.no_grad()
def randomize(model, seed):
    """Every parameter random: norm weights ~ 1 + 0.2 N, norm biases ~ 0.2 N, embedding tables
    ~ 0.5 N, matrices ~ 1.2 N / sqrt(fan_in), other biases ~ 0.2 N (activations stay O(1))."""
    g = torch.Generator().manual_seed(seed)
    count = 0
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if is_norm_param(name):
            v = 1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r
        elif "embeddings" in name and p.dim() == 2:
            v = 0.5 * r
        elif p.dim() == 2:
            v = r * (1.2 / math.sqrt(p.shape[1]))
        else:
            v = 0.2 * r
        p.copy_(v.to(p.dtype))
        count += 1
    return count


def bert_config(vocab_size, *, act="gelu", intermediate=128, num_labels=None, hidden=HIDDEN, heads=HEADS):
    kw = dict(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=LAYERS,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        hidden_act=act,
        max_position_embeddings=64,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        pad_token_id=0,
        position_embedding_type="absolute",
    )
    if num_labels is not None:
        kw["num_labels"] = num_labels
    cfg = BertConfig(**kw)
    set_eager(cfg)
    return cfg


def xlmr_config(vocab_size, *, num_labels=1):
    cfg = XLMRobertaConfig(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=128,
        hidden_act="gelu",
        max_position_embeddings=66,  # pad_token_id 1 -> positions start at 2 -> 64 usable
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        position_embedding_type="absolute",
        num_labels=num_labels,
    )
    set_eager(cfg)
    return cfg


def mark_random(folder):
    def fn(c):
        c["inferencelayer_random_weights"] = True

    patch_json(Path(folder) / "config.json", fn)


def load_kwargs():
    return {"dtype": torch.float32, "attn_implementation": "eager"}


def hf_from_pretrained(cls, folder):
    try:
        m = cls.from_pretrained(str(folder), **load_kwargs())
    except TypeError:
        note("from_pretrained rejected dtype=; retrying with torch_dtype=")
        m = cls.from_pretrained(str(folder), torch_dtype=torch.float32, attn_implementation="eager")
    m.eval()
    for n, p in m.named_parameters():
        assert p.dtype == torch.float32, (n, p.dtype)
    impl = getattr(m.config, "_attn_implementation", None)
    if impl != "eager":
        note(f"{folder}: attention implementation is {impl!r}, not eager")
    return m


# ----------------------------------------------------------------------------------------------
# sentence-transformers


def st_modules():
    """(Transformer, Pooling, Normalize, SentenceTransformer) across sentence-transformers versions."""
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Normalize, Pooling, Transformer
    return Transformer, Pooling, Normalize, SentenceTransformer


def st_load(folder):
    _, _, _, SentenceTransformer = st_modules()
    kw = dict(device="cpu", model_kwargs=load_kwargs())
    try:
        st = SentenceTransformer(str(folder), local_files_only=True, **kw)
    except TypeError:
        st = SentenceTransformer(str(folder), **kw)
    st.eval()
    for n, p in st.named_parameters():
        assert p.dtype == torch.float32, (n, p.dtype)
    return st


def st_encode(st, texts, prompt_name=None, batch_size=1):
    kw = dict(batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    if prompt_name is not None:
        kw["prompt_name"] = prompt_name
    try:
        out = st.encode(list(texts), **kw)
    except TypeError:
        kw.pop("convert_to_numpy")
        kw.pop("show_progress_bar")
        out = st.encode(list(texts), **kw)
    out = to_np(out)
    assert out.shape[0] == len(texts) and out.ndim == 2, out.shape
    return out


def st_generator():
    """The library versions an embedding fixture was written with."""
    return {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "sentence_transformers": __import__("sentence_transformers").__version__,
    }


def st_hf_model(st):
    mod = st[0]
    m = getattr(mod, "auto_model", None)
    return m if m is not None else mod.model


def st_features(model, item):
    """Features as a sentence-transformers model prepares one input (None when no API is found)."""
    for meth in ("preprocess", "tokenize"):
        fn = getattr(model, meth, None)
        if fn is None:
            continue
        try:
            feats = fn([item])
        except Exception:
            continue
        try:
            if "input_ids" in feats:
                return feats
        except TypeError:
            continue
    return None


def feature_row(feats, key):
    row = [int(v) for v in feats[key][0].tolist()]
    mask = [int(v) for v in feats["attention_mask"][0].tolist()] if "attention_mask" in feats else [1] * len(row)
    return [v for v, m in zip(row, mask) if m]


LEGACY_POOLING_KEYS = [
    ("cls", "pooling_mode_cls_token"),
    ("mean", "pooling_mode_mean_tokens"),
    ("max", "pooling_mode_max_tokens"),
    ("mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens"),
    ("weightedmean", "pooling_mode_weightedmean_tokens"),
    ("lasttoken", "pooling_mode_lasttoken"),
]

LEGACY_MODULE_TYPES = {
    "Transformer": "sentence_transformers.models.Transformer",
    "Pooling": "sentence_transformers.models.Pooling",
    "Normalize": "sentence_transformers.models.Normalize",
}


def write_legacy_st_configs(folder, pooling):
    """Rewrite module configs in the format of classic Hub checkpoints (e.g. all-MiniLM-L6-v2)."""
    folder = Path(folder)
    pool = {"word_embedding_dimension": HIDDEN}
    for mode, key in LEGACY_POOLING_KEYS:
        pool[key] = mode == pooling
    pool["include_prompt"] = True
    write_json(folder / "1_Pooling" / "config.json", pool)
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": MAX_LEN, "do_lower_case": False})
    mods = read_json(folder / "modules.json")
    for m in mods:
        short = m["type"].rsplit(".", 1)[-1]
        if short in LEGACY_MODULE_TYPES:
            m["type"] = LEGACY_MODULE_TYPES[short]
    write_json(folder / "modules.json", mods)


def snapshot_files(folder, names):
    folder = Path(folder)
    return {n: (folder / n).read_bytes() for n in names if (folder / n).exists()}


def restore_files(folder, snap):
    for n, data in snap.items():
        (Path(folder) / n).write_bytes(data)


# ----------------------------------------------------------------------------------------------
# inputs

EMBED_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "",
    "Café naïve résumé: Zürich façade, crème brûlée!",
    "東京は大きい都市です。你好世界",
    "Hello, World!!! (testing) [punctuation]; semi:colons & ampersands?",
    "I love pizza 🍕 and sunsets 🌅 with friends 👨\u200d👩\u200d👧.",
    "a",
    "The library closes at nine, but the reading room stays open until midnight.",
    "   leading and trailing whitespace\tand a tab   ",
    "Mixed CASE words With Capitals and numbers 12345 3.14",
    "ελληνικά и русский текст مرحبا שלום",
    "A [MASK] typed inside the text, and a [SEP] too.",
    (
        "The market in the old town sells fresh fish, cheese, olives, bread and herbs every Saturday "
        "morning; travellers from Zürich, São Paulo and Kraków often stop there before taking the ferry "
        "to the island, where a small museum displays ancient coins, maps and paintings, and the café "
        "near the harbour serves strong coffee with warm croissants until the evening train departs."
    ),
]
PROMPT_CASES = [("what is the capital of france?", "query")]

CE_PAIRS = [
    ("What is the capital of France?", "Paris is the capital and most populous city of France."),
    ("what is the capital of france?", "The quick brown fox jumps over the lazy dog."),
    ("How do plants make food?", "Plants use sunlight, water and carbon dioxide to make sugar through photosynthesis."),
    ("", "An empty query with a short document."),
    ("café près de la gare", "Un petit café près de la gare sert du café fort et des croissants."),
    ("東京", "東京は日本の首都です。"),
    ("emoji 🎉 query", "party time 🎉🎊 [SEP] typed"),
    (
        "Which museums near the harbour show ancient coins, old maps and paintings by local artists, and "
        "when do they open on weekends?",
        "The market in the old town sells fresh fish, cheese, olives, bread and herbs every Saturday "
        "morning; travellers from Zürich, São Paulo and Kraków often stop there before taking the ferry "
        "to the island, where a small museum displays ancient coins, maps and paintings.",
    ),
    ("short", "x"),
]

ID_CASE_LENGTHS = [1, 5, 33, 64]
HIDDEN_CASES = 3


def id_cases_for(vocab_size, cls_id, two_segments, seed):
    rng = np.random.default_rng(seed)
    out = []
    for L in ID_CASE_LENGTHS:
        ids = rng.integers(5, vocab_size, size=L).tolist()
        ids[0] = cls_id
        if two_segments:
            half = (L + 1) // 2
            types = [0] * half + [1] * (L - half)
        else:
            types = [0] * L
        out.append(([int(v) for v in ids], types))
    return out


# ----------------------------------------------------------------------------------------------
# forward passes


@torch.no_grad()
def base_forward(base, ids, types):
    t_ids = torch.tensor([ids], dtype=torch.long)
    mask = torch.ones_like(t_ids)
    t_types = torch.tensor([types], dtype=torch.long)
    out = base(input_ids=t_ids, attention_mask=mask, token_type_ids=t_types)
    return out.last_hidden_state[0].float().numpy()


@torch.no_grad()
def cls_forward(model, ids, types):
    t_ids = torch.tensor([ids], dtype=torch.long)
    mask = torch.ones_like(t_ids)
    t_types = torch.tensor([types], dtype=torch.long)
    out = model(input_ids=t_ids, attention_mask=mask, token_type_ids=t_types)
    return out.logits[0].float().numpy()


def pad_batch(seqs, types, pad_id):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    tt = torch.zeros((len(seqs), L), dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, (s, t) in enumerate(zip(seqs, types)):
        ids[i, : len(s)] = torch.tensor(s)
        tt[i, : len(t)] = torch.tensor(t)
        mask[i, : len(s)] = 1
    return ids, tt, mask


def pool(hidden, mode):
    h = torch.from_numpy(np.asarray(hidden, dtype=np.float32))
    if mode == "mean":
        v = h.sum(0) / max(h.shape[0], 1)
    elif mode == "cls":
        v = h[0]
    else:
        raise ValueError(mode)
    return F.normalize(v[None], p=2, dim=1)[0].numpy()


def check_not_degenerate(name, vectors):
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    spread = float(np.mean(np.std(v, axis=0)))
    if spread < 1e-2:
        raise AssertionError(f"{name}: outputs are near-constant across cases (mean std {spread:.3g})")
    return spread


# ----------------------------------------------------------------------------------------------
# folder builders


def build_st_folder(out, name, tok, vocab_size, *, pooling, act, intermediate, seed, legacy, hidden=HIDDEN,
                    heads=HEADS):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = bert_config(vocab_size, act=act, intermediate=intermediate, hidden=hidden, heads=heads)
    model = BertModel(cfg)
    randomize(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    save_tokenizer(tok, folder, "bert")
    mark_random(folder)

    Transformer, Pooling, Normalize, SentenceTransformer = st_modules()
    tr = Transformer(str(folder), model_kwargs=load_kwargs())
    pl = Pooling(hidden, pooling_mode=pooling)
    st = SentenceTransformer(modules=[tr, pl, Normalize()], device="cpu", prompts={"query": "query: "})
    try:
        st.save(str(folder), create_model_card=False)
    except TypeError:
        st.save(str(folder))
    readme = folder / "README.md"
    if readme.exists():
        readme.unlink()
    fix_tokenizer_files(folder, "bert")
    mark_random(folder)

    def fix_prompts(c):
        prompts = c.get("prompts") or {}
        prompts["query"] = "query: "
        c["prompts"] = prompts

    cst = folder / "config_sentence_transformers.json"
    if cst.exists():
        patch_json(cst, fix_prompts)
    else:
        note(f"{name}: sentence-transformers wrote no config_sentence_transformers.json; writing one")
        write_json(cst, {"prompts": {"query": "query: "}, "default_prompt_name": None})
    remove_empty_dirs(folder)

    written_format = "installed sentence-transformers"
    if legacy:
        names = ["modules.json", "sentence_bert_config.json", "1_Pooling/config.json"]
        snap = snapshot_files(folder, names)
        write_legacy_st_configs(folder, pooling)
        try:
            st_load(folder)
            written_format = "classic (pooling_mode_* keys, sentence_transformers.models.* types)"
        except Exception:
            note(f"{name}: classic module-config format did not load; kept the installed format\n"
                 + traceback.format_exc(limit=3))
            restore_files(folder, snap)
    return folder, written_format


def expected_embedding(folder, tok_trunc, pooling, vocab_size, cls_id, seed):
    st = st_load(folder)
    hf_tok = AutoTokenizer.from_pretrained(str(folder))
    hf = hf_from_pretrained(AutoModel, folder)
    stats = {"st_tokenize_checked": 0}

    cases = []
    all_ids, all_types, singles_hidden = [], [], []
    for i, text in enumerate(EMBED_TEXTS + [t for t, _ in PROMPT_CASES]):
        prompt_name = None
        full = text
        if i >= len(EMBED_TEXTS):
            prompt_name = PROMPT_CASES[i - len(EMBED_TEXTS)][1]
            full = st.prompts[prompt_name] + text
        ids, types, offs = tokenize_case(tok_trunc, hf_tok, full)
        feats = st_features(st, full)
        if feats is not None:
            if feature_row(feats, "input_ids") != ids:
                raise AssertionError(f"{folder.name}: sentence-transformers tokenizes {full!r} differently")
            if "token_type_ids" not in feats:
                raise AssertionError(f"{folder.name}: sentence-transformers prepares no token_type_ids")
            stats["st_tokenize_checked"] += 1
        hidden = base_forward(hf, ids, types)
        mine = pool(hidden, pooling)
        pooled = st_encode(st, [text], prompt_name=prompt_name)[0]
        check_close(f"{folder.name} case {i}: ST encode vs transformers+pooling", pooled, mine)
        case = {"text": full}
        if prompt_name is not None:
            case["input_text"] = text
            case["prompt_name"] = prompt_name
        case.update({"input_ids": ids, "token_type_ids": types, "offsets": offs, "pooled": flist(pooled)})
        if i < HIDDEN_CASES:
            case["hidden"] = flist(hidden)
        cases.append(case)
        all_ids.append(ids)
        all_types.append(types)
        singles_hidden.append(hidden)

    if not any(len(ids) == MAX_LEN for ids in all_ids):
        raise AssertionError(f"{folder.name}: no text reached truncation at {MAX_LEN} tokens")

    # Oracle self-check: one padded batch must give the one-at-a-time results.
    b_ids, b_types, b_mask = pad_batch(all_ids, all_types, hf.config.pad_token_id)
    with torch.no_grad():
        bh = hf(input_ids=b_ids, attention_mask=b_mask, token_type_ids=b_types).last_hidden_state.float().numpy()
    worst = 0.0
    for i, ids in enumerate(all_ids):
        worst = max(worst, check_close(f"{folder.name} batch hidden {i}", bh[i, : len(ids)], singles_hidden[i]))
    plain = [c["text"] for c in cases if "prompt_name" not in c]
    st_batch = st_encode(st, plain, batch_size=len(plain))
    for i, c in enumerate(cases[: len(plain)]):
        worst = max(worst, check_close(f"{folder.name} ST batch pooled {i}", st_batch[i], c["pooled"]))
    stats["batch_max_abs_diff"] = worst

    id_cases = []
    st_forward_ok = 0
    for ids, types in id_cases_for(vocab_size, cls_id, True, seed + 1000):
        hidden = base_forward(hf, ids, types)
        pooled = pool(hidden, pooling)
        try:
            feats = {
                "input_ids": torch.tensor([ids]),
                "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
                "token_type_ids": torch.tensor([types]),
            }
            with torch.no_grad():
                emb = st(feats)["sentence_embedding"][0]
            check_close(f"{folder.name} id case ST forward", to_np(emb), pooled)
            st_forward_ok += 1
        except AssertionError:
            raise
        except Exception as e:  # ST forward API differences only lose the cross-check
            if st_forward_ok == 0:
                note(f"{folder.name}: ST forward on id features not usable ({type(e).__name__}: {e})")
        id_cases.append({"input_ids": ids, "token_type_ids": types, "pooled": flist(pooled), "hidden": flist(hidden)})
    stats["st_forward_id_cases_checked"] = st_forward_ok
    stats["spread"] = check_not_degenerate(folder.name, [c["pooled"] for c in cases])
    pooled_all = np.asarray([c["pooled"] for c in cases[: len(plain)]])
    cos = pooled_all @ pooled_all.T
    off = cos[~np.eye(len(cos), dtype=bool)]
    stats["cos_mean"] = float(off.mean())
    stats["cos_max"] = float(off.max())
    if stats["cos_max"] > 0.9999:
        raise AssertionError(f"{folder.name}: two different texts embed identically (cos {stats['cos_max']})")

    expected = {
        "kind": "embedding",
        "model": folder.name,
        "pooling": pooling,
        "normalize": True,
        "max_length": MAX_LEN,
        "generator": st_generator(),
        "cases": cases,
        "id_cases": id_cases,
    }
    write_json(folder / "expected.json", expected, indent=None)
    return stats


def build_ce_folder(out, name, tok, flavour, model_cls, cfg, seed):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    model = model_cls(cfg)
    randomize(model, seed)
    model.eval()
    model.save_pretrained(str(folder))
    save_tokenizer(tok, folder, flavour)
    mark_random(folder)
    return folder


def expected_ce(folder, tok_trunc, vocab_size, cls_id, two_segments, seed, source_folder=None):
    """Cross-encoder expectations. source_folder: where the transformers model is loaded from
    (jina-ce's own layout is not loadable by transformers; its expected outputs are xlmr-ce's)."""
    src = source_folder or folder
    hf_tok = AutoTokenizer.from_pretrained(str(folder))
    hf = hf_from_pretrained(AutoModelForSequenceClassification, src)
    base = hf.base_model
    num_labels = int(hf.config.num_labels)
    stats = {}

    cases, all_ids, all_types, singles = [], [], [], []
    for i, (q, d) in enumerate(CE_PAIRS):
        ids, types, offs = tokenize_case(tok_trunc, hf_tok, q, d)
        logits = cls_forward(hf, ids, types)
        assert logits.shape == (num_labels,), logits.shape
        case = {"text": q, "pair": d, "input_ids": ids, "token_type_ids": types, "offsets": offs,
                "scores": flist(logits)}
        if i < HIDDEN_CASES:
            case["hidden"] = flist(base_forward(base, ids, types))
        cases.append(case)
        all_ids.append(ids)
        all_types.append(types)
        singles.append(logits)
    if not any(len(c["input_ids"]) == MAX_LEN for c in cases):
        raise AssertionError(f"{folder.name}: no pair reached truncation at {MAX_LEN} tokens")

    b_ids, b_types, b_mask = pad_batch(all_ids, all_types, hf.config.pad_token_id)
    with torch.no_grad():
        bl = hf(input_ids=b_ids, attention_mask=b_mask, token_type_ids=b_types).logits.float().numpy()
    worst = 0.0
    for i in range(len(all_ids)):
        worst = max(worst, check_close(f"{folder.name} batch logits {i}", bl[i], singles[i]))
    stats["batch_max_abs_diff"] = worst

    # sentence-transformers CrossEncoder on the folder, raw logits (identity activation).
    stats["cross_encoder_checked"] = False
    if source_folder is None:
        try:
            from sentence_transformers import CrossEncoder

            kw = dict(device="cpu", activation_fn=torch.nn.Identity(), model_kwargs=load_kwargs())
            try:
                ce = CrossEncoder(str(folder), local_files_only=True, **kw)
            except TypeError:
                ce = CrossEncoder(str(folder), **kw)
            pred = to_np(ce.predict([tuple(p) for p in CE_PAIRS], batch_size=4, show_progress_bar=False))
            pred = pred.reshape(len(CE_PAIRS), -1)
            ref = np.stack(singles)
            diffs = np.max(np.abs(pred - ref), axis=1)
            if float(diffs.max()) <= TOL * max(1.0, float(np.abs(ref).max())):
                stats["cross_encoder_checked"] = True
            else:
                # Say how sentence-transformers' CrossEncoder differs (ids, features), then stop.
                stats["cross_encoder_checked"] = "MISMATCH"
                lines = [f"{folder.name}: CrossEncoder.predict differs from transformers (max {diffs.max():.3g}); "
                         f"activation_fn={getattr(ce, 'activation_fn', None)!r}"]
                for i, (q, d) in enumerate(CE_PAIRS):
                    st_ids = None
                    feats = st_features(ce, (q, d))
                    if feats is not None:
                        st_ids = feature_row(feats, "input_ids")
                        extra = sorted(k for k in feats.keys())
                    else:
                        extra = "no preprocess/tokenize API"
                    lines.append(
                        f"  pair {i}: ST {pred[i].tolist()} vs HF {ref[i].tolist()} diff {diffs[i]:.3g}; "
                        f"ids equal: {st_ids == cases[i]['input_ids']} (ST len {None if st_ids is None else len(st_ids)}, "
                        f"HF len {len(cases[i]['input_ids'])}); features {extra}"
                    )
                    if st_ids is not None and st_ids != cases[i]["input_ids"]:
                        lines.append(f"    ST ids {st_ids}\n    HF ids {cases[i]['input_ids']}")
                note("\n".join(lines))
                raise AssertionError(lines[0])
        except AssertionError:
            raise
        except Exception as e:
            note(f"{folder.name}: CrossEncoder cross-check skipped ({type(e).__name__}: {e})")

    id_cases = []
    for ids, types in id_cases_for(vocab_size, cls_id, two_segments, seed + 1000):
        id_cases.append({
            "input_ids": ids,
            "token_type_ids": types,
            "scores": flist(cls_forward(hf, ids, types)),
            "hidden": flist(base_forward(base, ids, types)),
        })
    stats["spread"] = check_not_degenerate(folder.name, [c["scores"] for c in cases])

    expected = {
        "kind": "cross_encoder",
        "model": folder.name,
        "num_labels": num_labels,
        "activation": "none (raw logits)",
        "max_length": MAX_LEN,
        "generator": {"transformers": transformers.__version__, "torch": torch.__version__},
        "cases": cases,
        "id_cases": id_cases,
    }
    if source_folder is not None:
        expected["computed_from"] = Path(source_folder).name
    write_json(folder / "expected.json", expected, indent=None)
    return stats


# ----------------------------------------------------------------------------------------------
# derived folders: f16 storage, jina layout


def safetensors_tensors(path):
    from safetensors.numpy import load_file

    return load_file(str(path))


def save_safetensors(path, tensors):
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path), metadata={"format": "pt"})


def make_f16_copy(src, dst):
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    exp = dst / "expected.json"
    if exp.exists():
        exp.unlink()
    t = safetensors_tensors(dst / "model.safetensors")
    t16 = {k: (v.astype(np.float16) if v.dtype == np.float32 else v) for k, v in t.items()}
    save_safetensors(dst / "model.safetensors", t16)

    def fn(c):
        for key in ("dtype", "torch_dtype"):
            if key in c:
                c[key] = "float16"
        if "dtype" not in c and "torch_dtype" not in c:
            c["dtype"] = "float16"

    patch_json(dst / "config.json", fn)
    return t


JINA_LAYER_MAP = {
    "attention.output.dense": "mixer.out_proj",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "mlp.fc1",
    "output.dense": "mlp.fc2",
    "output.LayerNorm": "norm2",
}


def make_jina_copy(src, dst):
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "expected.json"):
            shutil.copy2(f, dst / f.name)
    t = safetensors_tensors(src / "model.safetensors")
    out = {}
    qkv = {}
    for k, v in t.items():
        if k.endswith("position_ids") or k.endswith("embeddings.token_type_ids"):
            continue  # buffers, not weights
        if k.startswith("roberta.embeddings.LayerNorm."):
            out["roberta.emb_ln." + k.rsplit(".", 1)[1]] = v
            continue
        m = re.match(r"^roberta\.encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$", k)
        if m:
            n, mid, kind = m.groups()
            if mid in ("attention.self.query", "attention.self.key", "attention.self.value"):
                qkv[(n, kind, mid.rsplit(".", 1)[1])] = v
                continue
            if mid not in JINA_LAYER_MAP:
                raise AssertionError(f"jina rename: unexpected tensor {k}")
            out[f"roberta.encoder.layers.{n}.{JINA_LAYER_MAP[mid]}.{kind}"] = v
            continue
        if k.startswith("roberta.embeddings.") or k.startswith("classifier."):
            out[k] = v
            continue
        raise AssertionError(f"jina rename: unexpected tensor {k}")
    layers = sorted({n for (n, _, _) in qkv}, key=int)
    for n in layers:
        for kind in ("weight", "bias"):
            parts = [qkv[(n, kind, w)] for w in ("query", "key", "value")]
            out[f"roberta.encoder.layers.{n}.mixer.Wqkv.{kind}"] = np.concatenate(parts, axis=0)
    save_safetensors(dst / "model.safetensors", out)
    return sorted(out)


# ----------------------------------------------------------------------------------------------
# tokenizer conformance cases


# Prompts of the include_prompt: false fixture: a short one, a long instruction (truncation
# then cuts the text, never the prompt) and the empty one (sentence-transformers still counts a
# prompt_length for it, see prompt_pooling_case).
PROMPT_POOLING_PROMPTS = {
    "query": "query: ",
    "instruct": "Represent this sentence for searching relevant passages about the text: ",
    "document": "",
}


def prompt_pooling_case(st, hf, hf_tok, tok_trunc, folder, text, prompt_name):
    """One text under one prompt: sentence-transformers' pooled vector, and the number of
    leading tokens it left out of the mean (found by matching transformers' hidden states)."""
    full = PROMPT_POOLING_PROMPTS[prompt_name] + text
    ids, types, offs = tokenize_case(tok_trunc, hf_tok, full)
    hidden = base_forward(hf, ids, types)
    pooled = st_encode(st, [text], prompt_name=prompt_name)[0]
    prompt = PROMPT_POOLING_PROMPTS[prompt_name]
    tokenized = st.tokenize([prompt])
    counted = int(tokenized["input_ids"].shape[-1]) - 1  # sentence-transformers' prompt_length
    candidates = [counted, 0]
    for skip in candidates:
        rest = hidden[skip:] if skip < len(ids) else hidden[:0]
        mine = pool(rest, "mean") if len(rest) else np.zeros(HIDDEN, dtype=np.float32)
        if max_abs(mine, pooled) <= TOL:
            return {"text": full, "input_text": text, "prompt_name": prompt_name, "prompt_length": skip,
                    "input_ids": ids, "token_type_ids": types, "offsets": offs, "pooled": flist(pooled)}
    raise AssertionError(f"{folder.name}: {prompt_name!r} + {text!r}: ST's vector is the mean of neither the "
                         f"tokens after {counted} nor all tokens")


def make_prompt_pooling_copy(src, dst):
    """bert-mean's model with include_prompt: false in its Pooling config: sentence-transformers
    then leaves the prompt's tokens out of the mean (INSTRUCTOR-style models)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    (dst / "expected.json").unlink()
    patch_json(dst / "1_Pooling" / "config.json", lambda c: c.__setitem__("include_prompt", False))
    patch_json(dst / "config_sentence_transformers.json",
               lambda c: c.__setitem__("prompts", dict(PROMPT_POOLING_PROMPTS)))
    st = st_load(dst)
    if getattr(st[1], "include_prompt", None) is not False:
        raise AssertionError(f"{dst.name}: sentence-transformers did not load include_prompt: false")
    hf_tok = AutoTokenizer.from_pretrained(str(dst))
    hf = hf_from_pretrained(AutoModel, dst)
    tok_trunc = truncating_copy(Tokenizer.from_file(str(dst / "tokenizer.json")))
    cases, lengths = [], {}
    texts = [t for t in EMBED_TEXTS if t]
    for name in PROMPT_POOLING_PROMPTS:
        for text in texts:
            case = prompt_pooling_case(st, hf, hf_tok, tok_trunc, dst, text, name)
            lengths.setdefault(name, set()).add(case["prompt_length"])
            cases.append(case)
    for text in texts[:3]:  # no prompt: every token counts, as in bert-mean
        ids, types, offs = tokenize_case(tok_trunc, hf_tok, text)
        pooled = st_encode(st, [text])[0]
        check_close(f"{dst.name} plain {text!r}", pooled, pool(base_forward(hf, ids, types), "mean"))
        cases.append({"text": text, "input_ids": ids, "token_type_ids": types, "offsets": offs,
                      "pooled": flist(pooled)})
    # Padded batches must agree with the one-at-a-time vectors (the mask is cut per row).
    worst = 0.0
    for name in PROMPT_POOLING_PROMPTS:
        batch = st_encode(st, texts, prompt_name=name, batch_size=len(texts))
        singles = [c for c in cases if c.get("prompt_name") == name]
        for row, c in zip(batch, singles):
            worst = max(worst, check_close(f"{dst.name} ST batch {name}", row, c["pooled"]))
    expected = {
        "kind": "embedding",
        "model": dst.name,
        "pooling": "mean",
        "normalize": True,
        "include_prompt": False,
        "max_length": MAX_LEN,
        "generator": st_generator(),
        "cases": cases,
        "id_cases": [],
    }
    write_json(dst / "expected.json", expected, indent=None)
    return {"cases": len(cases), "prompt_lengths": {k: sorted(v) for k, v in lengths.items()},
            "batch_max_abs_diff": worst}


def write_wordpiece_cases(out, tok_path):
    tok = Tokenizer.from_file(str(tok_path))
    lines = []
    with open(HERE / "tricky_lines.jsonl", encoding="utf-8") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw:
                lines.append(json.loads(raw))
    d = out / "tokenizer"
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(d / "wordpiece_cases.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(lines):
            pair = lines[i + 1] if (i % 5 == 4 and i + 1 < len(lines)) else None
            add_special = i % 2 == 0
            enc = tok.encode(text, pair, add_special_tokens=add_special)
            rec = {
                "text": text,
                "pair": pair,
                "add_special_tokens": add_special,
                "ids": list(enc.ids),
                "tokens": list(enc.tokens),
                "type_ids": list(enc.type_ids),
                "offsets": byte_offsets(enc, text, pair),
                "special_tokens_mask": list(enc.special_tokens_mask),
                "decoded": tok.decode(list(enc.ids), skip_special_tokens=True),
            }
            f.write(json.dumps(rec, ensure_ascii=True) + "\n")
            n += 1
    # the tokenizer the cases were made with, for tests that do not want to reach into bert-mean/
    shutil.copy2(tok_path, d / "wordpiece_tokenizer.json")
    return n


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures", help="output folder (default tests/fixtures)")
    ap.add_argument("--retrain-vocab", action="store_true",
                    help="train the WordPiece vocabulary again from train_corpus.txt into wordpiece_vocab.txt")
    ap.add_argument("--only-prompt-pooling", action="store_true",
                    help="only (re)build bert-mean-noprompt from the existing bert-mean folder")
    ap.add_argument("--only-hd64", action="store_true", help="only (re)build bert-mean-hd64")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.only_prompt_pooling:
        torch.manual_seed(0)
        torch.set_num_threads(1)
        print("bert-mean-noprompt:", make_prompt_pooling_copy(out / "bert-mean", out / "bert-mean-noprompt"))
        return 0

    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)

    vocab_file = HERE / "wordpiece_vocab.txt"
    if args.retrain_vocab or not vocab_file.exists():
        # The WordPiece trainer breaks ties between equally frequent merges in hash order, so two
        # trainings can differ in a few tokens: train once, keep the result in the repository.
        with open(HERE / "train_corpus.txt", encoding="utf-8") as f:
            corpus = [ln.rstrip("\n") for ln in f if ln.strip()]
        vocab_tokens = train_vocab(corpus)
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("\n".join(vocab_tokens) + "\n")
        print(f"trained a new vocabulary into {vocab_file}", flush=True)
    with open(vocab_file, encoding="utf-8") as f:
        vocab_tokens = [ln.rstrip("\n") for ln in f if ln.rstrip("\n")]
    assert vocab_tokens[:5] == BERT_SPECIALS and len(set(vocab_tokens)) == len(vocab_tokens)
    bert_tok = build_tokenizer(vocab_tokens, "bert")
    xlmr_tok = build_tokenizer(vocab_tokens, "xlmr")
    V = bert_tok.get_vocab_size(with_added_tokens=True)
    assert V == xlmr_tok.get_vocab_size(with_added_tokens=True) == len(vocab_tokens)
    bert_trunc = truncating_copy(bert_tok)
    xlmr_trunc = truncating_copy(xlmr_tok)
    bert_cls = bert_tok.token_to_id("[CLS]")
    xlmr_cls = xlmr_tok.token_to_id("[CLS]")
    print(f"vocabulary: {V} tokens (target {VOCAB_TARGET}); transformers {transformers.__version__}, "
          f"torch {torch.__version__}", flush=True)

    summary = {}

    def build_hd64():
        # bert-mean's recipe at head dim 64 (hidden 128, 2 heads), installed module-config format.
        folder, fmt = build_st_folder(out, "bert-mean-hd64", bert_tok, V, pooling="mean", act="gelu",
                                      intermediate=256, seed=606, legacy=False, hidden=128, heads=2)
        summary["bert-mean-hd64"] = {"format": fmt,
                                     **expected_embedding(folder, bert_trunc, "mean", V, bert_cls, 606)}

    if args.only_hd64:
        build_hd64()
        for name, st in summary.items():
            print(name, st)
        return 0

    # bert-mean (classic module configs) and its float16 copy
    folder, fmt = build_st_folder(out, "bert-mean", bert_tok, V, pooling="mean", act="gelu", intermediate=128,
                                  seed=101, legacy=True)
    summary["bert-mean"] = {"format": fmt, **expected_embedding(folder, bert_trunc, "mean", V, bert_cls, 101)}

    f32 = make_f16_copy(out / "bert-mean", out / "bert-mean-f16")
    st16 = st_load(out / "bert-mean-f16")
    w = st_hf_model(st16).embeddings.word_embeddings.weight.detach().numpy()
    key = [k for k in f32 if k.endswith("embeddings.word_embeddings.weight")][0]
    if not np.array_equal(w, f32[key].astype(np.float16).astype(np.float32)):
        raise AssertionError("bert-mean-f16 did not load as f16-rounded weights upcast to f32")
    del st16
    summary["bert-mean-f16"] = {
        "format": fmt, **expected_embedding(out / "bert-mean-f16", bert_trunc, "mean", V, bert_cls, 101)}

    # bert-cls: gelu_new (tanh), intermediate 64 < 3*hidden, installed module-config format
    folder, fmt = build_st_folder(out, "bert-cls", bert_tok, V, pooling="cls", act="gelu_new", intermediate=64,
                                  seed=202, legacy=False)
    summary["bert-cls"] = {"format": fmt, **expected_embedding(folder, bert_trunc, "cls", V, bert_cls, 202)}

    build_hd64()

    # cross-encoders
    folder = build_ce_folder(out, "bert-ce", bert_tok, "bert", BertForSequenceClassification,
                             bert_config(V, num_labels=1), 303)
    summary["bert-ce"] = expected_ce(folder, bert_trunc, V, bert_cls, True, 303)

    folder = build_ce_folder(out, "xlmr-ce", xlmr_tok, "xlmr", XLMRobertaForSequenceClassification,
                             xlmr_config(V, num_labels=1), 404)
    summary["xlmr-ce"] = expected_ce(folder, xlmr_trunc, V, xlmr_cls, False, 404)

    folder = build_ce_folder(out, "xlmr-ce2", xlmr_tok, "xlmr", XLMRobertaForSequenceClassification,
                             xlmr_config(V, num_labels=3), 505)
    summary["xlmr-ce2"] = expected_ce(folder, xlmr_trunc, V, xlmr_cls, False, 505)

    names = make_jina_copy(out / "xlmr-ce", out / "jina-ce")
    summary["jina-ce"] = expected_ce(out / "jina-ce", xlmr_trunc, V, xlmr_cls, False, 404,
                                     source_folder=out / "xlmr-ce")
    summary["jina-ce"]["tensors"] = len(names)
    a = read_json(out / "xlmr-ce" / "expected.json")
    b = read_json(out / "jina-ce" / "expected.json")
    assert [c["scores"] for c in a["cases"]] == [c["scores"] for c in b["cases"]]

    # every saved tokenizer.json must encode like the object it was built from
    for name, ref in (("bert-mean", bert_tok), ("bert-cls", bert_tok), ("bert-mean-hd64", bert_tok), ("bert-ce", bert_tok),
                      ("xlmr-ce", xlmr_tok), ("jina-ce", xlmr_tok)):
        saved = Tokenizer.from_file(str(out / name / "tokenizer.json"))
        for t in EMBED_TEXTS:
            assert saved.encode(t).ids == ref.encode(t).ids, (name, t)
        for q, d in CE_PAIRS:
            e1, e2 = saved.encode(q, d), ref.encode(q, d)
            assert e1.ids == e2.ids and e1.type_ids == e2.type_ids, (name, q, d)
    for name in summary:
        assert read_json(out / name / "config.json").get("inferencelayer_random_weights") is True, name

    summary["bert-mean-noprompt"] = make_prompt_pooling_copy(out / "bert-mean", out / "bert-mean-noprompt")

    n_wp = write_wordpiece_cases(out, out / "bert-mean" / "tokenizer.json")

    print("\n== summary ==")
    for name, s in summary.items():
        files = sorted(str(p.relative_to(out / name)) for p in (out / name).rglob("*") if p.is_file())
        print(f"{name}: {dir_size(out / name) / 1024:.0f} KiB, files {files}")
        print("   " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in s.items()))
    print(f"tokenizer/wordpiece_cases.jsonl: {n_wp} lines")
    total = dir_size(out)
    print(f"total under {out}: {total / 1024:.0f} KiB")
    if total > 5 * 1024 * 1024:
        raise AssertionError("fixtures exceed 5 MB")
    if NOTES:
        print("\nnotes:")
        for n in NOTES:
            print(" -", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
