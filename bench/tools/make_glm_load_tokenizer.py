#!/usr/bin/env python3
"""A tokenizer folder for load tests of GLM-OCR's geometry with random weights
(`inferencelayer serve --config bench/configs/glm-ocr.json --tokenizer OUT_DIR`): the tiny
GLM-OCR fixture's tokenizer (tests/fixtures/glm-ocr-pipeline: BPE, the chat template, the special
tokens by name) with its special tokens moved to the ids the config names (image 59280, image
begin / end 59256 / 59257, the others just below) and the vocabulary filled with placeholder
pieces up to the config's vocab_size, so every id a random model picks decodes. Its texts mean
nothing; the prompts have the real shape (the chat template, a page's image tokens).

    python3 bench/tools/make_glm_load_tokenizer.py bench/configs/glm-ocr.json OUT_DIR
"""

import json
import os
import shutil
import sys


def main():
    config_path, out = sys.argv[1], sys.argv[2]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = os.path.join(root, "tests", "fixtures", "glm-ocr-pipeline")
    cfg = json.load(open(config_path))
    vocab_size = cfg["text_config"]["vocab_size"]
    tok = json.load(open(os.path.join(src, "tokenizer.json")))
    fixed = {"<|begin_of_image|>": cfg["image_start_token_id"], "<|end_of_image|>": cfg["image_end_token_id"],
             "<|image|>": cfg["image_token_id"], "<|begin_of_video|>": cfg["video_start_token_id"],
             "<|end_of_video|>": cfg["video_end_token_id"], "<|video|>": cfg["video_token_id"]}
    taken = set(fixed.values())
    next_id = min(taken) - 32  # the other specials, below the image tokens
    remap = {}
    for a in tok["added_tokens"]:
        if a["content"] in fixed:
            new = fixed[a["content"]]
        elif a["id"] < 240:
            new = a["id"]  # [UNK] stays
        else:
            while next_id in taken:
                next_id += 1
            new = next_id
            taken.add(new)
        remap[a["id"]] = new
        a["id"] = new
    vocab = tok["model"]["vocab"]
    for piece, i in list(vocab.items()):
        if i in remap:
            vocab[piece] = remap[i]
    # An added token keeps the id of its piece in the model's vocabulary; one missing there is
    # numbered after the vocabulary (the tokenizers library ignores the "id" field then), so each
    # special token is also written into the vocabulary at its new id.
    for a in tok["added_tokens"]:
        vocab[a["content"]] = a["id"]
    used = set(vocab.values()) | taken
    for i in range(vocab_size):
        if i not in used:
            vocab["<x%d>" % i] = i
    os.makedirs(out, exist_ok=True)
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    for f in ("chat_template.jinja", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, f), os.path.join(out, f))
    print("wrote", out, "with", len(vocab) + len(tok["added_tokens"]), "entries;", remap)


if __name__ == "__main__":
    main()
