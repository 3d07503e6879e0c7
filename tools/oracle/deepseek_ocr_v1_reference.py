#!/usr/bin/env python3
"""DeepSeek-OCR (v1) composed from transformers 5.17 modules, for fixtures (issue #26, item 5).

transformers 5.17 ships DeepSeek-OCR-2 (DeepseekOcr2ForConditionalGeneration) but no v1 class, so
this module builds v1 out of transformers parts plus a small glue written here. Imported by
tools/oracle/make_deepseek_ocr_fixtures.py; not runnable on its own.

Parts taken from transformers (run as transformers wrote them, float32, eager attention):
  - SAM ViT-B + neck + the two stride-2 convolutions:
        transformers.models.deepseek_ocr2.modeling_deepseek_ocr2.DeepseekOcr2SamVisionEncoder
    configured with v1 widths (downsample_channels = [c1, c2] with c2 = CLIP width; the real v1
    checkpoint is [512, 1024], OCR-2's default is [512, 896]). It adds pos_embed (resized to the
    view's grid with bicubic, antialias=True, align_corners=False, in float32, when the grid
    differs from the table, exactly like the original v1 SAM), runs windowed blocks (zero padding
    of the normalised map to a multiple of the window, padded tokens NOT masked) and global blocks
    with decomposed relative position (tables linearly resized to 2*max(q,k)-1 rows), then
    neck (1x1 conv, LayerNorm2d, 3x3 conv, LayerNorm2d) and proj.conv1/conv2 (= v1 net_2/net_3).
    Output NCHW [B, c2, g', g'].
  - CLIP layers: transformers.models.clip.modeling_clip.CLIPEncoder over a CLIPVisionConfig with
    hidden_act="quick_gelu", layer_norm_eps=1e-5, attention_dropout=0, _attn_implementation
    "eager" (pre-LN blocks: x + out_proj(MHA(LN1 x)); h + fc2(quick_gelu(fc1(LN2 h))); full
    bidirectional attention, no mask).
  - Decoder: transformers.models.deepseek_ocr2.modeling_deepseek_ocr2.DeepseekOcr2TextModel (+ a
    bias-free lm_head). This IS the DeepSeek-V2 MoE decoder (modular_deepseek_ocr2 builds it from
    transformers.models.deepseek_v2's DeepseekV2DecoderLayer / DeepseekV2MLP / DeepseekV2Moe) with
    plain multi-head attention (Llama-style q/k/v/o, rotate-half RoPE) in place of MLA. v1's
    checkpoint has use_mla=false, so transformers.models.deepseek_v2.DeepseekV2Model itself (MLA
    attention: q_a/kv_a low-rank projections) cannot be used as is; the published HF v1 port
    (not in 5.17) does the same swap (DeepseekV2DecoderLayer with LlamaAttention). Routing:
    softmax over n_routed_experts in float32, greedy top-k (k = num_experts_per_tok), weights
    NOT renormalised (v1 norm_topk_prob = false), times routed_scaling_factor; plus shared
    experts (one gated MLP of n_shared_experts * moe_intermediate_size); mlp_layer_types says
    which layers are dense (v1: first_k_dense_replace = 1 -> ["dense", "sparse", ...]).

The glue (everything below is ours; each step is what the original v1 deepencoder / deepseek_ocr.py
does):
  1. sam = SAM(view) -> NCHW [B, C, n, n] (C = c2 = CLIP width, n = output grid).
  2. CLIP embeddings WITHOUT the CLIP patch convolution: tokens = sam.flatten(2).transpose(1, 2)
     ([B, n*n, C], row-major (y, x)); prepend class_embedding ([C]) -> [B, 1 + n*n, C].
     Position table position_embedding [1 + n0*n0, C]: row 0 goes to the class token unchanged;
     rows 1.. are viewed as [1, n0, n0, C] -> NCHW, and when n != n0 resized to (n, n) with
     F.interpolate(mode="bicubic", antialias=True, align_corners=False) in float32, back to
     [n*n, C] row-major; added to the tokens.
  3. pre_layrnorm: nn.LayerNorm(C, eps=1e-5).
  4. CLIPEncoder layers (no post-layernorm).
  5. Drop the class token -> clip [B, n*n, C].
  6. Fusion: cat([clip, sam_tokens], dim=-1) -> [B, n*n, 2C] (CLIP first, SAM second), then the
     projector nn.Linear(2C, D) with bias -> [B, n*n, D].
  7. Assembly per image (image_newline, view_seperator are [D] parameters; the key keeps v1's
     spelling "view_seperator"):
       global view [1, n*n, D] -> [n, n, D], append image_newline as an extra column per row
         -> n*(n+1) rows;
       tiles (only when there are local views; tile k sits at column k % wt, row k // wt,
         row-major, wt = tiles across, ht = tiles down) [wt*ht, m*m, D] -> view (ht, wt, m, m, D)
         -> permute (0, 2, 1, 3, 4) -> [ht*m, wt*m, D], newline column per row
         -> (ht*m)*(wt*m + 1) rows;
       rows = [local rows..., global rows..., view_seperator]  (without tiles: [global, sep]).
  8. Decoder input: embed_tokens(input_ids), and the rows of every position whose id is
     image_token_id replaced, in order, by the assembled rows (masked scatter; the count must
     match exactly). Then DeepseekOcr2TextModel(inputs_embeds=...) (causal, positions 0..L-1)
     and lm_head.
  9. Greedy decoding: recompute the whole sequence at each step (no KV cache; the image rows
     stay in place), take argmax of the last position's logits (first index on ties, torch.argmax).

Processor-side names (as the HF v1 port names them): input_ids; pixel_values: global view
[1, 3, S, S]; pixel_values_local: tiles [wt*ht, 3, s, s] (optional); num_local_crops: [wt*ht];
image_spatial_crop: [[wt, ht]] (width tiles first, as v1's images_spatial_crop).

Checkpoint naming: to_original_state_dict() writes the keys of the original deepseek-ai/DeepSeek-OCR
folder (model.sam_model.*, model.vision_model.*, model.projector.layers.*, model.image_newline,
model.view_seperator, model.embed_tokens / model.layers.* / model.norm, lm_head); CLIP's separate
q/k/v projections are fused into one qkv_proj (rows q, then k, then v), the packed expert tensors
(gate_up_proj [E, 2I, H] = gate rows then up rows; down_proj [E, H, I]) are split into
experts.{e}.gate_proj / up_proj / down_proj. from_original_state_dict() inverts it. The CLIP patch
convolution (vision_model.embeddings.patch_embedding), unused on this path, is not written.
"""

import torch
import torch.nn.functional as F
from torch import nn

from transformers import CLIPVisionConfig
from transformers.models.clip.modeling_clip import CLIPEncoder, CLIPEncoderLayer, CLIPAttention
from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import (
    DeepseekOcr2SamVisionConfig,
    DeepseekOcr2TextConfig,
)
from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import (
    DeepseekOcr2SamVisionAttention,
    DeepseekOcr2SamVisionEncoder,
    DeepseekOcr2TextExperts,
    DeepseekOcr2TextModel,
    DeepseekOcr2TextMoe,
    DeepseekOcr2TextMLP,
)


def expect(cond, what):
    if not cond:
        raise AssertionError("transformers is not as this tool expects: " + what)


def eager(cfg):
    cfg._attn_implementation = "eager"
    expect(cfg._attn_implementation == "eager", f"{type(cfg).__name__}._attn_implementation not settable")
    return cfg


def text_config_kwargs(text):
    """The decoder kwargs for this transformers: mlp_layer_types when DeepseekOcr2TextConfig has it
    (5.17 as read), else first_k_dense_replace (count of leading dense layers)."""
    text = dict(text)
    if not hasattr(DeepseekOcr2TextConfig(), "mlp_layer_types"):
        kinds = text.pop("mlp_layer_types")
        expect(kinds == ["dense"] * kinds.count("dense") + ["sparse"] * kinds.count("sparse"),
               "first_k_dense_replace can only express leading dense layers")
        text["first_k_dense_replace"] = kinds.count("dense")
        print("note: DeepseekOcr2TextConfig has no mlp_layer_types; using first_k_dense_replace", flush=True)
    return text


def layer_kind(text_cfg, i):
    kinds = getattr(text_cfg, "mlp_layer_types", None)
    if kinds is not None:
        return kinds[i]
    return "dense" if i < text_cfg.first_k_dense_replace else "sparse"


def make_configs(sam, clip, text):
    """sam / clip / text: plain dicts (see make_deepseek_ocr_fixtures.py V1_GEOMETRY)."""
    sam_cfg = eager(DeepseekOcr2SamVisionConfig(**sam))
    for k, v in sam.items():
        got = getattr(sam_cfg, k)
        if isinstance(v, (list, tuple)):
            got, v = list(got), list(v)
        expect(got == v, f"DeepseekOcr2SamVisionConfig.{k} = {got!r}, wanted {v!r}")
    clip_cfg = eager(CLIPVisionConfig(
        hidden_size=clip["hidden_size"], intermediate_size=clip["intermediate_size"],
        num_hidden_layers=clip["num_hidden_layers"], num_attention_heads=clip["num_attention_heads"],
        hidden_act="quick_gelu", layer_norm_eps=1e-5, attention_dropout=0.0))
    expect(clip_cfg.hidden_act == "quick_gelu" and clip_cfg.layer_norm_eps == 1e-5, "CLIPVisionConfig fields")
    text = text_config_kwargs(text)
    text_cfg = eager(DeepseekOcr2TextConfig(**text))
    for k, v in text.items():
        if isinstance(v, dict):
            continue
        expect(getattr(text_cfg, k) == v, f"DeepseekOcr2TextConfig.{k} = {getattr(text_cfg, k)!r}, wanted {v!r}")
    expect(sam_cfg.downsample_channels[1] == clip_cfg.hidden_size, "SAM output width must equal the CLIP width")
    return sam_cfg, clip_cfg, text_cfg


class DeepseekOcrV1Reference(nn.Module):
    def __init__(self, sam_cfg, clip_cfg, text_cfg, clip_table_grid, image_token_id):
        super().__init__()
        C = clip_cfg.hidden_size
        D = text_cfg.hidden_size
        self.C, self.D, self.n0 = C, D, clip_table_grid
        self.image_token_id = image_token_id
        self.sam = DeepseekOcr2SamVisionEncoder(sam_cfg)
        self.clip_class_embedding = nn.Parameter(torch.zeros(C))
        self.clip_position_embedding = nn.Embedding(clip_table_grid * clip_table_grid + 1, C)
        self.clip_pre_layrnorm = nn.LayerNorm(C, eps=clip_cfg.layer_norm_eps)
        self.clip_encoder = CLIPEncoder(clip_cfg)
        self.projector = nn.Linear(2 * C, D, bias=True)
        self.image_newline = nn.Parameter(torch.zeros(D))
        self.view_seperator = nn.Parameter(torch.zeros(D))
        self.language_model = DeepseekOcr2TextModel(text_cfg)
        self.lm_head = nn.Linear(D, text_cfg.vocab_size, bias=False)
        self.text_cfg = text_cfg
        self._check_structure(sam_cfg, clip_cfg, text_cfg)

    def _check_structure(self, sam_cfg, clip_cfg, text_cfg):
        for i, layer in enumerate(self.sam.layers):
            expect(type(layer.attn) is DeepseekOcr2SamVisionAttention,
                   f"SAM layer {i} attention is {type(layer.attn).__name__}, not the eager class")
            want = 0 if i in sam_cfg.global_attn_indexes else sam_cfg.window_size
            expect(layer.window_size == want, f"SAM layer {i} window_size {layer.window_size} != {want}")
            expect(layer.attn.use_rel_pos, "SAM rel-pos off")
        expect(tuple(self.sam.proj.conv2.weight.shape[:2]) == tuple(sam_cfg.downsample_channels[::-1]),
               "SAM proj.conv2 shape")
        expect(len(self.clip_encoder.layers) == clip_cfg.num_hidden_layers, "CLIPEncoder depth")
        for layer in self.clip_encoder.layers:
            expect(isinstance(layer, CLIPEncoderLayer) and isinstance(layer.self_attn, CLIPAttention), "CLIP layer")
            expect(layer.self_attn.q_proj.bias is not None, "CLIP q_proj has no bias")
        for i, layer in enumerate(self.language_model.layers):
            kind = layer_kind(text_cfg, i)
            cls = DeepseekOcr2TextMoe if kind == "sparse" else DeepseekOcr2TextMLP
            expect(type(layer.mlp) is cls, f"decoder layer {i} mlp is {type(layer.mlp).__name__}, wanted {kind}")
            if kind == "sparse":
                expect(isinstance(layer.mlp.experts, DeepseekOcr2TextExperts), "experts class")
                expect(layer.mlp.gate.topk_method == "greedy", "router topk_method")

    # ---- vision ----
    def sam_features(self, pixels):
        out = self.sam(pixels)
        x = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        expect(x.dim() == 4 and x.shape[1] == self.C, f"SAM output shape {tuple(x.shape)}")
        return x

    def clip_positions(self, n):
        table = self.clip_position_embedding.weight
        cls_row, grid = table[:1], table[1:]
        if n != self.n0:
            g = grid.reshape(1, self.n0, self.n0, self.C).permute(0, 3, 1, 2).contiguous()
            g = F.interpolate(g.to(torch.float32), size=(n, n), mode="bicubic", antialias=True,
                              align_corners=False).to(table.dtype)
            grid = g.permute(0, 2, 3, 1).reshape(n * n, self.C)
        return torch.cat([cls_row, grid], dim=0)

    def clip_features(self, sam):
        B, C, n, n2 = sam.shape
        expect(n == n2, "non-square SAM output")
        tokens = sam.flatten(2).transpose(1, 2)
        cls = self.clip_class_embedding.view(1, 1, C).expand(B, 1, C)
        x = torch.cat([cls, tokens], dim=1) + self.clip_positions(n).unsqueeze(0)
        x = self.clip_pre_layrnorm(x)
        out = self.clip_encoder(inputs_embeds=x, attention_mask=None)
        h = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        return h[:, 1:]

    def view_rows(self, pixels):
        """pixels [B, 3, S, S] -> (sam NCHW, projected rows [B, n*n, D])."""
        sam = self.sam_features(pixels)
        clip = self.clip_features(sam)
        fused = torch.cat([clip, sam.flatten(2).transpose(1, 2)], dim=-1)
        return sam, self.projector(fused)

    def vision_rows(self, pixel_values, pixel_values_local=None, image_spatial_crop=None):
        """One image. Returns (rows [N, D], sam_global, sam_local or None)."""
        D = self.D
        sam_g, g = self.view_rows(pixel_values)
        expect(g.shape[0] == 1, "one global view per image")
        n = int(round(g.shape[1] ** 0.5))
        glob = torch.cat([g[0].view(n, n, D), self.image_newline.view(1, 1, D).expand(n, 1, D)], dim=1).reshape(-1, D)
        parts, sam_l = [], None
        if pixel_values_local is not None:
            wt, ht = image_spatial_crop
            expect(pixel_values_local.shape[0] == wt * ht, "tile count != wt*ht")
            sam_l, loc = self.view_rows(pixel_values_local)
            m = int(round(loc.shape[1] ** 0.5))
            loc = loc.view(ht, wt, m, m, D).permute(0, 2, 1, 3, 4).reshape(ht * m, wt * m, D)
            loc = torch.cat([loc, self.image_newline.view(1, 1, D).expand(ht * m, 1, D)], dim=1).reshape(-1, D)
            parts.append(loc)
        parts += [glob, self.view_seperator.view(1, D)]
        return torch.cat(parts, dim=0), sam_g, sam_l

    # ---- decoder ----
    def embed(self, input_ids, rows):
        emb = self.language_model.embed_tokens(input_ids)
        mask = input_ids == self.image_token_id
        expect(int(mask.sum()) == rows.shape[0], f"{int(mask.sum())} image tokens for {rows.shape[0]} rows")
        return emb.masked_scatter(mask.unsqueeze(-1).expand_as(emb), rows.to(emb.dtype))

    def logits(self, input_ids, rows):
        x = self.embed(input_ids, rows)
        out = self.language_model(inputs_embeds=x, use_cache=False)
        return self.lm_head(out.last_hidden_state)

    def greedy(self, input_ids, rows, new_tokens):
        ids = input_ids
        toks, step_logits = [], []
        for _ in range(new_tokens):
            last = self.logits(ids, rows)[0, -1]
            t = int(torch.argmax(last))
            toks.append(t)
            step_logits.append(last)
            ids = torch.cat([ids, torch.tensor([[t]], dtype=ids.dtype)], dim=1)
        return toks, torch.stack(step_logits)

    # ---- checkpoint naming ----
    def to_original_state_dict(self):
        sd = {k: v.detach().clone().contiguous() for k, v in self.state_dict().items()}
        out = {}

        def put(dst, src):
            expect(src in sd, f"missing parameter {src}")
            out[dst] = sd.pop(src)

        S = "model.sam_model."
        put(S + "patch_embed.proj.weight", "sam.patch_embed.projection.weight")
        put(S + "patch_embed.proj.bias", "sam.patch_embed.projection.bias")
        put(S + "pos_embed", "sam.pos_embed")
        for i in range(len(self.sam.layers)):
            a, b = f"sam.layers.{i}.", f"{S}blocks.{i}."
            for mine, orig in (("layer_norm1", "norm1"), ("layer_norm2", "norm2")):
                for w in ("weight", "bias"):
                    put(f"{b}{orig}.{w}", f"{a}{mine}.{w}")
            for w in ("qkv.weight", "qkv.bias", "proj.weight", "proj.bias", "rel_pos_h", "rel_pos_w"):
                put(f"{b}attn.{w}", f"{a}attn.{w}")
            for w in ("lin1.weight", "lin1.bias", "lin2.weight", "lin2.bias"):
                put(f"{b}mlp.{w}", f"{a}mlp.{w}")
        put(S + "neck.0.weight", "sam.neck.conv1.weight")
        put(S + "neck.1.weight", "sam.neck.layer_norm1.weight")
        put(S + "neck.1.bias", "sam.neck.layer_norm1.bias")
        put(S + "neck.2.weight", "sam.neck.conv2.weight")
        put(S + "neck.3.weight", "sam.neck.layer_norm2.weight")
        put(S + "neck.3.bias", "sam.neck.layer_norm2.bias")
        put(S + "net_2.weight", "sam.proj.conv1.weight")
        put(S + "net_3.weight", "sam.proj.conv2.weight")
        V = "model.vision_model."
        put(V + "embeddings.class_embedding", "clip_class_embedding")
        put(V + "embeddings.position_embedding.weight", "clip_position_embedding.weight")
        put(V + "pre_layrnorm.weight", "clip_pre_layrnorm.weight")
        put(V + "pre_layrnorm.bias", "clip_pre_layrnorm.bias")
        for i in range(len(self.clip_encoder.layers)):
            a, b = f"clip_encoder.layers.{i}.", f"{V}transformer.layers.{i}."
            for w in ("weight", "bias"):
                out[f"{b}self_attn.qkv_proj.{w}"] = torch.cat(
                    [sd.pop(f"{a}self_attn.{p}_proj.{w}") for p in ("q", "k", "v")], dim=0).contiguous()
                put(f"{b}self_attn.out_proj.{w}", f"{a}self_attn.out_proj.{w}")
                for p in ("layer_norm1", "layer_norm2", "mlp.fc1", "mlp.fc2"):
                    put(f"{b}{p}.{w}", f"{a}{p}.{w}")
        put("model.projector.layers.weight", "projector.weight")
        put("model.projector.layers.bias", "projector.bias")
        put("model.image_newline", "image_newline")
        put("model.view_seperator", "view_seperator")
        put("lm_head.weight", "lm_head.weight")
        I = self.text_cfg.moe_intermediate_size
        for k in sorted(k for k in sd if k.startswith("language_model.")):
            rest = k[len("language_model."):]
            if rest.endswith("mlp.experts.gate_up_proj"):
                gu = sd.pop(k)
                expect(gu.dim() == 3 and gu.shape[1] == 2 * I, f"{k} shape {tuple(gu.shape)}")
                base = "model." + rest[: -len("gate_up_proj")]
                for e in range(gu.shape[0]):
                    out[f"{base}{e}.gate_proj.weight"] = gu[e, :I].contiguous()
                    out[f"{base}{e}.up_proj.weight"] = gu[e, I:].contiguous()
            elif rest.endswith("mlp.experts.down_proj"):
                dp = sd.pop(k)
                expect(dp.dim() == 3 and dp.shape[2] == I, f"{k} shape {tuple(dp.shape)}")
                base = "model." + rest[: -len("down_proj")]
                for e in range(dp.shape[0]):
                    out[f"{base}{e}.down_proj.weight"] = dp[e].contiguous()
            else:
                put("model." + rest, k)
        expect(not sd, f"parameters left unnamed: {sorted(sd)}")
        return out

    def from_original_state_dict(self, orig):
        """Inverse of to_original_state_dict (checked by the fixture tool's round trip)."""
        mine = self.to_original_state_dict()  # names and shapes of the current module
        expect(set(mine) == set(orig), f"key sets differ: {sorted(set(mine) ^ set(orig))[:8]}")
        target = {}
        # Rebuild by writing the originals into a copy of the module's state dict.
        sd = self.state_dict()
        S, V = "model.sam_model.", "model.vision_model."
        names = {
            S + "patch_embed.proj.weight": "sam.patch_embed.projection.weight",
            S + "patch_embed.proj.bias": "sam.patch_embed.projection.bias",
            S + "pos_embed": "sam.pos_embed",
            S + "neck.0.weight": "sam.neck.conv1.weight",
            S + "neck.1.weight": "sam.neck.layer_norm1.weight", S + "neck.1.bias": "sam.neck.layer_norm1.bias",
            S + "neck.2.weight": "sam.neck.conv2.weight",
            S + "neck.3.weight": "sam.neck.layer_norm2.weight", S + "neck.3.bias": "sam.neck.layer_norm2.bias",
            S + "net_2.weight": "sam.proj.conv1.weight", S + "net_3.weight": "sam.proj.conv2.weight",
            V + "embeddings.class_embedding": "clip_class_embedding",
            V + "embeddings.position_embedding.weight": "clip_position_embedding.weight",
            V + "pre_layrnorm.weight": "clip_pre_layrnorm.weight", V + "pre_layrnorm.bias": "clip_pre_layrnorm.bias",
            "model.projector.layers.weight": "projector.weight", "model.projector.layers.bias": "projector.bias",
            "model.image_newline": "image_newline", "model.view_seperator": "view_seperator",
            "lm_head.weight": "lm_head.weight",
        }
        for i in range(len(self.sam.layers)):
            a, b = f"sam.layers.{i}.", f"{S}blocks.{i}."
            for m_, o_ in (("layer_norm1", "norm1"), ("layer_norm2", "norm2")):
                for w in ("weight", "bias"):
                    names[f"{b}{o_}.{w}"] = f"{a}{m_}.{w}"
            for w in ("qkv.weight", "qkv.bias", "proj.weight", "proj.bias", "rel_pos_h", "rel_pos_w"):
                names[f"{b}attn.{w}"] = f"{a}attn.{w}"
            for w in ("lin1.weight", "lin1.bias", "lin2.weight", "lin2.bias"):
                names[f"{b}mlp.{w}"] = f"{a}mlp.{w}"
        C = self.C
        for i in range(len(self.clip_encoder.layers)):
            a, b = f"clip_encoder.layers.{i}.", f"{V}transformer.layers.{i}."
            for w in ("weight", "bias"):
                q, k, v = orig[f"{b}self_attn.qkv_proj.{w}"].split(C, dim=0)
                target[f"{a}self_attn.q_proj.{w}"] = q
                target[f"{a}self_attn.k_proj.{w}"] = k
                target[f"{a}self_attn.v_proj.{w}"] = v
                names[f"{b}self_attn.out_proj.{w}"] = f"{a}self_attn.out_proj.{w}"
                for p in ("layer_norm1", "layer_norm2", "mlp.fc1", "mlp.fc2"):
                    names[f"{b}{p}.{w}"] = f"{a}{p}.{w}"
        for o_, m_ in names.items():
            target[m_] = orig[o_]
        for k in sd:
            if not k.startswith("language_model."):
                continue
            rest = k[len("language_model."):]
            if rest.endswith("mlp.experts.gate_up_proj"):
                base = "model." + rest[: -len("gate_up_proj")]
                E = sd[k].shape[0]
                target[k] = torch.stack([torch.cat([orig[f"{base}{e}.gate_proj.weight"],
                                                    orig[f"{base}{e}.up_proj.weight"]], dim=0) for e in range(E)])
            elif rest.endswith("mlp.experts.down_proj"):
                base = "model." + rest[: -len("down_proj")]
                E = sd[k].shape[0]
                target[k] = torch.stack([orig[f"{base}{e}.down_proj.weight"] for e in range(E)])
            else:
                target[k] = orig["model." + rest]
        missing = set(sd) - set(target)
        expect(not missing, f"not restored: {sorted(missing)[:8]}")
        self.load_state_dict(target, strict=True)
