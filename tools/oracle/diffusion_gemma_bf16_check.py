# Run on the GPU machine from the repository root: python3 tools/oracle/diffusion_gemma_bf16_check.py
# How close transformers' own bf16 forward comes to its f32 one on the DiffusionGemma fixture:
# the canvas logits of the three forward cases, without and with self-conditioning.
import json, sys, torch
sys.path.insert(0, "tools/oracle")
from transformers import DiffusionGemmaForBlockDiffusion, DynamicCache
folder = "tests/fixtures/diffusion-gemma"
ex = json.load(open(folder + "/expected.json"))
for dtype in (torch.float32, torch.bfloat16):
    m = DiffusionGemmaForBlockDiffusion.from_pretrained(folder, dtype=dtype).eval().cuda()
    for c in ex["forward_cases"]:
        for sc in (False, True):
            cache = DynamicCache(config=m.config.get_text_config(decoder=True))
            P = c["prompt_ids"]
            with torch.no_grad():
                m.model.encoder(input_ids=torch.tensor([P]).cuda(), past_key_values=cache,
                                position_ids=torch.arange(len(P), dtype=torch.int32).unsqueeze(0).cuda())
                pos = torch.arange(len(P), len(P) + 8, dtype=torch.int32).unsqueeze(0).cuda()
                scl = torch.tensor([c["sc_logits"]], dtype=torch.float32).cuda().to(dtype) if sc else None
                out = m(decoder_input_ids=torch.tensor([c["canvas_ids"]]).cuda(), past_key_values=cache,
                        decoder_position_ids=pos, self_conditioning_logits=scl).logits[0].float().cpu()
            want = torch.tensor(c["sc" if sc else "plain"]["logits"])
            cos = torch.nn.functional.cosine_similarity(out, want, dim=-1).min().item()
            print(f"torch {str(dtype):15s} {c['name']:16s} sc={sc}: max-abs {(out - want).abs().max().item():.3g}, "
                  f"min row cosine {cos:.6f}", flush=True)
