#!/usr/bin/env python3
"""Reference tokenization of a SigLIP folder that ships `spiece.model` and no `tokenizer.json`, as
google/siglip-base-patch16-224 and google/siglip-so400m-patch14-384 do.

transformers 5.x has no fast tokenizer for SigLIP: AutoTokenizer loads SiglipTokenizer, a
SentencePieceBackend that runs the `sentencepiece` library on spiece.model after its own text
clean-up (lowercase, ASCII punctuation deleted, whitespace collapsed and stripped), appends "</s>"
and pads with "</s>" to model_max_length (64). This script trains a small SentencePiece Unigram
model in SigLIP's layout (<pad> 0, </s> 1, <unk> 2, no <s>; nmt_nfkc normalisation, its
precompiled charsmap included) on the oracle's training corpus and tricky lines, writes the folder
as the hub checkpoints hold it, and records what AutoTokenizer gives for many texts.

Run on a machine with transformers 5.x and sentencepiece:

    python3 tools/oracle/make_siglip_spm_fixture.py --out tests/fixtures

Written: OUT/siglip-spm-tokenizer/{spiece.model, tokenizer_config.json, special_tokens_map.json,
expected.json}. expected.json: "tokenizer_class" (the class AutoTokenizer picked), "vocab_size",
"max_length", and "cases": for each text, "input_ids" (padding="max_length", truncation=True:
what SiglipProcessor feeds the text tower), "unpadded" (no padding, no truncation) and "pieces"
(tokenize()).
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import sentencepiece as spm  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

HERE = Path(__file__).resolve().parent
VOCAB = 700
NAME = "siglip-spm-tokenizer"

# Texts for SigLIP's own clean-up and for SentencePiece's normaliser and segmentation: ASCII
# punctuation (deleted, "_" included), Unicode punctuation (kept), case (str.lower(), final sigma,
# dotted I), Python whitespace (collapsed, stripped; U+200B and U+2581 are not whitespace there),
# special tokens typed in the text (split out; "</s>" at the end not doubled), long texts (cut to 63
# tokens + "</s>"), characters the vocabulary lacks (one merged <unk>).
EXTRA = [
    "A long paragraph for summarization.",
    "Summary of the text. </s>",
    "the real mountain view",
    "Zürich",
    "San Francisco",
    "a picture of a laptop with the lockscreen on, a cup of cappucino, salt and pepper grinders.",
    "snake_case-and-kebab.case/path?query=1&x=2",
    "It's “quoted” — and ‘single’… 《book》",
    "ΣΊΣΥΦΟΣ ΟΔΟΣ İstanbul ǅemal ǈ",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2003em\u3000ideographic",
    "zero\u200bwidth and \u2581 lower block and \ufeff bom",
    "hello</s>world",
    "a</s>b",
    "</s>",
    "<unk> at the start",
    "ends with unk <unk>",
    "<pad> is not special here",
    "",
    "   ",
    "!!!",
    "ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ ① ½ ﬁ",
    "emoji 😀👨‍👩‍👧 and 🇫🇷",
    "日本語のテキスト 中文 한국어",
    "repeated repeated repeated " * 20,
]


def training_lines():
    lines = [ln.rstrip("\n") for ln in open(HERE / "train_corpus.txt", encoding="utf-8") if ln.strip()]
    tricky = [json.loads(ln) for ln in open(HERE / "tricky_lines.jsonl", encoding="utf-8") if ln.strip()]
    return lines + [t for t in tricky if t.strip()], tricky


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures")
    args = ap.parse_args()
    folder = Path(args.out) / NAME
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    print(f"transformers {transformers.__version__}, sentencepiece {spm.__version__}", flush=True)

    train, tricky = training_lines()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train), model_prefix=str(folder / "spiece"), vocab_size=VOCAB, model_type="unigram",
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
        normalization_rule_name="nmt_nfkc", character_coverage=0.995, byte_fallback=False, num_threads=1,
        max_sentencepiece_length=8, shuffle_input_sentence=False, minloglevel=2)
    (folder / "spiece.vocab").unlink()

    special = {"eos_token": "</s>", "pad_token": "</s>", "unk_token": "<unk>"}
    config = {"tokenizer_class": "SiglipTokenizer", "model_max_length": 64, "do_lower_case": True,
              "model_input_names": ["input_ids"], **special}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")

    tok = AutoTokenizer.from_pretrained(str(folder))
    print("AutoTokenizer gave", type(tok).__name__, flush=True)
    cases = []
    for text in EXTRA + tricky:
        padded = tok(text, padding="max_length", truncation=True)["input_ids"]
        unpadded = tok(text)["input_ids"]
        assert len(padded) == 64, (text, len(padded))
        cases.append({"text": text, "input_ids": padded, "unpadded": unpadded, "pieces": tok.tokenize(text)})
    expected = {"generator": f"transformers {transformers.__version__}, sentencepiece {spm.__version__}",
                "tokenizer_class": type(tok).__name__, "vocab_size": tok.vocab_size, "max_length": 64,
                "cases": cases}
    (folder / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=None) + "\n",
                                          encoding="utf-8")
    for c in cases[:24]:
        print(repr(c["text"][:50]), c["pieces"][:12], c["unpadded"][:14], flush=True)
    print("files:", {p.name: p.stat().st_size for p in folder.iterdir()})


if __name__ == "__main__":
    main()
