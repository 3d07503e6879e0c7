#include "models/diffusion_gemma.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "models/diffusion_gemma_config.h"
#include "models/folder.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

const std::string kDecoder = "model.decoder.";
const std::string kEncoder = "model.encoder.language_model.";

std::string layer_prefix(int i) { return kDecoder + "layers." + std::to_string(i) + "."; }

// Until the runtime sizes them: a few rows, so a plan built alone is still valid.
constexpr std::size_t kUnsizedRows = 16;

// A [1] tensor's value (layer_scalar), read at build time: it becomes a step's constant.
float scalar(const WeightSource& src, const std::string& name) { return src.load(name, {1}).at(0); }

class Builder {
 public:
  Builder(BuiltModel& m, const DiffusionGemmaConfig& c, const WeightSource& src)
      : m_(m), c_(c), src_(src), plan_(m.plan), l_(m.plan, src, "canvas"), h_(static_cast<std::size_t>(c.hidden)) {}

  void build() {
    buffers();
    embed_and_self_conditioning();
    for (int i = 0; i < c_.layers; ++i) layer(i);
    head();
    encode_program();
  }

 private:
  plan::WeightId ones(std::size_t n) {
    auto it = ones_.find(n);
    if (it == ones_.end())
      it = ones_.emplace(n, plan_.add_weight("ones." + std::to_string(n), {static_cast<int64_t>(n)},
                                             std::vector<float>(n, 1.0f)))
               .first;
    return it->second;
  }
  plan::LayerNormStep rms(plan::WeightId w, View x, View residual, View out, View sum_out = {}, std::size_t group = 0) {
    plan::LayerNormStep n;
    n.x = x;
    n.residual = residual;
    n.w = w;
    n.eps = c_.rms_eps;
    n.rms = true;
    n.out = out;
    n.sum_out = sum_out;
    n.group = group;
    return n;
  }
  plan::WeightId norm_weight(const std::string& name, std::size_t cols) {
    return l_.tensor(name + ".weight", {static_cast<int64_t>(cols)});
  }

  void buffers() {
    std::size_t wide = 2 * static_cast<std::size_t>(c_.intermediate), ctx = 0;
    for (const DiffusionGemmaLayer& g : c_.layer) {
      const std::size_t hd = static_cast<std::size_t>(g.head_dim), kv = static_cast<std::size_t>(g.kv_heads);
      wide = std::max(wide, (static_cast<std::size_t>(c_.heads) + 2 * kv) * hd);
      ctx = std::max(ctx, static_cast<std::size_t>(c_.heads) * hd);
    }
    const std::size_t V = static_cast<std::size_t>(c_.vocab), k = static_cast<std::size_t>(c_.top_k);
    cur_ = plan_.add_buffer("residual", Rows::kTokens, h_);
    normed_ = plan_.add_buffer("normed", Rows::kTokens, h_);
    tmp_ = plan_.add_buffer("proj_out", Rows::kTokens, h_);
    moe_in_ = plan_.add_buffer("moe_in", Rows::kTokens, h_);
    router_in_ = plan_.add_buffer("router_in", Rows::kTokens, h_);
    moe_out_ = plan_.add_buffer("moe_out", Rows::kTokens, h_);
    wide_ = plan_.add_buffer("wide", Rows::kTokens, wide);
    ctx_ = plan_.add_buffer("attn_ctx", Rows::kTokens, ctx);
    act_ = plan_.add_buffer("mlp_act", Rows::kTokens, static_cast<std::size_t>(c_.intermediate));
    ids_ = plan_.add_buffer("expert_ids", Rows::kTokens, k, plan::Elem::kI32);
    expert_w_ = plan_.add_buffer("expert_weights", Rows::kTokens, k, plan::Elem::kF32);
    logits_act_ = plan_.add_buffer("head_out", Rows::kTokens, V);
    logits_ = plan_.add_buffer("canvas_logits", Rows::kTokens, V, plan::Elem::kF32);
    sc_probs_ = plan_.add_buffer("sc_probs", Rows::kTokens, V);
    DiffusionSpec& d = *m_.diffusion;
    d.sc_logits = plan_.add_persistent_buffer("sc_logits", kUnsizedRows, V, plan::Elem::kF32);
  }

  // e = E[id]·√h; s = softmax(sc_logits)·E·√h; x = RMSNorm(e + MLP(RMSNorm(s; pre_norm))), the
  // MLP adding exactly 0 where there is no distribution (s = 0: no biases, gelu(0) = 0).
  void embed_and_self_conditioning() {
    const int64_t H = c_.hidden, V = c_.vocab, I = c_.intermediate;
    embedding_ = l_.tensor(kDecoder + "embed_tokens.weight", {V, H});
    plan::EmbedStep emb;
    emb.word = embedding_;
    emb.out = plan_.whole(cur_);
    emb.scale = std::sqrt(static_cast<float>(c_.hidden));
    l_.add("embeddings", emb);
    const std::string sc = kDecoder + "self_conditioning.";
    l_.add("sc.softmax", plan::SoftmaxStep{plan_.whole(m_.diffusion->sc_logits), emb.scale, plan_.whole(sc_probs_)});
    plan::GemmStep mix;
    mix.x = plan_.whole(sc_probs_);
    mix.w = embedding_;
    mix.transpose_w = true;
    mix.y = plan_.whole(tmp_);
    l_.add("sc.mix", mix);
    l_.add("sc.pre_norm", rms(norm_weight(sc + "pre_norm", h_), plan_.whole(tmp_), {}, plan_.whole(normed_)));
    const std::size_t inner = static_cast<std::size_t>(I);
    l_.add("sc.gate_up", l_.fused_linear("sc.gate_up", {{sc + "gate_proj", I}, {sc + "up_proj", I}}, H,
                                         plan_.whole(normed_), plan_.slice(wide_, 0, 2 * inner), Bias::kNone));
    l_.add("sc.glu", plan::GluStep{plan_.slice(wide_, 0, 2 * inner), Activation::kGeluTanh, plan_.whole(act_)});
    l_.add("sc.down", l_.linear(sc + "down_proj", H, I, plan_.whole(act_), plan_.whole(tmp_), Bias::kNone));
    l_.add("sc.post_norm", rms(ones(h_), plan_.whole(tmp_), plan_.whole(cur_), plan_.whole(cur_)));
    first_layer_step_ = "L0.attn_norm";
    l_.add(first_layer_step_, rms(norm_weight(layer_prefix(0) + "input_layernorm", h_), plan_.whole(cur_), {},
                                  plan_.whole(normed_)));
  }

  void layer(int i) {
    const DiffusionGemmaLayer& g = c_.layer[static_cast<std::size_t>(i)];
    const std::string n = layer_prefix(i), L = "L" + std::to_string(i) + ".", a = n + "self_attn.";
    const int64_t H = c_.hidden, I = c_.intermediate, hd = g.head_dim;
    const std::size_t heads = static_cast<std::size_t>(c_.heads), kvh = static_cast<std::size_t>(g.kv_heads);
    const std::size_t shd = static_cast<std::size_t>(hd), qw = heads * shd, kvw = kvh * shd;
    const View q{wide_, 0, qw}, k{wide_, qw, kvw}, v{wide_, qw + kvw, kvw};

    // Projections: sliding layers q | k | v; full layers q | k, and v = the raw keys (K = V).
    if (g.sliding) {
      l_.add(L + "qkv", l_.fused_linear(L + "qkv", {{a + "q_proj", static_cast<int64_t>(qw)},
                                                    {a + "k_proj", static_cast<int64_t>(kvw)},
                                                    {a + "v_proj", static_cast<int64_t>(kvw)}},
                                        H, plan_.whole(normed_), plan_.slice(wide_, 0, qw + 2 * kvw), Bias::kNone));
      l_.add(L + "v_norm", rms(ones(shd), v, {}, v, {}, shd));
    } else {
      check(!src_.has(a + "v_proj.weight"), "DiffusionGemma checkpoint: full-attention layer ", i,
            " has a v_proj (", a, "v_proj.weight); transformers' full layers take the values from k_proj");
      l_.add(L + "qk", l_.fused_linear(L + "qk", {{a + "q_proj", static_cast<int64_t>(qw)},
                                                  {a + "k_proj", static_cast<int64_t>(kvw)}},
                                       H, plan_.whole(normed_), plan_.slice(wide_, 0, qw + kvw), Bias::kNone));
      l_.add(L + "v_norm", rms(ones(shd), k, {}, v, {}, shd));  // before k_norm: the raw keys
    }
    l_.add(L + "q_norm", rms(norm_weight(a + "q_norm", shd), q, {}, q, {}, shd));
    l_.add(L + "k_norm", rms(norm_weight(a + "k_norm", shd), k, {}, k, {}, shd));
    plan::RopeStep rope{View{wide_, 0, qw + kvw}, heads + kvh, shd, shd, g.sliding ? c_.sliding_theta : c_.full_theta,
                        false};
    // Proportional rope: int(partial_rotary_factor · head_dim // 2) pairs turn, the exponent over
    // the whole head (transformers' _compute_proportional_rope_parameters).
    if (!g.sliding)
      rope.active_pairs = static_cast<std::size_t>(std::floor(c_.partial_rotary_factor * static_cast<float>(hd) / 2.0f));
    l_.add(L + "qk_rope", rope);

    const BufferId cache = plan_.add_persistent_buffer("kv_cache.L" + std::to_string(i), kUnsizedRows, 2 * kvw);
    m_.diffusion->kv_cache.push_back(cache);
    m_.diffusion->kv_cols.push_back(2 * kvw);
    const View kc{cache, 0, kvw}, vc{cache, kvw, kvw};
    l_.add(L + "kv_write", plan::KvWriteStep{k, v, kc, vc});
    plan::CachedAttentionStep att;
    att.q = q;
    att.k_cache = kc;
    att.v_cache = vc;
    att.heads = heads;
    att.kv_heads = kvh;
    att.head_dim = shd;
    att.scale = 1.0f;  // Gemma-4: the q / k norms stand in for 1 / √d
    att.out = plan_.slice(ctx_, 0, qw);
    att.window = g.sliding ? static_cast<std::size_t>(c_.sliding_window) : 0;
    l_.add(L + "attention", att);
    l_.add(L + "o", l_.linear(a + "o_proj", H, static_cast<int64_t>(qw), plan_.slice(ctx_, 0, qw), plan_.whole(tmp_),
                              Bias::kNone));
    l_.add(L + "post_attn_norm", rms(norm_weight(n + "post_attention_layernorm", h_), plan_.whole(tmp_), {},
                                     plan_.whole(tmp_)));
    // x = residual + attention; the dense MLP's and the experts' inputs and the router's, all from x.
    l_.add(L + "mlp_norm", rms(norm_weight(n + "pre_feedforward_layernorm", h_), plan_.whole(tmp_),
                               plan_.whole(cur_), plan_.whole(normed_), plan_.whole(cur_)));
    l_.add(L + "moe_norm", rms(norm_weight(n + "pre_feedforward_layernorm_2", h_), plan_.whole(cur_), {},
                               plan_.whole(moe_in_)));
    // The router's RMSNorm has no weight; its scale and h^(−1/2) multiply the normalised row, so
    // they are the norm's weight here.
    std::vector<float> router_scale = src_.load(n + "router.scale", {H});
    for (float& s : router_scale) s *= 1.0f / std::sqrt(static_cast<float>(H));
    const plan::WeightId rw = plan_.add_weight(n + "router.scale(folded)", {H}, std::move(router_scale));
    l_.add(L + "router_norm", rms(rw, plan_.whole(cur_), {}, plan_.whole(router_in_)));

    const std::size_t inner = static_cast<std::size_t>(I);
    l_.add(L + "gate_up", l_.fused_linear(L + "gate_up", {{n + "mlp.gate_proj", I}, {n + "mlp.up_proj", I}}, H,
                                          plan_.whole(normed_), plan_.slice(wide_, 0, 2 * inner), Bias::kNone));
    l_.add(L + "glu", plan::GluStep{plan_.slice(wide_, 0, 2 * inner), Activation::kGeluTanh, plan_.whole(act_)});
    l_.add(L + "down", l_.linear(n + "mlp.down_proj", H, I, plan_.whole(act_), plan_.whole(tmp_), Bias::kNone));
    l_.add(L + "mlp_post_norm", rms(norm_weight(n + "post_feedforward_layernorm_1", h_), plan_.whole(tmp_), {},
                                    plan_.whole(tmp_)));

    const int64_t E = c_.experts, mi = c_.moe_intermediate;
    plan::RouterStep router;
    router.x = plan_.whole(router_in_);
    router.w = l_.tensor(n + "router.proj.weight", {E, H});
    router.expert_scale = l_.tensor(n + "router.per_expert_scale", {E});
    router.experts = static_cast<std::size_t>(E);
    router.top_k = static_cast<std::size_t>(c_.top_k);
    router.ids = plan_.whole(ids_);
    router.weights = plan_.whole(expert_w_);
    l_.add(L + "router", router);
    plan::MoeStep moe;
    moe.x = plan_.whole(moe_in_);
    moe.ids = plan_.whole(ids_);
    moe.weights = plan_.whole(expert_w_);
    moe.gate_up = l_.tensor(n + "experts.gate_up_proj", {E, 2 * mi, H});
    moe.down = l_.tensor(n + "experts.down_proj", {E, H, mi});
    moe.experts = static_cast<std::size_t>(E);
    moe.top_k = static_cast<std::size_t>(c_.top_k);
    moe.inner = static_cast<std::size_t>(mi);
    moe.act = Activation::kGeluTanh;
    moe.out = plan_.whole(moe_out_);
    l_.add(L + "moe", moe);
    l_.add(L + "moe_post_norm", rms(norm_weight(n + "post_feedforward_layernorm_2", h_), plan_.whole(moe_out_), {},
                                    plan_.whole(moe_out_)));
    l_.add(L + "ffn_norm", rms(norm_weight(n + "post_feedforward_layernorm", h_), plan_.whole(tmp_),
                               plan_.whole(moe_out_), plan_.whole(tmp_)));
    // x = (x + ffn) · layer_scalar, then the next layer's input norm (or the final norm) of it.
    const bool last = i + 1 == c_.layers;
    const std::string next = last ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm";
    plan::LayerNormStep sum = rms(norm_weight(last ? kDecoder + "norm" : layer_prefix(i + 1) + "input_layernorm", h_),
                                  plan_.whole(tmp_), plan_.whole(cur_), plan_.whole(normed_), plan_.whole(cur_));
    sum.sum_scale = scalar(src_, n + "layer_scalar");
    encoder_scalar_[next] = scalar(src_, kEncoder + "layers." + std::to_string(i) + ".layer_scalar");
    l_.add(next, sum);
  }

  // logits = 30 · tanh(final_norm · Eᵀ / 30), the tied head reading the embedding's one copy.
  void head() {
    plan::GemmStep g;
    g.x = plan_.whole(normed_);
    g.w = embedding_;
    g.y = plan_.whole(logits_act_);
    l_.add("lm_head", g);
    l_.add("softcap", plan::SoftcapStep{plan_.whole(logits_act_), c_.softcap, plan_.whole(logits_)});
    plan_.set_output("canvas_logits", plan_.whole(logits_));
    plan_.set_output("hidden", plan_.whole(normed_));
  }

  // "encode": the embedding, then the layers exactly as the canvas runs them except each layer's
  // residual scale (the encoder's own layer_scalar buffers) — no self-conditioning, no head. The
  // attention is the same step: a prompt's tokens (cache length = position + 1) see the cache
  // causally, the sliding layers over their window.
  void encode_program() {
    bool in_layers = false;
    for (const plan::Step& step : plan_.program("canvas")) {
      if (step.name == "embeddings") plan_.add_step("encode", step.name, step.op);
      if (step.name == first_layer_step_) in_layers = true;
      if (!in_layers) continue;
      plan::StepOp op = step.op;
      if (const auto it = encoder_scalar_.find(step.name); it != encoder_scalar_.end())
        std::get<plan::LayerNormStep>(op).sum_scale = it->second;
      plan_.add_step("encode", step.name, op);
      if (step.name == "final_norm") break;
    }
  }

  BuiltModel& m_;
  const DiffusionGemmaConfig& c_;
  const WeightSource& src_;
  plan::Plan& plan_;
  Layers l_;
  const std::size_t h_;
  std::map<std::size_t, plan::WeightId> ones_;
  std::map<std::string, float> encoder_scalar_;
  std::string first_layer_step_;
  plan::WeightId embedding_ = plan::kNoWeight;
  BufferId cur_ = -1, normed_ = -1, tmp_ = -1, moe_in_ = -1, router_in_ = -1, moe_out_ = -1, wide_ = -1, ctx_ = -1,
           act_ = -1, ids_ = -1, expert_w_ = -1, logits_act_ = -1, logits_ = -1, sc_probs_ = -1;
};

BuiltModel describe(const DiffusionGemmaConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = "diffusion-gemma";
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = c.heads;
  m.kv_heads = c.layer.empty() ? 0 : c.layer.front().kv_heads;
  m.intermediate = c.intermediate;
  m.act = Activation::kGeluTanh;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  m.limits = {c.vocab, 0, static_cast<std::size_t>(c.max_positions)};
  m.capabilities.generate = true;
  m.diffusion.emplace();
  DiffusionSpec& d = *m.diffusion;
  d.canvas_length = static_cast<std::size_t>(c.canvas_length);
  d.vocab = static_cast<std::size_t>(c.vocab);
  d.window = static_cast<std::size_t>(c.sliding_window);
  d.max_positions = static_cast<std::size_t>(c.max_positions);
  return m;
}

std::map<std::string, std::vector<int64_t>> tensors_of(const DiffusionGemmaConfig& c) {
  const int64_t H = c.hidden, I = c.intermediate, E = c.experts, mi = c.moe_intermediate;
  std::map<std::string, std::vector<int64_t>> t;
  t[kDecoder + "embed_tokens.weight"] = {c.vocab, H};
  t[kDecoder + "norm.weight"] = {H};
  const std::string sc = kDecoder + "self_conditioning.";
  t[sc + "pre_norm.weight"] = {H};
  t[sc + "gate_proj.weight"] = {I, H};
  t[sc + "up_proj.weight"] = {I, H};
  t[sc + "down_proj.weight"] = {H, I};
  for (int i = 0; i < c.layers; ++i) {
    const DiffusionGemmaLayer& g = c.layer[static_cast<std::size_t>(i)];
    const std::string n = layer_prefix(i), a = n + "self_attn.";
    const int64_t hd = g.head_dim;
    for (const char* norm : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                             "post_feedforward_layernorm", "post_feedforward_layernorm_1",
                             "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"})
      t[n + norm + ".weight"] = {H};
    t[a + "q_proj.weight"] = {c.heads * hd, H};
    t[a + "k_proj.weight"] = {g.kv_heads * hd, H};
    if (g.sliding) t[a + "v_proj.weight"] = {g.kv_heads * hd, H};
    t[a + "o_proj.weight"] = {H, c.heads * hd};
    t[a + "q_norm.weight"] = {hd};
    t[a + "k_norm.weight"] = {hd};
    t[n + "mlp.gate_proj.weight"] = {I, H};
    t[n + "mlp.up_proj.weight"] = {I, H};
    t[n + "mlp.down_proj.weight"] = {H, I};
    t[n + "router.proj.weight"] = {E, H};
    t[n + "router.scale"] = {H};
    t[n + "router.per_expert_scale"] = {E};
    t[n + "experts.gate_up_proj"] = {E, 2 * mi, H};
    t[n + "experts.down_proj"] = {E, H, mi};
    t[n + "layer_scalar"] = {1};
    t[kEncoder + "layers." + std::to_string(i) + ".layer_scalar"] = {1};
  }
  return t;
}

// Tensors the text model does not read, said once: the vision tower and its projection
// (transformers 5.17 builds the model with one), and the encoder stack's tied copies.
void note_ignored(BuiltModel& m, const io::SafeTensors& t) {
  std::size_t vision = 0;
  for (const std::string& name : t.names())
    if (name.rfind("model.encoder.vision_tower.", 0) == 0 || name.rfind("model.encoder.embed_vision.", 0) == 0)
      ++vision;
  if (vision > 0)
    m.diffusion->notes.push_back("ignored " + std::to_string(vision) +
                      " tensors of the vision tower (model.encoder.vision_tower.*, model.encoder.embed_vision.*): "
                      "text generation only");
}

}  // namespace

void check_diffusion_gemma_config(const nlohmann::json& config, const std::string& source) {
  (void)parse_diffusion_gemma_config(config, source);
}

BuiltModel build_diffusion_gemma_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                        const std::string& source) {
  const DiffusionGemmaConfig c = parse_diffusion_gemma_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kLastToken);
  m.diffusion->defaults = read_diffusion_settings(dir, c.vocab);
  note_ignored(m, f.weights->tensors());
  Builder(m, c, *f.weights).build();
  return m;
}

BuiltModel build_diffusion_gemma_random(const nlohmann::json& config, const std::string& source) {
  const DiffusionGemmaConfig c = parse_diffusion_gemma_config(config, source);
  BuiltModel m = describe(c);
  RandomSource src(tensors_of(c), checkpoint_dtype(config));
  Builder(m, c, src).build();
  return m;
}

}  // namespace il::models
