#!/usr/bin/env python3
"""A SigLIP folder laid out as google/siglip-* checkpoints are: spiece.model and no tokenizer.json,
and what transformers 5.x computes for texts typed as text (not token ids).

The text tower's end-to-end reference: AutoTokenizer (SiglipTokenizer over the `sentencepiece`
library), padding="max_length" and truncation=True as SiglipProcessor feeds the tower, then the
text tower's pooled row. The tokenizer files are the committed siglip-spm-tokenizer fixture's
(700 pieces, model_max_length 64), copied, not retrained; the model is make_siglip_fixtures.py's
tiny random SiglipModel (same geometry, same randomisation) with a 700-entry vocabulary and 64
text positions so the tokenizer's ids and lengths fit it.

Run on a machine with torch, transformers 5.x, sentencepiece and safetensors, from the repository
root (it reads tests/fixtures/siglip-spm-tokenizer):

    python3 tools/oracle/make_siglip_spm_model_fixture.py --out tests/fixtures

Written: OUT/siglip-spm-joint/{config.json, model.safetensors, spiece.model, tokenizer_config.json,
special_tokens_map.json, expected.json}. expected.json: "text_cases": for each text, "text",
"input_ids" (the padded, truncated ids the tower ran on), "length" (the ids before padding and
truncation, "</s>" included) and "pooled" (text pooler_output); "logit_scale", "logit_bias".
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_fixtures as mf  # noqa: E402
import make_siglip_fixtures as ms  # noqa: E402
from make_fixtures import check_close, dir_size, flist, mark_random, write_json  # noqa: E402

import torch  # noqa: E402

import transformers  # noqa: E402
from transformers import AutoTokenizer, SiglipModel  # noqa: E402

NAME = "siglip-spm-joint"
TOKENIZER = "siglip-spm-tokenizer"
VOCAB = 700
TEXT_POS = 64
SEED = 3131

# Plain captions, SigLIP's clean-up (case, ASCII punctuation, whitespace), characters outside the
# vocabulary, special tokens typed in the text, an empty text, and two texts over 64 tokens (cut
# to 63 + "</s>").
TEXTS = [
    "a photo of a cat",
    "A Photo Of A Dog!!!",
    "two   dogs\tplaying\nin the snow.",
    "Zürich — the old town, at night…",
    "ΣΊΣΥΦΟΣ ΟΔΟΣ",
    "你好，世界！",
    "hello</s>world",
    "an <unk> thing",
    "",
    "snake_case-and-kebab.case/path?query=1&x=2",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 12),
    "tokenization " * 70,
]


@torch.no_grad()
def build(out):
    src = out / TOKENIZER
    folder = out / NAME
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cfg = ms.siglip_config(vocab=VOCAB, text_pos=TEXT_POS)
    torch.manual_seed(SEED)
    model = SiglipModel(cfg)
    names = ms.randomize(model, SEED)
    model.eval()
    model.save_pretrained(str(folder))
    mark_random(folder)
    for f in ("spiece.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(src / f, folder / f)
    print("config.json:\n" + (folder / "config.json").read_text(encoding="utf-8"), flush=True)
    print(f"parameters randomized: {len(names)}", flush=True)

    tok = AutoTokenizer.from_pretrained(str(folder))
    print("tokenizer class", type(tok).__name__, flush=True)
    assert type(tok).__name__ == "SiglipTokenizer", type(tok).__name__
    assert not (folder / "tokenizer.json").exists(), "the folder must not gain a tokenizer.json"
    enc = tok(TEXTS, padding="max_length", truncation=True, max_length=TEXT_POS)
    ids = enc["input_ids"]
    lengths = [len(tok(t)["input_ids"]) for t in TEXTS]
    assert all(len(row) == TEXT_POS for row in ids)
    assert max(lengths) > TEXT_POS, "a text over max_length is part of the cases"
    assert max(max(row) for row in ids) < VOCAB

    hf = mf.hf_from_pretrained(SiglipModel, folder)
    pooled = hf.text_model(input_ids=torch.tensor(ids)).pooler_output.float()
    for i in range(len(TEXTS)):
        one = hf.text_model(input_ids=torch.tensor(ids[i:i + 1])).pooler_output.float()
        check_close(f"text {i} alone vs batch", one[0].numpy(), pooled[i].numpy(), 1e-5)

    cases = [{"text": t, "input_ids": ids[i], "length": lengths[i], "pooled": flist(pooled[i].numpy())}
             for i, t in enumerate(TEXTS)]
    write_json(folder / "expected.json",
               {"kind": "siglip", "generator": f"transformers {transformers.__version__} {type(tok).__name__}",
                "text_cases": cases, "logit_scale": float(hf.logit_scale), "logit_bias": float(hf.logit_bias)},
               indent=None)
    print(NAME, "bytes", dir_size(folder), sorted(p.name for p in folder.iterdir()), flush=True)
    print("lengths", lengths, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    print("torch", torch.__version__, "transformers", transformers.__version__, flush=True)
    torch.set_grad_enabled(False)
    try:
        build(Path(args.out))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    for n in mf.NOTES:
        print("NOTE:", n)


if __name__ == "__main__":
    main()
