#!/usr/bin/env python3
"""End-to-end image fixture for inferencelayer's SigLIP: image files in, embeddings out, as
transformers 5.17 computes them (transformers.image_utils.load_image -> the image processor
AutoImageProcessor picks for the folder -> SiglipModel.get_image_features), on the committed
tiny random folder tests/fixtures/siglip-joint.

Writes into the folder:
  preprocessor_config.json   SigLIP's release processor (SiglipImageProcessor: resize to the
                             model's image size, bicubic, rescale 1/255, mean and std 0.5)
  expected_images.json       for each image (paths relative to tests/fixtures): the processor's
                             class, the SHA-256 of its pixel_values as little-endian float32 bytes
                             (our preprocessing is bit-exact: tests/image), and the image
                             embedding (pooler_output of the vision tower's attention-pooling head)

    python3 tools/oracle/make_siglip_image_fixtures.py --fixtures tests/fixtures
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoImageProcessor, SiglipModel
from transformers.image_utils import load_image

IMAGES = [
    "images/jpeg_420_big.jpg",
    "images/jpeg_exif_6.jpg",
    "images/jpeg_cmyk.jpg",
    "images/png_p8.png",
    "images/png_rgba16.png",
    "images/webp_lossy.webp",
    "images/preprocess/photo_800x533.png",
    "images/preprocess/doc_600x780.png",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="tests/fixtures")
    ap.add_argument("--out", default=None, help="where to write (default: the folder itself)")
    args = ap.parse_args()
    root = Path(args.fixtures)
    folder = root / "siglip-joint"
    out = Path(args.out) if args.out else folder
    out.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((folder / "config.json").read_text())
    size = cfg["vision_config"]["image_size"]
    pre = {
        "do_normalize": True, "do_rescale": True, "do_resize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "SiglipImageProcessor", "processor_class": "SiglipProcessor",
        "resample": 3, "rescale_factor": 0.00392156862745098,
        "size": {"height": size, "width": size},
    }
    (out / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n")
    # The processor as a user gets it: from the folder's file.
    tmp = out if out != folder else folder
    processor = AutoImageProcessor.from_pretrained(str(tmp))
    model = SiglipModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, processor {type(processor).__name__}",
          flush=True)
    cases = []
    for rel in IMAGES:
        img = load_image(str(root / rel))
        pv = processor(images=img, return_tensors="pt")["pixel_values"]
        assert pv.shape == (1, 3, size, size), pv.shape
        digest = hashlib.sha256(pv[0].numpy().astype("<f4").tobytes()).hexdigest()
        with torch.no_grad():
            feats = model.get_image_features(pixel_values=pv)
        emb = (feats.pooler_output if hasattr(feats, "pooler_output") else feats)[0]
        cases.append({"file": rel, "size": list(img.size), "pixel_values_sha256": digest,
                      "embedding": [float(x) for x in emb.numpy()]})
        print(f"{rel}: {img.size} -> {tuple(pv.shape)}, |embedding| {float(emb.norm()):.4f}", flush=True)
    expected = {"processor": type(processor).__name__, "transformers": transformers.__version__,
                "images": cases}
    (out / "expected_images.json").write_text(json.dumps(expected) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
