#include "models/deepseek_ocr.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/folder.h"
#include "models/generation_config.h"
#include "models/deepseek_ocr_vision.h"
#include "models/layers.h"
#include "text/tokenizer.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

// Until the runtime sizes them (GenerationSpec): a few rows, so a plan built alone is valid.
constexpr std::size_t kUnsizedRows = 16;

// Where the decoder's tensors live: transformers 5.17's DeepseekOcr2ForConditionalGeneration keeps
// them under "model.language_model."; the original checkpoints (and v1) under "model.".
std::string text_prefix(const WeightSource& src) {
  for (const char* p : {"model.language_model.", "model."})
    if (src.has(std::string(p) + "embed_tokens.weight")) return p;
  throw make_error("DeepSeek-OCR checkpoint: no decoder embedding (looked for model.language_model.embed_tokens.weight ",
                   "and model.embed_tokens.weight)");
}

class DecoderBuilder {
 public:
  DecoderBuilder(BuiltModel& m, const DeepseekTextConfig& c, const WeightSource& src, std::string prefix)
      : m_(m), c_(c), src_(src), plan_(m.plan), l_(m.plan, src, "decode"), p_(std::move(prefix)) {}

  // Program "decode" (attention over the KV cache), then "prefill" from it, then "logits".
  void build(bool tied_head) {
    buffers();
    plan::EmbedStep emb;
    embedding_ = l_.tensor(p_ + "embed_tokens.weight", {c_.vocab, c_.hidden});
    emb.word = embedding_;
    emb.out = plan_.whole(cur_);
    l_.add("embeddings", emb);
    l_.add("L0.attn_norm", rms(layer(0) + "input_layernorm", plan_.whole(cur_), {}, plan_.whole(normed_)));
    for (int i = 0; i < c_.layers; ++i) decoder_layer(i);
    GenerationSpec& g = *m_.generation;
    add_prefill_program(plan_, "decode", "prefill", k_, v_, g.image_rows, plan_.whole(cur_));
    plan_.set_output("hidden", plan_.whole(normed_));
    head(tied_head);
  }

 private:
  std::string layer(int i) const { return p_ + "layers." + std::to_string(i) + "."; }
  std::size_t sz(int v) const { return static_cast<std::size_t>(v); }

  plan::LayerNormStep rms(const std::string& name, View x, View residual, View out, View sum_out = {}) {
    return l_.norm(name, NormSpec{true, Bias::kNone, c_.rms_eps}, c_.hidden, x, residual, out, sum_out);
  }

  void buffers() {
    const std::size_t h = sz(c_.hidden), hd = sz(c_.head_dim);
    qw_ = sz(c_.heads) * hd;
    kvw_ = sz(c_.kv_heads) * hd;
    const std::size_t shared = sz(c_.shared_experts) * sz(c_.moe_intermediate);
    const std::size_t inner = std::max(sz(c_.intermediate), shared);
    cur_ = plan_.add_buffer("residual", Rows::kTokens, h);
    normed_ = plan_.add_buffer("normed", Rows::kTokens, h);
    tmp_ = plan_.add_buffer("proj_out", Rows::kTokens, h);
    ctx_ = plan_.add_buffer("attn_ctx", Rows::kTokens, qw_);
    wide_ = plan_.add_buffer("wide", Rows::kTokens, std::max(qw_ + 2 * kvw_, 2 * inner));
    act_ = plan_.add_buffer("mlp_act", Rows::kTokens, inner);
    if (std::find(c_.sparse.begin(), c_.sparse.end(), true) != c_.sparse.end()) {
      moe_out_ = plan_.add_buffer("moe_out", Rows::kTokens, h);
      ids_ = plan_.add_buffer("expert_ids", Rows::kTokens, sz(c_.top_k), plan::Elem::kI32);
      expert_w_ = plan_.add_buffer("expert_weights", Rows::kTokens, sz(c_.top_k), plan::Elem::kF32);
      ones_ = plan_.add_weight("ones.hidden", {c_.hidden}, std::vector<float>(h, 1.0f));
    }
    k_ = View{wide_, qw_, kvw_};
    v_ = View{wide_, qw_ + kvw_, kvw_};
  }

  void decoder_layer(int i) {
    const std::string n = layer(i), L = "L" + std::to_string(i) + ".", a = n + "self_attn.";
    const std::size_t hd = sz(c_.head_dim), heads = sz(c_.heads), kvh = sz(c_.kv_heads);
    const Bias attn_bias = c_.attention_bias ? Bias::kRequired : Bias::kNone;
    l_.add(L + "qkv", l_.fused_linear(L + "qkv", {{a + "q_proj", static_cast<int64_t>(qw_)},
                                                  {a + "k_proj", static_cast<int64_t>(kvw_)},
                                                  {a + "v_proj", static_cast<int64_t>(kvw_)}},
                                      c_.hidden, plan_.whole(normed_), plan_.slice(wide_, 0, qw_ + 2 * kvw_), attn_bias));
    // LlamaAttention's rotary embedding: rotate-half over whole heads, q and k side by side.
    l_.add(L + "qk_rope", plan::RopeStep{View{wide_, 0, qw_ + kvw_}, heads + kvh, hd, hd, c_.rope_theta, false});
    const BufferId cache = plan_.add_persistent_buffer("kv_cache.L" + std::to_string(i), kUnsizedRows, 2 * kvw_);
    m_.generation->kv_cache.push_back(cache);
    const View kc{cache, 0, kvw_}, vc{cache, kvw_, kvw_};
    l_.add(L + "kv_write", plan::KvWriteStep{k_, v_, kc, vc});
    plan::CachedAttentionStep att;
    att.q = View{wide_, 0, qw_};
    att.k_cache = kc;
    att.v_cache = vc;
    att.heads = heads;
    att.kv_heads = kvh;
    att.head_dim = hd;
    att.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    att.out = plan_.whole(ctx_);
    l_.add(L + "attention", att);
    l_.add(L + "o", l_.linear(a + "o_proj", c_.hidden, static_cast<int64_t>(qw_), plan_.whole(ctx_), plan_.whole(tmp_),
                              attn_bias));
    l_.add(L + "mlp_norm", rms(n + "post_attention_layernorm", plan_.whole(tmp_), plan_.whole(cur_),
                               plan_.whole(normed_), plan_.whole(cur_)));
    View mlp_out = plan_.whole(tmp_);
    if (c_.sparse[sz(i)]) {
      experts(i);
      // residual + shared + routed: the shared experts' sum into the residual stream (the norm's
      // output is scratch: `normed` is free once the experts and the router have read it), then
      // the routed sum with the next norm below.
      l_.add(L + "shared_sum", plan::LayerNormStep{plan_.whole(tmp_), plan_.whole(cur_), ones_, plan::kNoWeight,
                                                   c_.rms_eps, true, plan_.whole(normed_), plan_.whole(cur_)});
      mlp_out = plan_.whole(moe_out_);
    } else {
      glu(n + "mlp.", sz(c_.intermediate), L);
    }
    const bool last = i + 1 == c_.layers;
    l_.add(last ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm",
           rms(last ? p_ + "norm" : layer(i + 1) + "input_layernorm", mlp_out, plan_.whole(cur_), plan_.whole(normed_),
               plan_.whole(cur_)));
  }

  // down(silu(gate(x)) ⊙ up(x)) of `normed` into `tmp` (the dense MLP, or the shared experts as
  // one MLP of n_shared · moe_intermediate_size columns, as transformers builds them).
  void glu(const std::string& mlp, std::size_t inner, const std::string& L) {
    const int64_t I = static_cast<int64_t>(inner);
    l_.add(L + "gate_up", l_.fused_linear(L + "gate_up", {{mlp + "gate_proj", I}, {mlp + "up_proj", I}}, c_.hidden,
                                          plan_.whole(normed_), plan_.slice(wide_, 0, 2 * inner), Bias::kNone));
    l_.add(L + "glu", plan::GluStep{plan_.slice(wide_, 0, 2 * inner), Activation::kSilu, plan_.slice(act_, 0, inner)});
    l_.add(L + "down", l_.linear(mlp + "down_proj", c_.hidden, I, plan_.slice(act_, 0, inner), plan_.whole(tmp_),
                                 Bias::kNone));
  }

  // The router (f32 softmax over the experts, top-k, the chosen probabilities times
  // routed_scaling_factor, not renormalised), the routed experts into `moe_out`, the shared
  // experts into `tmp`.
  void experts(int i) {
    const std::string n = layer(i), L = "L" + std::to_string(i) + ".", m = n + "mlp.";
    const int64_t E = c_.experts, H = c_.hidden, mi = c_.moe_intermediate;
    plan::RouterStep router;
    router.x = plan_.whole(normed_);
    router.w = l_.tensor(m + "gate.weight", {E, H});
    router.experts = sz(c_.experts);
    router.top_k = sz(c_.top_k);
    router.ids = plan_.whole(ids_);
    router.weights = plan_.whole(expert_w_);
    router.renormalize = false;
    router.scale = c_.routed_scaling_factor;
    l_.add(L + "router", router);
    plan::MoeStep moe;
    moe.x = plan_.whole(normed_);
    moe.ids = plan_.whole(ids_);
    moe.weights = plan_.whole(expert_w_);
    if (src_.has(m + "experts.gate_up_proj")) {
      moe.gate_up = l_.tensor(m + "experts.gate_up_proj", {E, 2 * mi, H});
      moe.down = l_.tensor(m + "experts.down_proj", {E, H, mi});
    } else {
      // One [moe_intermediate, hidden] tensor per expert and projection (the original checkpoints,
      // and what transformers writes back): stacked as [gate_e; up_e] per expert, without a copy.
      std::vector<std::string> gate_up, down;
      for (int e = 0; e < c_.experts; ++e) {
        const std::string x = m + "experts." + std::to_string(e) + ".";
        gate_up.push_back(x + "gate_proj.weight");
        gate_up.push_back(x + "up_proj.weight");
        down.push_back(x + "down_proj.weight");
      }
      moe.gate_up = l_.stacked(L + "experts.gate_up", gate_up,
                               std::vector<std::vector<int64_t>>(gate_up.size(), {mi, H}), {E, 2 * mi, H});
      moe.down = l_.stacked(L + "experts.down", down, std::vector<std::vector<int64_t>>(down.size(), {H, mi}),
                            {E, H, mi});
    }
    moe.experts = sz(c_.experts);
    moe.top_k = sz(c_.top_k);
    moe.inner = sz(c_.moe_intermediate);
    moe.act = Activation::kSilu;
    moe.out = plan_.whole(moe_out_);
    l_.add(L + "moe", moe);
    check(c_.shared_experts > 0, "DeepSeek-OCR config: n_shared_experts = 0 (transformers' DeepseekV2Moe always adds ",
          "its shared experts)");
    glu(m + "shared_experts.", sz(c_.shared_experts) * sz(c_.moe_intermediate), L + "shared.");
  }

  // "logits": each sequence's last row of the final norm through lm_head (or the embedding when
  // tied), in the serving precision, read back as f32.
  void head(bool tied) {
    Layers l(plan_, src_, "logits");
    check(tied || src_.has("lm_head.weight"), "DeepSeek-OCR checkpoint: no tensor lm_head.weight (and ",
          "tie_word_embeddings is false)");
    const BufferId last = plan_.add_buffer("last_hidden", Rows::kSequences, sz(c_.hidden), plan::Elem::kActivation);
    const BufferId logits = plan_.add_buffer("logits", Rows::kSequences, sz(c_.vocab), plan::Elem::kActivation);
    l.add("last_token", plan::PoolStep{plan_.whole(normed_), PoolingMode::kLastToken, plan_.whole(last)});
    plan::GemmStep g;
    g.x = plan_.whole(last);
    g.w = tied ? embedding_ : l.tensor("lm_head.weight", {c_.vocab, c_.hidden});
    g.y = plan_.whole(logits);
    l.add("lm_head", g);
    plan_.set_output("logits", plan_.whole(logits));
  }

  BuiltModel& m_;
  const DeepseekTextConfig& c_;
  const WeightSource& src_;
  plan::Plan& plan_;
  Layers l_;
  std::string p_;
  std::size_t qw_ = 0, kvw_ = 0;
  BufferId cur_ = -1, normed_ = -1, tmp_ = -1, ctx_ = -1, wide_ = -1, act_ = -1, moe_out_ = -1, ids_ = -1,
           expert_w_ = -1;
  View k_, v_;
  plan::WeightId embedding_ = plan::kNoWeight, ones_ = plan::kNoWeight;
};

BuiltModel describe(const DeepseekOcrConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = c.version == 1 ? "deepseek-ocr" : "deepseek-ocr2";
  const DeepseekTextConfig& t = c.text;
  m.hidden = t.hidden;
  m.layers = t.layers;
  m.heads = t.heads;
  m.kv_heads = t.kv_heads;
  m.intermediate = t.intermediate;
  m.act = Activation::kSilu;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(t.hidden);
  m.limits = {t.vocab, 0, static_cast<std::size_t>(t.max_positions)};
  m.capabilities.generate = true;
  m.generation.emplace();
  GenerationSpec& g = *m.generation;
  g.kv_cols = 2 * static_cast<std::size_t>(t.kv_heads) * static_cast<std::size_t>(t.head_dim);
  g.image_token = c.image_token_id;
  g.position_axes = 1;
  g.max_positions = static_cast<std::size_t>(t.max_positions);
  return m;
}

// The model card's prompts (docs/deepseek-ocr.md §6.4), after "<image>\n".
std::string task_prompt(std::string_view task) {
  if (task.empty() || task == "markdown") return "<|grounding|>Convert the document to markdown.";
  if (task == "text") return "Free OCR.";
  if (task == "ocr") return "<|grounding|>OCR this image.";
  if (task == "figure") return "Parse the figure.";
  if (task == "describe") return "Describe this image in detail.";
  throw make_error("OCR task '", task, "' is not one of markdown (the default), text, ocr, figure, describe");
}

// "<image>\n" + the task's prompt through the folder's tokenizer (its special tokens added as
// the processor's call adds them), the one image token expanded to the page's rows.
void set_ocr_prompt(GenerationSpec& g) {
  check(g.views.has_value(), "DeepSeek-OCR: the OCR prompt needs the vision programs");
  const int32_t image = g.image_token;
  g.ocr_tasks = {"markdown", "text", "ocr", "figure", "describe"};
  g.ocr_grounding = true;
  g.plain_chat = true;
  // By value: the spec moves with the built model.
  g.ocr_prompt = [image, views = *g.views](const text::Tokenizer& tokenizer, const PatchImage& page,
                                           std::string_view task) {
    const std::optional<int32_t> id = tokenizer.token_to_id("<image>");
    check(id.has_value() && *id == image, "tokenizer.json: the image token <image> ",
          id ? "has id " + std::to_string(*id) : std::string("is missing"), "; config.json's image_token_id is ", image);
    const text::Encoding enc = tokenizer.encode("<image>\n" + task_prompt(task));
    std::vector<int32_t> ids;
    std::size_t images = 0;
    for (int32_t t : enc.ids) {
      if (t != image) {
        ids.push_back(t);
        continue;
      }
      ++images;
      ids.insert(ids.end(), views.page_rows(page.view_sides, page.tile_grid), image);
    }
    check(images == 1, "tokenizer.json: the OCR prompt holds ", images, " image tokens (one expected)");
    return ids;
  };
}

}  // namespace

void check_deepseek_ocr_config(const nlohmann::json& config, const std::string& source) {
  (void)parse_deepseek_ocr_config(config, source);
}

std::map<std::string, std::vector<int64_t>> deepseek_text_tensors(const DeepseekTextConfig& c,
                                                                   const std::string& p, bool tied_head) {
  const int64_t H = c.hidden, hd = c.head_dim, mi = c.moe_intermediate, E = c.experts;
  std::map<std::string, std::vector<int64_t>> t;
  t[p + "embed_tokens.weight"] = {c.vocab, H};
  t[p + "norm.weight"] = {H};
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = p + "layers." + std::to_string(i) + ".";
    t[n + "input_layernorm.weight"] = {H};
    t[n + "post_attention_layernorm.weight"] = {H};
    t[n + "self_attn.q_proj.weight"] = {c.heads * hd, H};
    t[n + "self_attn.k_proj.weight"] = {c.kv_heads * hd, H};
    t[n + "self_attn.v_proj.weight"] = {c.kv_heads * hd, H};
    t[n + "self_attn.o_proj.weight"] = {H, c.heads * hd};
    if (c.attention_bias) {
      t[n + "self_attn.q_proj.bias"] = {c.heads * hd};
      t[n + "self_attn.k_proj.bias"] = {c.kv_heads * hd};
      t[n + "self_attn.v_proj.bias"] = {c.kv_heads * hd};
      t[n + "self_attn.o_proj.bias"] = {H};
    }
    const std::string m = n + "mlp.";
    if (c.sparse[static_cast<std::size_t>(i)]) {
      const int64_t S = static_cast<int64_t>(c.shared_experts) * mi;
      t[m + "gate.weight"] = {E, H};
      t[m + "experts.gate_up_proj"] = {E, 2 * mi, H};
      t[m + "experts.down_proj"] = {E, H, mi};
      t[m + "shared_experts.gate_proj.weight"] = {S, H};
      t[m + "shared_experts.up_proj.weight"] = {S, H};
      t[m + "shared_experts.down_proj.weight"] = {H, S};
    } else {
      t[m + "gate_proj.weight"] = {c.intermediate, H};
      t[m + "up_proj.weight"] = {c.intermediate, H};
      t[m + "down_proj.weight"] = {H, c.intermediate};
    }
  }
  if (!tied_head) t["lm_head.weight"] = {c.vocab, H};
  return t;
}

BuiltModel build_deepseek_ocr_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                     const std::string& source) {
  const DeepseekOcrConfig c = parse_deepseek_ocr_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kLastToken);
  const GenerationDefaults gen = read_generation_config(dir, c.text.vocab);
  m.generation->end_ids = gen.end_ids;
  m.generation->pad_token = gen.pad_id.value_or(-1);
  build_deepseek_ocr2_vision(m, c, *f.weights);
  DecoderBuilder(m, c.text, *f.weights, text_prefix(*f.weights)).build(c.tie_word_embeddings);
  set_ocr_prompt(*m.generation);
  return m;
}

BuiltModel build_deepseek_ocr_random(const nlohmann::json& config, const std::string& source) {
  const DeepseekOcrConfig c = parse_deepseek_ocr_config(config, source);
  BuiltModel m = describe(c);
  std::map<std::string, std::vector<int64_t>> tensors = deepseek_text_tensors(c.text, "model.", c.tie_word_embeddings);
  for (auto& [name, shape] : deepseek_ocr2_vision_tensors(c)) tensors[name] = shape;
  RandomSource src(std::move(tensors), checkpoint_dtype(config));
  build_deepseek_ocr2_vision(m, c, src);
  DecoderBuilder(m, c.text, src, "model.").build(c.tie_word_embeddings);
  set_ocr_prompt(*m.generation);
  return m;
}

}  // namespace il::models
