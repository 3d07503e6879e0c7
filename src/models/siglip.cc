#include "models/siglip.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;

const std::string kJointVision = "vision_model.";

// The vision tower's tensor prefix: "vision_model." in a joint SiglipModel and in vision folders
// saved by transformers 4.x; "" in a SiglipVisionModel saved by transformers 5 (the class is the
// vision transformer itself there).
std::string vision_prefix(const WeightSource& src) {
  for (const char* p : {"vision_model.", ""})
    if (src.has(std::string(p) + "embeddings.patch_embedding.weight")) return p;
  throw make_error("no SigLIP vision tensors found: probed embeddings.patch_embedding.weight under the prefixes "
                   "'vision_model.' and ''");
}

std::string layer_prefix(const std::string& tower, int i) {
  return tower + "encoder.layers." + std::to_string(i) + ".";
}

// The pre-norm encoder both towers share (SiglipEncoderLayer): x += attn(LN1(x)); x += MLP(LN2(x)),
// then the tower's final norm. `cur` holds the embeddings on entry; returns the buffer holding
// the final norm's output.
BufferId build_encoder(Layers& l, const std::string& tower, const std::string& final_norm, int64_t H, int64_t I,
                       std::size_t heads, int layers, float eps, Activation act, BufferId cur, const std::string& tag) {
  plan::Plan& plan = l.plan();
  const std::size_t h = static_cast<std::size_t>(H), inner = static_cast<std::size_t>(I);
  const NormSpec ln{false, Bias::kRequired, eps};
  const BufferId normed = plan.add_buffer(tag + "normed", Rows::kTokens, h);
  const BufferId qkv = plan.add_buffer(tag + "qkv", Rows::kTokens, 3 * h);
  const BufferId ctx = plan.add_buffer(tag + "attn_ctx", Rows::kTokens, h);
  const BufferId tmp = plan.add_buffer(tag + "proj_out", Rows::kTokens, h);
  const BufferId mlp = plan.add_buffer(tag + "mlp_act", Rows::kTokens, inner);
  AttentionShape shape;
  shape.hidden = H;
  shape.heads = heads;
  shape.kv_heads = heads;
  shape.head_dim = h / heads;
  shape.qkv_bias = Bias::kRequired;
  shape.o_bias = Bias::kRequired;
  shape.mask = ops::MaskMode::kBidirectional;  // no attention mask: every token sees every token of its input

  l.add(tag + "L0.layer_norm1", l.norm(layer_prefix(tower, 0) + "layer_norm1", ln, H, plan.whole(cur), {},
                                       plan.whole(normed)));
  for (int i = 0; i < layers; ++i) {
    const std::string n = layer_prefix(tower, i), L = tag + "L" + std::to_string(i) + ".";
    const std::string a = n + "self_attn.";
    attention_block(l, L, {a + "q_proj", a + "k_proj", a + "v_proj", a + "out_proj", "", ""}, shape,
                    plan.whole(normed), plan.whole(qkv), plan.whole(ctx), plan.whole(tmp));
    // residual += attention; normed = layer_norm2(residual), in one step.
    l.add(L + "layer_norm2", l.norm(n + "layer_norm2", ln, H, plan.whole(tmp), plan.whole(cur), plan.whole(normed),
                                    plan.whole(cur)));
    l.add(L + "fc1", l.linear(n + "mlp.fc1", I, H, plan.whole(normed), plan.whole(mlp), Bias::kRequired, act));
    l.add(L + "fc2", l.linear(n + "mlp.fc2", H, I, plan.whole(mlp), plan.whole(tmp), Bias::kRequired));
    // residual += MLP; normed = the next layer's layer_norm1, or the tower's final norm.
    const bool last = i + 1 == layers;
    l.add(last ? tag + "final_norm" : tag + "L" + std::to_string(i + 1) + ".layer_norm1",
          l.norm(last ? tower + final_norm : layer_prefix(tower, i + 1) + "layer_norm1", ln, H, plan.whole(tmp),
                 plan.whole(cur), plan.whole(normed), plan.whole(cur)));
  }
  return normed;
}

// The vision tower into program "image_encode" (output "image_hidden") and, with its head, the
// MAP head into "image_head" (output "image_embedding"). Returns the embedding width (0 without
// a head).
std::size_t build_vision(plan::Plan& plan, const SiglipVisionConfig& c, const WeightSource& src,
                         const std::string& kVision) {
  const int64_t H = c.hidden, I = c.intermediate, C = c.channels, P = c.patch_size, N = c.patches();
  const std::size_t h = static_cast<std::size_t>(H), heads = static_cast<std::size_t>(c.heads);
  const std::size_t patch_dim = static_cast<std::size_t>(C * P * P);
  Layers l(plan, src, "image_encode");
  const std::string e = kVision + "embeddings.";

  const BufferId patches = plan.add_buffer("image_patches", Rows::kTokens, patch_dim);
  const BufferId cur = plan.add_buffer("image_residual", Rows::kTokens, h);
  plan::PatchEmbedStep pe;
  pe.patches = plan.whole(patches);
  // The Conv2d weight [H, C, P, P] is, row by row, the GEMM weight [H, C·P·P] over patch rows cut
  // in (c, ky, kx) order.
  pe.w = plan.add_weight(e + "patch_embedding.weight", {H, C * P * P},
                         src.load(e + "patch_embedding.weight", {H, C, P, P}));
  pe.bias = l.tensor(e + "patch_embedding.bias", {H});
  pe.position = l.tensor(e + "position_embedding.weight", {N, H});
  pe.out = plan.whole(cur);
  l.add("image.patch_embed", pe);
  const BufferId hidden = build_encoder(l, kVision, "post_layernorm", H, I, heads, c.layers, c.eps, c.act, cur,
                                        "image.");
  plan.set_output("image_hidden", plan.whole(hidden));
  if (!c.use_head) return 0;

  // The MAP head: torch.nn.MultiheadAttention(probe, x, x) with in_proj_weight [3H, H] holding
  // the q, k and v projections row-wise, then r = out_proj(attn); out = r + MLP(LN(r)).
  const std::string hp = kVision + "head.";
  const std::vector<float> in_w = src.load(hp + "attention.in_proj_weight", {3 * H, H});
  const std::vector<float> in_b = src.load(hp + "attention.in_proj_bias", {3 * H});
  const std::vector<float> probe = src.load(hp + "probe", {1, 1, H});
  // The probe's query is the same for every image: projected once here (double sums, rounded
  // once), as an f32 row the attention reads whole.
  std::vector<float> q(h);
  for (std::size_t r = 0; r < h; ++r) {
    double acc = in_b[r];
    for (std::size_t k = 0; k < h; ++k) acc += static_cast<double>(in_w[r * h + k]) * probe[k];
    q[r] = static_cast<float>(acc);
  }
  const std::vector<float> kv_w(in_w.begin() + static_cast<std::ptrdiff_t>(h * h), in_w.end());
  const std::vector<float> kv_b(in_b.begin() + static_cast<std::ptrdiff_t>(h), in_b.end());

  Layers head(plan, src, "image_head");
  const BufferId kv = plan.add_buffer("image_head_kv", Rows::kTokens, 2 * h);
  plan::GemmStep kv_proj;
  kv_proj.x = plan.whole(hidden);
  kv_proj.w = plan.add_weight(hp + "attention.in_proj_weight[k,v]", {2 * H, H}, kv_w);
  kv_proj.bias = plan.add_weight(hp + "attention.in_proj_bias[k,v]", {2 * H}, kv_b);
  kv_proj.y = plan.whole(kv);
  head.add("image.head.kv", kv_proj);
  // One row per image from here on, in the serving precision (selected rows).
  const BufferId pooled = plan.add_buffer("image_head_attn", Rows::kSelected, h);
  const BufferId r = plan.add_buffer("image_head_r", Rows::kSelected, h);
  const BufferId normed = plan.add_buffer("image_head_normed", Rows::kSelected, h);
  const BufferId act = plan.add_buffer("image_head_mlp", Rows::kSelected, static_cast<std::size_t>(I));
  const BufferId mlp_out = plan.add_buffer("image_head_mlp_out", Rows::kSelected, h);
  const BufferId sum = plan.add_buffer("image_head_sum", Rows::kSelected, h);
  const BufferId embedding = plan.add_buffer("image_embedding", Rows::kSequences, h);
  plan::ProbeAttentionStep pa;
  pa.query = plan.add_weight(hp + "probe·in_proj[q]", {H}, q);
  pa.k = plan.slice(kv, 0, h);
  pa.v = plan.slice(kv, h, h);
  pa.heads = heads;
  pa.head_dim = h / heads;
  pa.scale = 1.0f / std::sqrt(static_cast<float>(pa.head_dim));
  pa.out = plan.whole(pooled);
  head.add("image.head.attention", pa);
  head.add("image.head.out_proj", head.linear(hp + "attention.out_proj", H, H, plan.whole(pooled), plan.whole(r),
                                              Bias::kRequired));
  const NormSpec ln{false, Bias::kRequired, c.eps};
  head.add("image.head.layernorm", head.norm(hp + "layernorm", ln, H, plan.whole(r), {}, plan.whole(normed)));
  head.add("image.head.fc1", head.linear(hp + "mlp.fc1", I, H, plan.whole(normed), plan.whole(act), Bias::kRequired,
                                         c.act));
  head.add("image.head.fc2", head.linear(hp + "mlp.fc2", H, I, plan.whole(act), plan.whole(mlp_out),
                                         Bias::kRequired));
  // r + MLP: the plan's sum is a norm step's sum_out (x + residual); its normed output, into a
  // scratch row nothing reads, is the price of having no separate add step.
  head.add("image.head.residual", head.norm(hp + "layernorm", ln, H, plan.whole(mlp_out), plan.whole(r),
                                            plan.whole(normed), plan.whole(sum)));
  plan::PoolStep out;  // the selected row as is, into the f32 sequence row the engine reads
  out.x = plan.whole(sum);
  out.mode = PoolingMode::kCls;
  out.out = plan.whole(embedding);
  head.add("image.head.out", out);
  plan.set_output("image_embedding", plan.whole(embedding));
  return h;
}

// The text tower (SiglipTextTransformer) into program "encode" (output "hidden"): token and
// position embeddings, the pre-norm encoder with no attention mask (SigLIP attends to its pad
// tokens: texts are padded to max_length, see BuiltModel::pad_texts), final_layer_norm. Then per
// pooling program the pooled row through the head Linear (output "embedding"); SigLIP's own
// pooling is the last row (last_hidden_state[:, -1]). Returns the embedding width.
std::size_t build_text(plan::Plan& plan, const SiglipTextConfig& t, const WeightSource& src) {
  const std::string tp = "text_model.";
  const int64_t H = t.hidden, P = t.projection;
  const std::size_t h = static_cast<std::size_t>(H), p = static_cast<std::size_t>(P);
  Layers l(plan, src, "encode");
  const BufferId cur = plan.add_buffer("text_residual", Rows::kTokens, h);
  plan::EmbedStep emb;
  emb.word = l.tensor(tp + "embeddings.token_embedding.weight", {t.vocab, H});
  emb.position = l.tensor(tp + "embeddings.position_embedding.weight", {t.max_positions, H});
  emb.out = plan.whole(cur);
  l.add("text.embeddings", emb);
  const BufferId hidden = build_encoder(l, tp, "final_layer_norm", H, t.intermediate,
                                        static_cast<std::size_t>(t.heads), t.layers, t.eps, t.act, cur, "text.");
  plan.set_output("hidden", plan.whole(hidden));

  const BufferId pooled = plan.add_buffer("text_pooled", Rows::kSequences, h);
  const BufferId embedding = plan.add_buffer("text_embedding", Rows::kSequences, p);
  Layers head(plan, src, "");
  const plan::GemmStep proj =
      head.linear(tp + "head", P, H, plan.whole(pooled), plan.whole(embedding), Bias::kRequired);
  for (PoolingMode mode : {PoolingMode::kMean, PoolingMode::kCls, PoolingMode::kLastToken}) {
    const std::string program = pooling_program(mode);
    plan.add_step(program, "pool", plan::PoolStep{plan.whole(hidden), mode, plan.whole(pooled)});
    plan.add_step(program, "text.head", proj);
  }
  plan.add_step("normalize", "l2", plan::L2Step{plan.whole(embedding)});
  plan.set_output("embedding", plan.whole(embedding));
  return p;
}

BuiltModel describe(const SiglipConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = c.text ? "siglip" : "siglip-vision";
  const SiglipVisionConfig& v = c.vision;
  m.hidden = v.hidden;
  m.layers = v.layers;
  m.heads = v.heads;
  m.kv_heads = v.heads;
  m.intermediate = v.intermediate;
  m.act = v.act;
  m.random_weights = c.random_weights;
  m.pooling = PoolingMode::kCls;  // not a token pooling: the MAP head (reported for completeness)
  m.normalize = false;
  ImageGeometry g;
  g.channels = v.channels;
  g.height = v.image_size;
  g.width = v.image_size;
  g.patch = v.patch_size;
  m.image = g;
  m.capabilities.image_input = true;
  if (c.text) {
    const SiglipTextConfig& t = *c.text;
    m.capabilities.embed = true;
    m.capabilities.hidden_states = true;
    m.pooling = PoolingMode::kLastToken;
    m.hidden_size = static_cast<std::size_t>(t.hidden);
    m.limits = {t.vocab, 0, static_cast<std::size_t>(t.max_positions)};
    // SiglipProcessor(padding="max_length"), as the model card calls it: SigLIP was trained on
    // texts padded to 64 tokens with no attention mask, so the pad tokens are attended.
    m.pad_texts = std::make_pair(static_cast<std::size_t>(t.max_positions), static_cast<int32_t>(t.pad_id));
  }
  return m;
}

void build(BuiltModel& m, const SiglipConfig& c, const WeightSource& src) {
  m.image_embedding_dim = build_vision(m.plan, c.vision, src, vision_prefix(src));
  if (c.text) {
    m.embedding_dim = build_text(m.plan, *c.text, src);
    // The pair logit: exp(logit_scale) · cos(image, text) + logit_bias.
    const std::vector<float> scale = src.load("logit_scale", {1});
    const std::vector<float> bias = src.load("logit_bias", {1});
    m.logit = std::make_pair(scale[0], bias[0]);
  }
}

void add_encoder_tensors(std::map<std::string, std::vector<int64_t>>& t, const std::string& tower, int64_t H,
                         int64_t I, int layers) {
  for (int i = 0; i < layers; ++i) {
    const std::string n = layer_prefix(tower, i);
    for (const char* norm : {"layer_norm1", "layer_norm2"}) {
      t[n + norm + ".weight"] = {H};
      t[n + norm + ".bias"] = {H};
    }
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      t[n + "self_attn." + p + ".weight"] = {H, H};
      t[n + "self_attn." + p + ".bias"] = {H};
    }
    t[n + "mlp.fc1.weight"] = {I, H};
    t[n + "mlp.fc1.bias"] = {I};
    t[n + "mlp.fc2.weight"] = {H, I};
    t[n + "mlp.fc2.bias"] = {H};
  }
}

}  // namespace

std::map<std::string, std::vector<int64_t>> siglip_tensors(const SiglipConfig& cfg) {
  std::map<std::string, std::vector<int64_t>> t;
  const std::string kVision = kJointVision;
  const SiglipVisionConfig& v = cfg.vision;
  const int64_t H = v.hidden, I = v.intermediate, P = v.patch_size;
  t[kVision + "embeddings.patch_embedding.weight"] = {H, v.channels, P, P};
  t[kVision + "embeddings.patch_embedding.bias"] = {H};
  t[kVision + "embeddings.position_embedding.weight"] = {v.patches(), H};
  add_encoder_tensors(t, kVision, H, I, v.layers);
  t[kVision + "post_layernorm.weight"] = {H};
  t[kVision + "post_layernorm.bias"] = {H};
  if (v.use_head) {
    const std::string hp = kVision + "head.";
    t[hp + "probe"] = {1, 1, H};
    t[hp + "attention.in_proj_weight"] = {3 * H, H};
    t[hp + "attention.in_proj_bias"] = {3 * H};
    t[hp + "attention.out_proj.weight"] = {H, H};
    t[hp + "attention.out_proj.bias"] = {H};
    t[hp + "layernorm.weight"] = {H};
    t[hp + "layernorm.bias"] = {H};
    t[hp + "mlp.fc1.weight"] = {I, H};
    t[hp + "mlp.fc1.bias"] = {I};
    t[hp + "mlp.fc2.weight"] = {H, I};
    t[hp + "mlp.fc2.bias"] = {H};
  }
  if (cfg.text) {
    const SiglipTextConfig& x = *cfg.text;
    const std::string tp = "text_model.";
    t[tp + "embeddings.token_embedding.weight"] = {x.vocab, x.hidden};
    t[tp + "embeddings.position_embedding.weight"] = {x.max_positions, x.hidden};
    add_encoder_tensors(t, tp, x.hidden, x.intermediate, x.layers);
    t[tp + "final_layer_norm.weight"] = {x.hidden};
    t[tp + "final_layer_norm.bias"] = {x.hidden};
    t[tp + "head.weight"] = {x.projection, x.hidden};
    t[tp + "head.bias"] = {x.projection};
    t["logit_scale"] = {1};
    t["logit_bias"] = {1};
  }
  return t;
}

BuiltModel build_siglip_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                               const std::string& source) {
  const SiglipConfig c = parse_siglip_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, c.text ? PoolingMode::kLastToken : PoolingMode::kCls);
  check(!f.st.present, dir.string(), ": a SigLIP folder with sentence-transformers modules is not supported (the "
        "engine serves SigLIP as transformers' SiglipModel / SiglipVisionModel)");
  // The config against the checkpoint: a vision tower whose head the config denies (or the
  // reverse) would otherwise fail as a missing tensor rather than a wrong field.
  const std::string kVision = vision_prefix(*f.weights);
  const bool has_head = f.weights->has(kVision + "head.probe");
  check(has_head == c.vision.use_head, source, ": field \"vision_use_head\" is ", c.vision.use_head ? "true" : "false",
        " but the checkpoint ", has_head ? "has" : "has no", " vision_model.head tensors");
  check(f.weights->has(kVision + "encoder.layers." + std::to_string(c.vision.layers - 1) + ".layer_norm1.weight") &&
            !f.weights->has(kVision + "encoder.layers." + std::to_string(c.vision.layers) + ".layer_norm1.weight"),
        source, ": field \"num_hidden_layers\" = ", c.vision.layers,
        " does not match the checkpoint's vision_model.encoder.layers");
  build(m, c, *f.weights);
  return m;
}

BuiltModel build_siglip_random(const nlohmann::json& config, const std::string& source) {
  const SiglipConfig c = parse_siglip_config(config, source);
  BuiltModel m = describe(c);
  RandomSource src(siglip_tensors(c), checkpoint_dtype(config));
  build(m, c, src);
  return m;
}

}  // namespace il::models
