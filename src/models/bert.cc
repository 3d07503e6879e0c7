#include "models/bert.h"

#include <cmath>

#include "core/error.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;
using I64 = std::vector<int64_t>;

struct LayerNames {
  std::string qkv_fused;  // jina: one [3H, H] tensor
  std::string q, k, v, out, ln1, up, down, ln2;
};

LayerNames layer_names(const BertNames& n, int i) {
  const std::string l = std::to_string(i);
  switch (n.layout) {
    case BertLayout::kStandard: {
      const std::string p = n.prefix + "encoder.layer." + l + ".";
      return {"", p + "attention.self.query", p + "attention.self.key", p + "attention.self.value",
              p + "attention.output.dense", p + "attention.output.LayerNorm",
              p + "intermediate.dense", p + "output.dense", p + "output.LayerNorm"};
    }
    case BertLayout::kJina: {
      const std::string p = n.prefix + "encoder.layers." + l + ".";
      return {p + "mixer.Wqkv", "", "", "", p + "mixer.out_proj", p + "norm1", p + "mlp.fc1",
              p + "mlp.fc2", p + "norm2"};
    }
  }
  return {};
}

plan::WeightId add(plan::Plan& plan, const WeightSource& src, const std::string& name, I64 shape) {
  std::vector<float> data = src.load(name, shape);
  return plan.add_weight(name, std::move(shape), std::move(data));
}

// y = act(x · Wᵀ + b) for checkpoint linear `name` (`name.weight` [out, in], `name.bias` [out]).
plan::GemmStep linear(plan::Plan& plan, const WeightSource& src, const std::string& name,
                      int64_t out, int64_t in, View x, View y, Activation act = Activation::kNone) {
  plan::GemmStep g;
  g.x = x;
  g.w = add(plan, src, name + ".weight", {out, in});
  g.bias = add(plan, src, name + ".bias", {out});
  g.act = act;
  g.y = y;
  return g;
}

// out = LayerNorm(x [+ residual]) with checkpoint norm `name` (biased, width H).
plan::LayerNormStep layer_norm(plan::Plan& plan, const WeightSource& src, const std::string& name,
                               int64_t H, float eps, View x, View residual, View out) {
  plan::LayerNormStep ln;
  ln.x = x;
  ln.residual = residual;
  ln.w = add(plan, src, name + ".weight", {H});
  ln.b = add(plan, src, name + ".bias", {H});
  ln.eps = eps;
  ln.out = out;
  return ln;
}

}  // namespace

BertLayerTensors bert_layer_tensors(const BertNames& names, int i) {
  const LayerNames n = layer_names(names, i);
  return {(n.qkv_fused.empty() ? n.q : n.qkv_fused) + ".weight", n.up + ".weight"};
}

CrossEncoderHeadNames cross_encoder_head_names(const WeightSource& src, const BertNames& names) {
  if (src.has(names.prefix + "pooler.dense.weight")) return {names.prefix + "pooler.dense", "classifier"};
  return {"classifier.dense", "classifier.out_proj"};
}

BertNames detect_bert_names(const WeightSource& src, const io::EncoderConfig& cfg) {
  (void)cfg;
  for (const char* p : {"", "bert.", "roberta."}) {
    const std::string prefix = p;
    if (!src.has(prefix + "embeddings.word_embeddings.weight")) continue;
    if (src.has(prefix + "encoder.layers.0.mixer.Wqkv.weight")) return {prefix, BertLayout::kJina};
    return {prefix, BertLayout::kStandard};
  }
  throw make_error("no BERT-family tensors found: probed embeddings.word_embeddings.weight under "
                   "the prefixes '', 'bert.' and 'roberta.'");
}

EncoderBuffers build_bert_encoder(plan::Plan& plan, const io::EncoderConfig& cfg,
                                  const WeightSource& src, const BertNames& names) {
  const int64_t H = cfg.hidden, I = cfg.intermediate;
  const std::size_t h = static_cast<std::size_t>(H);
  const std::string& p = names.prefix;

  // Scratch: the residual stream, attention context, a projection output, and one wide buffer
  // shared by the packed QKV projection and the MLP's intermediate activations.
  const BufferId cur = plan.add_buffer("hidden", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId mid = plan.add_buffer("mid", Rows::kTokens, static_cast<std::size_t>(std::max(I, 3 * H)));

  // Every step goes to both programs, except the last layer's after its QKV projection.
  const auto both = [&](const std::string& name, plan::StepOp op) {
    plan.add_step("encode", name, op);
    plan.add_step("encode_first", name, std::move(op));
  };

  plan::EmbedStep emb;
  emb.word = add(plan, src, p + "embeddings.word_embeddings.weight", {cfg.vocab, H});
  emb.position = add(plan, src, p + "embeddings.position_embeddings.weight", {cfg.max_positions, H});
  if (cfg.type_vocab > 0)
    emb.type = add(plan, src, p + "embeddings.token_type_embeddings.weight", {cfg.type_vocab, H});
  emb.position_offset = static_cast<std::size_t>(cfg.position_offset);
  emb.out = plan.whole(tmp);
  both("embeddings", emb);

  const std::string emb_ln = names.layout == BertLayout::kJina ? p + "emb_ln" : p + "embeddings.LayerNorm";
  both("embeddings.norm", layer_norm(plan, src, emb_ln, H, cfg.layer_norm_eps, plan.whole(tmp), {}, plan.whole(cur)));

  const View qkv = plan.slice(mid, 0, 3 * h);
  const View up = plan.slice(mid, 0, static_cast<std::size_t>(I));
  for (int i = 0; i < cfg.layers; ++i) {
    const LayerNames n = layer_names(names, i);
    const std::string L = "L" + std::to_string(i) + ".";

    // Q, K and V as one GEMM over a weight fused at load time (rows q, then k, then v).
    plan::GemmStep proj;
    if (names.layout == BertLayout::kJina) {
      proj = linear(plan, src, n.qkv_fused, 3 * H, H, plan.whole(cur), qkv);
    } else {
      proj.x = plan.whole(cur);
      proj.y = qkv;
      std::vector<float> w, b;
      for (const std::string* part : {&n.q, &n.k, &n.v}) {
        auto pw = src.load(*part + ".weight", {H, H});
        auto pb = src.load(*part + ".bias", {H});
        w.insert(w.end(), pw.begin(), pw.end());
        b.insert(b.end(), pb.begin(), pb.end());
      }
      proj.w = plan.add_weight(L + "qkv.weight", {3 * H, H}, std::move(w));
      proj.bias = plan.add_weight(L + "qkv.bias", {3 * H}, std::move(b));
    }
    both(L + "qkv", proj);

    plan::AttentionStep attn;
    attn.q = plan.slice(mid, 0, h);
    attn.k = plan.slice(mid, h, h);
    attn.v = plan.slice(mid, 2 * h, h);
    attn.heads = attn.kv_heads = static_cast<std::size_t>(cfg.heads);
    attn.head_dim = static_cast<std::size_t>(cfg.head_dim);
    attn.scale = 1.0f / std::sqrt(static_cast<float>(cfg.head_dim));
    attn.out = plan.whole(ctx);
    const float eps = cfg.layer_norm_eps;
    plan::GemmStep attn_out = linear(plan, src, n.out, H, H, plan.whole(ctx), plan.whole(tmp));
    // Post-norm: LN(sublayer output + residual), written over the residual stream.
    plan::LayerNormStep attn_norm =
        layer_norm(plan, src, n.ln1, H, eps, plan.whole(tmp), plan.whole(cur), plan.whole(cur));
    plan::GemmStep mlp_up = linear(plan, src, n.up, I, H, plan.whole(cur), up, cfg.act);
    plan::GemmStep mlp_down = linear(plan, src, n.down, H, I, up, plan.whole(tmp));
    plan::LayerNormStep mlp_norm =
        layer_norm(plan, src, n.ln2, H, eps, plan.whole(tmp), plan.whole(cur), plan.whole(cur));
    const bool last = i + 1 == cfg.layers;
    const auto add = [&](const std::string& name, plan::StepOp op) {
      if (last) plan.add_step("encode", name, std::move(op));
      else both(name, std::move(op));
    };
    add(L + "attention", attn);
    add(L + "attn_out", attn_out);
    add(L + "attn_norm", attn_norm);
    add(L + "mlp_up", mlp_up);
    add(L + "mlp_down", mlp_down);
    add(L + "mlp_norm", mlp_norm);
    if (!last) continue;

    // The last layer for first tokens only, with the same weights. Rows: B instead of T. Storage:
    // the residual's first rows go where the attention context would (ctx), the context where the
    // projection output would (tmp), projections over the spent residual stream (cur), the MLP's
    // intermediate over the spent QKV (mid); no two live at once in the same storage.
    const BufferId res1 = plan.add_buffer_over("first.hidden", Rows::kFirstTokens, h, ctx);
    const BufferId ctx1 = plan.add_buffer_over("first.attn_ctx", Rows::kFirstTokens, h, tmp);
    const BufferId tmp1 = plan.add_buffer_over("first.proj_out", Rows::kFirstTokens, h, cur);
    const BufferId mid1 = plan.add_buffer_over("first.mid", Rows::kFirstTokens, static_cast<std::size_t>(I), mid);
    plan.add_step("encode_first", L + "first.residual",
                  plan::PoolStep{plan.whole(cur), PoolingMode::kCls, plan.whole(res1)});
    attn.first_query_only = true;
    attn.out = plan.whole(ctx1);
    plan.add_step("encode_first", L + "first.attention", attn);
    attn_out.x = plan.whole(ctx1);
    attn_out.y = plan.whole(tmp1);
    plan.add_step("encode_first", L + "first.attn_out", attn_out);
    attn_norm.x = plan.whole(tmp1);
    attn_norm.residual = attn_norm.out = plan.whole(res1);
    plan.add_step("encode_first", L + "first.attn_norm", attn_norm);
    mlp_up.x = plan.whole(res1);
    mlp_up.y = plan.whole(mid1);
    plan.add_step("encode_first", L + "first.mlp_up", mlp_up);
    mlp_down.x = plan.whole(mid1);
    mlp_down.y = plan.whole(tmp1);
    plan.add_step("encode_first", L + "first.mlp_down", mlp_down);
    mlp_norm.x = plan.whole(tmp1);
    mlp_norm.residual = mlp_norm.out = plan.whole(res1);
    plan.add_step("encode_first", L + "first.mlp_norm", mlp_norm);
    plan.set_output("hidden", plan.whole(cur));
    return {cur, res1};
  }
  throw make_error("encoder config has no layers");
}

void build_cross_encoder_head(plan::Plan& plan, const io::EncoderConfig& cfg,
                              const WeightSource& src, const BertNames& names, const EncoderBuffers& encoder) {
  const int64_t H = cfg.hidden, NL = cfg.num_labels;
  const auto [dense, out] = cross_encoder_head_names(src, names);
  if (!src.has(dense + ".weight") || !src.has(out + ".weight"))
    throw make_error("cross-encoder head not found: expected ", dense, ".weight and ", out,
                     ".weight (", cfg.architectures.empty() ? cfg.model_type : cfg.architectures[0], ")");

  const std::size_t h = static_cast<std::size_t>(H);
  const BufferId cls = plan.add_buffer("ce_cls", Rows::kSequences, h);
  const BufferId mid = plan.add_buffer("ce_dense", Rows::kSequences, h);
  const BufferId scores = plan.add_buffer("scores", Rows::kSequences, static_cast<std::size_t>(NL));

  plan::PoolStep pool;  // the first token of each sequence, never a mean
  pool.x = plan.whole(encoder.hidden);
  pool.mode = PoolingMode::kCls;
  pool.out = plan.whole(cls);
  plan.add_step("ce_head", "ce.cls", pool);
  pool.x = plan.whole(encoder.first);  // one row per sequence already
  plan.add_step("ce_head_first", "ce.cls", pool);

  const plan::GemmStep dense_step =
      linear(plan, src, dense, H, H, plan.whole(cls), plan.whole(mid), Activation::kTanh);
  const plan::GemmStep classifier = linear(plan, src, out, NL, H, plan.whole(mid), plan.whole(scores));
  for (const char* program : {"ce_head", "ce_head_first"}) {
    plan.add_step(program, "ce.dense", dense_step);
    plan.add_step(program, "ce.classifier", classifier);
  }
  plan.set_output("scores", plan.whole(scores));
}

std::map<std::string, std::vector<int64_t>> bert_standard_tensors(const io::EncoderConfig& cfg) {
  const int64_t H = cfg.hidden, I = cfg.intermediate;
  const bool roberta = cfg.arch == io::Arch::kXlmRoberta;
  const std::string p = cfg.is_cross_encoder ? (roberta ? "roberta." : "bert.") : "";
  std::map<std::string, I64> t;
  auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    t[n + ".weight"] = {out, in};
    t[n + ".bias"] = {out};
  };
  auto norm = [&](const std::string& n) {
    t[n + ".weight"] = {H};
    t[n + ".bias"] = {H};
  };
  t[p + "embeddings.word_embeddings.weight"] = {cfg.vocab, H};
  t[p + "embeddings.position_embeddings.weight"] = {cfg.max_positions, H};
  if (cfg.type_vocab > 0) t[p + "embeddings.token_type_embeddings.weight"] = {cfg.type_vocab, H};
  norm(p + "embeddings.LayerNorm");
  for (int i = 0; i < cfg.layers; ++i) {
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    for (const char* part : {"query", "key", "value"}) linear(l + "attention.self." + part, H, H);
    linear(l + "attention.output.dense", H, H);
    norm(l + "attention.output.LayerNorm");
    linear(l + "intermediate.dense", I, H);
    linear(l + "output.dense", H, I);
    norm(l + "output.LayerNorm");
  }
  if (cfg.is_cross_encoder) {
    if (roberta) {
      linear("classifier.dense", H, H);
      linear("classifier.out_proj", cfg.num_labels, H);
    } else {
      linear(p + "pooler.dense", H, H);
      linear("classifier", cfg.num_labels, H);
    }
  }
  return t;
}

}  // namespace il::models
