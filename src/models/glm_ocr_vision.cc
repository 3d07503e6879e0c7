#include "models/glm_ocr_vision.h"

#include <cmath>

#include "core/error.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;

}  // namespace

std::string glm_ocr_vision_prefix(const WeightSource& src) {
  for (const char* p : {"model.visual.", "visual.", ""})
    if (src.has(std::string(p) + "patch_embed.proj.weight")) return p;
  throw make_error("no GLM-OCR vision tensors found: probed patch_embed.proj.weight under the prefixes "
                   "'model.visual.', 'visual.' and ''");
}

std::map<std::string, std::vector<int64_t>> glm_ocr_vision_tensors(const GlmOcrVisionConfig& c,
                                                                  const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate, O = c.out_hidden, M = static_cast<int64_t>(c.merger_inner());
  const int64_t hd = static_cast<int64_t>(c.head_dim());
  std::map<std::string, std::vector<int64_t>> t;
  t[p + "patch_embed.proj.weight"] = {H, c.channels, c.temporal_patch, c.patch, c.patch};
  t[p + "patch_embed.proj.bias"] = {H};
  for (int i = 0; i < c.depth; ++i) {
    const std::string n = p + "blocks." + std::to_string(i) + ".";
    t[n + "norm1.weight"] = {H};
    t[n + "norm2.weight"] = {H};
    t[n + "attn.qkv.weight"] = {3 * H, H};
    t[n + "attn.proj.weight"] = {H, H};
    t[n + "attn.q_norm.weight"] = {hd};
    t[n + "attn.k_norm.weight"] = {hd};
    t[n + "mlp.gate_proj.weight"] = {I, H};
    t[n + "mlp.up_proj.weight"] = {I, H};
    t[n + "mlp.down_proj.weight"] = {H, I};
    if (c.attention_bias) {
      t[n + "attn.qkv.bias"] = {3 * H};
      t[n + "attn.proj.bias"] = {H};
      t[n + "mlp.gate_proj.bias"] = {I};
      t[n + "mlp.up_proj.bias"] = {I};
      t[n + "mlp.down_proj.bias"] = {H};
    }
  }
  t[p + "post_layernorm.weight"] = {H};
  t[p + "downsample.weight"] = {O, H, 2, 2};
  t[p + "downsample.bias"] = {O};
  t[p + "merger.proj.weight"] = {O, O};
  t[p + "merger.post_projection_norm.weight"] = {O};
  t[p + "merger.post_projection_norm.bias"] = {O};
  t[p + "merger.gate_proj.weight"] = {M, O};
  t[p + "merger.up_proj.weight"] = {M, O};
  t[p + "merger.down_proj.weight"] = {O, M};
  return t;
}

std::vector<float> glm_ocr_downsample_weight(const std::vector<float>& conv, std::size_t out, std::size_t hidden) {
  check(conv.size() == out * hidden * 4, "downsample weight: ", conv.size(), " values for [", out, ", ", hidden,
        ", 2, 2]");
  std::vector<float> w(conv.size());
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t c = 0; c < hidden; ++c)
      for (std::size_t ab = 0; ab < 4; ++ab)  // ab = a · 2 + b, the token's place in its window
        w[o * 4 * hidden + ab * hidden + c] = conv[(o * hidden + c) * 4 + ab];
  return w;
}

GlmOcrVisionViews build_glm_ocr_vision(plan::Plan& plan, const GlmOcrVisionConfig& c, const WeightSource& src,
                                       const GlmOcrVisionOptions& opt) {
  check(c.merge == 2 && c.merge_tokens() == plan::kWindowTokens, "GLM-OCR vision: spatial_merge_size ", c.merge,
        " (only 2 is supported)");
  const std::string& p = opt.prefix;
  const int64_t H = c.hidden, I = c.intermediate, O = c.out_hidden, M = static_cast<int64_t>(c.merger_inner());
  const std::size_t h = static_cast<std::size_t>(H), hd = c.head_dim(), heads = static_cast<std::size_t>(c.heads);
  const std::size_t o = static_cast<std::size_t>(O), m = static_cast<std::size_t>(M);
  const Bias bias = c.attention_bias ? Bias::kRequired : Bias::kNone;
  const NormSpec rms{true, Bias::kNone, c.eps};
  Layers l(plan, src, opt.program);
  const std::string tag = opt.program + ".";

  // Token-row scratch, reused by every block.
  const BufferId patches = plan.add_buffer(tag + "patches", Rows::kTokens, c.patch_dim());
  const BufferId cur = plan.add_buffer(tag + "residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer(tag + "normed", Rows::kTokens, h);
  const BufferId qkv = plan.add_buffer(tag + "qkv", Rows::kTokens, 3 * h);
  const BufferId ctx = plan.add_buffer(tag + "attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer(tag + "proj_out", Rows::kTokens, h);
  const BufferId gate_up = plan.add_buffer(tag + "mlp_gate_up", Rows::kTokens, 2 * static_cast<std::size_t>(I));
  const BufferId inner = plan.add_buffer(tag + "mlp_act", Rows::kTokens, static_cast<std::size_t>(I));

  // Patch embedding: Conv3d [H, C, T, P, P] with stride = kernel is, row by row, the GEMM weight
  // [H, C·T·P·P] over patch rows laid out (c, t, py, px), as the processor emits them.
  const int64_t K = static_cast<int64_t>(c.patch_dim());
  plan::PatchEmbedStep pe;
  pe.patches = plan.whole(patches);
  pe.w = plan.add_weight(p + "patch_embed.proj.weight", {H, K},
                         src.load(p + "patch_embed.proj.weight", {H, c.channels, c.temporal_patch, c.patch, c.patch}));
  pe.bias = l.tensor(p + "patch_embed.proj.bias", {H});
  pe.out = plan.whole(cur);  // no position table: positions enter through the rotary embedding
  l.add(tag + "patch_embed", pe);

  // The 2-D rope (GlmOcrVisionRotaryEmbedding(head_dim / 2)): head_dim / 4 inverse frequencies
  // theta^(−2i / (head_dim / 2)), the first half of the rotated angles turned by the patch's h,
  // the second by its w (emb = cat(h·inv, w·inv), then cat(emb, emb): rotate-half pairs).
  const int quarter = static_cast<int>(hd / 4);
  const auto rope = [&](plan::View v) {
    plan::RopeStep r{v, heads, hd, hd, c.rope_theta, false};
    r.sections = {quarter, quarter};
    r.sections_restart = true;
    r.freq_dim = hd / 2;
    return r;
  };
  const plan::View q{qkv, 0, h}, k{qkv, h, h}, v{qkv, 2 * h, h};

  const auto block = [&](int i) { return p + "blocks." + std::to_string(i) + "."; };
  l.add(tag + "L0.norm1", l.norm(block(0) + "norm1", rms, H, plan.whole(cur), {}, plan.whole(normed)));
  for (int i = 0; i < c.depth; ++i) {
    const std::string n = block(i), L = tag + "L" + std::to_string(i) + ".";
    l.add(L + "qkv", l.linear(n + "attn.qkv", 3 * H, H, plan.whole(normed), plan.whole(qkv), bias));
    // q / k RMSNorm per head before the rope (v neither normed nor rotated).
    l.add(L + "q_norm", l.norm(n + "attn.q_norm", rms, static_cast<int64_t>(hd), q, {}, q, {}, hd));
    l.add(L + "k_norm", l.norm(n + "attn.k_norm", rms, static_cast<int64_t>(hd), k, {}, k, {}, hd));
    l.add(L + "q_rope", rope(q));
    l.add(L + "k_rope", rope(k));
    plan::AttentionStep a;  // every patch of a frame sees every other (cu_seqlens: one sequence each)
    a.q = q;
    a.k = k;
    a.v = v;
    a.heads = heads;
    a.kv_heads = heads;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.mask = ops::MaskMode::kBidirectional;
    a.out = plan.whole(ctx);
    l.add(L + "attention", a);
    l.add(L + "proj", l.linear(n + "attn.proj", H, H, plan.whole(ctx), plan.whole(tmp), bias));
    // residual += attention; normed = norm2(residual), in one step.
    l.add(L + "norm2", l.norm(n + "norm2", rms, H, plan.whole(tmp), plan.whole(cur), plan.whole(normed),
                              plan.whole(cur)));
    glu_mlp(l, L, {n + "mlp.gate_proj", n + "mlp.up_proj", n + "mlp.down_proj"}, H, I, Activation::kSilu, bias,
            plan.whole(normed), plan.whole(gate_up), plan.whole(inner), plan.whole(tmp));
    // residual += MLP; normed = the next block's norm1, or post_layernorm.
    const bool last = i + 1 == c.depth;
    l.add(last ? tag + "post_layernorm" : tag + "L" + std::to_string(i + 1) + ".norm1",
          l.norm(last ? p + "post_layernorm" : block(i + 1) + "norm1", rms, H, plan.whole(tmp), plan.whole(cur),
                 plan.whole(normed), plan.whole(cur)));
  }

  // The 2×2 downsample: each merge window's 4 consecutive token rows of `normed`, side by side,
  // are one window row of 4·hidden values (a buffer over normed's storage: no copy).
  const BufferId windows = plan.add_buffer_over(tag + "windows", Rows::kWindows, 4 * h, normed);
  const BufferId down = plan.add_buffer(tag + "downsample", Rows::kWindows, o);
  plan::GemmStep ds;
  ds.x = plan.whole(windows);
  ds.w = plan.add_weight(p + "downsample.weight[window]", {O, 4 * H},
                         glm_ocr_downsample_weight(src.load(p + "downsample.weight", {O, H, 2, 2}), o, h));
  ds.bias = l.tensor(p + "downsample.bias", {O});
  ds.y = plan.whole(down);
  l.add(tag + "downsample", ds);

  // The merger: proj (no bias), LayerNorm (eps 1e-5, torch's default) then exact GELU, then
  // down(silu(gate) ⊙ up) without biases.
  const std::string mp = p + "merger.";
  const BufferId m1 = plan.add_buffer(tag + "merger_proj", Rows::kWindows, o);
  const BufferId m2 = plan.add_buffer(tag + "merger_act", Rows::kWindows, o);
  const BufferId mgu = plan.add_buffer(tag + "merger_gate_up", Rows::kWindows, 2 * m);
  const BufferId mi = plan.add_buffer(tag + "merger_inner", Rows::kWindows, m);
  plan::View out = opt.output;
  if (out.buffer < 0) out = plan.whole(plan.add_buffer(tag + "merger_out", Rows::kWindows, o));
  check(out.cols == o, "GLM-OCR vision: the merger's output view has ", out.cols, " columns, not out_hidden_size ", o);
  l.add(tag + "merger.proj", l.linear(mp + "proj", O, O, plan.whole(down), plan.whole(m1), Bias::kNone));
  plan::LayerNormStep ln = l.norm(mp + "post_projection_norm", {false, Bias::kRequired, 1e-5f}, O, plan.whole(m1), {},
                                  plan.whole(m2));
  ln.act = Activation::kGeluErf;
  l.add(tag + "merger.post_projection_norm", ln);
  glu_mlp(l, tag + "merger.", {mp + "gate_proj", mp + "up_proj", mp + "down_proj"}, O, M, Activation::kSilu,
          Bias::kNone, plan.whole(m2), plan.whole(mgu), plan.whole(mi), out);
  plan.set_output("vision", out);
  return {plan.whole(normed), plan.whole(down), out};
}

}  // namespace il::models
