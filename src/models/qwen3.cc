#include "models/qwen3.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/config_check.h"
#include "models/embedding_head.h"
#include "models/folder.h"
#include "models/layers.h"
#include "text/tokenizer.h"

namespace il::models {
namespace {

using plan::BufferId;
using plan::Rows;
using plan::View;

std::string layer_prefix(const std::string& prefix, int i) { return prefix + "layers." + std::to_string(i) + "."; }

// "" (a Qwen3Model saved alone) or "model." (inside Qwen3ForCausalLM and most exports).
std::string detect_prefix(const WeightSource& src) {
  for (const char* p : {"", "model."})
    if (src.has(std::string(p) + "embed_tokens.weight")) return p;
  throw make_error("no Qwen3 tensors found: probed embed_tokens.weight under the prefixes '' and 'model.'");
}

struct Trunk {
  BufferId hidden = -1;    // [T, hidden]: the final norm's output, every token ("encode")
  BufferId selected = -1;  // [B, hidden]: the same for each sequence's last token ("encode_last")
};

Trunk build_trunk(plan::Plan& plan, const Qwen3Config& c, const WeightSource& src, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate;
  const std::size_t h = static_cast<std::size_t>(H), hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t heads = static_cast<std::size_t>(c.heads), kv_heads = static_cast<std::size_t>(c.kv_heads);
  const std::size_t qkv_cols = (heads + 2 * kv_heads) * hd, inner = static_cast<std::size_t>(I);
  Layers l(plan, src, "encode");
  const NormSpec rms{true, Bias::kNone, c.rms_eps};

  // The residual stream, the normed stream (each layer's input; at the end the output), the
  // attention context, a projection output, one wide buffer for QKV and then the MLP's gate and
  // up projections, and the MLP's gated activations.
  const BufferId cur = plan.add_buffer("residual", Rows::kTokens, h);
  const BufferId normed = plan.add_buffer("normed", Rows::kTokens, h);
  const BufferId ctx = plan.add_buffer("attn_ctx", Rows::kTokens, heads * hd);
  const BufferId tmp = plan.add_buffer("proj_out", Rows::kTokens, h);
  const BufferId wide = plan.add_buffer("wide", Rows::kTokens, std::max(qkv_cols, 2 * inner));
  const BufferId act = plan.add_buffer("mlp_act", Rows::kTokens, inner);

  plan::EmbedStep emb;  // no position table: positions enter through the rotary embeddings
  emb.word = l.tensor(p + "embed_tokens.weight", {c.vocab, H});
  emb.out = plan.whole(cur);
  l.add("embeddings", emb);

  AttentionShape shape;
  shape.hidden = H;
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = hd;
  shape.qkv_bias = shape.o_bias = c.attention_bias ? Bias::kRequired : Bias::kNone;
  shape.qk_norm = rms;
  shape.rope_theta = c.rope_theta;
  shape.mask = ops::MaskMode::kCausal;

  l.add("L0.attn_norm", l.norm(layer_prefix(p, 0) + "input_layernorm", rms, H, plan.whole(cur), {}, plan.whole(normed)));
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i), L = "L" + std::to_string(i) + ".";
    const std::string a = n + "self_attn.";
    attention_block(l, L, {a + "q_proj", a + "k_proj", a + "v_proj", a + "o_proj", a + "q_norm", a + "k_norm"}, shape,
                    plan.whole(normed), plan.slice(wide, 0, qkv_cols), plan.whole(ctx), plan.whole(tmp));
    // residual += attention; normed = RMSNorm(residual), in one step.
    l.add(L + "mlp_norm", l.norm(n + "post_attention_layernorm", rms, H, plan.whole(tmp), plan.whole(cur),
                                 plan.whole(normed), plan.whole(cur)));
    glu_mlp(l, L, {n + "mlp.gate_proj", n + "mlp.up_proj", n + "mlp.down_proj"}, H, I, c.act, Bias::kNone,
            plan.whole(normed), plan.slice(wide, 0, 2 * inner), plan.whole(act), plan.whole(tmp));
    // residual += MLP; normed = the next layer's input norm, or the final norm.
    const bool last = i + 1 == c.layers;
    l.add(last ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm",
          l.norm(last ? p + "norm" : layer_prefix(p, i + 1) + "input_layernorm", rms, H, plan.whole(tmp),
                 plan.whole(cur), plan.whole(normed), plan.whole(cur)));
  }
  plan.set_output("hidden", plan.whole(normed));
  // The last layer for each sequence's last token only: all last-token pooling and the reranker
  // read. Under the causal mask that token is the one whose query sees every key.
  const std::vector<BufferId> selected = add_selected_program(plan, "encode", "encode_last", plan::QueryRows::kLast);
  return {normed, selected.at(static_cast<std::size_t>(normed))};
}

// Reranker head: score = logit("yes") − logit("no") of each sequence's last token, one GEMM
// with the difference of the two output-embedding rows; its sigmoid is the model card's
// P(yes) = softmax([no, yes])[yes].
void build_yes_no_head(plan::Plan& plan, const Qwen3Config& c, const WeightSource& src, const std::string& p,
                       const Trunk& trunk, int32_t yes, int32_t no) {
  const int64_t H = c.hidden;
  const std::string table = src.has("lm_head.weight") ? "lm_head.weight" : p + "embed_tokens.weight";
  check(src.has("lm_head.weight") || c.tie_word_embeddings, "Qwen3ForCausalLM: no lm_head.weight, and ",
        "tie_word_embeddings is not set in config.json");
  check(yes >= 0 && yes < c.vocab && no >= 0 && no < c.vocab, "reranker tokens \"yes\" (", yes, ") and \"no\" (", no,
        ") must be inside the vocabulary of ", c.vocab);
  // The two rows alone, converted from the table as stored.
  const plan::StoredTensor w = src.view(table, {c.vocab, H});
  const plan::StoredPart& part = w.parts.at(0);
  const std::size_t row_bytes = static_cast<std::size_t>(H) * dtype_size(part.dtype);
  std::vector<float> yes_row(static_cast<std::size_t>(H)), no_row(static_cast<std::size_t>(H));
  convert_to_f32(part.dtype, part.bytes + static_cast<std::size_t>(yes) * row_bytes, yes_row.data(), yes_row.size());
  convert_to_f32(part.dtype, part.bytes + static_cast<std::size_t>(no) * row_bytes, no_row.data(), no_row.size());
  std::vector<float> diff(static_cast<std::size_t>(H));
  for (std::size_t j = 0; j < diff.size(); ++j) diff[j] = yes_row[j] - no_row[j];
  const std::size_t h = static_cast<std::size_t>(H);
  const BufferId last = plan.add_buffer("rerank_last", Rows::kSequences, h);
  const BufferId scores = plan.add_buffer("scores", Rows::kSequences, 1);
  plan::GemmStep g;
  g.x = plan.whole(last);
  g.w = plan.add_weight(table + "[yes] - [no]", {1, H}, std::move(diff));
  g.y = plan.whole(scores);
  plan.add_step("ce_head", "rerank.last", plan::PoolStep{plan.whole(trunk.hidden), PoolingMode::kLastToken, plan.whole(last)});
  plan.add_step("ce_head", "rerank.yes_no", g);
  plan.add_step("ce_head_last", "rerank.last",
                plan::PoolStep{plan.whole(trunk.selected), PoolingMode::kLastToken, plan.whole(last)});
  plan.add_step("ce_head_last", "rerank.yes_no", g);
  plan.set_output("scores", plan.whole(scores));
}

BuiltModel describe(const Qwen3Config& c, bool reranker) {
  BuiltModel m;
  m.model_type = c.model_type;
  m.architecture = c.architecture;
  m.layout = reranker ? "qwen3-reranker" : "qwen3";
  m.hidden = c.hidden;
  m.layers = c.layers;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads;
  m.intermediate = c.intermediate;
  m.act = c.act;
  m.random_weights = c.random_weights;
  m.hidden_size = static_cast<std::size_t>(c.hidden);
  m.limits = {c.vocab, 0, static_cast<std::size_t>(c.max_positions)};
  m.capabilities.hidden_states = true;
  if (reranker) {
    m.capabilities.score = true;
    m.labels = {"yes"};
    m.pair_template = qwen3_reranker_template();
  } else {
    m.capabilities.embed = true;
  }
  return m;
}

void build(BuiltModel& m, const Qwen3Config& c, const WeightSource& src, const std::optional<DenseWeights>& dense,
           int32_t yes, int32_t no) {
  const std::string p = detect_prefix(src);
  const Trunk trunk = build_trunk(m.plan, c, src, p);
  if (m.capabilities.score)
    build_yes_no_head(m.plan, c, src, p, trunk, yes, no);
  else
    m.embedding_dim = build_embedding_head(m.plan, trunk.hidden, trunk.selected, plan::QueryRows::kLast,
                                           static_cast<std::size_t>(c.hidden), dense);
}

// The checkpoint against config.json: layer count and the widths the first layer's tensors
// imply (shapes of every tensor are checked again as they load).
void check_against_tensors(const Qwen3Config& c, const std::string& source, const io::SafeTensors& t,
                           const std::string& p) {
  const std::string last = layer_prefix(p, c.layers - 1) + "self_attn.q_proj.weight";
  check(t.has(last), source, ": field \"num_hidden_layers\" = ", c.layers, " but the checkpoint has no tensor \"",
        last, "\" (it holds fewer layers)");
  const std::string extra = layer_prefix(p, c.layers) + "self_attn.q_proj.weight";
  check(!t.has(extra), source, ": field \"num_hidden_layers\" = ", c.layers, " but ",
        t.has(extra) ? t.info(extra).file.string() : "", " holds more layers (tensor \"", extra, "\")");
  const auto expect = [&](const std::string& tensor, std::size_t dim, long long want, const char* field) {
    if (!t.has(tensor)) return;
    const io::TensorInfo& info = t.info(tensor);
    if (info.shape.size() > dim && info.shape[dim] != want)
      throw make_error(source, ": field \"", field, "\" implies ", want, " for dimension ", dim, " of tensor \"",
                       tensor, "\" in ", info.file.string(), ", which has ", info.shape[dim]);
  };
  const std::string a = layer_prefix(p, 0) + "self_attn.";
  expect(p + "embed_tokens.weight", 0, c.vocab, "vocab_size");
  expect(p + "embed_tokens.weight", 1, c.hidden, "hidden_size");
  expect(a + "q_proj.weight", 0, static_cast<long long>(c.heads) * c.head_dim, "num_attention_heads × head_dim");
  expect(a + "k_proj.weight", 0, static_cast<long long>(c.kv_heads) * c.head_dim, "num_key_value_heads × head_dim");
  expect(a + "q_norm.weight", 0, c.head_dim, "head_dim");
  expect(layer_prefix(p, 0) + "mlp.up_proj.weight", 0, c.intermediate, "intermediate_size");
}

}  // namespace

PairTemplate qwen3_reranker_template() {
  PairTemplate t;
  t.prefix =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
  t.body = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}";
  t.suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  t.default_instruction = "Given a web search query, retrieve relevant passages that answer the query";
  return t;
}

std::map<std::string, std::vector<int64_t>> qwen3_tensors(const Qwen3Config& c, const std::string& p) {
  const int64_t H = c.hidden, I = c.intermediate, hd = c.head_dim;
  std::map<std::string, std::vector<int64_t>> t;
  t[p + "embed_tokens.weight"] = {c.vocab, H};
  t[p + "norm.weight"] = {H};
  for (int i = 0; i < c.layers; ++i) {
    const std::string n = layer_prefix(p, i);
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
    t[n + "self_attn.q_norm.weight"] = {hd};
    t[n + "self_attn.k_norm.weight"] = {hd};
    t[n + "mlp.gate_proj.weight"] = {I, H};
    t[n + "mlp.up_proj.weight"] = {I, H};
    t[n + "mlp.down_proj.weight"] = {H, I};
  }
  if (c.causal_lm && !c.tie_word_embeddings) t["lm_head.weight"] = {c.vocab, H};
  return t;
}

BuiltModel build_qwen3_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                              const std::string& source) {
  const Qwen3Config c = parse_qwen3_config(config, source);
  const Folder f = open_folder(dir);
  const bool reranker = c.causal_lm && !f.st.present;
  BuiltModel m = describe(c, reranker);
  describe_folder(m, f, PoolingMode::kLastToken);
  const std::string p = detect_prefix(*f.weights);
  check_against_tensors(c, source, f.weights->tensors(), p);
  check_modules_against_model(f.st, c.hidden, source, f.dense_weights ? &f.dense_weights->tensors() : nullptr);
  int32_t yes = 0, no = 0;
  if (reranker) {
    // The answer tokens, as the model card looks them up.
    const std::filesystem::path tok = dir / "tokenizer.json";
    check(std::filesystem::exists(tok), dir.string(), ": a Qwen3ForCausalLM reranker needs tokenizer.json (for the ",
          "ids of \"yes\" and \"no\")");
    const text::Tokenizer tokenizer = text::Tokenizer::from_file(tok);
    const auto y = tokenizer.token_to_id("yes"), n = tokenizer.token_to_id("no");
    check(y && n, tok.string(), ": the reranker's answer tokens \"yes\" and \"no\" are not in the vocabulary");
    yes = *y;
    no = *n;
  }
  build(m, c, *f.weights, f.dense(), yes, no);
  return m;
}

BuiltModel build_qwen3_random(const nlohmann::json& config, const std::string& source) {
  const Qwen3Config c = parse_qwen3_config(config, source);
  const auto task = config.find("_inferencelayer_task");
  const bool reranker = task != config.end() && *task == "score";
  BuiltModel m = describe(c, reranker);
  m.pooling = PoolingMode::kLastToken;
  m.normalize = true;
  Qwen3Config tensors = c;
  tensors.causal_lm = reranker;
  RandomSource src(qwen3_tensors(tensors, reranker ? "model." : ""), checkpoint_dtype(config));
  build(m, c, src, std::nullopt, 0, std::min(1, c.vocab - 1));
  return m;
}

}  // namespace il::models
