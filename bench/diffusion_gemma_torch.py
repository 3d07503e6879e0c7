"""transformers' DiffusionGemma on a config alone (random bf16 weights, SDPA), timed as
`inferencelayer bench-diffusion` times the engine: one forward (a prompt encoded into a fresh cache,
one canvas forward), and generate with a fixed number of denoising steps (no early stop) for
batches of requests. Prints one JSON line per point.

  python3 bench/diffusion_gemma_torch.py --config bench/configs/diffusion-gemma-26b-a4b.json
"""
import argparse
import json
import time

import torch


def build(path, layers=None):
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion
    cfg = json.load(open(path))
    text = dict(cfg["text_config"])
    text.pop("model_type", None)
    per = text.pop("per_layer_config", {})
    if layers:
        text["num_hidden_layers"] = layers
        text["layer_types"] = text["layer_types"][:layers - 1] + ["full_attention"]
    full = next(iter(per.values())) if per else {"head_dim": 512, "num_key_value_heads": 2}
    from transformers import DiffusionGemmaTextConfig
    tc = DiffusionGemmaTextConfig(**text, global_head_dim=full["head_dim"],
                                  num_global_key_value_heads=full["num_key_value_heads"])
    vision = {"model_type": "gemma4_vision", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 8, "position_embedding_size": 8,
              "patch_size": 4}
    c = DiffusionGemmaConfig(text_config=tc.to_dict(), vision_config=vision, canvas_length=cfg["canvas_length"])
    c.architectures = ["DiffusionGemmaForBlockDiffusion"]
    for x in (c, c.text_config):
        x._attn_implementation = "sdpa"
    # Built in bf16 directly on the GPU (an f32 model of 25 B parameters would not fit), its
    # buffers (rotary frequencies, layer scalars) computed by the constructors.
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = DiffusionGemmaForBlockDiffusion(c)
    torch.set_default_dtype(torch.float32)
    model = model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("scale"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.fill_(1.0)
    return model, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--steps", default="48,24")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--forwards", type=int, default=3)
    ap.add_argument("--layers", type=int, default=None)
    a = ap.parse_args()
    from transformers import DynamicCache
    from transformers.models.diffusion_gemma import generation_diffusion_gemma as gm
    t0 = time.time()
    model, cfg = build(a.config, a.layers)
    V, C = cfg.text_config.vocab_size, cfg.canvas_length
    print(json.dumps({"point": "load", "s": time.time() - t0, "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name()}), flush=True)
    prompt = torch.randint(100, V, (1, a.prompt_tokens), device="cuda")
    canvas = torch.randint(50, V, (1, C), device="cuda")

    @torch.no_grad()
    def forward():
        cache = DynamicCache(config=model.config.get_text_config(decoder=True))
        pos = torch.arange(a.prompt_tokens, dtype=torch.int32, device="cuda").unsqueeze(0)
        model.model.encoder(input_ids=prompt, past_key_values=cache, position_ids=pos)
        dpos = torch.arange(a.prompt_tokens, a.prompt_tokens + C, dtype=torch.int32, device="cuda").unsqueeze(0)
        out = model(decoder_input_ids=canvas, past_key_values=cache, decoder_position_ids=dpos)
        return out.logits.float().cpu()

    forward()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.forwards):
        t = time.time()
        forward()
        torch.cuda.synchronize()
        times.append(time.time() - t)
    print(json.dumps({"point": "forward", "prompt_tokens": a.prompt_tokens, "canvas": C,
                      "best_ms": min(times) * 1e3, "mean_ms": sum(times) / len(times) * 1e3}), flush=True)
    for steps in [int(s) for s in a.steps.split(",")]:
        for batch in [int(b) for b in a.batches.split(",")]:
            gc = gm.DiffusionGemmaGenerationConfig(
                max_new_tokens=C, max_denoising_steps=steps, t_min=0.4, t_max=0.8,
                sampler_config=gm.EntropyBoundSamplerConfig(entropy_bound=0.1), stability_threshold=1,
                confidence_threshold=None, eos_token_id=None, pad_token_id=0)
            ids = prompt.repeat(batch, 1)
            torch.cuda.synchronize()
            t = time.time()
            with torch.no_grad():
                model.generate(input_ids=ids, generation_config=gc)
            torch.cuda.synchronize()
            wall = time.time() - t
            print(json.dumps({"point": "generate", "steps": steps, "batch": batch, "tokens": batch * C,
                              "wall_s": wall, "tokens_per_s": batch * C / wall, "step_ms": wall / steps * 1e3}),
                  flush=True)
    print(json.dumps({"point": "memory", "max_allocated_gb": torch.cuda.max_memory_allocated() / 1e9}), flush=True)


if __name__ == "__main__":
    main()
