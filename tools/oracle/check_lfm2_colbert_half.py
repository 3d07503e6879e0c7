#!/usr/bin/env python3
"""How close PyTorch itself comes to the lfm2-colbert fixture's f32 token vectors when the trunk and
the Dense run in float16 and bfloat16 (transformers' Lfm2Model on CUDA, PyLate's arithmetic):
the yardstick of tests/gpu/model_lfm2_colbert_test.cc's half-precision gates.

    python3 tools/oracle/check_lfm2_colbert_half.py tests/fixtures/lfm2-colbert

Seen 2026-12-02 (H200, transformers 5.17.0, torch 2.11.0+cu130): worst cosine deficit float16
1.52e-05, bfloat16 1.61e-03 (this 4-layer random trunk amplifies bf16's rounding past the 0.999
gate the other fixtures meet).
"""
import json, sys, torch, transformers
from pathlib import Path
from safetensors.torch import load_file
from transformers import Lfm2Model
d = Path(sys.argv[1])
exp = json.loads((d / "expected.json").read_text())
W = load_file(str(d / "1_Dense" / "model.safetensors"))["linear.weight"]
print("transformers", transformers.__version__, "torch", torch.__version__)
for dt in (torch.float32, torch.float16, torch.bfloat16):
    m = Lfm2Model.from_pretrained(str(d), dtype=dt).cuda().eval()
    w = W.to(dt).cuda()
    worst = (0.0, None)
    for group in ("queries", "documents"):
        for c in exp[group]:
            ids = torch.tensor([c["input_ids"]]).cuda()
            with torch.no_grad():
                h = m(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).last_hidden_state
                y = torch.nn.functional.normalize((h @ w.T).float(), dim=-1)[0]
            if "keep" in c:
                y = y[torch.tensor(c["keep"], dtype=torch.bool)]
            want = torch.tensor(c["vectors"]).cuda()
            cs = torch.nn.functional.cosine_similarity(y.double(), want.double(), dim=-1)
            i = int(torch.argmin(cs)); deficit = 1 - float(cs[i])
            if deficit > worst[0]: worst = (deficit, f"{c['text'][:30]!r} token {i}")
    print(f"{dt}: PyTorch worst cosine deficit of a token vector vs the f32 fixture: {worst[0]:.3g} at {worst[1]}")
