#include "models/glm_ocr.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/folder.h"
#include "models/generation_config.h"
#include "models/glm_ocr_prompt.h"
#include "models/glm_ocr_vision.h"
#include "models/layers.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

const std::string kText = "model.language_model.";

std::string layer_prefix(int i) { return kText + "layers." + std::to_string(i) + "."; }

// Until the runtime sizes them (GenerationSpec): one page of a few rows, so a plan built alone
// is still valid.
constexpr std::size_t kUnsizedRows = 16;

struct Decoder {
  BufferId normed = -1;
};

// The decoder layers as program "decode" (attention over the KV cache), then "prefill" as the
// same steps with the attention among the batch's own tokens (causal, as the cache would give for
// a whole prompt: the flash kernels then serve prefill) and, after the embedding, the image rows
// injected at the image tokens. Both programs share every weight.
Decoder build_decoder(BuiltModel& m, const GlmOcrConfig& cfg, const WeightSource& src) {
  plan::Plan& plan = m.plan;
  const GlmOcrTextConfig& c = cfg.text;
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.heads), kv_heads = static_cast<std::size_t>(c.kv_heads);
  const std::size_t qw = heads * hd, kvw = kv_heads * hd, qkv_cols = qw + 2 * kvw, inner = static_cast<std::size_t>(I);
  Layers l(plan, src, "decode");
  const NormSpec rms{true, Bias::kNone, c.rms_eps};

  const BufferId cur = plan.add_buffer("residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer("normed", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, qw);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId wide = plan.add_buffer("wide", Rows::kTokens, std::max(qkv_cols, 2 * inner));
  const BufferId act = plan.add_buffer("mlp_act", Rows::kTokens, inner);
  const View q{wide, 0, qw}, k{wide, qw, kvw}, v{wide, qw + kvw, kvw};

  GenerationSpec& g = *m.generation;
  g.kv_cols = 2 * kvw;

  plan::EmbedStep emb;
  emb.word = l.tensor(kText + "embed_tokens.weight", {c.vocab, H});
  emb.out = plan.whole(cur);
  l.add("embeddings", emb);
  l.add("L0.attn_norm", l.norm(layer_prefix(0) + "input_layernorm", rms, H, plan.whole(cur), {}, plan.whole(normed)));

  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(i), L = "L" + std::to_string(i) + ".", a = n + "self_attn.";
    const BufferId cache = plan.add_persistent_buffer("kv_cache.L" + std::to_string(i), kUnsizedRows, 2 * kvw);
    g.kv_cache.push_back(cache);
    const View kc{cache, 0, kvw}, vc{cache, kvw, kvw};
    l.add(L + "qkv", l.fused_linear(L + "qkv", {{a + "q_proj", static_cast<int64_t>(qw)},
                                                {a + "k_proj", static_cast<int64_t>(kvw)},
                                                {a + "v_proj", static_cast<int64_t>(kvw)}},
                                    H, plan.whole(normed), plan.slice(wide, 0, qkv_cols), Bias::kNone));
    // M-RoPE: GPT-J pairs over the first rotary_dim columns, frequency j (one inv_freq table
    // over rotary_dim) turning with the token's temporal, height or width position by section.
    // The query and key heads sit side by side in `wide` and turn alike, so one step (one launch
    // per layer and step) rotates both.
    plan::RopeStep rope{View{wide, 0, qw + kvw}, heads + kv_heads, hd, static_cast<std::size_t>(c.rotary_dim),
                        c.rope_theta, true};
    rope.sections.assign(c.mrope_section.begin(), c.mrope_section.end());
    rope.freq_dim = static_cast<std::size_t>(c.rotary_dim);
    l.add(L + "qk_rope", rope);
    l.add(L + "kv_write", plan::KvWriteStep{k, v, kc, vc});
    plan::CachedAttentionStep att;
    att.q = q;
    att.k_cache = kc;
    att.v_cache = vc;
    att.heads = heads;
    att.kv_heads = kv_heads;
    att.head_dim = hd;
    att.scale = scale;
    att.out = plan.whole(ctx);
    l.add(L + "attention", att);
    l.add(L + "o", l.linear(a + "o_proj", H, static_cast<int64_t>(qw), plan.whole(ctx), plan.whole(tmp), Bias::kNone));
    // The sandwich: the attention output normed alone, added to the residual stream, and the
    // sum normed for the MLP, the last two in one step.
    l.add(L + "post_attn_norm",
          l.norm(n + "post_self_attn_layernorm", rms, H, plan.whole(tmp), {}, plan.whole(tmp)));
    l.add(L + "mlp_norm", l.norm(n + "post_attention_layernorm", rms, H, plan.whole(tmp), plan.whole(cur),
                                 plan.whole(normed), plan.whole(cur)));
    l.add(L + "gate_up", l.linear(n + "mlp.gate_up_proj", 2 * I, H, plan.whole(normed), plan.slice(wide, 0, 2 * inner),
                                  Bias::kNone));
    l.add(L + "glu", plan::GluStep{plan.slice(wide, 0, 2 * inner), Activation::kSilu, plan.whole(act)});
    l.add(L + "down", l.linear(n + "mlp.down_proj", H, I, plan.whole(act), plan.whole(tmp), Bias::kNone));
    l.add(L + "post_mlp_norm", l.norm(n + "post_mlp_layernorm", rms, H, plan.whole(tmp), {}, plan.whole(tmp)));
    const bool last = i + 1 == c.layers;
    l.add(last ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm",
          l.norm(last ? kText + "norm" : layer_prefix(i + 1) + "input_layernorm", rms, H, plan.whole(tmp),
                 plan.whole(cur), plan.whole(normed), plan.whole(cur)));
  }

  // "prefill": the same steps, the image rows injected after the embedding.
  add_prefill_program(plan, "decode", "prefill", k, v, g.image_rows, plan.whole(cur));
  plan.set_output("hidden", plan.whole(normed));
  return {normed};
}

// "logits": each sequence's last row of the final norm's output through the untied head (or the
// embedding table when tie_word_embeddings), f32 sequence rows.
void build_head(plan::Plan& plan, const GlmOcrConfig& cfg, const WeightSource& src, const Decoder& d) {
  const GlmOcrTextConfig& c = cfg.text;
  Layers l(plan, src, "logits");
  const std::string table = cfg.tie_word_embeddings ? kText + "embed_tokens.weight" : "lm_head.weight";
  check(cfg.tie_word_embeddings || src.has("lm_head.weight"), "GLM-OCR checkpoint: no tensor lm_head.weight (and ",
        "tie_word_embeddings is false)");
  // The head runs in the serving precision, as transformers' lm_head does: the GEMM then reads
  // the vocabulary × hidden weights once in that type (half the bytes of the f32 copy the default
  // f32 sequence rows would make it meet), which at batch 1 is most of the head's time. The
  // logits are read back as f32.
  const BufferId last = plan.add_buffer("last_hidden", Rows::kSequences, static_cast<std::size_t>(c.hidden),
                                        plan::Elem::kActivation);
  const BufferId logits = plan.add_buffer("logits", Rows::kSequences, static_cast<std::size_t>(c.vocab),
                                          plan::Elem::kActivation);
  l.add("last_token", plan::PoolStep{plan.whole(d.normed), PoolingMode::kLastToken, plan.whole(last)});
  plan::GemmStep g;
  g.x = plan.whole(last);
  g.w = l.tensor(table, {c.vocab, c.hidden});
  g.y = plan.whole(logits);
  l.add("lm_head", g);
  plan.set_output("logits", plan.whole(logits));
}

BuiltModel describe(const GlmOcrConfig& c) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = "glm-ocr";
  m.hidden = c.text.hidden;
  m.layers = c.text.layers;
  m.heads = c.text.heads;
  m.kv_heads = c.text.kv_heads;
  m.intermediate = c.text.intermediate;
  m.act = c.text.act;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.text.hidden);
  m.limits = {c.text.vocab, 0, static_cast<std::size_t>(c.text.max_positions)};
  m.capabilities.generate = true;
  m.generation.emplace();
  GenerationSpec& g = *m.generation;
  g.image_token = c.image_token_id;
  g.position_axes = 3;
  // transformers' get_rope_index, from the image runs the ids hold (mm_token_type_ids 1 exactly
  // on the image tokens, as the processor makes them).
  const int32_t image = c.image_token_id;
  g.prompt_positions = [image](std::span<const int32_t> ids, std::span<const std::array<int, 3>> grids) {
    std::vector<std::uint8_t> types(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) types[i] = ids[i] == image ? 1 : 0;
    const std::size_t merge = 2;  // GlmOcrVisionConfig's spatial merge (checked in build_vision)
    MropePositions m = glm_ocr_rope_index(types, grids, merge);
    PromptPositions p;
    p.delta = m.delta;
    for (const auto& axis : m.axes) p.axes.insert(p.axes.end(), axis.begin(), axis.end());
    return p;
  };
  g.max_positions = static_cast<std::size_t>(c.text.max_positions);
  return m;
}

// The vision tower as program "vision", its merger rows into the persistent buffer the prefill
// injects at the image tokens.
void build_vision(BuiltModel& m, const GlmOcrConfig& c, const WeightSource& src) {
  const GlmOcrVisionConfig vc = parse_glm_ocr_vision_config(c.vision, "config.json (vision_config)");
  check(vc.merge == 2, "config.json: vision_config.spatial_merge_size ", vc.merge,
        " is not supported (GLM-OCR merges 2 x 2 patches)");
  check(vc.out_hidden == c.text.hidden, "config.json: vision_config.out_hidden_size (", vc.out_hidden,
        ") must equal text_config.hidden_size (", c.text.hidden, "): the merger's rows replace token embeddings");
  GenerationSpec& g = *m.generation;
  g.image_rows = m.plan.add_persistent_buffer("image_rows", kUnsizedRows, static_cast<std::size_t>(vc.out_hidden));
  g.image_row_divisor = vc.merge_tokens();
  g.spatial_merge = static_cast<std::size_t>(vc.merge);
  g.patch_dim = vc.patch_dim();
  g.patch_size = static_cast<std::size_t>(vc.patch);
  g.temporal_patch = static_cast<std::size_t>(vc.temporal_patch);
  m.capabilities.ocr = true;
  // GLM-OCR's page prompt (models/glm_ocr_prompt.h): the checkpoint's chat template around one
  // image and the SDK's task text.
  g.ocr_tasks = {"text", "table", "formula"};
  g.ocr_prompt = [](const text::Tokenizer& tokenizer, const PatchImage& page, std::string_view task) {
    const std::array<int, 3>& grid = page.grid_thw;
    const std::optional<GlmOcrTask> t = parse_glm_ocr_task(task.empty() ? "text" : task);
    check(t.has_value(), "OCR task '", task, "' is not one of text, table, formula");
    const GlmOcrSpecialTokens special = GlmOcrSpecialTokens::from_tokenizer(tokenizer, "tokenizer.json");
    return build_glm_ocr_prompt(tokenizer, special, grid, 2, glm_ocr_task_prompt(*t)).input_ids;
  };
  GlmOcrVisionOptions o;
  o.prefix = glm_ocr_vision_prefix(src);
  o.output = m.plan.whole(g.image_rows);
  build_glm_ocr_vision(m.plan, vc, src, o);
}

void build(BuiltModel& m, const GlmOcrConfig& c, const WeightSource& src) {
  build_vision(m, c, src);
  const Decoder d = build_decoder(m, c, src);
  build_head(m.plan, c, src, d);
}

// Tensors the decoder does not read: the multi-token-prediction layer the released checkpoint
// holds past the last layer (transformers ignores model.language_model.layers.16.* on load).
void note_ignored(BuiltModel& m, const GlmOcrConfig& c, const io::SafeTensors& t) {
  const std::string mtp = kText + "layers." + std::to_string(c.text.layers) + ".";
  std::size_t n = 0;
  for (const std::string& name : t.names())
    if (name.rfind(mtp, 0) == 0) ++n;
  if (n > 0)
    m.generation->notes.push_back("ignored " + std::to_string(n) + " tensors of the multi-token-prediction layer (" +
                                  mtp + "*), as transformers does");
}

}  // namespace

void check_glm_ocr_config(const nlohmann::json& config, const std::string& source) {
  (void)parse_glm_ocr_config(config, source);
}

std::map<std::string, std::vector<int64_t>> glm_ocr_text_tensors(const GlmOcrConfig& cfg) {
  const GlmOcrTextConfig& c = cfg.text;
  const int64_t H = c.hidden, I = c.intermediate, hd = c.head_dim;
  std::map<std::string, std::vector<int64_t>> t;
  t[kText + "embed_tokens.weight"] = {c.vocab, H};
  t[kText + "norm.weight"] = {H};
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(i);
    for (const char* norm : {"input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm",
                             "post_mlp_layernorm"})
      t[n + norm + ".weight"] = {H};
    t[n + "self_attn.q_proj.weight"] = {c.heads * hd, H};
    t[n + "self_attn.k_proj.weight"] = {c.kv_heads * hd, H};
    t[n + "self_attn.v_proj.weight"] = {c.kv_heads * hd, H};
    t[n + "self_attn.o_proj.weight"] = {H, c.heads * hd};
    t[n + "mlp.gate_up_proj.weight"] = {2 * I, H};
    t[n + "mlp.down_proj.weight"] = {H, I};
  }
  if (!cfg.tie_word_embeddings) t["lm_head.weight"] = {c.vocab, H};
  return t;
}

BuiltModel build_glm_ocr_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                const std::string& source) {
  const GlmOcrConfig c = parse_glm_ocr_config(config, source);
  const Folder f = open_folder(dir);
  BuiltModel m = describe(c);
  describe_folder(m, f, PoolingMode::kLastToken);
  const GenerationDefaults gen = read_generation_config(dir, c.text.vocab);
  m.generation->end_ids = gen.end_ids;
  m.generation->pad_token = gen.pad_id.value_or(-1);
  note_ignored(m, c, f.weights->tensors());
  build(m, c, *f.weights);
  return m;
}

BuiltModel build_glm_ocr_random(const nlohmann::json& config, const std::string& source) {
  const GlmOcrConfig c = parse_glm_ocr_config(config, source);
  BuiltModel m = describe(c);
  std::map<std::string, std::vector<int64_t>> tensors = glm_ocr_text_tensors(c);
  for (auto& [name, shape] : glm_ocr_vision_tensors(parse_glm_ocr_vision_config(c.vision, source), "model.visual."))
    tensors[name] = shape;
  RandomSource src(tensors, checkpoint_dtype(config));
  build(m, c, src);
  return m;
}

}  // namespace il::models
