#include "models/deepseek_ocr_vision.h"

#include <cmath>

#include "core/error.h"
#include "image/resize.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

const std::string kSam = "model.sam_model.";
const std::string kEncoder = "model.qwen2_model.";
constexpr std::size_t kUnsizedRows = 16;

// The view sides (in patches) the plan holds tables for: the published view sizes (512, 640,
// 768, 1024 and 1280 pixels against the 1024 of the position table) at the table's scale.
std::vector<std::size_t> view_sides(const SamConfig& c) {
  const std::size_t t = static_cast<std::size_t>(c.table_side());
  std::vector<std::size_t> sides;
  for (const auto& [num, den] : {std::pair{1, 2}, {5, 8}, {3, 4}, {1, 1}, {5, 4}})
    if ((t * num) % den == 0) sides.push_back(t * num / den);
  return sides;
}

// A [Cout, Cin, k, k] convolution weight as the GEMM weight over gathered rows: [Cout, k·k·Cin],
// tap-major (tap = ky · k + kx), as GatherRowsStep lays the taps side by side.
std::vector<float> conv_as_gemm(const WeightSource& src, const std::string& name, int64_t out, int64_t in, int64_t k) {
  const std::vector<float> w = src.load(name, {out, in, k, k});
  std::vector<float> g(w.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t c = 0; c < in; ++c)
      for (int64_t t = 0; t < k * k; ++t) g[static_cast<std::size_t>((o * k * k + t) * in + c)] = w[static_cast<std::size_t>((o * in + c) * k * k + t)];
  return g;
}

class SamBuilder {
 public:
  SamBuilder(BuiltModel& m, const DeepseekOcrConfig& c, const WeightSource& src)
      : c_(c.sam), src_(src), plan_(m.plan), l_(m.plan, src, "sam") {}

  void build(ViewVisionSpec& v) {
    const int64_t H = c_.hidden;
    const std::size_t h = static_cast<std::size_t>(H), W3 = 3 * h, mlp = static_cast<std::size_t>(c_.mlp_dim);
    const std::size_t P = static_cast<std::size_t>(c_.patch), patch_dim = 3 * P * P;
    v.patch = P;
    v.native_side = static_cast<std::size_t>(c_.table_side());
    v.sides = view_sides(c_);
    const BufferId patches = plan_.add_buffer("sam.patches", Rows::kTokens, patch_dim);
    cur_ = plan_.add_buffer("sam.residual", Rows::kTokens, h);
    normed_ = plan_.add_buffer("sam.normed", Rows::kTokens, h);
    tmp_ = plan_.add_buffer("sam.proj_out", Rows::kTokens, h);
    const BufferId qkv = plan_.add_buffer("sam.qkv", Rows::kTokens, std::max(W3, mlp));
    const BufferId ctx = plan_.add_buffer("sam.attn_ctx", Rows::kTokens, h);

    plan::PatchEmbedStep pe;
    pe.patches = plan_.whole(patches);
    pe.w = plan_.add_weight(kSam + "patch_embed.proj.weight", {H, static_cast<int64_t>(patch_dim)},
                            src_.load(kSam + "patch_embed.proj.weight", {H, 3, c_.patch, c_.patch}));
    pe.bias = l_.tensor(kSam + "patch_embed.proj.bias", {H});
    pe.position = position_table(v);
    pe.out = plan_.whole(cur_);
    l_.add("sam.patch_embed", pe);

    const NormSpec ln{false, Bias::kRequired, c_.eps};
    for (int i = 0; i < c_.layers; ++i) {
      const std::string b = kSam + "blocks." + std::to_string(i) + ".", L = "sam.L" + std::to_string(i) + ".";
      if (i == 0) l_.add(L + "norm1", l_.norm(b + "norm1", ln, H, plan_.whole(cur_), {}, plan_.whole(normed_)));
      l_.add(L + "qkv", l_.linear(b + "attn.qkv", 3 * H, H, plan_.whole(normed_), plan_.slice(qkv, 0, W3), Bias::kRequired));
      l_.add(L + "attention", attention(b, i, plan_.slice(qkv, 0, W3), plan_.whole(ctx)));
      l_.add(L + "proj", l_.linear(b + "attn.proj", H, H, plan_.whole(ctx), plan_.whole(tmp_), Bias::kRequired));
      l_.add(L + "norm2", l_.norm(b + "norm2", ln, H, plan_.whole(tmp_), plan_.whole(cur_), plan_.whole(normed_),
                                  plan_.whole(cur_)));
      l_.add(L + "lin1", l_.linear(b + "mlp.lin1", c_.mlp_dim, H, plan_.whole(normed_), plan_.slice(qkv, 0, mlp),
                                   Bias::kRequired, Activation::kGeluErf));
      l_.add(L + "lin2", l_.linear(b + "mlp.lin2", H, c_.mlp_dim, plan_.slice(qkv, 0, mlp), plan_.whole(tmp_),
                                   Bias::kRequired));
      if (i + 1 < c_.layers) {
        const std::string next = kSam + "blocks." + std::to_string(i + 1) + ".";
        l_.add("sam.L" + std::to_string(i + 1) + ".norm1",
               l_.norm(next + "norm1", ln, H, plan_.whole(tmp_), plan_.whole(cur_), plan_.whole(normed_),
                       plan_.whole(cur_)));
      }
    }
    // The last block's residual sum (its normalised output is scratch).
    const plan::WeightId ones = plan_.add_weight("sam.ones", {H}, std::vector<float>(h, 1.0f));
    l_.add("sam.last_sum", plan::LayerNormStep{plan_.whole(tmp_), plan_.whole(cur_), ones, plan::kNoWeight, c_.eps,
                                               true, plan_.whole(normed_), plan_.whole(cur_)});
    neck(v);
  }

 private:
  // pos_embed [1, T, T, H] at each view side: the table itself, or resized bicubic with
  // antialiasing in f32 (DeepseekOcr2SamVisionEncoder.interpolate_pos_encoding); one table of
  // the sides' grids back to back (the runtime's positions point into it).
  plan::WeightId position_table(ViewVisionSpec& v) {
    const std::size_t T = static_cast<std::size_t>(c_.table_side()), H = static_cast<std::size_t>(c_.hidden);
    const std::vector<float> pos =
        src_.load(kSam + "pos_embed", {1, static_cast<int64_t>(T), static_cast<int64_t>(T), c_.hidden});
    std::vector<float> all;
    for (std::size_t s : v.sides) {
      v.position_rows.push_back(all.size() / H);
      if (s == T) {
        all.insert(all.end(), pos.begin(), pos.end());
      } else {
        const std::vector<float> r = image::resize_float_aa(pos.data(), T, T, H, s, s, image::ResampleFilter::bicubic);
        all.insert(all.end(), r.begin(), r.end());
      }
    }
    const auto rows = static_cast<int64_t>(all.size() / H);
    return plan_.add_weight("sam.pos_embed(resized)", {rows, c_.hidden}, std::move(all));
  }

  // Windowed layers read their window's tables as stored; global layers a table per view side,
  // resized linearly to 2 · side − 1 rows (get_rel_pos).
  plan::SamAttentionStep attention(const std::string& b, int layer, View qkv, View out) {
    plan::SamAttentionStep a;
    a.qkv = qkv;
    a.out = out;
    a.qkv_bias = plan_.add_weight(b + "attn.qkv.bias(f32)", {3 * c_.hidden}, src_.load(b + "attn.qkv.bias", {3 * c_.hidden}));
    a.heads = static_cast<std::size_t>(c_.heads);
    a.head_dim = static_cast<std::size_t>(c_.head_dim);
    a.scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim));
    const bool global = c_.is_global(layer);
    a.window = global ? 0 : static_cast<std::size_t>(c_.window);
    const int64_t stored = global ? 2 * c_.table_side() - 1 : 2 * c_.window - 1, hd = c_.head_dim;
    const std::vector<float> rh = src_.load(b + "attn.rel_pos_h", {stored, hd});
    const std::vector<float> rw = src_.load(b + "attn.rel_pos_w", {stored, hd});
    const auto add = [&](std::size_t side) {
      const std::size_t rows = 2 * side - 1;
      const std::string tag = "(" + std::to_string(rows) + " rows)";
      plan::SamRelTable t;
      t.side = side;
      if (static_cast<int64_t>(rows) == stored) {
        t.h = plan_.add_weight(b + "attn.rel_pos_h" + tag, {stored, hd}, rh);
        t.w = plan_.add_weight(b + "attn.rel_pos_w" + tag, {stored, hd}, rw);
      } else {
        const std::size_t n = static_cast<std::size_t>(stored), d = static_cast<std::size_t>(hd);
        t.h = plan_.add_weight(b + "attn.rel_pos_h" + tag, {static_cast<int64_t>(rows), hd},
                               image::resize_rows_linear(rh.data(), n, d, rows));
        t.w = plan_.add_weight(b + "attn.rel_pos_w" + tag, {static_cast<int64_t>(rows), hd},
                               image::resize_rows_linear(rw.data(), n, d, rows));
      }
      a.tables.push_back(t);
    };
    if (global)
      for (std::size_t s : view_sides(c_)) add(s);
    else
      add(static_cast<std::size_t>(c_.window));
    return a;
  }

  // 1×1 conv, LayerNorm2d, 3×3 conv (pad 1), LayerNorm2d into the persistent neck rows; then the
  // two stride-2 3×3 convolutions as programs of their own, over rows gathered by the batch.
  void neck(ViewVisionSpec& v) {
    const int64_t H = c_.hidden, N = c_.neck_channels, D1 = c_.downsample[0], D2 = c_.downsample[1];
    const std::size_t n = static_cast<std::size_t>(N);
    const NormSpec ln{false, Bias::kRequired, 1e-6f};
    const BufferId n1 = plan_.add_buffer("sam.neck1", Rows::kTokens, n);
    const BufferId col = plan_.add_buffer("sam.neck_cols", Rows::kTokens, 9 * n);
    const BufferId n2 = plan_.add_buffer("sam.neck2", Rows::kTokens, n);
    plan::GemmStep c1;
    c1.x = plan_.whole(cur_);
    c1.w = plan_.add_weight(kSam + "neck.0.weight", {N, H}, src_.load(kSam + "neck.0.weight", {N, H, 1, 1}));
    c1.y = plan_.whole(n1);
    l_.add("sam.neck.conv1", c1);
    l_.add("sam.neck.norm1", l_.norm(kSam + "neck.1", ln, N, plan_.whole(n1), {}, plan_.whole(n1)));
    l_.add("sam.neck.gather", plan::GatherRowsStep{plan_.whole(n1), 9, plan_.whole(col)});
    plan::GemmStep c2;
    c2.x = plan_.whole(col);
    c2.w = plan_.add_weight(kSam + "neck.2.weight(taps)", {N, 9 * N}, conv_as_gemm(src_, kSam + "neck.2.weight", N, N, 3));
    c2.y = plan_.whole(n2);
    l_.add("sam.neck.conv2", c2);
    v.neck = plan_.add_persistent_buffer("sam.neck_out", kUnsizedRows, n);
    v.neck_cols = n;
    l_.add("sam.neck.norm2", l_.norm(kSam + "neck.3", ln, N, plan_.whole(n2), {}, plan_.whole(v.neck)));

    v.down1 = down("sam_down1", kSam + "net_2.weight", v.neck, N, D1);
    v.down1_cols = static_cast<std::size_t>(D1);
    v.down2 = down("sam_down2", kSam + "net_3.weight", v.down1, D1, D2);
    v.down2_cols = static_cast<std::size_t>(D2);
  }

  BufferId down(const std::string& program, const std::string& weight, BufferId in, int64_t cin, int64_t cout) {
    Layers l(plan_, src_, program);
    const BufferId col = plan_.add_buffer(program + ".cols", Rows::kTokens, 9 * static_cast<std::size_t>(cin));
    const BufferId out = plan_.add_persistent_buffer(program + ".out", kUnsizedRows, static_cast<std::size_t>(cout));
    l.add(program + ".gather", plan::GatherRowsStep{plan_.whole(in), 9, plan_.whole(col)});
    plan::GemmStep g;
    g.x = plan_.whole(col);
    g.w = plan_.add_weight(weight + "(taps)", {cout, 9 * cin}, conv_as_gemm(src_, weight, cout, cin, 3));
    g.y = plan_.whole(out);
    l.add(program + ".conv", g);
    return out;
  }

  const SamConfig& c_;
  const WeightSource& src_;
  plan::Plan& plan_;
  Layers l_;
  BufferId cur_ = -1, normed_ = -1, tmp_ = -1;
};

// "encoder": per view, its down2 rows then its queries; Qwen2 layers under the prefix-causal
// mask (the batch's causal_prefix: the view's patch count), the final norm, the projector.
void build_encoder(BuiltModel& m, const DeepseekOcrConfig& cfg, const WeightSource& src, ViewVisionSpec& v) {
  const QueryEncoderConfig& c = cfg.encoder;
  plan::Plan& plan = m.plan;
  Layers l(plan, src, "encoder");
  const std::string e = kEncoder + "model.model.";
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.heads), kvh = static_cast<std::size_t>(c.kv_heads);
  const std::size_t qw = heads * hd, kvw = kvh * hd, inner = static_cast<std::size_t>(I);
  const BufferId cur = plan.add_buffer("enc.residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer("enc.normed", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("enc.proj_out", Rows::kTokens, h);
  const BufferId wide = plan.add_buffer("enc.wide", Rows::kTokens, std::max(qw + 2 * kvw, 2 * inner));
  const BufferId ctx = plan.add_buffer("enc.attn_ctx", Rows::kTokens, qw);
  const BufferId act = plan.add_buffer("enc.mlp_act", Rows::kTokens, inner);

  // The two query tables as one embedding table: query_768 (rows 0 ..), then query_1024.
  const int64_t qs = 144, ql = 256;
  v.queries_small = static_cast<std::size_t>(qs);
  v.queries_large = static_cast<std::size_t>(ql);
  v.small_max_patches = 144;
  plan::EmbedStep emb;
  emb.word = l.stacked("enc.queries", {kEncoder + "query_768.weight", kEncoder + "query_1024.weight"}, {{qs, H}, {ql, H}},
                       {qs + ql, H});
  emb.out = plan.whole(cur);
  l.add("enc.queries", emb);
  l.add("enc.sam_rows", plan::InjectRowsStep{plan.whole(v.down2), plan.whole(cur)});

  const NormSpec rms{true, Bias::kNone, c.rms_eps};
  const auto lp = [&](int i) { return e + "layers." + std::to_string(i) + "."; };
  l.add("enc.L0.attn_norm", l.norm(lp(0) + "input_layernorm", rms, H, plan.whole(cur), {}, plan.whole(normed)));
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = lp(i), L = "enc.L" + std::to_string(i) + ".", a = n + "self_attn.";
    l.add(L + "qkv", l.fused_linear(L + "qkv", {{a + "q_proj", static_cast<int64_t>(qw)},
                                                {a + "k_proj", static_cast<int64_t>(kvw)},
                                                {a + "v_proj", static_cast<int64_t>(kvw)}},
                                    H, plan.whole(normed), plan.slice(wide, 0, qw + 2 * kvw), Bias::kRequired));
    l.add(L + "qk_rope", plan::RopeStep{View{wide, 0, qw + kvw}, heads + kvh, hd, hd, c.rope_theta, false});
    plan::AttentionStep att;
    att.q = View{wide, 0, qw};
    att.k = View{wide, qw, kvw};
    att.v = View{wide, qw + kvw, kvw};
    att.heads = heads;
    att.kv_heads = kvh;
    att.head_dim = hd;
    att.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    att.mask = ops::MaskMode::kCausal;  // with the batch's causal_prefix: the view's SAM rows
    att.out = plan.whole(ctx);
    l.add(L + "attention", att);
    l.add(L + "o", l.linear(a + "o_proj", H, static_cast<int64_t>(qw), plan.whole(ctx), plan.whole(tmp), Bias::kNone));
    l.add(L + "mlp_norm", l.norm(n + "post_attention_layernorm", rms, H, plan.whole(tmp), plan.whole(cur),
                                 plan.whole(normed), plan.whole(cur)));
    l.add(L + "gate_up", l.fused_linear(L + "gate_up", {{n + "mlp.gate_proj", I}, {n + "mlp.up_proj", I}}, H,
                                        plan.whole(normed), plan.slice(wide, 0, 2 * inner), Bias::kNone));
    l.add(L + "glu", plan::GluStep{plan.slice(wide, 0, 2 * inner), Activation::kSilu, plan.whole(act)});
    l.add(L + "down", l.linear(n + "mlp.down_proj", H, I, plan.whole(act), plan.whole(tmp), Bias::kNone));
    const bool last = i + 1 == c.layers;
    l.add(last ? "enc.final_norm" : "enc.L" + std::to_string(i + 1) + ".attn_norm",
          l.norm(last ? e + "norm" : lp(i + 1) + "input_layernorm", rms, H, plan.whole(tmp), plan.whole(cur),
                 plan.whole(normed), plan.whole(cur)));
  }
  const int64_t text = cfg.text.hidden;
  const BufferId out = plan.add_buffer("enc.projected", Rows::kTokens, static_cast<std::size_t>(text));
  l.add("enc.projector", l.linear("model.projector.layers", text, H, plan.whole(normed), plan.whole(out), Bias::kRequired));
  v.rows = plan.whole(out);
  v.separator = src.load("model.view_seperator", {text});
}

// v1's "encoder": CLIP-L over each view's [class token, SAM rows] (the CLIP patch convolution is
// not used: SAM's rows are the tokens), pre-layernorm, quick-GELU layers, no final norm; each
// token's CLIP output beside its SAM row ([clip | sam], the fused buffer), then the projector.
// The SAM rows are gathered into the fused buffer's right half first (the class token gets a zero
// row there), so the embedding's sum and the fusion read the same copy.
void build_clip(BuiltModel& m, const DeepseekOcrConfig& cfg, const WeightSource& src, ViewVisionSpec& v) {
  const ClipTowerConfig& c = cfg.clip;
  plan::Plan& plan = m.plan;
  Layers l(plan, src, "encoder");
  const std::string V = "model.vision_model.";
  const int64_t C = c.hidden, I = c.intermediate;
  const std::size_t cw = static_cast<std::size_t>(C), hd = static_cast<std::size_t>(c.head_dim);
  const BufferId fused = plan.add_buffer("clip.fused", Rows::kTokens, 2 * cw);
  const BufferId emb = plan.add_buffer("clip.embed", Rows::kTokens, cw);
  const BufferId cur = plan.add_buffer("clip.residual", Rows::kTokens, cw);
  const BufferId normed = plan.add_buffer("clip.normed", Rows::kTokens, cw);
  const BufferId tmp = plan.add_buffer("clip.proj_out", Rows::kTokens, cw);
  const BufferId wide = plan.add_buffer("clip.wide", Rows::kTokens, std::max(3 * cw, static_cast<std::size_t>(I)));
  const BufferId ctx = plan.add_buffer("clip.attn_ctx", Rows::kTokens, cw);
  const View sam_half{fused, cw, cw}, clip_half{fused, 0, cw};

  l.add("clip.sam_rows", plan::GatherRowsStep{plan.whole(v.down2), 1, sam_half});
  // The embedding rows as one table the batch's token ids index: per view side, the class
  // embedding plus the class position, then the grid's positions (resized bicubic with
  // antialiasing when the side differs from the table's); the SAM rows are added by the
  // pre-layernorm's residual input.
  const std::vector<float> cls = src.load(V + "embeddings.class_embedding", {C});
  const int64_t g0 = c.grid, table_rows = 1 + g0 * g0;
  const std::vector<float> table = src.load(V + "embeddings.position_embedding.weight", {table_rows, C});
  std::vector<float> positions;
  for (std::size_t s : v.sides) {
    const std::size_t n = ViewVisionSpec::sam_side(s);
    v.clip_position_rows.push_back(positions.size() / cw);
    for (std::size_t k = 0; k < cw; ++k) positions.push_back(cls[k] + table[k]);
    if (n == static_cast<std::size_t>(g0)) {
      positions.insert(positions.end(), table.begin() + C, table.end());
    } else {
      const std::size_t g = static_cast<std::size_t>(g0);
      const std::vector<float> r =
          image::resize_float_aa(table.data() + cw, g, g, cw, n, n, image::ResampleFilter::bicubic);
      positions.insert(positions.end(), r.begin(), r.end());
    }
  }
  plan::EmbedStep e;
  const auto prow = static_cast<int64_t>(positions.size() / cw);
  e.word = plan.add_weight("clip.embedding(per side)", {prow, C}, std::move(positions));
  e.out = plan.whole(emb);
  l.add("clip.embed", e);
  const NormSpec ln{false, Bias::kRequired, c.eps};
  l.add("clip.pre_layrnorm", l.norm(V + "pre_layrnorm", ln, C, plan.whole(emb), sam_half, plan.whole(cur)));

  const auto lp = [&](int i) { return V + "transformer.layers." + std::to_string(i) + "."; };
  l.add("clip.L0.norm1", l.norm(lp(0) + "layer_norm1", ln, C, plan.whole(cur), {}, plan.whole(normed)));
  for (int i = 0; i < c.layers; ++i) {
    const std::string b = lp(i), L = "clip.L" + std::to_string(i) + ".";
    l.add(L + "qkv", l.linear(b + "self_attn.qkv_proj", 3 * C, C, plan.whole(normed), plan.slice(wide, 0, 3 * cw),
                              Bias::kRequired));
    plan::AttentionStep att;
    att.q = View{wide, 0, cw};
    att.k = View{wide, cw, cw};
    att.v = View{wide, 2 * cw, cw};
    att.heads = att.kv_heads = static_cast<std::size_t>(c.heads);
    att.head_dim = hd;
    att.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    att.mask = ops::MaskMode::kBidirectional;  // within each view
    att.out = plan.whole(ctx);
    l.add(L + "attention", att);
    l.add(L + "out_proj", l.linear(b + "self_attn.out_proj", C, C, plan.whole(ctx), plan.whole(tmp), Bias::kRequired));
    l.add(L + "norm2", l.norm(b + "layer_norm2", ln, C, plan.whole(tmp), plan.whole(cur), plan.whole(normed),
                              plan.whole(cur)));
    l.add(L + "fc1", l.linear(b + "mlp.fc1", I, C, plan.whole(normed), plan.slice(wide, 0, static_cast<std::size_t>(I)),
                              Bias::kRequired, Activation::kQuickGelu));
    l.add(L + "fc2", l.linear(b + "mlp.fc2", C, I, plan.slice(wide, 0, static_cast<std::size_t>(I)), plan.whole(tmp),
                              Bias::kRequired));
    if (i + 1 < c.layers)
      l.add("clip.L" + std::to_string(i + 1) + ".norm1",
            l.norm(lp(i + 1) + "layer_norm1", ln, C, plan.whole(tmp), plan.whole(cur), plan.whole(normed),
                   plan.whole(cur)));
  }
  // The last layer's residual sum into the fused buffer's left half (its normalised output is
  // scratch), then the projector over [clip | sam].
  const plan::WeightId ones = plan.add_weight("clip.ones", {C}, std::vector<float>(cw, 1.0f));
  l.add("clip.last_sum", plan::LayerNormStep{plan.whole(tmp), plan.whole(cur), ones, plan::kNoWeight, c.eps, false,
                                             plan.whole(normed), clip_half});
  const int64_t text = cfg.text.hidden;
  const BufferId out = plan.add_buffer("clip.projected", Rows::kTokens, static_cast<std::size_t>(text));
  l.add("clip.projector", l.linear("model.projector.layers", text, 2 * C, plan.whole(fused), plan.whole(out),
                                   Bias::kRequired));
  v.rows = plan.whole(out);
  v.separator = src.load("model.view_seperator", {text});
  v.newline = src.load("model.image_newline", {text});
  v.clip = true;
}

}  // namespace

void build_deepseek_ocr2_vision(BuiltModel& m, const DeepseekOcrConfig& c, const WeightSource& src) {
  GenerationSpec& g = *m.generation;
  g.views.emplace();
  SamBuilder(m, c, src).build(*g.views);
  if (c.version == 1)
    build_clip(m, c, src, *g.views);
  else
    build_encoder(m, c, src, *g.views);
  // The decoder's image rows: as many as the largest vision batch gives (the runtime sizes them).
  g.image_rows = m.plan.add_persistent_buffer("image_rows", kUnsizedRows, static_cast<std::size_t>(c.text.hidden));
  m.capabilities.ocr = true;
}

std::map<std::string, std::vector<int64_t>> deepseek_ocr2_vision_tensors(const DeepseekOcrConfig& c) {
  const SamConfig& s = c.sam;
  const int64_t H = s.hidden, T = s.table_side(), hd = s.head_dim, N = s.neck_channels;
  std::map<std::string, std::vector<int64_t>> t;
  t[kSam + "patch_embed.proj.weight"] = {H, 3, s.patch, s.patch};
  t[kSam + "patch_embed.proj.bias"] = {H};
  t[kSam + "pos_embed"] = {1, T, T, H};
  for (int i = 0; i < s.layers; ++i) {
    const std::string b = kSam + "blocks." + std::to_string(i) + ".";
    for (const char* n : {"norm1", "norm2"}) t[b + n + ".weight"] = t[b + n + ".bias"] = {H};
    t[b + "attn.qkv.weight"] = {3 * H, H};
    t[b + "attn.qkv.bias"] = {3 * H};
    t[b + "attn.proj.weight"] = {H, H};
    t[b + "attn.proj.bias"] = {H};
    const int64_t rows = s.is_global(i) ? 2 * T - 1 : 2 * s.window - 1;
    t[b + "attn.rel_pos_h"] = t[b + "attn.rel_pos_w"] = {rows, hd};
    t[b + "mlp.lin1.weight"] = {s.mlp_dim, H};
    t[b + "mlp.lin1.bias"] = {s.mlp_dim};
    t[b + "mlp.lin2.weight"] = {H, s.mlp_dim};
    t[b + "mlp.lin2.bias"] = {H};
  }
  t[kSam + "neck.0.weight"] = {N, H, 1, 1};
  t[kSam + "neck.1.weight"] = t[kSam + "neck.1.bias"] = {N};
  t[kSam + "neck.2.weight"] = {N, N, 3, 3};
  t[kSam + "neck.3.weight"] = t[kSam + "neck.3.bias"] = {N};
  t[kSam + "net_2.weight"] = {s.downsample[0], N, 3, 3};
  t[kSam + "net_3.weight"] = {s.downsample[1], s.downsample[0], 3, 3};
  if (c.version == 1) {
    const ClipTowerConfig& k = c.clip;
    const std::string V = "model.vision_model.";
    const int64_t C = k.hidden;
    t[V + "embeddings.class_embedding"] = {C};
    t[V + "embeddings.position_embedding.weight"] = {1 + static_cast<int64_t>(k.grid) * k.grid, C};
    t[V + "pre_layrnorm.weight"] = t[V + "pre_layrnorm.bias"] = {C};
    for (int i = 0; i < k.layers; ++i) {
      const std::string n = V + "transformer.layers." + std::to_string(i) + ".";
      for (const char* ln : {"layer_norm1", "layer_norm2"})
        t[n + ln + ".weight"] = t[n + ln + ".bias"] = {C};
      t[n + "self_attn.qkv_proj.weight"] = {3 * C, C};
      t[n + "self_attn.qkv_proj.bias"] = {3 * C};
      t[n + "self_attn.out_proj.weight"] = {C, C};
      t[n + "self_attn.out_proj.bias"] = {C};
      t[n + "mlp.fc1.weight"] = {k.intermediate, C};
      t[n + "mlp.fc1.bias"] = {k.intermediate};
      t[n + "mlp.fc2.weight"] = {C, k.intermediate};
      t[n + "mlp.fc2.bias"] = {C};
    }
    t["model.projector.layers.weight"] = {c.text.hidden, 2 * C};
    t["model.projector.layers.bias"] = {c.text.hidden};
    t["model.image_newline"] = t["model.view_seperator"] = {c.text.hidden};
    return t;
  }
  const QueryEncoderConfig& e = c.encoder;
  const int64_t E = e.hidden, ehd = e.head_dim;
  t[kEncoder + "query_768.weight"] = {144, E};
  t[kEncoder + "query_1024.weight"] = {256, E};
  for (int i = 0; i < e.layers; ++i) {
    const std::string n = kEncoder + "model.model.layers." + std::to_string(i) + ".";
    t[n + "input_layernorm.weight"] = t[n + "post_attention_layernorm.weight"] = {E};
    t[n + "self_attn.q_proj.weight"] = {e.heads * ehd, E};
    t[n + "self_attn.q_proj.bias"] = {e.heads * ehd};
    t[n + "self_attn.k_proj.weight"] = t[n + "self_attn.v_proj.weight"] = {e.kv_heads * ehd, E};
    t[n + "self_attn.k_proj.bias"] = t[n + "self_attn.v_proj.bias"] = {e.kv_heads * ehd};
    t[n + "self_attn.o_proj.weight"] = {E, e.heads * ehd};
    t[n + "mlp.gate_proj.weight"] = t[n + "mlp.up_proj.weight"] = {e.intermediate, E};
    t[n + "mlp.down_proj.weight"] = {E, e.intermediate};
  }
  t[kEncoder + "model.model.norm.weight"] = {E};
  t["model.projector.layers.weight"] = {c.text.hidden, E};
  t["model.projector.layers.bias"] = {c.text.hidden};
  t["model.view_seperator"] = {c.text.hidden};
  return t;
}

}  // namespace il::models
