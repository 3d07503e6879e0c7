#!/usr/bin/env python3
"""Reference fixtures for inferencelayer's Qwen3 models (the Qwen3-Embedding and Qwen3-Reranker
layouts), produced by `transformers` / `sentence-transformers`.

The companion of make_fixtures.py (whose helpers it imports; the BERT-family folders are not
touched): tiny random-weight Qwen3 folders, a small byte-level BPE tokenizer trained here with the
`tokenizers` library, and what transformers / sentence-transformers compute for them, committed
under tests/fixtures so CI (no Python ML stack) can check the C++ backends against them.

Run on a machine with torch, transformers 5.x, sentence-transformers, tokenizers and safetensors:

    python3 tools/oracle/make_qwen3_fixtures.py --out tests/fixtures

Everything runs on the CPU in float32 with eager attention; seeds are fixed. The BPE merges are
trained from train_corpus.txt (lines fed with their line endings, as the library's own file
reader feeds them, plus YES_NO_REPEATS lines "yes" and "no" so that both are single tokens); the
trainer orders equally frequent merges by the pair's ids, so training is deterministic (checked:
two trainings in this process, and MERGES_SHA256, found with the Node binding of the same
tokenizers version).

Model geometry (both folders): hidden 64, 2 layers, 4 attention heads of head_dim 24 (so
heads * head_dim = 96 != hidden, as in Qwen3-0.6B's 16 x 128 = 2048 != 1024), 2 key-value heads
(GQA), intermediate 96, SiLU MLP, RMSNorm eps 1e-6 (q_norm / k_norm on every head too), RoPE theta
1e6, max_position_embeddings 512, no attention bias, tie_word_embeddings true. Every parameter is
random (norm weights 1 + 0.2 N, embeddings 0.5 N, matrices 1.2 N / sqrt(fan_in)).

Tokenizer (tokenizer.json, Qwen's pipeline): NFC normalizer; Split with the Qwen2 pattern
(Isolated) then ByteLevel(add_prefix_space false, trim_offsets false, use_regex false); BPE of
BPE_VOCAB tokens (the 256 byte symbols, then the merges); ByteLevel decoder; added tokens after the
BPE vocabulary, as in Qwen: <|endoftext|> <|im_start|> <|im_end|> (special) and <think> </think>
(not special). vocab_size in config.json = BPE_VOCAB + 5. tokenizer_config.json: pad
<|endoftext|>, eos <|im_end|>, padding_side left, model_max_length 512.

Folders written under --out (each with expected.json, config.json marked
"inferencelayer_random_weights": true; about 0.7 MB each, of which model.safetensors 0.45 MB):
  qwen3-embed    sentence-transformers folder as Qwen3-Embedding ships it: the transformers
                 Qwen3Model checkpoint with config.json's architectures as the real release writes
                 it (["Qwen3ForCausalLM"]; sentence-transformers 6.0.1 still loads it as a
                 feature-extraction Qwen3Model, and the run falls back to ["Qwen3Model"] with a note
                 where it would not). model.safetensors (f32, 24 tensors, no "model." prefix, no
                 lm_head): embed_tokens.weight [605, 64]; per layer N in 0..1:
                 layers.N.input_layernorm.weight [64], layers.N.post_attention_layernorm.weight
                 [64], layers.N.self_attn.{q_proj [96, 64], k_proj [48, 64], v_proj [48, 64],
                 o_proj [64, 96], q_norm [24], k_norm [24]}.weight, layers.N.mlp.{gate_proj [96, 64],
                 up_proj [96, 64], down_proj [64, 96]}.weight; norm.weight [64].
                 tokenizer.json's post-processor is Sequence[ByteLevel, TemplateProcessing
                 "$A <|endoftext|>"] (pair "$A $B <|endoftext|>", unused), so every text ends with
                 <|endoftext|>, the token that last-token pooling takes; tokenizer_config.json names
                 Qwen2Tokenizer (checked: transformers 5.17 loads it to tokenizer.json's ids,
                 appended <|endoftext|> included). modules.json / 1_Pooling / sentence_bert_config
                 (max_seq_length 512) in the classic format of the Hub checkpoint
                 (pooling_mode_lasttoken true, include_prompt true, then Normalize);
                 config_sentence_transformers.json with Qwen3-Embedding's prompts (query:
                 EMBED_QUERY_PROMPT, document: ""), default_prompt_name null, similarity cosine.
                 expected.json (kind "embedding", pooling "lasttoken", padding_side "left"): per
                 case text, input_ids, offsets (UTF-8 bytes; [0, 0] for the appended
                 <|endoftext|>), pooled (SentenceTransformer.encode one text at a time, normalized),
                 pooled_dim32 (encode with truncate_dim 32: pooled[:32], not renormalized, as
                 sentence-transformers 6.0.1 gives it), hidden (Qwen3Model's last_hidden_state, the
                 final norm applied, for the text alone, unpadded; cases 0-2 and the longest only);
                 prompted cases (prompt_name "query") carry input_text, text = prompt + input_text;
                 id_cases from raw ids (pooled = the normalized last row; hidden up to 33 tokens).
  qwen3-rerank   Qwen3ForCausalLM folder as Qwen3-Reranker ships it, plus generation_config.json.
                 tie_word_embeddings true: model.safetensors holds qwen3-embed's 24 tensors under
                 "model." (model.embed_tokens.weight, model.layers.N...., model.norm.weight) and no
                 lm_head.weight (the output projection is model.embed_tokens.weight). The same
                 tokenizer with Qwen3's plain ByteLevel post-processor (nothing appended). "yes"
                 and "no" are single BPE tokens (ids 339 and 332; asserted). expected.json (kind
                 "cross_encoder"): the model card's template as top-level prefix, query_template,
                 suffix, default_instruction, prefix_ids, suffix_ids, yes_token_id, no_token_id; per
                 case text (query), pair (document), instruction, prompt_text (the whole formatted
                 prompt), input_ids (prefix ids + the tokenized body + suffix ids, as the card
                 builds them; equal here to tokenizing prompt_text whole, so offsets are into
                 prompt_text), scores [logit(yes) - logit(no)] at the last token, probability (the
                 card's exp(log_softmax([no, yes]))[yes] = sigmoid(scores)), logits_yes, logits_no,
                 hidden (the final-normed last hidden state rows, case 0 only); id_cases likewise
                 (hidden up to 33 tokens). One document is 168 tokens; prompts run 163-360 tokens.

The run's output lists each folder's files, sizes, tensors and config.json.
"""

import os

# Before importing tokenizers / transformers (make_fixtures sets the same): one thread, no Hub.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("RAYON_RS_NUM_CPUS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import hashlib  # noqa: E402
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
    LEGACY_MODULE_TYPES,
    LEGACY_POOLING_KEYS,
    byte_offsets,
    check_close,
    check_not_degenerate,
    dir_size,
    feature_row,
    flist,
    f9,
    hf_from_pretrained,
    load_kwargs,
    mark_random,
    max_abs,
    note,
    patch_json,
    read_json,
    remove_empty_dirs,
    restore_files,
    safetensors_tensors,
    set_eager,
    snapshot_files,
    st_encode,
    st_features,
    st_generator,
    st_load,
    st_modules,
    to_np,
    write_json,
)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tokenizers import Tokenizer, pre_tokenizers, trainers  # noqa: E402

import transformers  # noqa: E402
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer, Qwen3Config, Qwen3ForCausalLM, Qwen3Model  # noqa: E402

# ----------------------------------------------------------------------------------------------
# geometry

HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 24
INTERMEDIATE = 96
RMS_EPS = 1e-6
ROPE_THETA = 1_000_000.0
MAX_POS = 512
MAX_LEN = 512  # tokenizer model_max_length / sentence-transformers max_seq_length: no case is cut
TOL = mf.TOL
# A left-padded batch shifts every row's positions by its padding (transformers' Qwen3 takes
# position ids 0..L-1 for the whole batch): RoPE is relative, so the results agree, but only to
# float32 rounding of larger angles. A padding bug (mask, pooled row) is off by far more.
BATCH_TOL = 1e-3
# hidden rows are recorded for these cases only (size): the first text cases, the longest text
# case of qwen3-embed, and the id cases of at most HIDDEN_ID_MAX_LEN tokens.
HIDDEN_EMBED_CASES = 3
HIDDEN_RERANK_CASES = 1
HIDDEN_ID_MAX_LEN = 33

EMBED_SEED = 707
RERANK_SEED = 808

# ----------------------------------------------------------------------------------------------
# tokenizer

BPE_VOCAB = 600  # 256 byte symbols + 344 merges
YES_NO_REPEATS = 20
# sha256 of json.dumps(merges) (a list of [left, right]) from the Node binding of tokenizers 0.23.2
# on the same lines; a different value is reported, not fatal.
MERGES_SHA256 = "b28bd6a7f3a1589bc0ef70b17774dd87e8b2e0a9ae5da4bf180eddf6a6d99dc4"

QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# Added tokens in Qwen's order, after the BPE vocabulary: (content, special)
ADDED_TOKENS = [(ENDOFTEXT, True), (IM_START, True), (IM_END, True), ("<think>", False), ("</think>", False)]

# ----------------------------------------------------------------------------------------------
# sentence-transformers / reranker conventions (Qwen3-Embedding's config_sentence_transformers.json,
# Qwen3-Reranker's model card)

EMBED_QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
EMBED_PROMPTS = {"query": EMBED_QUERY_PROMPT, "document": ""}
MATRYOSHKA_DIM = 32

RERANK_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
RERANK_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
RERANK_BODY = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
RERANK_DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
RERANK_CARD_MAX_LENGTH = 8192  # the model card's max_length

# ----------------------------------------------------------------------------------------------
# inputs

LONG_MARKET = mf.EMBED_TEXTS[-1]
LONG_VALLEY = (
    "Long before the railway reached the valley, the village lived from wool, cheese and the small trade of "
    "travellers crossing the pass. In winter the road closed for weeks; families stored grain, smoked meat and "
    "firewood, and the school met in the church because it was the only building warm enough. When the first "
    "train arrived in 1911, everything changed: merchants from Zürich and Milan opened shops, a hotel with forty "
    "rooms was built beside the station, and young people left for the cities."
)

EMBED_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "",
    "a",
    "Café naïve résumé: Zürich façade, crème brûlée!",
    "Cafe\u0301 and re\u0301sume\u0301 typed with combining accents (NFC composes them).",
    "東京は大きい都市です。你好世界",
    "I love pizza 🍕 and sunsets 🌅 with friends 👨\u200d👩\u200d👧.",
    "It's 2024; we'll pay $1,234.56 — don't WAIT!!! I'M sure they've LEFT.",
    "  leading spaces\n\nand two newlines,\ttabs and trailing spaces   ",
    "A typed <|im_end|> and <think> inside the text.",
    LONG_MARKET,
    LONG_VALLEY,
]
PROMPT_CASES = [("what is the capital of france?", "query"), ("How do plants make food?", "query")]

RERANK_CASES = [  # (query, document, instruction or None for the default)
    ("What is the capital of China?", "The capital of China is Beijing.", None),
    (
        "Explain gravity",
        "Gravity is a force that attracts two bodies towards each other. It gives weight to physical objects and "
        "is responsible for the movement of planets around the sun.",
        None,
    ),
    ("what is the capital of france?", "Paris is the capital and most populous city of France.",
     "Given a question, retrieve the passage that answers it"),
    ("", "An empty query with a short document.", None),
    ("東京", "東京は日本の首都です。🎉", None),
    ("Which museums near the harbour show ancient coins, maps and paintings?", LONG_MARKET, None),
    ("short", "x", None),
]


def training_lines():
    """train_corpus.txt as the library's file reader feeds it (split after each "\\n", endings kept),
    then "yes" and "no" lines."""
    with open(HERE / "train_corpus.txt", encoding="utf-8") as f:
        text = f.read()
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    lines += ["yes\n", "no\n"] * YES_NO_REPEATS
    return lines


def tokenizer_json(vocab, merges, append_eos):
    """The tokenizer.json of Qwen's pipeline, as a dict. append_eos: Qwen3-Embedding's
    post-processor (Sequence of ByteLevel and a TemplateProcessing appending <|endoftext|>);
    otherwise Qwen3's (and Qwen3-Reranker's) plain ByteLevel."""
    n = len(vocab)
    added = [
        {"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": s}
        for i, (c, s) in enumerate(ADDED_TOKENS)
    ]
    post = dict(BYTE_LEVEL)
    if append_eos:
        post = {
            "type": "Sequence",
            "processors": [
                dict(BYTE_LEVEL),
                {
                    "type": "TemplateProcessing",
                    "single": [{"Sequence": {"id": "A", "type_id": 0}},
                               {"SpecialToken": {"id": ENDOFTEXT, "type_id": 0}}],
                    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}},
                             {"SpecialToken": {"id": ENDOFTEXT, "type_id": 0}}],
                    "special_tokens": {ENDOFTEXT: {"id": ENDOFTEXT, "ids": [n], "tokens": [ENDOFTEXT]}},
                },
            ],
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
                dict(BYTE_LEVEL),
            ],
        },
        "post_processor": post,
        "decoder": dict(BYTE_LEVEL),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(vocab),
            "merges": [list(m) for m in merges],
        },
    }


def merges_sha(merges):
    return hashlib.sha256(json.dumps([list(m) for m in merges], ensure_ascii=False).encode("utf-8")).hexdigest()


def train_bpe(lines):
    """(vocab, merges) of a byte-level BPE of BPE_VOCAB tokens trained on `lines` through Qwen's
    normalizer and pre-tokenizer."""
    tok = Tokenizer.from_str(json.dumps(tokenizer_json({}, [], append_eos=False) | {"added_tokens": []}))
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB,
        min_frequency=0,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    model = json.loads(tok.to_str())["model"]
    vocab = model["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise AssertionError("trained vocabulary ids are not 0..n-1")
    if len(vocab) != BPE_VOCAB or len(merges) != BPE_VOCAB - 256:
        raise AssertionError(f"trained {len(vocab)} tokens / {len(merges)} merges, wanted {BPE_VOCAB}")
    return vocab, merges


def build_tokenizer(vocab, merges, append_eos):
    tok = Tokenizer.from_str(json.dumps(tokenizer_json(vocab, merges, append_eos)))
    for i, (c, _) in enumerate(ADDED_TOKENS):
        assert tok.token_to_id(c) == len(vocab) + i, c
    return tok


def save_tokenizer(tok, folder, append_eos, probe_texts):
    """tokenizer.json (written by the tokenizers library, as built), tokenizer_config.json,
    special_tokens_map.json. tokenizer_class: Qwen2Tokenizer (the real folders' class) where
    transformers loads it to the same ids as tokenizer.json, else the generic fast class."""
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(tok.to_str()),
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        model_max_length=MAX_LEN,
        padding_side="left",
        truncation_side="right",
        model_input_names=["input_ids", "attention_mask"],
    )
    hf_tok.save_pretrained(str(folder))
    saved = read_json(folder / "tokenizer.json")
    mine = json.loads(tok.to_str())
    for key in sorted(set(saved) | set(mine)):
        if saved.get(key) != mine.get(key):
            note(f"{folder.name}: transformers' save_pretrained wrote a different tokenizer.json {key!r}; "
                 f"the file is rewritten as built")
    tok.save(str(folder / "tokenizer.json"), pretty=True)
    chosen = None
    for cls in ("Qwen2Tokenizer", "PreTrainedTokenizerFast"):
        write_tokenizer_config(folder, cls)
        try:
            t = AutoTokenizer.from_pretrained(str(folder))
            bad = [s for s in probe_texts if list(t(s)["input_ids"]) != tok.encode(s).ids]
            if t.padding_side != "left":
                bad.append(f"<padding_side {t.padding_side}>")
        except Exception as e:  # noqa: BLE001
            bad = [f"<{type(e).__name__}: {e}>"]
        if not bad:
            chosen = cls
            break
        note(f"{folder.name}: tokenizer_class {cls} loads to other ids than tokenizer.json "
             f"(append_eos={append_eos}), e.g. {bad[0]!r}")
    if chosen is None:
        raise AssertionError(f"{folder.name}: no tokenizer class reproduces tokenizer.json")
    write_json(folder / "special_tokens_map.json", {"eos_token": IM_END, "pad_token": ENDOFTEXT})
    return chosen


def write_tokenizer_config(folder, tokenizer_class):
    p = Path(folder) / "tokenizer_config.json"
    tc = read_json(p) if p.exists() else {}
    for k in ("is_local", "local_files_only", "name_or_path", "_commit_hash"):
        tc.pop(k, None)
    tc.update({
        "tokenizer_class": tokenizer_class,
        "model_max_length": MAX_LEN,
        "model_input_names": ["input_ids", "attention_mask"],
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "bos_token": None,
        "unk_token": None,
        "padding_side": "left",
        "truncation_side": "right",
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
    })
    write_json(p, tc)


# ----------------------------------------------------------------------------------------------
# models


def rope_inv_freq_expected():
    return 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.int64).float() / HEAD_DIM))


def qwen3_config(vocab_size, eos_id):
    """Qwen3Config of the fixture geometry, RoPE theta set the way this transformers takes it
    (checked through Qwen3RotaryEmbedding's inv_freq)."""
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

    base = dict(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        hidden_act="silu",
        max_position_embeddings=MAX_POS,
        initializer_range=0.02,
        rms_norm_eps=RMS_EPS,
        use_cache=True,
        tie_word_embeddings=True,
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        max_window_layers=LAYERS,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
    )
    variants = [
        {"rope_parameters": {"rope_type": "default", "rope_theta": ROPE_THETA}},
        {"rope_theta": ROPE_THETA},
        {"rope_theta": ROPE_THETA, "rope_scaling": None},
    ]
    want = rope_inv_freq_expected()
    for extra in variants:
        try:
            cfg = Qwen3Config(**base, **extra)
            inv = Qwen3RotaryEmbedding(config=cfg).inv_freq.float()
        except Exception as e:  # noqa: BLE001
            note(f"Qwen3Config({sorted(extra)}) failed: {type(e).__name__}: {e}")
            continue
        if inv.shape == want.shape and torch.allclose(inv, want, rtol=1e-6, atol=0.0):
            print(f"Qwen3Config takes RoPE theta as {sorted(extra)}", flush=True)
            set_eager(cfg)
            return cfg
        note(f"Qwen3Config({sorted(extra)}) gives another inv_freq: {inv[:3].tolist()}")
    raise AssertionError("no way found to set RoPE theta")


def check_geometry(model):
    base = model.model if hasattr(model, "lm_head") else model
    attn = base.layers[0].self_attn
    shapes = {
        "q_proj": tuple(attn.q_proj.weight.shape),
        "k_proj": tuple(attn.k_proj.weight.shape),
        "v_proj": tuple(attn.v_proj.weight.shape),
        "o_proj": tuple(attn.o_proj.weight.shape),
        "q_norm": tuple(attn.q_norm.weight.shape),
        "k_norm": tuple(attn.k_norm.weight.shape),
    }
    want = {
        "q_proj": (HEADS * HEAD_DIM, HIDDEN),
        "k_proj": (KV_HEADS * HEAD_DIM, HIDDEN),
        "v_proj": (KV_HEADS * HEAD_DIM, HIDDEN),
        "o_proj": (HIDDEN, HEADS * HEAD_DIM),
        "q_norm": (HEAD_DIM,),
        "k_norm": (HEAD_DIM,),
    }
    if shapes != want:
        raise AssertionError(f"geometry {shapes} != {want}")
    if attn.q_proj.bias is not None:
        raise AssertionError("attention has a bias")
    if len(base.layers) != LAYERS:
        raise AssertionError("layer count")
    inv = base.rotary_emb.inv_freq.float()
    if not torch.allclose(inv, rope_inv_freq_expected(), rtol=1e-6, atol=0.0):
        raise AssertionError("RoPE inv_freq")


@torch.no_grad()
def randomize_qwen(model, seed):
    """Every parameter random: norm weights (input / post-attention / final / q_norm / k_norm)
    1 + 0.2 N, the embedding 0.5 N, matrices 1.2 N / sqrt(fan_in), anything else 0.2 N."""
    g = torch.Generator().manual_seed(seed)
    names = []
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        r = torch.randn(p.shape, generator=g, dtype=torch.float32)
        if name.endswith("norm.weight"):
            v = 1.0 + 0.2 * r
        elif "embed_tokens" in name:
            v = 0.5 * r
        elif p.dim() == 2:
            v = r * (1.2 / math.sqrt(p.shape[1]))
        else:
            v = 0.2 * r
        p.copy_(v.to(p.dtype))
        names.append(name)
    for name, p in model.named_parameters():
        if p.numel() > 1 and (bool(torch.all(p == p.flatten()[0]))):
            raise AssertionError(f"{name} is constant after randomize")
    return names


def check_loaded(loaded, ref, what):
    a, b = loaded.state_dict(), ref.state_dict()
    if set(a) != set(b):
        raise AssertionError(f"{what}: loaded tensors {sorted(set(a) ^ set(b))} differ from the model's")
    for k in a:
        if not torch.equal(a[k].float(), b[k].float()):
            raise AssertionError(f"{what}: {k} did not load as saved")


def tensor_table(folder):
    t = safetensors_tensors(Path(folder) / "model.safetensors")
    return {k: [str(v.dtype), list(v.shape)] for k, v in sorted(t.items())}


@torch.no_grad()
def qwen_hidden(base, ids):
    t = torch.tensor([ids], dtype=torch.long)
    out = base(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False)
    return out.last_hidden_state[0].float().numpy()


def last_token_pooled(hidden):
    v = torch.from_numpy(np.asarray(hidden[-1], dtype=np.float32).copy())
    return F.normalize(v[None], p=2, dim=1)[0].numpy()


def left_pad(seqs, pad_id):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, L - len(s):] = torch.tensor(s)
        mask[i, L - len(s):] = 1
    return ids, mask


def qwen_id_cases(vocab_size, eos_id, seed):
    rng = np.random.default_rng(seed)
    out = []
    for L in mf.ID_CASE_LENGTHS:
        ids = [int(v) for v in rng.integers(0, vocab_size, size=L).tolist()]
        if L > 1:
            ids[-1] = eos_id
        out.append(ids)
    return out


# ----------------------------------------------------------------------------------------------
# qwen3-embed


def write_classic_st_configs(folder):
    """Module configs in the format of the Qwen3-Embedding Hub checkpoint."""
    folder = Path(folder)
    pool = {"word_embedding_dimension": HIDDEN}
    for mode, key in LEGACY_POOLING_KEYS:
        pool[key] = mode == "lasttoken"
    pool["include_prompt"] = True
    write_json(folder / "1_Pooling" / "config.json", pool)
    write_json(folder / "sentence_bert_config.json", {"max_seq_length": MAX_LEN, "do_lower_case": False})
    mods = read_json(folder / "modules.json")
    for m in mods:
        short = m["type"].rsplit(".", 1)[-1]
        if short in LEGACY_MODULE_TYPES:
            m["type"] = LEGACY_MODULE_TYPES[short]
    write_json(folder / "modules.json", mods)


def set_architectures(folder, arch):
    def fn(c):
        c["architectures"] = [arch]
        c["inferencelayer_random_weights"] = True

    patch_json(Path(folder) / "config.json", fn)


def st_probe(folder, model, tok):
    """None when sentence-transformers loads the folder as a last-token, normalized Qwen3Model
    embedder of this model; else what went wrong."""
    try:
        st = st_load(folder)
        text = EMBED_TEXTS[0]
        pooled = st_encode(st, [text])[0]
        want = last_token_pooled(qwen_hidden(model, tok.encode(text).ids))
        if pooled.shape != want.shape or max_abs(pooled, want) > TOL:
            return f"encode gives another vector (shape {pooled.shape})"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return None


def build_embed_folder(out, tok, vocab_size, eos_id):
    folder = out / "qwen3-embed"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = qwen3_config(vocab_size, eos_id)
    model = Qwen3Model(cfg)
    names = randomize_qwen(model, EMBED_SEED)
    model.eval()
    check_geometry(model)
    model.save_pretrained(str(folder))
    probe = EMBED_TEXTS + [EMBED_QUERY_PROMPT + t for t, _ in PROMPT_CASES]
    tok_class = save_tokenizer(tok, folder, True, probe)
    mark_random(folder)

    Transformer, Pooling, Normalize, SentenceTransformer = st_modules()
    tr = Transformer(str(folder), model_kwargs=load_kwargs())
    pl = Pooling(HIDDEN, pooling_mode="lasttoken")
    st = SentenceTransformer(modules=[tr, pl, Normalize()], device="cpu", prompts=dict(EMBED_PROMPTS))
    try:
        st.save(str(folder), create_model_card=False)
    except TypeError:
        st.save(str(folder))
    del st, tr
    readme = folder / "README.md"
    if readme.exists():
        readme.unlink()
    tok.save(str(folder / "tokenizer.json"), pretty=True)
    write_tokenizer_config(folder, tok_class)
    write_json(folder / "special_tokens_map.json", {"eos_token": IM_END, "pad_token": ENDOFTEXT})

    def fix_cst(c):
        c["prompts"] = dict(EMBED_PROMPTS)
        c["default_prompt_name"] = None
        c["similarity_fn_name"] = "cosine"

    cst = folder / "config_sentence_transformers.json"
    if cst.exists():
        patch_json(cst, fix_cst)
    else:
        note("qwen3-embed: sentence-transformers wrote no config_sentence_transformers.json; writing one")
        write_json(cst, {"prompts": dict(EMBED_PROMPTS), "default_prompt_name": None, "similarity_fn_name": "cosine"})
    remove_empty_dirs(folder)

    fmt = "installed sentence-transformers"
    snap = snapshot_files(folder, ["modules.json", "sentence_bert_config.json", "1_Pooling/config.json"])
    write_classic_st_configs(folder)
    arch = "Qwen3ForCausalLM"  # what Qwen3-Embedding's config.json names (tensors without "model.")
    set_architectures(folder, arch)
    problem = st_probe(folder, model, tok)
    if problem is None:
        fmt = "classic (pooling_mode_* keys, sentence_transformers.models.* types)"
    else:
        note(f"qwen3-embed: classic module configs with architectures [{arch}]: {problem}")
        arch = "Qwen3Model"
        set_architectures(folder, arch)
        problem = st_probe(folder, model, tok)
        if problem is None:
            fmt = "classic (pooling_mode_* keys, sentence_transformers.models.* types)"
        else:
            note(f"qwen3-embed: classic module configs with architectures [{arch}]: {problem}; "
                 "keeping the installed module-config format")
            restore_files(folder, snap)
            problem = st_probe(folder, model, tok)
            if problem is not None:
                raise AssertionError(f"qwen3-embed does not load in sentence-transformers: {problem}")
    return folder, model, {"format": fmt, "architectures": arch, "tokenizer_class": tok_class,
                           "parameters_randomized": len(names)}


def encode_case(tok, hf_tok, st, text, folder):
    enc = tok.encode(text)
    ids = list(enc.ids)
    h = list(hf_tok(text)["input_ids"])
    if h != ids:
        raise AssertionError(f"{folder.name}: transformers vs tokenizers ids differ for {text!r}:\n{h}\n{ids}")
    if st is not None:
        feats = st_features(st, text)
        if feats is not None and feature_row(feats, "input_ids") != ids:
            raise AssertionError(f"{folder.name}: sentence-transformers tokenizes {text!r} differently")
    return ids, byte_offsets(enc, text)


def st_matryoshka(st, text, prompt_name=None):
    kw = dict(batch_size=1, convert_to_numpy=True, show_progress_bar=False, truncate_dim=MATRYOSHKA_DIM)
    if prompt_name is not None:
        kw["prompt_name"] = prompt_name
    return to_np(st.encode([text], **kw))[0]


def st_batch_features(st, texts):
    for meth in ("preprocess", "tokenize"):
        fn = getattr(st, meth, None)
        if fn is None:
            continue
        try:
            feats = fn(list(texts))
            if "attention_mask" in feats:
                return feats
        except Exception:  # noqa: BLE001
            continue
    return None


def expected_embed(folder, model, tok, vocab_size, eos_id):
    st = st_load(folder)
    hf_tok = AutoTokenizer.from_pretrained(str(folder))
    hf = hf_from_pretrained(AutoModel, folder)
    check_loaded(hf, model, "qwen3-embed (AutoModel)")
    check_loaded(mf.st_hf_model(st), model, "qwen3-embed (sentence-transformers)")
    check_geometry(hf)
    print(st, flush=True)
    stats = {"max_seq_length": getattr(st, "max_seq_length", None)}
    if stats["max_seq_length"] != MAX_LEN:
        note(f"qwen3-embed: sentence-transformers max_seq_length {stats['max_seq_length']}, not {MAX_LEN}")
    pool_mod = st[1]
    mode = getattr(pool_mod, "pooling_mode", None)
    if mode is None:
        mode = "lasttoken" if getattr(pool_mod, "pooling_mode_lasttoken", False) else repr(pool_mod)
    if mode != "lasttoken" or getattr(pool_mod, "include_prompt", True) is not True:
        raise AssertionError(f"qwen3-embed pooling loaded as {mode!r}, include_prompt "
                             f"{getattr(pool_mod, 'include_prompt', None)}")
    if dict(st.prompts) != EMBED_PROMPTS and {k: v for k, v in st.prompts.items() if k in EMBED_PROMPTS} != EMBED_PROMPTS:
        raise AssertionError(f"qwen3-embed prompts loaded as {st.prompts}")

    cases, all_ids, singles = [], [], []
    matryoshka = {"checked": 0, "renormalized": None}
    items = [(t, None) for t in EMBED_TEXTS] + list(PROMPT_CASES)
    for i, (text, prompt_name) in enumerate(items):
        full = text if prompt_name is None else EMBED_PROMPTS[prompt_name] + text
        ids, offs = encode_case(tok, hf_tok, st, full, folder)
        if ids[-1] != eos_id:
            raise AssertionError(f"qwen3-embed: {full!r} does not end with <|endoftext|>")
        hidden = qwen_hidden(hf, ids)
        mine = last_token_pooled(hidden)
        pooled = st_encode(st, [text], prompt_name=prompt_name)[0]
        check_close(f"qwen3-embed case {i}: ST encode vs transformers last token", pooled, mine)
        case = {"text": full}
        if prompt_name is not None:
            case["input_text"] = text
            case["prompt_name"] = prompt_name
        case.update({"input_ids": ids, "offsets": offs, "pooled": flist(pooled)})
        try:
            m = st_matryoshka(st, text, prompt_name)
            prefix = pooled[:MATRYOSHKA_DIM]
            renorm = prefix / max(float(np.linalg.norm(prefix)), 1e-12)
            if max_abs(m, prefix) <= TOL:
                kind = False
            elif max_abs(m, renorm) <= TOL:
                kind = True
            else:
                raise AssertionError(f"qwen3-embed case {i}: truncate_dim vector is neither pooled[:32] nor it renormalized")
            if matryoshka["renormalized"] not in (None, kind):
                raise AssertionError("truncate_dim semantics differ between cases")
            matryoshka["renormalized"] = kind
            matryoshka["checked"] += 1
            case["pooled_dim32"] = flist(m)
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001
            if matryoshka["checked"] == 0 and "error" not in matryoshka:
                note(f"qwen3-embed: encode(truncate_dim=...) not usable ({type(e).__name__}: {e})")
                matryoshka["error"] = str(e)
        cases.append(case)
        all_ids.append(ids)
        singles.append(hidden)

    lengths = [len(x) for x in all_ids]
    stats["token_counts"] = lengths
    if not any(64 < L < 180 for L in lengths) or max(lengths) < 180:
        raise AssertionError(f"qwen3-embed: want a case past 64 tokens and one near 200, got {lengths}")
    longest = int(np.argmax(lengths))
    for i, case in enumerate(cases):
        if i < HIDDEN_EMBED_CASES or i == longest:
            case["hidden"] = flist(singles[i])

    # Padded batches (left padding, as the tokenizer is configured) must agree with one at a time.
    worst = 0.0
    b_ids, b_mask = left_pad(all_ids, eos_id)
    with torch.no_grad():
        bh = hf(input_ids=b_ids, attention_mask=b_mask, use_cache=False).last_hidden_state.float().numpy()
    L = b_ids.shape[1]
    for i, ids in enumerate(all_ids):
        worst = max(worst, check_close(f"qwen3-embed HF left-padded batch row {i}", bh[i, L - len(ids):], singles[i],
                                       BATCH_TOL))
    stats["hf_batch_max_abs_diff"] = worst
    feats = st_batch_features(st, ["a", LONG_VALLEY])
    if feats is None:
        note("qwen3-embed: no sentence-transformers batch tokenization API found to check the padding side")
    else:
        m = feats["attention_mask"]
        if int(m[0][0]) != 0 or int(m[0][-1]) != 1:
            raise AssertionError(f"qwen3-embed: sentence-transformers does not pad on the left: {m[0].tolist()}")
    worst = 0.0
    plain = [c for c in cases if "prompt_name" not in c]
    batch = st_encode(st, [c["text"] for c in plain], batch_size=len(plain))
    for row, c in zip(batch, plain):
        worst = max(worst, check_close(f"qwen3-embed ST batch {c['text'][:30]!r}", row, c["pooled"], BATCH_TOL))
    prompted = [c for c in cases if "prompt_name" in c]
    batch = st_encode(st, [c["input_text"] for c in prompted], prompt_name="query", batch_size=len(prompted))
    for row, c in zip(batch, prompted):
        worst = max(worst, check_close(f"qwen3-embed ST prompted batch {c['input_text']!r}", row, c["pooled"], BATCH_TOL))
    stats["st_batch_max_abs_diff"] = worst

    id_cases = []
    st_forward_ok = 0
    for ids in qwen_id_cases(vocab_size, eos_id, EMBED_SEED + 1000):
        hidden = qwen_hidden(hf, ids)
        pooled = last_token_pooled(hidden)
        try:
            feats = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
            with torch.no_grad():
                emb = st(feats)["sentence_embedding"][0]
            check_close("qwen3-embed id case ST forward", to_np(emb), pooled)
            st_forward_ok += 1
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001
            if st_forward_ok == 0:
                note(f"qwen3-embed: ST forward on id features not usable ({type(e).__name__}: {e})")
        case = {"input_ids": ids, "pooled": flist(pooled)}
        if len(ids) <= HIDDEN_ID_MAX_LEN:
            case["hidden"] = flist(hidden)
        id_cases.append(case)
    stats["st_forward_id_cases_checked"] = st_forward_ok
    stats["spread"] = check_not_degenerate("qwen3-embed", [c["pooled"] for c in cases])
    pooled_all = np.asarray([c["pooled"] for c in plain])
    cos = pooled_all @ pooled_all.T
    off = cos[~np.eye(len(cos), dtype=bool)]
    stats["cos_max"] = float(off.max())
    if stats["cos_max"] > 0.9999:
        raise AssertionError(f"qwen3-embed: two different texts embed identically (cos {stats['cos_max']})")
    stats["matryoshka"] = {k: v for k, v in matryoshka.items() if k != "error"}

    expected = {
        "kind": "embedding",
        "model": folder.name,
        "architecture": "Qwen3Model",
        "pooling": "lasttoken",
        "normalize": True,
        "include_prompt": True,
        "max_length": MAX_LEN,
        "padding_side": "left",
        "eos_token_id": eos_id,
        "pad_token_id": eos_id,
        "prompts": dict(EMBED_PROMPTS),
        "matryoshka_dim": MATRYOSHKA_DIM if matryoshka["checked"] else None,
        "matryoshka_renormalized": matryoshka["renormalized"],
        "generator": st_generator() | {"tokenizers": __import__("tokenizers").__version__},
        "cases": cases,
        "id_cases": id_cases,
    }
    write_json(folder / "expected.json", expected, indent=None)
    return stats


# ----------------------------------------------------------------------------------------------
# qwen3-rerank


def build_rerank_folder(out, tok, vocab_size, eos_id):
    folder = out / "qwen3-rerank"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = qwen3_config(vocab_size, eos_id)
    model = Qwen3ForCausalLM(cfg)
    names = randomize_qwen(model, RERANK_SEED)
    model.eval()
    check_geometry(model)
    if not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight):
        note("qwen3-rerank: lm_head was not tied to embed_tokens after construction; tying it")
        model.tie_weights()
        if not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight):
            model.lm_head.weight = model.model.embed_tokens.weight
    model.save_pretrained(str(folder))
    probe = [RERANK_PREFIX, RERANK_SUFFIX] + [
        RERANK_BODY.format(instruction=i or RERANK_DEFAULT_INSTRUCTION, query=q, doc=d) for q, d, i in RERANK_CASES]
    tok_class = save_tokenizer(tok, folder, False, probe)
    mark_random(folder)
    return folder, model, {"tokenizer_class": tok_class, "parameters_randomized": len(names)}


def expected_rerank(folder, model, tok, vocab_size, eos_id):
    hf_tok = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    hf = hf_from_pretrained(AutoModelForCausalLM, folder)
    check_loaded(hf, model, "qwen3-rerank")
    check_geometry(hf)
    if hf.lm_head.weight.data_ptr() != hf.model.embed_tokens.weight.data_ptr():
        note("qwen3-rerank: loaded lm_head is a copy of embed_tokens, not the same tensor")
    if not torch.equal(hf.lm_head.weight, hf.model.embed_tokens.weight):
        raise AssertionError("qwen3-rerank: loaded lm_head differs from embed_tokens")
    emb = hf.model.embed_tokens.weight.detach().float()

    yes_id, no_id = tok.token_to_id("yes"), tok.token_to_id("no")
    for word, tid in (("yes", yes_id), ("no", no_id)):
        if tid is None or tid >= BPE_VOCAB:
            raise AssertionError(f"{word!r} is not a BPE token")
        if tok.encode(word, add_special_tokens=False).ids != [tid] or hf_tok.convert_tokens_to_ids(word) != tid:
            raise AssertionError(f"{word!r} is not one token")

    prefix_tokens = hf_tok.encode(RERANK_PREFIX, add_special_tokens=False)
    suffix_tokens = hf_tok.encode(RERANK_SUFFIX, add_special_tokens=False)
    assert prefix_tokens == tok.encode(RERANK_PREFIX, add_special_tokens=False).ids
    assert suffix_tokens == tok.encode(RERANK_SUFFIX, add_special_tokens=False).ids

    def process_inputs(pairs):  # the model card's
        inputs = hf_tok(pairs, padding=False, truncation="longest_first", return_attention_mask=False,
                        max_length=RERANK_CARD_MAX_LENGTH - len(prefix_tokens) - len(suffix_tokens))
        for i, ele in enumerate(inputs["input_ids"]):
            inputs["input_ids"][i] = prefix_tokens + ele + suffix_tokens
        return hf_tok.pad(inputs, padding=True, return_tensors="pt", max_length=RERANK_CARD_MAX_LENGTH)

    @torch.no_grad()
    def compute_logits(inputs):  # the model card's, keeping the two logits too
        batch_scores = hf(**inputs).logits[:, -1, :]
        true_vector = batch_scores[:, yes_id]
        false_vector = batch_scores[:, no_id]
        two = torch.stack([false_vector, true_vector], dim=1)
        prob = torch.nn.functional.log_softmax(two, dim=1)[:, 1].exp()
        return true_vector.float().numpy(), false_vector.float().numpy(), prob.float().numpy()

    cases, bodies, singles = [], [], []
    joint_all = True
    for i, (q, d, instr) in enumerate(RERANK_CASES):
        instruction = instr or RERANK_DEFAULT_INSTRUCTION
        body = RERANK_BODY.format(instruction=instruction, query=q, doc=d)
        full = RERANK_PREFIX + body + RERANK_SUFFIX
        inputs = process_inputs([body])
        ids = [int(v) for v in inputs["input_ids"][0].tolist()]
        if int(inputs["attention_mask"].sum()) != len(ids):
            raise AssertionError("single pair padded")
        parts = prefix_tokens + tok.encode(body).ids + suffix_tokens
        if parts != ids:
            raise AssertionError(f"qwen3-rerank case {i}: transformers vs tokenizers ids differ")
        enc = tok.encode(full)
        joint = list(enc.ids) == ids
        joint_all &= joint
        y, n, p = compute_logits(inputs)
        y, n, p = float(y[0]), float(n[0]), float(p[0])
        with torch.no_grad():
            hidden = hf.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                              use_cache=False).last_hidden_state[0].float()
        logits_last = (hidden[-1] @ emb.T).numpy()
        check_close(f"qwen3-rerank case {i}: last hidden @ embed_tokens vs logits", logits_last[[yes_id, no_id]],
                    np.array([y, n], dtype=np.float32))
        check_close(f"qwen3-rerank case {i}: probability vs sigmoid(score)", np.array([p]),
                    np.array([1.0 / (1.0 + math.exp(-(y - n)))]))
        case = {"text": q, "pair": d, "instruction": instruction, "prompt_text": full, "input_ids": ids}
        if joint:
            case["offsets"] = byte_offsets(enc, full)
        case.update({"scores": [f9(np.float32(y) - np.float32(n))], "probability": f9(p), "logits_yes": f9(y),
                     "logits_no": f9(n)})
        if i < HIDDEN_RERANK_CASES:
            case["hidden"] = flist(hidden.numpy())
        cases.append(case)
        bodies.append(body)
        singles.append((y, n, p))

    lengths = [len(c["input_ids"]) for c in cases]
    doc_tokens = [len(tok.encode(d, add_special_tokens=False).ids) for _, d, _ in RERANK_CASES]
    if max(doc_tokens) <= 100:
        raise AssertionError(f"qwen3-rerank: no document past 100 tokens ({doc_tokens})")

    # The card's batch: left padding with <|endoftext|>.
    inputs = process_inputs(bodies)
    mask = inputs["attention_mask"]
    shortest = int(np.argmin(lengths))
    if int(mask[shortest, 0]) != 0 or int(mask[shortest, -1]) != 1:
        raise AssertionError("qwen3-rerank: the card's batch is not left-padded")
    by, bn, bp = compute_logits(inputs)
    worst = 0.0
    for i, (y, n, p) in enumerate(singles):
        worst = max(worst, check_close(f"qwen3-rerank batch case {i}", np.array([by[i], bn[i], bp[i]]),
                                       np.array([y, n, p], dtype=np.float32), BATCH_TOL))

    id_cases = []
    for ids in qwen_id_cases(vocab_size, eos_id, RERANK_SEED + 1000):
        t = torch.tensor([ids])
        with torch.no_grad():
            out = hf(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False, output_hidden_states=False)
            hidden = hf.model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False).last_hidden_state[0]
        last = out.logits[0, -1].float()
        y, n = float(last[yes_id]), float(last[no_id])
        p = float(torch.nn.functional.log_softmax(torch.stack([last[no_id], last[yes_id]]), dim=0)[1].exp())
        case = {"input_ids": ids, "scores": [f9(np.float32(y) - np.float32(n))], "probability": f9(p),
                "logits_yes": f9(y), "logits_no": f9(n)}
        if len(ids) <= HIDDEN_ID_MAX_LEN:
            case["hidden"] = flist(hidden.float().numpy())
        id_cases.append(case)

    stats = {"token_counts": lengths, "document_tokens": doc_tokens, "batch_max_abs_diff": worst,
             "full_text_tokenization_matches": joint_all, "yes_id": yes_id, "no_id": no_id,
             "prefix_tokens": len(prefix_tokens), "suffix_tokens": len(suffix_tokens)}
    stats["spread"] = check_not_degenerate("qwen3-rerank", [c["scores"] for c in cases])

    expected = {
        "kind": "cross_encoder",
        "model": folder.name,
        "architecture": "Qwen3ForCausalLM",
        "num_labels": 1,
        "activation": "none: scores = logit(yes) - logit(no) at the last token; probability = "
                      "exp(log_softmax([logit(no), logit(yes)]))[1] = sigmoid(scores)",
        "prefix": RERANK_PREFIX,
        "query_template": RERANK_BODY,
        "suffix": RERANK_SUFFIX,
        "default_instruction": RERANK_DEFAULT_INSTRUCTION,
        "yes_token": "yes",
        "no_token": "no",
        "yes_token_id": yes_id,
        "no_token_id": no_id,
        "prefix_ids": prefix_tokens,
        "suffix_ids": suffix_tokens,
        "full_text_tokenization_matches": joint_all,
        "padding_side": "left",
        "pad_token_id": eos_id,
        "max_length": MAX_LEN,
        "generator": {"transformers": transformers.__version__, "torch": torch.__version__,
                      "tokenizers": __import__("tokenizers").__version__},
        "cases": cases,
        "id_cases": id_cases,
    }
    write_json(folder / "expected.json", expected, indent=None)
    return stats


# ----------------------------------------------------------------------------------------------


def describe(folder):
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    print(f"\n== {folder.name}: {dir_size(folder) / 1024:.0f} KiB ==")
    for p in files:
        print(f"   {p.relative_to(folder)}  {p.stat().st_size} B")
    print("   tensors:")
    for k, (dt, shape) in tensor_table(folder).items():
        print(f"     {k}  {dt} {shape}")
    print("   config.json:")
    print("     " + (folder / "config.json").read_text(encoding="utf-8").replace("\n", "\n     "))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures", help="output folder (default tests/fixtures)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"tokenizers {__import__('tokenizers').__version__}", flush=True)

    lines = training_lines()
    vocab, merges = train_bpe(lines)
    vocab2, merges2 = train_bpe(lines)
    if vocab != vocab2 or merges != merges2:
        raise AssertionError("BPE training is not deterministic")
    sha = merges_sha(merges)
    print(f"BPE: {len(vocab)} tokens, {len(merges)} merges, merges sha256 {sha}", flush=True)
    if MERGES_SHA256 is not None and sha != MERGES_SHA256:
        note(f"BPE merges differ from the recorded ones (sha256 {sha}, recorded {MERGES_SHA256})")

    tok_embed = build_tokenizer(vocab, merges, append_eos=True)
    tok_rerank = build_tokenizer(vocab, merges, append_eos=False)
    V = tok_embed.get_vocab_size(with_added_tokens=True)
    assert V == tok_rerank.get_vocab_size(with_added_tokens=True) == BPE_VOCAB + len(ADDED_TOKENS), V
    eos_id = tok_embed.token_to_id(ENDOFTEXT)
    assert tok_embed.encode("hi").ids[-1] == eos_id and tok_rerank.encode("hi").ids[-1] != eos_id

    summary = {}
    folder, model, info = build_embed_folder(out, tok_embed, V, eos_id)
    summary["qwen3-embed"] = info | expected_embed(folder, model, tok_embed, V, eos_id)
    folder, model, info = build_rerank_folder(out, tok_rerank, V, eos_id)
    summary["qwen3-rerank"] = info | expected_rerank(folder, model, tok_rerank, V, eos_id)

    for name in summary:
        assert read_json(out / name / "config.json").get("inferencelayer_random_weights") is True, name
        saved = Tokenizer.from_file(str(out / name / "tokenizer.json"))
        ref = tok_embed if name == "qwen3-embed" else tok_rerank
        for t in EMBED_TEXTS + [RERANK_PREFIX, RERANK_SUFFIX]:
            assert saved.encode(t).ids == ref.encode(t).ids, (name, t)

    print("\n== summary ==")
    for name, s in summary.items():
        print(name)
        for k, v in s.items():
            print(f"   {k}: {v:.3g}" if isinstance(v, float) else f"   {k}: {v}")
    for name in summary:
        describe(out / name)
    total = sum(dir_size(out / n) for n in summary)
    print(f"\ntotal of the Qwen3 folders: {total / 1024:.0f} KiB")
    if total > 3 * 1024 * 1024:
        raise AssertionError("Qwen3 fixtures exceed 3 MB")
    if mf.NOTES:
        print("\nnotes:")
        for n in mf.NOTES:
            print(" -", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
