#!/usr/bin/env python3
"""Reference fixture for inferencelayer's `ocr` command: GLM-OCR from page image bytes to text,
as transformers 5.17 runs it with a Glm46VProcessor.

The model is the tiny random GLM-OCR of tests/fixtures/glm-ocr (made by make_glm_ocr_fixtures.py;
read from there, not rebuilt). This script adds what a real folder has around the weights, all of
it ours (nothing downloaded):
  - tokenizer.json: a small BPE (Metaspace pre-tokenizer, 240 ordinary tokens trained on our own
    text) with GLM's special tokens added at the ids the model config names ([gMASK] 240,
    <sop> 241, <|user|> 242, <|assistant|> 243, end ids 244 / 245, <|begin_of_image|> 248,
    <|end_of_image|> 249, <|image|> 250, video tokens 251-253);
  - preprocessor_config.json: Glm46VImageProcessor for patch 4, merge 2, a small pixel budget;
  - a chat template of our own that renders GLM-OCR's documented prompt structure
    ([gMASK]<sop><|user|>\\n<|begin_of_image|><|image|><|end_of_image|>{task}<|assistant|>\\n);
  - page images: PNGs drawn here (shapes and text), of sizes giving non-square grids.
For each page and task: the processor's input_ids / image_grid_thw (and page 1's pixel_values),
then GlmOcrForConditionalGeneration.generate (greedy, the folder's end ids, max_new_tokens 24)
plain and with no_repeat_ngram_size 3, the new tokens and their text decoded with
skip_special_tokens=True.

Run on a machine with torch, transformers 5.x, tokenizers, pillow:

    python3 tools/oracle/make_glm_ocr_pipeline_fixtures.py --out tests/fixtures

Writes tests/fixtures/glm-ocr-pipeline/, a whole model folder: config.json and
generation_config.json (copies), model.safetensors (a link to ../glm-ocr's), tokenizer.json,
tokenizer_config.json, preprocessor_config.json, chat_template.jinja, page1.png, page2.png,
expected.json.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import GlmOcrForConditionalGeneration, PreTrainedTokenizerFast  # noqa: E402

NEW_TOKENS = 24
ORDINARY = 240
SPECIAL = [  # in id order from 240
    "[gMASK]", "<sop>", "<|user|>", "<|assistant|>", "<|endoftext|>", "<|observation|>", "<|system|>",
    "<|reserved_0|>", "<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|video|>",
    "<|begin_of_video|>", "<|end_of_video|>",
]
TEMPLATE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
TASKS = {"text": "Text Recognition:", "table": "Table Recognition:", "formula": "Formula Recognition:"}
CORPUS = [
    "Text Recognition: Table Recognition: Formula Recognition:",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Invoice number 4711, total amount due: 129.50 EUR, payable within 30 days.",
    "| Name | Qty | Price |\n| --- | --- | --- |\n| Widget | 2 | 3.75 |",
    "<table><tr><td>a</td><td>b</td></tr></table>",
    "E = mc^2, \\frac{a}{b} + \\sqrt{x} = y_1, \\sum_{i=1}^{n} i",
    "# Heading\n\nA paragraph of text with *emphasis* and **strong** words.",
]


def build_tokenizer():
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="never")
    alphabet = sorted(set("".join(CORPUS)) | set("\u2581\n"))
    trainer = trainers.BpeTrainer(vocab_size=ORDINARY, special_tokens=["[UNK]"], initial_alphabet=alphabet,
                                  show_progress=False)
    tok.train_from_iterator(CORPUS * 20, trainer)
    n = tok.get_vocab_size()
    assert n <= ORDINARY, n
    # Fillers up to 240 so the special tokens land at the config's ids.
    tok.add_special_tokens([f"<|filler_{i}|>" for i in range(ORDINARY - n)])
    tok.add_special_tokens(SPECIAL)
    for i, s in enumerate(SPECIAL):
        assert tok.token_to_id(s) == ORDINARY + i, (s, tok.token_to_id(s))
    return tok


def draw_page(w, h, seed, lines):
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", (w, h), (250, 250, 245))
    d = ImageDraw.Draw(im)
    for i, text in enumerate(lines):
        d.text((3, 2 + 11 * i), text, fill=(20, 20, 30))
    for _ in range(4):
        x, y = int(rng.integers(0, w - 8)), int(rng.integers(0, h - 8))
        d.rectangle([x, y, x + int(rng.integers(3, 12)), y + int(rng.integers(3, 9))],
                    fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    return im


def build(out, glm_dir):
    d = out / "glm-ocr-pipeline"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)

    tok = build_tokenizer()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>")
    fast.save_pretrained(str(d))
    for extra in ("special_tokens_map.json", "chat_template.jinja"):
        if (d / extra).exists():
            (d / extra).unlink()
    (d / "chat_template.jinja").write_text(TEMPLATE)

    pre = {
        "image_processor_type": "Glm46VImageProcessor",
        "do_resize": True,
        "size": {"shortest_edge": 1024, "longest_edge": 8192},
        "resample": 3,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "patch_size": 4,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "do_convert_rgb": True,
    }
    (d / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n")

    pages = {
        "page1.png": draw_page(70, 46, 1, ["Invoice 4711", "total 129.50"]),
        "page2.png": draw_page(40, 88, 2, ["a | b", "E=mc^2", "x_1", "sum"]),
    }
    for name, im in pages.items():
        im.save(str(d / name))

    # Everything transformers reads: the model folder plus ours, in one temporary folder.
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for f in glm_dir.iterdir():
            if f.name != "expected.json" and f.name != "rope_expected.json":
                shutil.copy(f, t / f.name)
        for f in d.iterdir():
            if f.suffix != ".png" and not (t / f.name).exists():
                shutil.copy(f, t / f.name)
        image_processor = transformers.AutoImageProcessor.from_pretrained(str(t))
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(t))
        from transformers import Glm46VProcessor
        try:
            processor = Glm46VProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=TEMPLATE)
        except Exception as e:  # a processor that insists on its video processor
            print("processor without video processor failed:", repr(e))
            from transformers import Glm46VVideoProcessor
            processor = Glm46VProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                        video_processor=Glm46VVideoProcessor(), chat_template=TEMPLATE)
        print("image processor:", type(image_processor).__name__)
        model = GlmOcrForConditionalGeneration.from_pretrained(str(t), dtype=torch.float32,
                                                               attn_implementation="eager").eval()
        gen_eos = model.generation_config.eos_token_id
        print("eos:", gen_eos)

        cases = []
        for name, task in [("page1.png", "text"), ("page2.png", "text"), ("page1.png", "table"),
                           ("page2.png", "formula")]:
            image = Image.open(str(d / name)).convert("RGB")
            messages = [{"role": "user", "content": [{"type": "image", "image": image},
                                                     {"type": "text", "text": TASKS[task]}]}]
            inputs = processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                                   return_dict=True, return_tensors="pt")
            ids = inputs["input_ids"][0].tolist()
            case = {"page": name, "task": task, "input_ids": ids,
                    "image_grid_thw": inputs["image_grid_thw"].tolist()[0],
                    "rendered": processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)}
            if name == "page1.png" and task == "text":
                case["pixel_values"] = [[round(float(v), 7) for v in row] for row in inputs["pixel_values"].tolist()]
            model_inputs = {k: v for k, v in inputs.items() if k != "token_type_ids"}
            with torch.no_grad():
                for key, kw in [("greedy", {}), ("greedy_no_repeat_ngram_3", {"no_repeat_ngram_size": 3})]:
                    gen = model.generate(**model_inputs, max_new_tokens=NEW_TOKENS, do_sample=False, **kw)
                    new = gen[0, len(ids):].tolist()
                    case[key] = new
                    case[key + "_text"] = tokenizer.decode(new, skip_special_tokens=True)
            print(name, task, "grid", case["image_grid_thw"], "prompt", len(ids), "greedy", case["greedy"],
                  repr(case["greedy_text"]))
            cases.append(case)

    # A whole model folder: the weights' fixture's config files, its weights by a link.
    for name in ("config.json", "generation_config.json"):
        shutil.copy(glm_dir / name, d / name)
    (d / "model.safetensors").symlink_to(Path("..") / glm_dir.name / "model.safetensors")
    meta = {"transformers": transformers.__version__, "torch": torch.__version__,
            "tokenizers": tokenizers.__version__, "new_tokens": NEW_TOKENS, "template": TEMPLATE}
    (d / "expected.json").write_text(json.dumps({"meta": meta, "cases": cases}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--glm", type=Path, default=Path(__file__).resolve().parents[2] / "tests/fixtures/glm-ocr")
    a = ap.parse_args()
    print("transformers", transformers.__version__, "torch", torch.__version__, "tokenizers", tokenizers.__version__)
    build(a.out, a.glm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
