// The plan: a model written once as typed steps over named buffers, run by any backend.
//
// A builder (models/) reads a config and weights and appends steps to named programs
// ("encode", "pool_mean", "ce_head", ...). Buffers are sized once for the largest batch; per
// batch only the row counts change: a buffer has one row per token (T) or one per sequence (B).
// A View is a column window of a buffer, so a packed [T, 3H] QKV buffer is read as three views
// without copies. Executors never branch on the architecture; builders never on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "inferencelayer/types.h"
#include "ops/attention.h"

namespace il::plan {

// kTokens: one row per token. kSequences: one per sequence (pooled rows, heads, scores; f32 in
// every precision mode). kFirstTokens: one per sequence too, but encoder activations of each
// sequence's first token, kept in the serving precision like token rows (a CLS-pooled model's
// last layer needs no other row, see models/bert.h).
enum class Rows { kTokens, kSequences, kFirstTokens };

using BufferId = int;

struct BufferDesc {
  std::string name;
  Rows rows = Rows::kTokens;
  std::size_t cols = 0;
  // -1: the buffer has storage of its own. Else the token buffer whose storage it reuses (no
  // chains; at most as many columns): for programs that never need both at once.
  BufferId storage = -1;
};

struct WeightDesc {
  std::string name;             // the checkpoint tensor it came from (or a fused name)
  std::vector<int64_t> shape;
  // f32 on the host; backends upload it, use it in place, or re-lay it and release this copy
  // (the CPU executor packs GEMM weights into panels and empties `data`).
  std::vector<float> data;
};

using WeightId = int;
inline constexpr WeightId kNoWeight = -1;

struct View {
  BufferId buffer = -1;
  std::size_t col = 0;   // first column of the window
  std::size_t cols = 0;  // width of the window
};

// Step vocabulary. Each names its output for debugging dumps and profiles.
struct EmbedStep {
  WeightId word = kNoWeight, position = kNoWeight, type = kNoWeight;
  std::size_t position_offset = 0;
  View out;
};
struct GemmStep {
  View x;
  WeightId w = kNoWeight, bias = kNoWeight;
  Activation act = Activation::kNone;
  View y;
};
struct LayerNormStep {
  View x;
  View residual;  // buffer -1: none
  WeightId w = kNoWeight, b = kNoWeight;
  float eps = 1e-12f;
  bool rms = false;
  View out;
};
struct AttentionStep {
  View q, k, v;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  ops::MaskMode mask = ops::MaskMode::kBidirectional;
  std::size_t window = 0;
  View out;
  // Queries: each sequence's first token only; out then has kFirstTokens rows (row s for
  // sequence s), while keys and values are still every token of the sequence.
  bool first_query_only = false;
};
struct PoolStep {
  View x;  // token rows, or kFirstTokens rows (one per sequence, taken as is: mode must be kCls)
  PoolingMode mode = PoolingMode::kMean;
  View out;  // sequence rows
};
struct L2Step {
  View x;
};

using StepOp = std::variant<EmbedStep, GemmStep, LayerNormStep, AttentionStep, PoolStep, L2Step>;

struct Step {
  std::string name;  // e.g. "L3.attn_out"
  StepOp op;
};

class Plan {
 public:
  BufferId add_buffer(std::string name, Rows rows, std::size_t cols);
  // A buffer over the storage of token buffer `owner` (see BufferDesc::storage).
  BufferId add_buffer_over(std::string name, Rows rows, std::size_t cols, BufferId owner);
  WeightId add_weight(std::string name, std::vector<int64_t> shape, std::vector<float> data);
  void add_step(const std::string& program, std::string name, StepOp op);
  // Names a view so callers can read it back ("hidden", "embedding", "scores").
  void set_output(const std::string& name, View view);

  const std::vector<BufferDesc>& buffers() const { return buffers_; }
  const std::vector<WeightDesc>& weights() const { return weights_; }
  std::vector<WeightDesc>& weights() { return weights_; }
  const std::vector<Step>& program(const std::string& name) const;  // throws if absent
  bool has_program(const std::string& name) const { return programs_.count(name) > 0; }
  std::vector<std::string> program_names() const;
  View output(const std::string& name) const;  // throws if absent
  bool has_output(const std::string& name) const { return outputs_.count(name) > 0; }

  View whole(BufferId id) const { return {id, 0, buffers_.at(static_cast<std::size_t>(id)).cols}; }
  View slice(BufferId id, std::size_t col, std::size_t cols) const;

  std::size_t parameter_count() const;

 private:
  std::vector<BufferDesc> buffers_;
  std::vector<WeightDesc> weights_;
  std::map<std::string, std::vector<Step>> programs_;
  std::map<std::string, View> outputs_;
};

// One ragged batch: tokens of all sequences back to back, no padding.
struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> type_ids;    // empty or one per token
  std::vector<int32_t> seq_starts;  // num_seqs + 1 entries, first 0, last tokens.size()
  // Empty, or one per sequence: the first row mean and last-token pooling read, after the
  // sequence's leading prompt tokens (models pooled without their prompt; see ops/pool.h).
  std::vector<int32_t> pool_starts;
  std::size_t num_tokens() const { return tokens.size(); }
  std::size_t num_seqs() const { return seq_starts.empty() ? 0 : seq_starts.size() - 1; }
};

// Throws unless pool_starts is empty or holds one start per sequence inside that sequence.
void check_pool_starts(const Batch& batch);

}  // namespace il::plan
