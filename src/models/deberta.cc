#include "models/deberta.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "models/config_check.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"
#include "ops/disentangled_attention.h"
#include "models/classifier_labels.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;
using I64 = std::vector<int64_t>;

std::string layer_prefix(const std::string& p, int i) { return p + "encoder.layer." + std::to_string(i) + "."; }

// "" (DebertaV2Model saved alone) or "deberta." (the task heads' checkpoints), probed identically
// for every backend.
std::string detect_prefix(const WeightSource& src) {
  for (const char* p : {"", "deberta."})
    if (src.has(std::string(p) + "embeddings.word_embeddings.weight")) return p;
  throw make_error("no DeBERTa tensors found: probed embeddings.word_embeddings.weight under the prefixes '' and "
                   "'deberta.'");
}

// Eight partial sums: vectorises without reassociation flags (the folds below are large for
// real models: 2·span × hidden × hidden per table and layer).
float dot(const float* a, const float* b, std::size_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[i + l] * b[i + l];
  float r = 0.0f;
  for (; i < n; ++i) r += a[i] * b[i];
  return r + ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// The relative embeddings the attention projects: rows 0 .. 2·span of encoder.rel_embeddings,
// through encoder.LayerNorm where norm_rel_ebd says "layer_norm" (transformers'
// get_rel_embedding, then the slice in disentangled_attention_bias).
std::vector<float> relative_rows(const DebertaConfig& c, const WeightSource& src, const std::string& p) {
  const int64_t H = c.hidden, R = c.rel_rows();
  std::vector<float> rel = src.load(p + "encoder.rel_embeddings.weight", {R, H});
  if (!c.norm_rel_ebd) return rel;
  const std::vector<float> w = src.load(p + "encoder.LayerNorm.weight", {H});
  const std::vector<float> b = src.load(p + "encoder.LayerNorm.bias", {H});
  const std::size_t h = static_cast<std::size_t>(H);
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    float* row = rel.data() + r * h;
    double mean = 0.0, var = 0.0;
    for (std::size_t j = 0; j < h; ++j) mean += row[j];
    mean /= static_cast<double>(h);
    for (std::size_t j = 0; j < h; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(h);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(c.layer_norm_eps));
    for (std::size_t j = 0; j < h; ++j) row[j] = static_cast<float>((row[j] - mean) * inv) * w[j] + b[j];
  }
  return rel;
}

// rel · Wᵀ + b for checkpoint linear `name` ([H, H] weight, [H] bias): a layer's projection of
// the relative rows, folded at load (rows over the pool's threads; each value is one dot product,
// so the result does not depend on the thread count).
std::vector<float> project(const std::vector<float>& rel, int64_t rows, int64_t H, const WeightSource& src,
                           const std::string& name, ThreadPool& pool) {
  const std::vector<float> w = src.load(name + ".weight", {H, H});
  const std::vector<float> b = src.load(name + ".bias", {H});
  const std::size_t h = static_cast<std::size_t>(H);
  std::vector<float> out(static_cast<std::size_t>(rows) * h);
  pool.parallel_for(static_cast<std::size_t>(rows), 4, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t o = 0; o < h; ++o) out[r * h + o] = dot(rel.data() + r * h, w.data() + o * h, h) + b[o];
  });
  return out;
}

struct Trunk {
  BufferId hidden = -1;
};

// transformers' ConvLayer, after the first layer: out = conv_act(Conv1d(embedded) + bias) over
// each sequence (zero padding (k − 1) / 2 at both ends; padding rows are zero in transformers'
// batch too, the embeddings being multiplied by the mask), then layer = LayerNorm(layer + out).
// The Conv1d is one GEMM over each row's window of k neighbours (SequenceWindowStep), its weight
// [H, H / groups, k] laid out at load as [H, k · H] (tap-major, zero outside the output's group).
void add_conv_layer(Layers& l, const DebertaConfig& c, const WeightSource& src, const std::string& p, View embedded,
                    View window, View conv_out, View layer) {
  const int64_t H = c.hidden, k = c.conv_taps, G = c.conv_groups, in_g = H / G;
  const std::string n = p + "encoder.conv.";
  const std::vector<float> w = src.load(n + "conv.weight", {H, in_g, k});
  const std::size_t h = static_cast<std::size_t>(H), taps = static_cast<std::size_t>(k), ig = static_cast<std::size_t>(in_g);
  std::vector<float> unfolded(h * taps * h, 0.0f);
  for (std::size_t o = 0; o < h; ++o) {
    const std::size_t group = o / (h / static_cast<std::size_t>(G));
    for (std::size_t i = 0; i < ig; ++i)
      for (std::size_t j = 0; j < taps; ++j)
        unfolded[o * taps * h + j * h + group * ig + i] = w[(o * ig + i) * taps + j];
  }
  l.add("conv.window", plan::SequenceWindowStep{embedded, taps, window});
  plan::GemmStep g;
  g.x = window;
  g.w = l.plan().add_weight(n + "conv.weight (unfolded)", {H, k * H}, std::move(unfolded));
  g.bias = l.tensor(n + "conv.bias", {H});
  g.act = c.conv_act;
  g.y = conv_out;
  l.add("conv", g);
  const NormSpec ln{false, Bias::kRequired, c.layer_norm_eps};
  l.add("conv.norm", l.norm(n + "LayerNorm", ln, H, conv_out, layer, layer));
}

Trunk build_trunk(plan::Plan& plan, const DebertaConfig& c, const WeightSource& src, const std::string& p,
                  std::size_t max_len) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H);
  Layers l(plan, src, "encode");
  const NormSpec ln{false, Bias::kRequired, c.layer_norm_eps};

  const BufferId cur = plan.add_buffer("hidden", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const int64_t window_cols = static_cast<int64_t>(c.conv_taps) * H;  // the ConvLayer's im2col rows
  const BufferId mid = plan.add_buffer("mid", Rows::kTokens, static_cast<std::size_t>(std::max({I, 3 * H, window_cols})));
  // With the ConvLayer the embeddings' output outlives the first layer: the convolution reads it.
  const BufferId embedded = c.conv_taps > 0 ? plan.add_buffer("embedded", Rows::kTokens, h) : cur;

  // Embeddings: word (+ absolute position where position_biased_input, + segment where the model
  // has a table), projected to hidden by embed_proj where the tables are narrower or wider, then
  // LayerNorm. transformers then multiplies by the attention mask, a no-op without padding.
  const int64_t E = c.embedding_size;
  const bool projected = E != H;
  plan::EmbedStep emb;
  emb.word = l.tensor(p + "embeddings.word_embeddings.weight", {c.vocab, E});
  if (c.position_biased_input)
    emb.position = l.tensor(p + "embeddings.position_embeddings.weight", {c.max_positions, E});
  if (c.type_vocab > 0) emb.type = l.tensor(p + "embeddings.token_type_embeddings.weight", {c.type_vocab, E});
  emb.out = projected ? plan.whole(plan.add_buffer("embedding_sum", Rows::kTokens, static_cast<std::size_t>(E)))
                      : plan.whole(tmp);
  l.add("embeddings", emb);
  if (projected)
    l.add("embeddings.proj", l.linear(p + "embeddings.embed_proj", H, E, emb.out, plan.whole(tmp), Bias::kNone));
  l.add("embeddings.norm", l.norm(p + "embeddings.LayerNorm", ln, H, plan.whole(tmp), {}, plan.whole(embedded)));

  std::vector<float> rel;
  plan::WeightId rel_index = plan::kNoWeight;
  // The folds are 2 · span × hidden × hidden per table and layer (1.2 GFLOP a layer for
  // deberta-v3-base): spread over the machine's threads for the load only.
  std::unique_ptr<ThreadPool> fold_pool;
  if (c.relative_attention && (c.c2p || c.p2c)) fold_pool = std::make_unique<ThreadPool>(0);
  if (c.relative_attention) {
    rel = relative_rows(c, src, p);
    rel_index = plan.add_weight("deberta.rel_index", {static_cast<int64_t>(2 * max_len - 1)},
                                ops::deberta_rel_index_table(max_len, c.span, c.position_buckets, c.max_relative));
  }
  // Scores are divided by sqrt(head_dim · (1 + number of position terms)), whether or not the
  // relative terms are computed (transformers' scale_factor counts pos_att_type alone).
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim) * static_cast<float>(c.scale_factor()));
  const View qkv = plan.slice(mid, 0, 3 * h);
  const View up = plan.slice(mid, 0, static_cast<std::size_t>(I));
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i), L = "L" + std::to_string(i) + ".";
    const std::string a = n + "attention.self.";
    const View input = plan.whole(i == 0 ? embedded : cur);
    l.add(L + "qkv", l.fused_linear(L + "qkv", {{a + "query_proj", H}, {a + "key_proj", H}, {a + "value_proj", H}}, H,
                                    input, qkv, Bias::kRequired));
    const View q = plan.slice(mid, 0, h), k = plan.slice(mid, h, h), v = plan.slice(mid, 2 * h, h);
    if (c.relative_attention) {
      plan::DisentangledAttentionStep att;
      att.q = q;
      att.k = k;
      att.v = v;
      att.heads = static_cast<std::size_t>(c.heads);
      att.head_dim = static_cast<std::size_t>(c.head_dim);
      const int64_t R = c.rel_rows();
      // share_att_key: the relative rows go through the layer's own key / query projections;
      // else through pos_key_proj / pos_query_proj.
      const std::string key_proj = a + (c.share_att_key ? "key_proj" : "pos_key_proj");
      const std::string query_proj = a + (c.share_att_key ? "query_proj" : "pos_query_proj");
      if (c.c2p) att.pos_key = plan.add_weight(L + "pos_key", {R, H}, project(rel, R, H, src, key_proj, *fold_pool));
      if (c.p2c)
        att.pos_query = plan.add_weight(L + "pos_query", {R, H}, project(rel, R, H, src, query_proj, *fold_pool));
      att.rel_index = rel_index;
      att.span = static_cast<std::size_t>(c.span);
      att.max_len = max_len;
      att.position_buckets = c.position_buckets;
      att.max_relative = c.max_relative;
      att.scale = scale;
      att.out = plan.whole(ctx);
      l.add(L + "attention", att);
    } else {
      plan::AttentionStep att;
      att.q = q;
      att.k = k;
      att.v = v;
      att.heads = att.kv_heads = static_cast<std::size_t>(c.heads);
      att.head_dim = static_cast<std::size_t>(c.head_dim);
      att.scale = scale;
      att.out = plan.whole(ctx);
      l.add(L + "attention", att);
    }
    l.add(L + "attn_out", l.linear(n + "attention.output.dense", H, H, plan.whole(ctx), plan.whole(tmp), Bias::kRequired));
    l.add(L + "attn_norm", l.norm(n + "attention.output.LayerNorm", ln, H, plan.whole(tmp), input, plan.whole(cur)));
    l.add(L + "mlp_up", l.linear(n + "intermediate.dense", I, H, plan.whole(cur), up, Bias::kRequired, c.act));
    l.add(L + "mlp_down", l.linear(n + "output.dense", H, I, up, plan.whole(tmp), Bias::kRequired));
    l.add(L + "mlp_norm", l.norm(n + "output.LayerNorm", ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(cur)));
    if (i == 0 && c.conv_taps > 0)
      add_conv_layer(l, c, src, p, plan.whole(embedded), plan.slice(mid, 0, static_cast<std::size_t>(window_cols)),
                     plan.whole(tmp), plan.whole(cur));
  }
  plan.set_output("hidden", plan.whole(cur));
  return {cur};
}

// DebertaV2ForSequenceClassification: ContextPooler (the first token's row → dense →
// pooler_hidden_act), then the classifier.
void build_classifier_head(plan::Plan& plan, const DebertaConfig& c, const WeightSource& src, const std::string& p,
                           const Trunk& trunk) {
  const int64_t H = c.hidden, NL = c.num_labels;
  const std::size_t h = static_cast<std::size_t>(H);
  (void)p;  // the head's tensors sit outside the "deberta." prefix
  check(src.has("pooler.dense.weight") && src.has("classifier.weight"),
        "DebertaV2ForSequenceClassification: expected pooler.dense.weight and classifier.weight in the checkpoint");
  const BufferId cls = plan.add_buffer("ce_cls", Rows::kSequences, h);
  const BufferId pooled = plan.add_buffer("ce_dense", Rows::kSequences, h);
  const BufferId scores = plan.add_buffer("scores", Rows::kSequences, static_cast<std::size_t>(NL));
  Layers l(plan, src, "ce_head");
  l.add("ce.cls", plan::PoolStep{plan.whole(trunk.hidden), PoolingMode::kCls, plan.whole(cls)});
  l.add("ce.pooler", l.linear("pooler.dense", H, H, plan.whole(cls), plan.whole(pooled), Bias::kRequired, c.pooler_act));
  l.add("ce.classifier", l.linear("classifier", NL, H, plan.whole(pooled), plan.whole(scores), Bias::kRequired));
  plan.set_output("scores", plan.whole(scores));
}

std::size_t max_tokens(const DebertaConfig& c) { return static_cast<std::size_t>(c.max_positions); }

BuiltModel describe(const DebertaConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architectures.empty() ? "DebertaV2Model" : c.architectures.front();
  m.layout = c.relative_attention ? (c.position_buckets > 0 ? "deberta-v2 (disentangled attention, log buckets)"
                                                            : "deberta-v2 (disentangled attention)")
                                  : "deberta-v2 (no relative attention)";
  if (c.p2p_listed)
    m.notes.push_back("pos_att_type lists p2p, which transformers' DebertaV2 neither computes nor counts in the "
                      "attention scale: ignored the same way");
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = m.kv_heads = c.heads;
  m.intermediate = c.intermediate;
  m.act = c.act;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  // Without a segment table (DeBERTa-v3) transformers never reads token_type_ids, while the
  // tokenizer's pair template marks the second segment 1: both are accepted and ignored.
  m.limits = {c.vocab, c.type_vocab > 0 ? c.type_vocab : 2, max_tokens(c)};
  m.capabilities.hidden_states = true;
  if (c.is_cross_encoder) {
    m.capabilities.score = true;
    m.labels = label_names({c.num_labels, c.id2label});
  } else {
    m.capabilities.embed = true;
  }
  return m;
}

void build(BuiltModel& m, const DebertaConfig& c, const WeightSource& src, const std::optional<DenseWeights>& dense) {
  const std::string p = detect_prefix(src);
  const Trunk trunk = build_trunk(m.plan, c, src, p, max_tokens(c));
  if (c.is_cross_encoder)
    build_classifier_head(m.plan, c, src, p, trunk);
  else
    m.embedding_dim = build_embedding_head(m.plan, trunk.hidden, -1, plan::QueryRows::kFirst,
                                           static_cast<std::size_t>(c.hidden), dense);
}

// config.json against the checkpoint: the layer count and the widths the tables imply (every
// tensor's shape is checked again as it loads, naming the tensor).
void check_against_tensors(const DebertaConfig& c, const std::string& source, const io::SafeTensors& t,
                           const std::string& p) {
  const std::string last = layer_prefix(p, c.layers - 1) + "attention.self.query_proj.weight";
  check(t.has(last), source, ": field \"num_hidden_layers\" = ", c.layers, " but the checkpoint has no tensor \"", last,
        "\" (it holds fewer layers)");
  const std::string extra = layer_prefix(p, c.layers) + "attention.self.query_proj.weight";
  check(!t.has(extra), source, ": field \"num_hidden_layers\" = ", c.layers, " but the checkpoint holds more layers (",
        "tensor \"", extra, "\")");
  const auto expect = [&](const std::string& tensor, std::size_t dim, long long want, const char* field) {
    if (!t.has(tensor)) return;
    const io::TensorInfo& info = t.info(tensor);
    if (info.shape.size() > dim && info.shape[dim] != want)
      throw make_error(source, ": field \"", field, "\" implies ", want, " for dimension ", dim, " of tensor \"", tensor,
                       "\" in ", info.file.string(), ", which has ", info.shape[dim]);
  };
  expect(p + "embeddings.word_embeddings.weight", 0, c.vocab, "vocab_size");
  expect(p + "embeddings.word_embeddings.weight", 1, c.embedding_size,
         c.embedding_size == c.hidden ? "hidden_size" : "embedding_size");
  expect(layer_prefix(p, 0) + "intermediate.dense.weight", 0, c.intermediate, "intermediate_size");
  const std::string types = p + "embeddings.token_type_embeddings.weight";
  check(c.type_vocab > 0 || !t.has(types), source, ": field \"type_vocab_size\" = 0 but the checkpoint has \"", types,
        "\"");
  expect(types, 0, c.type_vocab, "type_vocab_size");
  const std::string positions = p + "embeddings.position_embeddings.weight";
  check(c.position_biased_input || !t.has(positions), source,
        ": field \"position_biased_input\" is false but the checkpoint has \"", positions, "\"");
  expect(positions, 0, c.max_positions, "max_position_embeddings");
  if (c.relative_attention)
    expect(p + "encoder.rel_embeddings.weight", 0, c.rel_rows(),
           c.position_buckets > 0 ? "position_buckets" : "max_relative_positions");
  if (c.is_cross_encoder) expect("classifier.weight", 0, c.num_labels, "num_labels");
}

}  // namespace

std::map<std::string, std::vector<int64_t>> deberta_tensors(const DebertaConfig& c) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::string p = c.is_cross_encoder ? "deberta." : "";
  std::map<std::string, I64> t;
  const auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    t[n + ".weight"] = {out, in};
    t[n + ".bias"] = {out};
  };
  const auto norm = [&](const std::string& n) {
    t[n + ".weight"] = {H};
    t[n + ".bias"] = {H};
  };
  const int64_t E = c.embedding_size;
  t[p + "embeddings.word_embeddings.weight"] = {c.vocab, E};
  if (c.position_biased_input) t[p + "embeddings.position_embeddings.weight"] = {c.max_positions, E};
  if (c.type_vocab > 0) t[p + "embeddings.token_type_embeddings.weight"] = {c.type_vocab, E};
  if (E != H) t[p + "embeddings.embed_proj.weight"] = {H, E};
  norm(p + "embeddings.LayerNorm");
  if (c.relative_attention) {
    t[p + "encoder.rel_embeddings.weight"] = {c.rel_rows(), H};
    if (c.norm_rel_ebd) norm(p + "encoder.LayerNorm");
  }
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i);
    for (const char* part : {"query_proj", "key_proj", "value_proj"}) linear(n + "attention.self." + part, H, H);
    if (c.relative_attention && !c.share_att_key) {
      if (c.c2p) linear(n + "attention.self.pos_key_proj", H, H);
      if (c.p2c) linear(n + "attention.self.pos_query_proj", H, H);
    }
    linear(n + "attention.output.dense", H, H);
    norm(n + "attention.output.LayerNorm");
    linear(n + "intermediate.dense", I, H);
    linear(n + "output.dense", H, I);
    norm(n + "output.LayerNorm");
  }
  if (c.conv_taps > 0) {
    t[p + "encoder.conv.conv.weight"] = {H, H / c.conv_groups, c.conv_taps};
    t[p + "encoder.conv.conv.bias"] = {H};
    norm(p + "encoder.conv.LayerNorm");
  }
  if (c.is_cross_encoder) {
    linear("pooler.dense", H, H);
    linear("classifier", c.num_labels, H);
  }
  return t;
}

BuiltModel build_deberta_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                const std::string& source) {
  const DebertaConfig c = parse_deberta_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kMean);
  const std::string p = detect_prefix(*f.weights);
  check_against_tensors(c, source, f.weights->tensors(), p);
  check_modules_against_model(f.st, c.hidden, source, f.dense_weights ? &f.dense_weights->tensors() : nullptr);
  build(m, c, *f.weights, f.dense());
  return m;
}

BuiltModel build_deberta_random(const nlohmann::json& config, const std::string& source) {
  const DebertaConfig c = parse_deberta_config(config, source);
  BuiltModel m = describe(c);
  m.pooling = PoolingMode::kMean;
  m.normalize = true;
  RandomSource src(deberta_tensors(c), checkpoint_dtype(config));
  build(m, c, src, std::nullopt);
  return m;
}

}  // namespace il::models
