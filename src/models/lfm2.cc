#include "models/lfm2.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/colbert_config.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;

std::string layer_prefix(const std::string& prefix, int i) { return prefix + "layers." + std::to_string(i) + "."; }

// "" (an Lfm2Model saved alone, as LFM2-ColBERT's trunk is) or "model." (inside Lfm2ForCausalLM).
std::string detect_prefix(const WeightSource& src) {
  for (const char* p : {"", "model."})
    if (src.has(std::string(p) + "embed_tokens.weight")) return p;
  throw make_error("no LFM2 tensors found: probed embed_tokens.weight under the prefixes '' and 'model.'");
}

// The trunk into program "encode"; returns the buffer holding the final norm's output.
BufferId build_trunk(plan::Plan& plan, const Lfm2Config& c, const WeightSource& src, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.heads), kv_heads = static_cast<std::size_t>(c.kv_heads);
  const std::size_t qkv_cols = (heads + 2 * kv_heads) * hd, inner = static_cast<std::size_t>(I);
  const bool has_conv = c.attention_layers() < c.layers;
  Layers l(plan, src, "encode");
  const NormSpec rms{true, Bias::kNone, c.norm_eps};

  // The residual stream, the normed stream (each block's input; at the end the output), the
  // attention context or the convolution's output, a projection output, one wide buffer for
  // QKV, the convolution's B | C | x and the MLP's gate and up projections, and the MLP's gated
  // activations.
  const BufferId cur = plan.add_buffer("residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer("normed", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, std::max(heads * hd, has_conv ? h : 0));
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId wide =
      plan.add_buffer("wide", Rows::kTokens, std::max({qkv_cols, 2 * inner, has_conv ? 3 * h : std::size_t{0}}));
  const BufferId act = plan.add_buffer("mlp_act", Rows::kTokens, inner);

  plan::EmbedStep emb;  // positions enter through the rotary embeddings of the attention layers
  emb.word = l.tensor(p + "embed_tokens.weight", {c.vocab, H});
  emb.out = plan.whole(cur);
  l.add("embeddings", emb);

  AttentionShape shape;
  shape.hidden = H;
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = hd;
  shape.qk_norm = rms;
  shape.rope_theta = c.rope_theta;
  // Lfm2Model builds a causal mask (its attention sets is_causal), and the ColBERT folders use
  // the trunk as it is.
  shape.mask = ops::MaskMode::kCausal;

  l.add("L0.operator_norm",
        l.norm(layer_prefix(p, 0) + "operator_norm", rms, H, plan.whole(cur), {}, plan.whole(normed)));
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i), L = "L" + std::to_string(i) + ".";
    if (c.attention_layer[static_cast<std::size_t>(i)]) {
      const std::string a = n + "self_attn.";
      attention_block(l, L, {a + "q_proj", a + "k_proj", a + "v_proj", a + "out_proj", a + "q_layernorm",
                             a + "k_layernorm"},
                      shape, plan.whole(normed), plan.slice(wide, 0, qkv_cols), plan.whole(ctx), plan.whole(tmp));
    } else {
      const std::string v = n + "conv.";
      const plan::View bcx = plan.slice(wide, 0, 3 * h), conv_out = plan.slice(ctx, 0, h);
      l.add(L + "in_proj", l.linear(v + "in_proj", 3 * H, H, plan.whole(normed), bcx, Bias::kNone));
      plan::ShortConvStep conv;
      conv.x = bcx;
      conv.w = l.tensor(v + "conv.weight", {H, 1, c.conv_taps});
      conv.taps = static_cast<std::size_t>(c.conv_taps);
      conv.out = conv_out;
      l.add(L + "short_conv", conv);
      l.add(L + "out_proj", l.linear(v + "out_proj", H, H, conv_out, plan.whole(tmp), Bias::kNone));
    }
    // residual += operator; normed = ffn_norm(residual), in one step.
    l.add(L + "ffn_norm",
          l.norm(n + "ffn_norm", rms, H, plan.whole(tmp), plan.whole(cur), plan.whole(normed), plan.whole(cur)));
    glu_mlp(l, L, {n + "feed_forward.w1", n + "feed_forward.w3", n + "feed_forward.w2"}, H, I, Activation::kSilu,
            Bias::kNone, plan.whole(normed), plan.slice(wide, 0, 2 * inner), plan.whole(act), plan.whole(tmp));
    // residual += MLP; normed = the next layer's operator norm, or the final embedding_norm.
    const bool last = i + 1 == c.layers;
    l.add(last ? "embedding_norm" : "L" + std::to_string(i + 1) + ".operator_norm",
          l.norm(last ? p + "embedding_norm" : layer_prefix(p, i + 1) + "operator_norm", rms, H, plan.whole(tmp),
                 plan.whole(cur), plan.whole(normed), plan.whole(cur)));
  }
  plan.set_output("hidden", plan.whole(normed));
  return normed;
}

// The PyLate (ColBERT) head: every token's final hidden row through the folder's Dense projection
// (no pooling), then L2-normalised: program "tokens", output "tokens" [T, out_features]. Returns
// the width.
std::size_t build_colbert_head(plan::Plan& plan, BufferId hidden, std::size_t hidden_size, const DenseWeights& dense) {
  const auto& m = dense.module;
  check(static_cast<std::size_t>(m.in_features) == hidden_size, "Dense module in ", m.dir.string(), ": in_features ",
        m.in_features, " does not match the hidden size ", hidden_size);
  const int64_t out = m.out_features, in = m.in_features;
  const BufferId tokens = plan.add_buffer("token_vectors", Rows::kTokens, static_cast<std::size_t>(out));
  plan::GemmStep proj;
  proj.x = plan.whole(hidden);
  proj.w = plan.add_weight("dense.linear.weight", {out, in}, dense.src->load("linear.weight", {out, in}));
  if (m.bias) proj.bias = plan.add_weight("dense.linear.bias", {out}, dense.src->load("linear.bias", {out}));
  proj.act = m.act;
  proj.y = plan.whole(tokens);
  plan.add_step("tokens", "dense", proj);
  plan.add_step("tokens", "l2", plan::L2Step{plan.whole(tokens)});
  plan.set_output("tokens", plan.whole(tokens));
  return static_cast<std::size_t>(out);
}

BuiltModel describe(const Lfm2Config& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = "lfm2";
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads;
  m.intermediate = c.intermediate;
  m.act = Activation::kSilu;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  m.limits = {c.vocab, 0, static_cast<std::size_t>(c.max_positions)};
  m.capabilities.hidden_states = true;
  m.capabilities.embed = true;
  return m;
}

void build(BuiltModel& m, const Lfm2Config& c, const WeightSource& src) {
  const std::string p = detect_prefix(src);
  const BufferId hidden = build_trunk(m.plan, c, src, p);
  m.embedding_dim = build_embedding_head(m.plan, hidden, -1, plan::QueryRows::kLast,
                                         static_cast<std::size_t>(c.hidden), std::nullopt);
}

// The checkpoint against config.json: the layer count, each layer's kind, and the widths the
// tensors imply (shapes of every tensor are checked again as they load).
void check_against_tensors(const Lfm2Config& c, const std::string& source, const io::SafeTensors& t,
                           const std::string& p) {
  const std::string last = layer_prefix(p, c.layers - 1) + "operator_norm.weight";
  check(t.has(last), source, ": field \"num_hidden_layers\" = ", c.layers, " but the checkpoint has no tensor \"",
        last, "\" (it holds fewer layers)");
  const std::string extra = layer_prefix(p, c.layers) + "operator_norm.weight";
  check(!t.has(extra), source, ": field \"num_hidden_layers\" = ", c.layers, " but ",
        t.has(extra) ? t.info(extra).file.string() : "", " holds more layers (tensor \"", extra, "\")");
  for (int i = 0; i < c.layers; ++i) {
    const bool attn = c.attention_layer[static_cast<std::size_t>(i)];
    const std::string want = layer_prefix(p, i) + (attn ? "self_attn.q_proj.weight" : "conv.in_proj.weight");
    const std::string other = layer_prefix(p, i) + (attn ? "conv.in_proj.weight" : "self_attn.q_proj.weight");
    check(t.has(want) || !t.has(other), source, ": layer ", i, " is ", attn ? "an attention" : "a conv",
          " layer by \"layer_types\" / \"full_attn_idxs\", but the checkpoint holds \"", other, "\" for it");
  }
  const auto expect = [&](const std::string& tensor, std::size_t dim, long long want, const char* field) {
    if (!t.has(tensor)) return;
    const io::TensorInfo& info = t.info(tensor);
    if (info.shape.size() > dim && info.shape[dim] != want)
      throw make_error(source, ": field \"", field, "\" implies ", want, " for dimension ", dim, " of tensor \"",
                       tensor, "\" in ", info.file.string(), ", which has ", info.shape[dim]);
  };
  expect(p + "embed_tokens.weight", 0, c.vocab, "vocab_size");
  expect(p + "embed_tokens.weight", 1, c.hidden, "hidden_size");
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i);
    expect(n + "self_attn.q_proj.weight", 0, static_cast<long long>(c.heads) * c.head_dim,
           "num_attention_heads × head_dim");
    expect(n + "self_attn.k_proj.weight", 0, static_cast<long long>(c.kv_heads) * c.head_dim,
           "num_key_value_heads × head_dim");
    expect(n + "conv.conv.weight", 2, c.conv_taps, "conv_L_cache");
    expect(n + "feed_forward.w1.weight", 0, c.intermediate,
           "block_ff_dim / intermediate_size (with block_auto_adjust_ff_dim, block_ffn_dim_multiplier, "
           "block_multiple_of)");
  }
}

}  // namespace

std::map<std::string, std::vector<int64_t>> lfm2_tensors(const Lfm2Config& c, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate, hd = c.head_dim;
  std::map<std::string, std::vector<int64_t>> t;
  t[p + "embed_tokens.weight"] = {c.vocab, H};
  t[p + "embedding_norm.weight"] = {H};
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i);
    t[n + "operator_norm.weight"] = {H};
    t[n + "ffn_norm.weight"] = {H};
    if (c.attention_layer[static_cast<std::size_t>(i)]) {
      t[n + "self_attn.q_proj.weight"] = {c.heads * hd, H};
      t[n + "self_attn.k_proj.weight"] = {c.kv_heads * hd, H};
      t[n + "self_attn.v_proj.weight"] = {c.kv_heads * hd, H};
      t[n + "self_attn.out_proj.weight"] = {H, c.heads * hd};
      t[n + "self_attn.q_layernorm.weight"] = {hd};
      t[n + "self_attn.k_layernorm.weight"] = {hd};
    } else {
      t[n + "conv.in_proj.weight"] = {3 * H, H};
      t[n + "conv.conv.weight"] = {H, 1, c.conv_taps};
      t[n + "conv.out_proj.weight"] = {H, H};
    }
    t[n + "feed_forward.w1.weight"] = {I, H};
    t[n + "feed_forward.w3.weight"] = {I, H};
    t[n + "feed_forward.w2.weight"] = {H, I};
  }
  return t;
}

BuiltModel build_lfm2_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                             const std::string& source) {
  const Lfm2Config c = parse_lfm2_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kMean);
  const std::string p = detect_prefix(*f.weights);
  check_against_tensors(c, source, f.weights->tensors(), p);
  if (!f.st.present) {
    build(m, c, *f.weights);
    return m;
  }
  // The PyLate (LFM2-ColBERT) layout: Transformer + Dense on every token, no Pooling. Its plan
  // computes the normalised per-token vectors (program "tokens"), which the engine serves as a
  // multi-vector model (token vectors, MaxSim scores), tokenizing queries and documents as the
  // folder's PyLate settings say; hidden states stay available. A sentence-transformers folder
  // with a Pooling module over this trunk is not a layout LFM2 ships: refused.
  check(!f.st.pooling && f.dense(), dir.string(), ": an lfm2 folder with sentence-transformers modules is supported ",
        "in the PyLate (ColBERT) layout only: a Transformer and a Dense module, no Pooling (modules.json)");
  m.colbert = read_colbert_config(dir);
  // PyLate's default (attend_to_expansion_tokens false) gives a query's expansion tokens
  // attention mask 0: no token reads them as keys, and transformers 5.17's LFM2 zeroes their rows
  // before each convolution's in-projection (so their convolution output is zero). The engine
  // marks them through TokenInput::attended_tokens (runtime/colbert_inputs) →
  // plan::Batch::key_limits.
  m.capabilities.embed = false;
  m.capabilities.multi_vector = true;
  m.layout = "lfm2-colbert";
  const BufferId hidden = build_trunk(m.plan, c, *f.weights, p);
  m.embedding_dim = build_colbert_head(m.plan, hidden, static_cast<std::size_t>(c.hidden), *f.dense());
  return m;
}

BuiltModel build_lfm2_random(const nlohmann::json& config, const std::string& source) {
  const Lfm2Config c = parse_lfm2_config(config, source);
  BuiltModel m = describe(c);
  m.pooling = PoolingMode::kMean;
  RandomSource src(lfm2_tensors(c, ""), checkpoint_dtype(config));
  build(m, c, src);
  return m;
}

}  // namespace il::models
