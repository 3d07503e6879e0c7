#include "models/modernbert.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/config_check.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"
#include "models/classifier_labels.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

std::string layer_prefix(const std::string& prefix, int i) { return prefix + "layers." + std::to_string(i) + "."; }

// "" (a ModernBertModel saved alone, and sentence-transformers folders) or "model." (inside
// ModernBertForSequenceClassification / ModernBertForMaskedLM).
std::string detect_prefix(const WeightSource& src) {
  for (const char* p : {"", "model."})
    if (src.has(std::string(p) + "embeddings.tok_embeddings.weight")) return p;
  throw make_error("no ModernBERT tensors found: probed embeddings.tok_embeddings.weight under the prefixes '' and "
                   "'model.'");
}

Bias bias_if(bool present) { return present ? Bias::kRequired : Bias::kNone; }

struct Trunk {
  BufferId hidden = -1;    // [T, hidden]: the final norm's output, every token ("encode")
  BufferId selected = -1;  // [B, hidden]: the same for each sequence's first token ("encode_first")
};

Trunk build_trunk(plan::Plan& plan, const ModernBertConfig& c, const WeightSource& src, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.heads), inner = static_cast<std::size_t>(I);
  Layers l(plan, src, "encode");
  const NormSpec ln{false, bias_if(c.norm_bias), c.norm_eps};
  const Bias attn_bias = bias_if(c.attention_bias), mlp_bias = bias_if(c.mlp_bias);

  // The residual stream, the normed stream (each layer's input; at the end the output), the
  // attention context, a projection output, one wide buffer for QKV and then Wi's two halves, and
  // the MLP's gated activations.
  const BufferId cur = plan.add_buffer("residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer("normed", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId wide = plan.add_buffer("wide", Rows::kTokens, std::max(3 * h, 2 * inner));
  const BufferId act = plan.add_buffer("mlp_act", Rows::kTokens, inner);

  plan::EmbedStep emb;  // no position table: positions enter through the rotary embeddings
  emb.word = l.tensor(p + "embeddings.tok_embeddings.weight", {c.vocab, H});
  emb.out = plan.whole(tmp);
  l.add("embeddings", emb);
  l.add("embeddings.norm", l.norm(p + "embeddings.norm", ln, H, plan.whole(tmp), {}, plan.whole(cur)));

  const View qkv = plan.slice(wide, 0, 3 * h);
  const View q = plan.slice(wide, 0, h), k = plan.slice(wide, h, h), v = plan.slice(wide, 2 * h, h);
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i), L = "L" + std::to_string(i) + ".";
    // Layer 0's attn_norm is the identity: the embeddings' norm output goes straight in.
    const View x = plan.whole(i == 0 ? cur : normed);
    // Wqkv [3H, H]: rows 0..H the queries, then the keys, then the values (head-major inside each).
    l.add(L + "qkv", l.linear(n + "attn.Wqkv", 3 * H, H, x, qkv, attn_bias));
    // Rotary embeddings with this layer kind's theta (rotate-half over the whole head).
    const float theta = c.rope_theta(i);
    l.add(L + "q_rope", plan::RopeStep{q, heads, hd, hd, theta});
    l.add(L + "k_rope", plan::RopeStep{k, heads, hd, hd, theta});
    plan::AttentionStep a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.heads = a.kv_heads = heads;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.mask = ops::MaskMode::kBidirectional;
    // Sliding layers: |i − j| ≤ local_attention / 2 in sequence positions (transformers' mask).
    a.window = c.window(i);
    a.out = plan.whole(ctx);
    l.add(L + "attention", a);
    l.add(L + "o", l.linear(n + "attn.Wo", H, H, plan.whole(ctx), plan.whole(tmp), attn_bias));
    // residual += attention; normed = mlp_norm(residual), in one step.
    l.add(L + "mlp_norm", l.norm(n + "mlp_norm", ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(normed),
                                 plan.whole(cur)));
    // GeGLU: Wi's first I outputs go through the activation, the second I gate them.
    l.add(L + "wi", l.linear(n + "mlp.Wi", 2 * I, H, plan.whole(normed), plan.slice(wide, 0, 2 * inner), mlp_bias));
    l.add(L + "glu", plan::GluStep{plan.slice(wide, 0, 2 * inner), c.act, plan.whole(act)});
    l.add(L + "mlp_out", l.linear(n + "mlp.Wo", H, I, plan.whole(act), plan.whole(tmp), mlp_bias));
    // residual += MLP; normed = the next layer's attention norm, or the final norm.
    const bool last = i + 1 == c.layers;
    l.add(last ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm",
          l.norm(last ? p + "final_norm" : layer_prefix(p, i + 1) + "attn_norm", ln, H, plan.whole(tmp),
                 plan.whole(cur), plan.whole(normed), plan.whole(cur)));
  }
  plan.set_output("hidden", plan.whole(normed));
  // The last layer for each sequence's first token only: all CLS pooling and a CLS-pooled head read.
  const std::vector<BufferId> selected = add_selected_program(plan, "encode", "encode_first", plan::QueryRows::kFirst);
  return {normed, selected.at(static_cast<std::size_t>(normed))};
}

// ModernBertForSequenceClassification's head: pooled → head.dense (+ bias) → act → head.norm →
// classifier. Program "ce_head" pools the full encoder's rows; with CLS pooling also
// "ce_head_first", the same over "encode_first"'s selected rows.
void build_classifier_head(plan::Plan& plan, const ModernBertConfig& c, const WeightSource& src, const Trunk& trunk) {
  const int64_t H = c.hidden, NL = c.num_labels;
  const std::size_t h = static_cast<std::size_t>(H);
  const BufferId pooled = plan.add_buffer("head_pooled", Rows::kSequences, h);
  const BufferId dense = plan.add_buffer("head_dense", Rows::kSequences, h);
  const BufferId scores = plan.add_buffer("scores", Rows::kSequences, static_cast<std::size_t>(NL));
  Layers l(plan, src, "ce_head");
  const plan::GemmStep d =
      l.linear("head.dense", H, H, plan.whole(pooled), plan.whole(dense), bias_if(c.classifier_bias), c.classifier_act);
  const plan::LayerNormStep norm = l.norm("head.norm", NormSpec{false, bias_if(c.norm_bias), c.norm_eps}, H,
                                          plan.whole(dense), {}, plan.whole(dense));
  // The classifier always has a bias (transformers builds it with the default).
  const plan::GemmStep cls = l.linear("classifier", NL, H, plan.whole(dense), plan.whole(scores), Bias::kRequired);
  const auto add_head = [&](const std::string& program, plan::PoolStep pool) {
    plan.add_step(program, "head.pool", pool);
    plan.add_step(program, "head.dense", d);
    plan.add_step(program, "head.norm", norm);
    plan.add_step(program, "classifier", cls);
  };
  add_head("ce_head", plan::PoolStep{plan.whole(trunk.hidden), c.classifier_pooling, plan.whole(pooled)});
  if (c.classifier_pooling == PoolingMode::kCls)
    add_head("ce_head_first", plan::PoolStep{plan.whole(trunk.selected), PoolingMode::kCls, plan.whole(pooled)});
  plan.set_output("scores", plan.whole(scores));
}

BuiltModel describe(const ModernBertConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = "modernbert";
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = m.kv_heads = c.heads;
  m.intermediate = c.intermediate;
  m.act = c.act;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  m.limits = {c.vocab, 0, static_cast<std::size_t>(c.max_positions)};
  m.capabilities.hidden_states = true;
  if (c.is_classifier) {
    m.capabilities.score = true;
    m.labels = label_names({c.num_labels, c.id2label});
  } else {
    m.capabilities.embed = true;
  }
  return m;
}

void build(BuiltModel& m, const ModernBertConfig& c, const WeightSource& src, const std::optional<DenseWeights>& dense) {
  const std::string p = detect_prefix(src);
  const Trunk trunk = build_trunk(m.plan, c, src, p);
  if (c.is_classifier)
    build_classifier_head(m.plan, c, src, trunk);
  else
    m.embedding_dim = build_embedding_head(m.plan, trunk.hidden, trunk.selected, plan::QueryRows::kFirst,
                                           static_cast<std::size_t>(c.hidden), dense);
}

// The checkpoint against config.json: the layer count, the widths the tensors imply, layer 0
// without an attention norm (transformers builds none; a checkpoint holding one was made by
// something else), and the head a classifier needs (shapes are checked again as tensors load).
void check_against_tensors(const ModernBertConfig& c, const std::string& source, const io::SafeTensors& t,
                           const std::string& p) {
  const std::string last = layer_prefix(p, c.layers - 1) + "attn.Wqkv.weight";
  check(t.has(last), source, ": field \"num_hidden_layers\" = ", c.layers, " but the checkpoint has no tensor \"",
        last, "\" (it holds fewer layers)");
  const std::string extra = layer_prefix(p, c.layers) + "attn.Wqkv.weight";
  check(!t.has(extra), source, ": field \"num_hidden_layers\" = ", c.layers, " but ",
        t.has(extra) ? t.info(extra).file.string() : "", " holds more layers (tensor \"", extra, "\")");
  const std::string norm0 = layer_prefix(p, 0) + "attn_norm.weight";
  check(!t.has(norm0), source, ": the checkpoint has tensor \"", norm0,
        "\", but ModernBERT's layer 0 has no attention norm (transformers would ignore it)");
  const auto expect = [&](const std::string& tensor, std::size_t dim, long long want, const char* field) {
    if (!t.has(tensor)) return;
    const io::TensorInfo& info = t.info(tensor);
    if (info.shape.size() > dim && info.shape[dim] != want)
      throw make_error(source, ": field \"", field, "\" implies ", want, " for dimension ", dim, " of tensor \"",
                       tensor, "\" in ", info.file.string(), ", which has ", info.shape[dim]);
  };
  const std::string n = layer_prefix(p, 0);
  expect(p + "embeddings.tok_embeddings.weight", 0, c.vocab, "vocab_size");
  expect(p + "embeddings.tok_embeddings.weight", 1, c.hidden, "hidden_size");
  expect(n + "mlp.Wi.weight", 0, 2LL * c.intermediate, "intermediate_size (Wi holds 2 × intermediate_size rows)");
  const auto bias_matches = [&](const std::string& tensor, bool want, const char* field) {
    check(t.has(tensor) == want, source, ": field \"", field, "\" = ", want ? "true" : "false", " but the checkpoint ",
          t.has(tensor) ? "has" : "has no", " tensor \"", tensor, "\"");
  };
  bias_matches(n + "attn.Wqkv.bias", c.attention_bias, "attention_bias");
  bias_matches(n + "mlp.Wi.bias", c.mlp_bias, "mlp_bias");
  bias_matches(p + "final_norm.bias", c.norm_bias, "norm_bias");
  if (c.is_classifier) {
    check(t.has("head.dense.weight") && t.has("classifier.weight"), source,
          ": architecture ModernBertForSequenceClassification but the checkpoint has no head.dense.weight / "
          "classifier.weight");
    expect("classifier.weight", 0, c.num_labels, "num_labels");
    bias_matches("head.dense.bias", c.classifier_bias, "classifier_bias");
  }
}

}  // namespace

std::map<std::string, std::vector<int64_t>> modernbert_tensors(const ModernBertConfig& c, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate;
  std::map<std::string, std::vector<int64_t>> t;
  const auto norm = [&](const std::string& name) {
    t[name + ".weight"] = {H};
    if (c.norm_bias) t[name + ".bias"] = {H};
  };
  const auto linear = [&](const std::string& name, int64_t out, int64_t in, bool bias) {
    t[name + ".weight"] = {out, in};
    if (bias) t[name + ".bias"] = {out};
  };
  t[p + "embeddings.tok_embeddings.weight"] = {c.vocab, H};
  norm(p + "embeddings.norm");
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i);
    if (i > 0) norm(n + "attn_norm");
    linear(n + "attn.Wqkv", 3 * H, H, c.attention_bias);
    linear(n + "attn.Wo", H, H, c.attention_bias);
    norm(n + "mlp_norm");
    linear(n + "mlp.Wi", 2 * I, H, c.mlp_bias);
    linear(n + "mlp.Wo", H, I, c.mlp_bias);
  }
  norm(p + "final_norm");
  if (c.is_classifier) {
    linear("head.dense", H, H, c.classifier_bias);
    norm("head.norm");
    linear("classifier", c.num_labels, H, true);
  }
  return t;
}

BuiltModel build_modernbert_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                   const std::string& source) {
  const ModernBertConfig c = parse_modernbert_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kMean);
  const std::string p = detect_prefix(*f.weights);
  check_against_tensors(c, source, f.weights->tensors(), p);
  check_modules_against_model(f.st, c.hidden, source, f.dense_weights ? &f.dense_weights->tensors() : nullptr);
  build(m, c, *f.weights, f.dense());
  return m;
}

BuiltModel build_modernbert_random(const nlohmann::json& config, const std::string& source) {
  const ModernBertConfig c = parse_modernbert_config(config, source);
  BuiltModel m = describe(c);
  m.pooling = PoolingMode::kMean;
  m.normalize = true;
  RandomSource src(modernbert_tensors(c, c.is_classifier ? "model." : ""), checkpoint_dtype(config));
  build(m, c, src, std::nullopt);
  return m;
}

}  // namespace il::models
