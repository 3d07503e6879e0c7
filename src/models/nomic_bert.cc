#include "models/nomic_bert.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/config_check.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

// The tensors of one layer (linears and norms without ".weight"), in either layout
// (models/nomic_config.h): the release's fused Wqkv, or transformers' q / k / v.
struct LayerNames {
  std::string wqkv, q, k, v, out, gate, up, fc1, down, norm1, norm2;
};

std::string layer_prefix(const NomicConfig& c, const std::string& prefix, int i) {
  return prefix + (c.transformers_layout ? "layers." : "encoder.layers.") + std::to_string(i) + ".";
}

LayerNames layer_names(const NomicConfig& c, const std::string& prefix, int i) {
  const std::string n = layer_prefix(c, prefix, i);
  if (c.transformers_layout)
    return {"", n + "self_attn.q_proj", n + "self_attn.k_proj", n + "self_attn.v_proj", n + "self_attn.o_proj",
            n + "mlp.gate_proj", n + "mlp.up_proj", "", n + "mlp.down_proj", n + "post_attention_layernorm",
            n + "post_mlp_layernorm"};
  // The gated one is fc12: fc2( fc11(x) ⊙ act(fc12(x)) ).
  return {n + "attn.Wqkv", "", "", "", n + "attn.out_proj", n + "mlp.fc12", n + "mlp.fc11", n + "mlp.fc1",
          n + "mlp.fc2", n + "norm1", n + "norm2"};
}

std::string emb_norm_name(const NomicConfig& c, const std::string& prefix) {
  return prefix + (c.transformers_layout ? "embeddings.LayerNorm" : "emb_ln");
}

// Release layout: "" (a NomicBertModel, as nomic-embed-text ships) or "bert."
// (NomicBertForPreTraining); the fused Wqkv tells it from a jina-bert folder (mixer.Wqkv).
// transformers' layout: "" (its NomicBertModel), or "nomic_bert." / "model." inside a task head.
std::string detect_prefix(const NomicConfig& c, const WeightSource& src) {
  const std::vector<std::string> prefixes =
      c.transformers_layout ? std::vector<std::string>{"", "nomic_bert.", "model."} : std::vector<std::string>{"", "bert."};
  const std::string probe = c.transformers_layout ? "self_attn.q_proj.weight" : "attn.Wqkv.weight";
  std::string probed;
  for (const std::string& prefix : prefixes) {
    if (src.has(prefix + "embeddings.word_embeddings.weight") && src.has(layer_prefix(c, prefix, 0) + probe))
      return prefix;
    probed += (probed.empty() ? "'" : ", '") + prefix + "'";
  }
  throw make_error("no nomic-bert tensors found: probed embeddings.word_embeddings.weight and ",
                   layer_prefix(c, "", 0), probe, " under the prefixes ", probed,
                   c.transformers_layout ? " (config.json is transformers' NomicBertConfig: hidden_size, ...)"
                                         : " (config.json is the release's: n_embd, ...)");
}

Bias bias_if(bool on) { return on ? Bias::kRequired : Bias::kNone; }

struct Trunk {
  BufferId hidden = -1, selected = -1;
};

Trunk build_trunk(plan::Plan& plan, const NomicConfig& c, const WeightSource& src, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), inner = static_cast<std::size_t>(I);
  const std::size_t heads = static_cast<std::size_t>(c.heads), hd = static_cast<std::size_t>(c.head_dim);
  Layers l(plan, src, "encode");
  const NormSpec ln{false, Bias::kRequired, c.layer_norm_eps};

  // The residual stream (each layer's output, post-norm), the attention context, a projection
  // output, one wide buffer for the packed QKV and then the MLP's fc12 | fc11 (or fc1) outputs,
  // and the gated MLP's products.
  const BufferId cur = plan.add_buffer("hidden", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId wide = plan.add_buffer("wide", Rows::kTokens, std::max(3 * h, c.gated ? 2 * inner : inner));
  const BufferId act = c.gated ? plan.add_buffer("mlp_act", Rows::kTokens, inner) : -1;

  // Word + token-type row (the type ids are zeros unless given), no position table.
  plan::EmbedStep emb;
  emb.word = l.tensor(p + "embeddings.word_embeddings.weight", {c.vocab, H});
  if (c.type_vocab > 0) emb.type = l.tensor(p + "embeddings.token_type_embeddings.weight", {c.type_vocab, H});
  emb.out = plan.whole(tmp);
  l.add("embeddings", emb);
  l.add("embeddings.norm", l.norm(emb_norm_name(c, p), ln, H, plan.whole(tmp), {}, plan.whole(cur)));

  const View q = plan.slice(wide, 0, h), k = plan.slice(wide, h, h), v = plan.slice(wide, 2 * h, h);
  const std::size_t rdim = static_cast<std::size_t>(c.rotary_dim);
  for (int i = 0; i < c.layers; ++i) {
    const LayerNames n = layer_names(c, p, i);
    const std::string L = "L" + std::to_string(i) + ".";
    // Wqkv's rows are q | k | v, each heads × head_dim (the contrib "(three h d)" split); the
    // transformers layout's three tensors are stacked in that order.
    if (c.transformers_layout)
      l.add(L + "qkv", l.fused_linear(L + "qkv", {{n.q, H}, {n.k, H}, {n.v, H}}, H, plan.whole(cur),
                                      plan.slice(wide, 0, 3 * h), bias_if(c.qkv_bias)));
    else
      l.add(L + "qkv", l.linear(n.wqkv, 3 * H, H, plan.whole(cur), plan.slice(wide, 0, 3 * h), bias_if(c.qkv_bias)));
    l.add(L + "q_rope", plan::RopeStep{q, heads, hd, rdim, c.rotary_base, c.rotary_interleaved});
    l.add(L + "k_rope", plan::RopeStep{k, heads, hd, rdim, c.rotary_base, c.rotary_interleaved});
    plan::AttentionStep a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.heads = a.kv_heads = heads;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.mask = ops::MaskMode::kBidirectional;
    a.out = plan.whole(ctx);
    l.add(L + "attention", a);
    // out_proj's bias follows qkv_proj_bias in the contrib attention.
    l.add(L + "attn_out", l.linear(n.out, H, H, plan.whole(ctx), plan.whole(tmp), bias_if(c.qkv_bias)));
    l.add(L + "attn_norm", l.norm(n.norm1, ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(cur)));
    if (c.gated) {
      // down( up(x) ⊙ act(gate(x)) ): the gate's rows go first for the GLU step's
      // act(first half) ⊙ second half.
      l.add(L + "mlp_gate_up", l.fused_linear(L + "mlp_gate_up", {{n.gate, I}, {n.up, I}}, H, plan.whole(cur),
                                              plan.slice(wide, 0, 2 * inner), bias_if(c.fc1_bias)));
      l.add(L + "mlp_glu", plan::GluStep{plan.slice(wide, 0, 2 * inner), c.act, plan.whole(act)});
      l.add(L + "mlp_down", l.linear(n.down, H, I, plan.whole(act), plan.whole(tmp), bias_if(c.fc2_bias)));
    } else {
      l.add(L + "mlp_up", l.linear(n.fc1, I, H, plan.whole(cur), plan.slice(wide, 0, inner), bias_if(c.fc1_bias), c.act));
      l.add(L + "mlp_down", l.linear(n.down, H, I, plan.slice(wide, 0, inner), plan.whole(tmp), bias_if(c.fc2_bias)));
    }
    l.add(L + "mlp_norm", l.norm(n.norm2, ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(cur)));
  }
  plan.set_output("hidden", plan.whole(cur));
  // The last layer for first tokens only, for a folder that pools CLS (the rotary steps all come
  // before the last attention, so the selected tail has none).
  const std::vector<BufferId> selected = add_selected_program(plan, "encode", "encode_first", plan::QueryRows::kFirst);
  return {cur, selected.at(static_cast<std::size_t>(cur))};
}

BuiltModel describe(const NomicConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = "nomic-bert";
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = m.kv_heads = c.heads;
  m.intermediate = c.intermediate;
  m.act = c.act;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  m.limits = {c.vocab, c.type_vocab, static_cast<std::size_t>(c.max_positions)};
  m.capabilities.embed = true;
  m.capabilities.hidden_states = true;
  return m;
}

void build(BuiltModel& m, const NomicConfig& c, const WeightSource& src, const std::optional<DenseWeights>& dense) {
  const std::string p = detect_prefix(c, src);
  const Trunk trunk = build_trunk(m.plan, c, src, p);
  m.embedding_dim = build_embedding_head(m.plan, trunk.hidden, trunk.selected, plan::QueryRows::kFirst,
                                         static_cast<std::size_t>(c.hidden), dense);
}

// The checkpoint against config.json: the layer count and the widths the tensors imply, so a
// disagreement names the field (every tensor's shape is checked again as it loads).
void check_against_tensors(const NomicConfig& c, const std::string& source, const io::SafeTensors& t,
                           const std::string& p) {
  const bool hf = c.transformers_layout;
  // The config's own field names, in messages.
  const std::string f_layers = hf ? "\"num_hidden_layers\"" : "\"n_layer\"", f_hidden = hf ? "\"hidden_size\"" : "\"n_embd\"";
  const std::string probe = hf ? "self_attn.q_proj.weight" : "attn.Wqkv.weight";
  const std::string last = layer_prefix(c, p, c.layers - 1) + probe;
  check(t.has(last), source, ": field ", f_layers, " = ", c.layers, " but the checkpoint has no tensor \"", last,
        "\" (it holds fewer layers)");
  const std::string extra = layer_prefix(c, p, c.layers) + probe;
  check(!t.has(extra), source, ": field ", f_layers, " = ", c.layers, " but ",
        t.has(extra) ? t.info(extra).file.string() : "", " holds more layers (tensor \"", extra, "\")");
  const auto expect = [&](const std::string& tensor, std::size_t dim, long long want, const std::string& field) {
    check(t.has(tensor), source, ": ", field, " implies tensor \"", tensor, "\", which the checkpoint lacks");
    const io::TensorInfo& info = t.info(tensor);
    if (info.shape.size() > dim && info.shape[dim] != want)
      throw make_error(source, ": field ", field, " implies ", want, " for dimension ", dim, " of tensor \"", tensor,
                       "\" in ", info.file.string(), ", which has ", info.shape[dim]);
  };
  expect(p + "embeddings.word_embeddings.weight", 0, c.vocab,
         hf ? "\"vocab_size\"" : "\"vocab_size\" (padded to pad_vocab_size_multiple)");
  expect(p + "embeddings.word_embeddings.weight", 1, c.hidden, f_hidden);
  if (c.type_vocab > 0) expect(p + "embeddings.token_type_embeddings.weight", 0, c.type_vocab, "\"type_vocab_size\"");
  check(c.type_vocab > 0 || !t.has(p + "embeddings.token_type_embeddings.weight"), source,
        ": field \"type_vocab_size\" = 0 but the checkpoint has a token-type table");
  const LayerNames l0 = layer_names(c, p, 0);
  if (hf) {
    expect(l0.up + ".weight", 0, c.intermediate, "\"intermediate_size\"");
    return;
  }
  const std::string inner_field = c.gated ? "\"n_inner\" (rounded up to a multiple of 256 for gated MLPs)"
                                          : "\"n_inner\"";
  expect((c.gated ? l0.up : l0.fc1) + ".weight", 0, c.intermediate, inner_field);
  if (!c.gated)
    check(!t.has(l0.up + ".weight"), source, ": field \"activation_function\" = \"", c.activation_function,
          "\" takes the plain MLP (mlp.fc1), but the checkpoint holds a gated one (mlp.fc11, mlp.fc12): swiglu or geglu?");
  if (c.gated)
    check(!t.has(l0.fc1 + ".weight"), source, ": field \"activation_function\" = \"", c.activation_function,
          "\" takes the gated MLP (mlp.fc11, mlp.fc12), but the checkpoint holds a plain one (mlp.fc1)");
  check(!t.has(p + "embeddings.position_embeddings.weight"), source,
        ": the checkpoint holds learned position embeddings, which a rotary nomic-bert does not use");
}

}  // namespace

std::map<std::string, std::vector<int64_t>> nomic_tensors(const NomicConfig& c) {
  const int64_t H = c.hidden, I = c.intermediate;
  std::map<std::string, std::vector<int64_t>> t;
  const auto linear = [&](const std::string& n, int64_t out, int64_t in, bool bias) {
    t[n + ".weight"] = {out, in};
    if (bias) t[n + ".bias"] = {out};
  };
  const auto norm = [&](const std::string& n) {
    t[n + ".weight"] = {H};
    t[n + ".bias"] = {H};
  };
  t["embeddings.word_embeddings.weight"] = {c.vocab, H};
  if (c.type_vocab > 0) t["embeddings.token_type_embeddings.weight"] = {c.type_vocab, H};
  norm(emb_norm_name(c, ""));
  for (int i = 0; i < c.layers; ++i) {
    const LayerNames n = layer_names(c, "", i);
    if (c.transformers_layout) {
      for (const std::string& part : {n.q, n.k, n.v}) linear(part, H, H, c.qkv_bias);
    } else {
      linear(n.wqkv, 3 * H, H, c.qkv_bias);
    }
    linear(n.out, H, H, c.qkv_bias);
    if (c.gated) {
      linear(n.gate, I, H, c.fc1_bias);
      linear(n.up, I, H, c.fc1_bias);
    } else {
      linear(n.fc1, I, H, c.fc1_bias);
    }
    linear(n.down, H, I, c.fc2_bias);
    norm(n.norm1);
    norm(n.norm2);
  }
  return t;
}

BuiltModel build_nomic_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                              const std::string& source) {
  const NomicConfig c = parse_nomic_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kMean);
  check_against_tensors(c, source, f.weights->tensors(), detect_prefix(c, *f.weights));
  check_modules_against_model(f.st, c.hidden, source, f.dense_weights ? &f.dense_weights->tensors() : nullptr);
  build(m, c, *f.weights, f.dense());
  return m;
}

BuiltModel build_nomic_random(const nlohmann::json& config, const std::string& source) {
  const NomicConfig c = parse_nomic_config(config, source);
  BuiltModel m = describe(c);
  m.pooling = PoolingMode::kMean;
  m.normalize = true;
  RandomSource src(nomic_tensors(c), checkpoint_dtype(config));
  build(m, c, src, std::nullopt);
  return m;
}

}  // namespace il::models
