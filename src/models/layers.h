// Layer helpers: what a model file wires instead of filling steps and buffers by hand. A model
// file names its tensors and scratch buffers and calls these; each appends typed steps to one
// program of the plan and loads the weights it needs (shapes checked, errors naming the tensor).
//
//   Layers l(plan, src, "encode");
//   l.add("L0.qkv", l.fused_linear("L0.qkv", {q, k, v}, H, cur, qkv, Bias::kNone));
//
// Buffers stay the model file's: it knows which live at once and can share their storage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/weight_source.h"
#include "plan/plan.h"

namespace il::models {

enum class Bias { kNone, kRequired, kIfPresent };

// A norm as checkpoints describe it: LayerNorm (centred) or RMSNorm, with or without a bias.
struct NormSpec {
  bool rms = false;
  Bias bias = Bias::kRequired;  // LayerNorm; RMSNorm has none
  float eps = 1e-12f;
};

// One tensor of a fused projection: its checkpoint name (without ".weight") and output rows.
struct LinearPart {
  std::string name;
  int64_t rows = 0;
};

class Layers {
 public:
  Layers(plan::Plan& plan, const WeightSource& src, std::string program)
      : plan_(plan), src_(src), program_(std::move(program)) {}

  plan::Plan& plan() { return plan_; }
  const WeightSource& source() const { return src_; }
  const std::string& program() const { return program_; }

  void add(std::string step_name, plan::StepOp op) { plan_.add_step(program_, std::move(step_name), std::move(op)); }

  // Checkpoint tensor `name` with its shape checked; kNoWeight for an absent optional one.
  plan::WeightId tensor(const std::string& name, std::vector<int64_t> shape);
  plan::WeightId optional_tensor(const std::string& name, std::vector<int64_t> shape);
  // Tensors `names` (shapes `shapes`) stacked row-wise as one plan weight `fused` of `shape`,
  // without copying them: the executor joins them as it places the weight.
  plan::WeightId stacked(const std::string& fused, const std::vector<std::string>& names,
                         const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t> shape);

  // y = act(x · Wᵀ + b) for checkpoint linear `name` (`name.weight` [out, in], `name.bias` [out]).
  plan::GemmStep linear(const std::string& name, int64_t out, int64_t in, plan::View x, plan::View y, Bias bias,
                        Activation act = Activation::kNone);
  // One GEMM over the parts' weights stacked row-wise in order (q, k, v; or gate, up), under the
  // plan weight name `fused`: y's columns hold the parts' outputs side by side. Biases follow
  // `bias` for every part (kIfPresent: all parts or none).
  plan::GemmStep fused_linear(const std::string& fused, const std::vector<LinearPart>& parts, int64_t in,
                              plan::View x, plan::View y, Bias bias, Activation act = Activation::kNone);

  // out = norm(x [+ residual]) with checkpoint norm `name` of `cols` values ([cols] weight);
  // sum_out (optional) also gets x + residual; group normalises runs of that many columns.
  plan::LayerNormStep norm(const std::string& name, const NormSpec& spec, int64_t cols, plan::View x,
                           plan::View residual, plan::View out, plan::View sum_out = {}, std::size_t group = 0);

 private:
  plan::Plan& plan_;
  const WeightSource& src_;
  std::string program_;
};

// The self-attention of one layer: a fused QKV projection into `qkv` (q, then k, then v
// columns), optional per-head q / k norms and rotary embeddings in place, the attention into
// `ctx`, and the output projection into `out`.
struct AttentionNames {
  std::string q, k, v, o;              // linears, without ".weight"
  std::string q_norm, k_norm;          // per-head norms ("" = none)
};
struct AttentionShape {
  int64_t hidden = 0;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  Bias qkv_bias = Bias::kNone, o_bias = Bias::kNone;
  NormSpec qk_norm{true, Bias::kNone, 1e-6f};
  std::optional<float> rope_theta;     // rotary embeddings on q and k (rotate-half, whole head)
  ops::MaskMode mask = ops::MaskMode::kBidirectional;
  std::size_t window = 0;
  float scale = 0.0f;                  // 0: 1 / sqrt(head_dim)
};
// Step names are `prefix` + "qkv", then "qk_norm_rope" (RMS q / k norms fused into the rotary
// step) or "q_norm", "k_norm" and "qk_rope" (either may be absent), "attention", "o".
// `qkv` must hold (heads + 2 kv_heads) · head_dim columns, `ctx` heads · head_dim.
void attention_block(Layers& l, const std::string& prefix, const AttentionNames& names, const AttentionShape& shape,
                     plan::View x, plan::View qkv, plan::View ctx, plan::View out);

// A gated MLP: gate and up as one GEMM into `gate_up` (2I columns), act(gate) ⊙ up into `inner`
// (I columns), then down into `out`. Step names `prefix` + "gate_up", "glu", "down".
struct GluMlpNames {
  std::string gate, up, down;
};
void glu_mlp(Layers& l, const std::string& prefix, const GluMlpNames& names, int64_t hidden, int64_t intermediate,
             Activation act, Bias bias, plan::View x, plan::View gate_up, plan::View inner, plan::View out);

// A generating model's "prefill" (program `to`) from its "decode" (program `from`): the same
// steps, each attention over the KV cache replaced by the attention among the batch's own tokens,
// causal per sequence (a prompt's cache holds exactly its own tokens, so the flash kernels serve
// it), reading keys and values from `k` and `v` (every layer's: one scratch buffer). With
// image_rows ≥ 0, the rows of that buffer are injected into `embedded` at the image tokens
// right after the step named "embeddings".
void add_prefill_program(plan::Plan& plan, const std::string& from, const std::string& to, plan::View k, plan::View v,
                         plan::BufferId image_rows, plan::View embedded);

// "Run the last layer for selected rows only". Appends program `to`: program `from` up to its last
// attention step as is; from there, the steps for one row per sequence (its first or its last
// token, `which`): that attention computes those query rows only (keys and values are still every
// token), and every later step runs on selected-row buffers (one row per sequence instead of one
// per token). A token buffer the tail reads without having written it (the residual stream) is
// gathered first. Selected buffers take the storage of token buffers the tail no longer uses, so
// the program costs no memory where such buffers exist. Returns, per token buffer the tail writes,
// its selected counterpart (index: token buffer id; -1 where none). Throws when the tail has a
// step that needs every token (rotary embeddings).
std::vector<plan::BufferId> add_selected_program(plan::Plan& plan, const std::string& from, const std::string& to,
                                                 plan::QueryRows which);

}  // namespace il::models
