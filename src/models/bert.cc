#include "models/bert.h"

#include <algorithm>
#include <cmath>

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

}  // namespace

BertLayerTensors bert_layer_tensors(const BertNames& names, int i) {
  const LayerNames n = layer_names(names, i);
  return {(n.qkv_fused.empty() ? n.q : n.qkv_fused) + ".weight", n.up + ".weight"};
}

CrossEncoderHeadNames cross_encoder_head_names(const WeightSource& src, const BertNames& names) {
  if (src.has(names.prefix + "pooler.dense.weight")) return {names.prefix + "pooler.dense", "classifier"};
  return {"classifier.dense", "classifier.out_proj"};
}

BertNames detect_bert_names(const WeightSource& src, const BertConfig& cfg) {
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

EncoderBuffers build_bert_encoder(plan::Plan& plan, const BertConfig& cfg,
                                  const WeightSource& src, const BertNames& names) {
  const int64_t H = cfg.hidden, I = cfg.intermediate;
  const std::size_t h = static_cast<std::size_t>(H);
  const std::string& p = names.prefix;
  Layers l(plan, src, "encode");
  const NormSpec ln{false, Bias::kRequired, cfg.layer_norm_eps};

  // Scratch: the residual stream, attention context, a projection output, and one wide buffer
  // shared by the packed QKV projection and the MLP's intermediate activations.
  const BufferId cur = plan.add_buffer("hidden", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId mid = plan.add_buffer("mid", Rows::kTokens, static_cast<std::size_t>(std::max(I, 3 * H)));

  plan::EmbedStep emb;
  emb.word = l.tensor(p + "embeddings.word_embeddings.weight", {cfg.vocab, H});
  emb.position = l.tensor(p + "embeddings.position_embeddings.weight", {cfg.max_positions, H});
  if (cfg.type_vocab > 0) emb.type = l.tensor(p + "embeddings.token_type_embeddings.weight", {cfg.type_vocab, H});
  emb.position_offset = static_cast<std::size_t>(cfg.position_offset);
  emb.out = plan.whole(tmp);
  l.add("embeddings", emb);
  const std::string emb_ln = names.layout == BertLayout::kJina ? p + "emb_ln" : p + "embeddings.LayerNorm";
  l.add("embeddings.norm", l.norm(emb_ln, ln, H, plan.whole(tmp), {}, plan.whole(cur)));

  const View qkv = plan.slice(mid, 0, 3 * h);
  const View up = plan.slice(mid, 0, static_cast<std::size_t>(I));
  for (int i = 0; i < cfg.layers; ++i) {
    const LayerNames n = layer_names(names, i);
    const std::string L = "L" + std::to_string(i) + ".";
    // Q, K and V as one GEMM (jina stores them fused; the others are fused at load, q, k, v).
    if (names.layout == BertLayout::kJina)
      l.add(L + "qkv", l.linear(n.qkv_fused, 3 * H, H, plan.whole(cur), qkv, Bias::kRequired));
    else
      l.add(L + "qkv", l.fused_linear(L + "qkv", {{n.q, H}, {n.k, H}, {n.v, H}}, H, plan.whole(cur), qkv,
                                      Bias::kRequired));
    plan::AttentionStep attn;
    attn.q = plan.slice(mid, 0, h);
    attn.k = plan.slice(mid, h, h);
    attn.v = plan.slice(mid, 2 * h, h);
    attn.heads = attn.kv_heads = static_cast<std::size_t>(cfg.heads);
    attn.head_dim = static_cast<std::size_t>(cfg.head_dim);
    attn.scale = 1.0f / std::sqrt(static_cast<float>(cfg.head_dim));
    attn.out = plan.whole(ctx);
    l.add(L + "attention", attn);
    l.add(L + "attn_out", l.linear(n.out, H, H, plan.whole(ctx), plan.whole(tmp), Bias::kRequired));
    // Post-norm: LN(sublayer output + residual), written over the residual stream.
    l.add(L + "attn_norm", l.norm(n.ln1, ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(cur)));
    l.add(L + "mlp_up", l.linear(n.up, I, H, plan.whole(cur), up, Bias::kRequired, cfg.act));
    l.add(L + "mlp_down", l.linear(n.down, H, I, up, plan.whole(tmp), Bias::kRequired));
    l.add(L + "mlp_norm", l.norm(n.ln2, ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(cur)));
  }
  plan.set_output("hidden", plan.whole(cur));
  // The last layer for first tokens only: all a CLS-pooled embedding or a cross-encoder head reads.
  const std::vector<BufferId> selected = add_selected_program(plan, "encode", "encode_first", plan::QueryRows::kFirst);
  return {cur, selected.at(static_cast<std::size_t>(cur))};
}

void build_cross_encoder_head(plan::Plan& plan, const BertConfig& cfg,
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
  pool.x = plan.whole(encoder.selected);  // one row per sequence already
  plan.add_step("ce_head_first", "ce.cls", pool);

  Layers l(plan, src, "ce_head");
  const plan::GemmStep dense_step =
      l.linear(dense, H, H, plan.whole(cls), plan.whole(mid), Bias::kRequired, Activation::kTanh);
  const plan::GemmStep classifier = l.linear(out, NL, H, plan.whole(mid), plan.whole(scores), Bias::kRequired);
  for (const char* program : {"ce_head", "ce_head_first"}) {
    plan.add_step(program, "ce.dense", dense_step);
    plan.add_step(program, "ce.classifier", classifier);
  }
  plan.set_output("scores", plan.whole(scores));
}

std::map<std::string, std::vector<int64_t>> bert_standard_tensors(const BertConfig& cfg) {
  const int64_t H = cfg.hidden, I = cfg.intermediate;
  const bool roberta = cfg.flavor == BertFlavor::kXlmRoberta;
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

namespace {

std::string layout_name(const BertConfig& cfg, const BertNames& names) {
  if (names.layout == BertLayout::kJina) return "jina-xlm-roberta";
  switch (cfg.flavor) {
    case BertFlavor::kBert: return "bert";
    case BertFlavor::kXlmRoberta: return "xlm-roberta";
  }
  return "?";
}

BuiltModel describe(const BertConfig& cfg) {
  BuiltModel m;
  m.model_type = cfg.model_type;
  m.architecture = cfg.architectures.empty() ? cfg.model_type : cfg.architectures.front();
  m.hidden = cfg.hidden;
  m.layers = cfg.layers;
  m.heads = m.kv_heads = cfg.heads;
  m.intermediate = cfg.intermediate;
  m.act = cfg.act;
  m.random_weights = cfg.random_weights;
  m.hidden_size = static_cast<std::size_t>(cfg.hidden);
  m.limits = {cfg.vocab, cfg.type_vocab, static_cast<std::size_t>(std::max(1, cfg.max_tokens_per_sequence()))};
  m.capabilities.hidden_states = true;
  if (cfg.is_cross_encoder) {
    m.capabilities.score = true;
    m.labels = label_names({cfg.num_labels, cfg.id2label});
  } else {
    m.capabilities.embed = true;
  }
  return m;
}

void build(BuiltModel& m, const BertConfig& cfg, const WeightSource& src,
           const std::optional<DenseWeights>& dense) {
  const BertNames names = detect_bert_names(src, cfg);
  m.layout = layout_name(cfg, names);
  const EncoderBuffers encoder = build_bert_encoder(m.plan, cfg, src, names);
  if (cfg.is_cross_encoder)
    build_cross_encoder_head(m.plan, cfg, src, names, encoder);
  else
    m.embedding_dim = build_embedding_head(m.plan, encoder.hidden, encoder.selected, plan::QueryRows::kFirst,
                                           static_cast<std::size_t>(cfg.hidden), dense);
}

}  // namespace

BuiltModel build_bert_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                             const std::string& source) {
  const BertConfig cfg = parse_bert_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(cfg);
  describe_folder(m, f, PoolingMode::kMean);
  check_config_against_tensors(cfg, source, f.weights->tensors(), *f.weights, detect_bert_names(*f.weights, cfg));
  check_modules_against_model(f.st, cfg.hidden, source, f.dense_weights ? &f.dense_weights->tensors() : nullptr);
  build(m, cfg, *f.weights, f.dense());
  return m;
}

BuiltModel build_bert_random(const nlohmann::json& config, const std::string& source) {
  const BertConfig cfg = parse_bert_config(config, source);
  BuiltModel m = describe(cfg);
  m.pooling = PoolingMode::kMean;
  m.normalize = true;
  RandomSource src(bert_standard_tensors(cfg), checkpoint_dtype(config));
  build(m, cfg, src, std::nullopt);
  return m;
}

}  // namespace il::models
