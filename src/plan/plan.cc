#include "plan/plan.h"

#include "core/error.h"
#include "plan/operands.h"
#include "plan/step_profile.h"

namespace il::plan {

BufferId Plan::add_buffer(std::string name, Rows rows, std::size_t cols) {
  return add_buffer(std::move(name), rows, cols, default_elem(rows));
}

BufferId Plan::add_buffer(std::string name, Rows rows, std::size_t cols, Elem elem) {
  check(cols > 0, "plan: buffer ", name, " has zero columns");
  check(rows != Rows::kPersistent, "plan: buffer ", name, ": persistent buffers are made by add_persistent_buffer ",
        "(they need their row count)");
  buffers_.push_back({std::move(name), rows, cols, -1, elem});
  return static_cast<BufferId>(buffers_.size() - 1);
}

BufferId Plan::add_persistent_buffer(std::string name, std::size_t rows, std::size_t cols, Elem elem) {
  check(cols > 0, "plan: persistent buffer ", name, " has zero columns");
  check(rows > 0, "plan: persistent buffer ", name, " has zero rows");
  buffers_.push_back({std::move(name), Rows::kPersistent, cols, -1, elem, rows});
  return static_cast<BufferId>(buffers_.size() - 1);
}

BufferId Plan::add_buffer_over(std::string name, Rows rows, std::size_t cols, BufferId owner) {
  check(owner >= 0 && static_cast<std::size_t>(owner) < buffers_.size(), "plan: buffer ", name,
        " reuses unknown buffer ", owner);
  const BufferDesc& o = buffers_[static_cast<std::size_t>(owner)];
  // A persistent buffer's contents must outlive every run: no other buffer may write its storage,
  // and it has storage of its own.
  check(o.rows != Rows::kPersistent, "plan: buffer ", name, " cannot reuse the storage of persistent buffer ", o.name,
        " (its contents are kept between runs)");
  check(rows != Rows::kPersistent, "plan: persistent buffer ", name, " cannot reuse the storage of ", o.name,
        " (its contents are kept between runs)");
  // Token and selected rows share the element type (the serving precision) and the row bound
  // (the scratch's token count), so the owner's storage holds the new buffer.
  check(o.rows == Rows::kTokens && o.storage < 0 && o.elem == Elem::kActivation, "plan: buffer ", name,
        " may only reuse an activation token buffer that owns its storage, not ", o.name);
  check(rows != Rows::kSequences, "plan: buffer ", name, ": sequence rows (f32 on GPUs) cannot reuse ", o.name);
  // Window rows are a quarter of the token rows: kWindowTokens times the owner's columns fit, and
  // at exactly that width a window row is its token rows side by side.
  const bool reshape = rows == Rows::kWindows && cols == kWindowTokens * o.cols;
  check(cols > 0 && (cols <= o.cols || reshape), "plan: buffer ", name, " (", cols, " columns) does not fit in ",
        o.name, " (", o.cols, ")");
  buffers_.push_back({std::move(name), rows, cols, owner, Elem::kActivation});
  return static_cast<BufferId>(buffers_.size() - 1);
}

WeightId Plan::add_weight(std::string name, std::vector<int64_t> shape, std::vector<float> data) {
  std::size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<std::size_t>(d);
  check(numel == data.size(), "plan: weight ", name, " has ", data.size(),
        " values for its shape of ", numel);
  weights_.push_back({std::move(name), std::move(shape), std::move(data)});
  return static_cast<WeightId>(weights_.size() - 1);
}

WeightId Plan::add_weight(std::string name, std::vector<int64_t> shape, StoredTensor stored) {
  WeightDesc w{std::move(name), std::move(shape), {}, std::move(stored)};
  std::size_t numel = 0;
  for (const StoredPart& p : w.stored.parts) {
    check(p.bytes != nullptr || p.numel == 0, "plan: weight ", w.name, " has a part without values");
    numel += p.numel;
  }
  check(numel == w.numel(), "plan: weight ", w.name, " has ", numel, " stored values for its shape of ", w.numel());
  weights_.push_back(std::move(w));
  return static_cast<WeightId>(weights_.size() - 1);
}

std::size_t WeightDesc::numel() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

DType WeightDesc::dtype() const {
  if (!data.empty() || stored.parts.empty()) return DType::kF32;
  for (const StoredPart& p : stored.parts)
    if (p.dtype != stored.parts.front().dtype) return DType::kF32;
  return stored.parts.front().dtype;
}

std::vector<float> WeightDesc::to_f32() const {
  if (!data.empty() || numel() == 0) return data;
  check(!stored.parts.empty(), "weight ", name, " holds no values (its plan is already used by another executor?)");
  std::vector<float> out(numel());
  std::size_t at = 0;
  for (const StoredPart& p : stored.parts) {
    convert_to_f32(p.dtype, p.bytes, out.data() + at, p.numel);
    at += p.numel;
  }
  return out;
}

void WeightDesc::release() {
  std::vector<float>().swap(data);
  stored = {};
}

void Plan::add_step(const std::string& program, std::string name, StepOp op) {
  // Steps that index rows by token or sequence (embeddings, positions, attention, pooling) have
  // no meaning yet on rows that belong to no batch; the row-wise ones run over rows(x).
  // The KV cache steps address persistent rows through the batch's cache rows and pages, and
  // InjectRowsStep and GatherRowsStep read a persistent source by row index: both are defined on
  // any rows.
  const bool row_wise = std::holds_alternative<GemmStep>(op) || std::holds_alternative<LayerNormStep>(op) ||
                        std::holds_alternative<GluStep>(op) || std::holds_alternative<L2Step>(op) ||
                        std::holds_alternative<KvWriteStep>(op) || std::holds_alternative<CachedAttentionStep>(op) ||
                        std::holds_alternative<InjectRowsStep>(op) || std::holds_alternative<RouterStep>(op) ||
                        std::holds_alternative<MoeStep>(op) || std::holds_alternative<SoftmaxStep>(op) ||
                        std::holds_alternative<SoftcapStep>(op) || std::holds_alternative<GatherRowsStep>(op);
  const Operands o = operands(op);
  for (const auto* views : {&o.reads, &o.writes})
    for (const View& v : *views) {
      check(v.buffer >= 0 && static_cast<std::size_t>(v.buffer) < buffers_.size(), "plan: step ", name,
            " uses unknown buffer ", v.buffer);
      const BufferDesc& b = buffers_[static_cast<std::size_t>(v.buffer)];
      check(row_wise || b.rows != Rows::kPersistent, "plan: step ", name, " (", op_name(op),
            ") uses persistent buffer ", b.name, ": only GEMM, norm, GLU and L2 steps may so far");
      check(row_wise || b.rows != Rows::kWindows, "plan: step ", name, " (", op_name(op), ") uses window-row buffer ",
            b.name, ": only GEMM, norm, GLU and L2 steps may");
    }
  programs_[program].push_back({std::move(name), std::move(op)});
}

void Plan::set_fixed_rows(BufferId id, std::size_t rows) {
  BufferDesc& b = buffers_.at(static_cast<std::size_t>(id));
  check(b.rows == Rows::kPersistent, "plan: buffer ", b.name, " is not persistent: its rows follow the batch");
  check(rows > 0, "plan: persistent buffer ", b.name, " needs at least one row");
  b.fixed_rows = rows;
}

void Plan::set_output(const std::string& name, View view) { outputs_[name] = view; }

const std::vector<Step>& Plan::program(const std::string& name) const {
  auto it = programs_.find(name);
  check(it != programs_.end(), "plan: no program named '", name, "'");
  return it->second;
}

std::vector<std::string> Plan::program_names() const {
  std::vector<std::string> names;
  for (const auto& [name, steps] : programs_) names.push_back(name);
  return names;
}

View Plan::output(const std::string& name) const {
  auto it = outputs_.find(name);
  check(it != outputs_.end(), "plan: no output named '", name, "'");
  return it->second;
}

View Plan::slice(BufferId id, std::size_t col, std::size_t cols) const {
  const BufferDesc& b = buffers_.at(static_cast<std::size_t>(id));
  check(col + cols <= b.cols, "plan: view [", col, ", ", col + cols, ") outside buffer ", b.name,
        " of ", b.cols, " columns");
  return {id, col, cols};
}

std::size_t Plan::parameter_count() const {
  std::size_t n = 0;
  // From the shapes: a backend may have moved the data into its own layout.
  for (const auto& w : weights_) {
    std::size_t count = 1;
    for (int64_t d : w.shape) count *= static_cast<std::size_t>(d);
    n += count;
  }
  return n;
}

namespace {

// The KV cache fields: present together or not at all, every cache length within the pages its
// sequence holds. Rows past a cache buffer's end are the executors' check (they know its size).
void check_generation_fields(const Batch& batch) {
  const std::size_t t = batch.num_tokens(), b = batch.num_seqs();
  check(batch.inject_rows.empty() || batch.inject_rows.size() == t, "batch: ", batch.inject_rows.size(),
        " inject rows for ", t, " tokens");
  for (int32_t r : batch.inject_rows) check(r >= -1, "batch: inject row ", r);
  check(batch.cache_rows.empty() || batch.cache_rows.size() == t, "batch: ", batch.cache_rows.size(),
        " cache rows for ", t, " tokens");
  for (int32_t r : batch.cache_rows) check(r >= 0, "batch: negative cache row ", r);
  if (batch.cache_lengths.empty()) return;
  check(batch.cache_lengths.size() == t, "batch: ", batch.cache_lengths.size(), " cache lengths for ", t, " tokens");
  check(batch.kv_page_size > 0, "batch: cache lengths without a page size");
  check(batch.kv_page_starts.size() == b + 1 && batch.kv_page_starts.front() == 0 &&
            static_cast<std::size_t>(batch.kv_page_starts.back()) == batch.kv_pages.size(),
        "batch: kv_page_starts must hold one offset per sequence and the page count");
  for (int32_t p : batch.kv_pages) check(p >= 0, "batch: negative cache page ", p);
  for (std::size_t s = 0; s < b; ++s) {
    check(batch.kv_page_starts[s] <= batch.kv_page_starts[s + 1], "batch: kv_page_starts decrease at sequence ", s);
    const std::size_t held =
        static_cast<std::size_t>(batch.kv_page_starts[s + 1] - batch.kv_page_starts[s]) * batch.kv_page_size;
    for (int32_t i = batch.seq_starts[s]; i < batch.seq_starts[s + 1]; ++i) {
      const int32_t n = batch.cache_lengths[static_cast<std::size_t>(i)];
      check(n >= 1 && static_cast<std::size_t>(n) <= held, "batch: token ", i, " reads ", n,
            " cache entries; its sequence holds ", held);
    }
  }
}

}  // namespace

void check_batch(const Batch& batch, std::size_t max_tokens) {
  const std::size_t t = batch.num_tokens(), b = batch.num_seqs();
  check(b > 0, "batch: no sequences");
  check(t <= max_tokens, "batch: ", t, " tokens exceed the scratch size of ", max_tokens);
  // Sequence and selected rows live in buffers of max_tokens rows.
  check(b <= max_tokens, "batch: ", b, " sequences exceed the scratch size of ", max_tokens);
  check(batch.seq_starts.front() == 0 && static_cast<std::size_t>(batch.seq_starts.back()) == t,
        "batch: seq_starts must run from 0 to the token count");
  for (std::size_t s = 0; s < b; ++s)
    check(batch.seq_starts[s] <= batch.seq_starts[s + 1], "batch: seq_starts must not decrease (sequence ", s,
          " starts at ", batch.seq_starts[s], " and ends at ", batch.seq_starts[s + 1], ")");
  check(batch.type_ids.empty() || batch.type_ids.size() == t, "batch: type_ids must be empty or one per token");
  check(batch.positions.empty() || batch.positions.size() == t, "batch: positions must be empty or one per token");
  for (int32_t p : batch.positions) check(p >= 0, "batch: negative position ", p);
  check(batch.rope_positions.empty() || (t > 0 && batch.rope_positions.size() % t == 0), "batch: ",
        batch.rope_positions.size(), " rope positions are not whole axes of ", t, " tokens");
  check(batch.rope_axes() <= kMaxRopeAxes, "batch: ", batch.rope_axes(), " rope position axes, at most ", kMaxRopeAxes);
  for (int32_t p : batch.rope_positions) check(p >= 0, "batch: negative rope position ", p);
  check(batch.key_limits.empty() || batch.key_limits.size() == b, "batch: ", batch.key_limits.size(),
        " key limits for ", b, " sequences");
  for (std::size_t s = 0; s < batch.key_limits.size(); ++s)
    check(batch.key_limits[s] >= 1, "batch: key limit ", batch.key_limits[s], " of sequence ", s,
          " hides every key");
  check(batch.causal_prefix.empty() || batch.causal_prefix.size() == b, "batch: ", batch.causal_prefix.size(),
        " causal prefixes for ", b, " sequences");
  check(batch.gather.empty() || (t > 0 && batch.gather.size() % t == 0), "batch: ", batch.gather.size(),
        " gather indices are not whole rows of ", t, " tokens");
  check(batch.patches.empty() || (batch.patch_dim > 0 && batch.patches.size() == t * batch.patch_dim), "batch: ",
        batch.patches.size(), " patch values for ", t, " tokens of ", batch.patch_dim);
  check_generation_fields(batch);
  if (!batch.image_bytes.empty()) {
    const std::size_t C = batch.image_channels, P = batch.image_patch;
    check(batch.patches.empty(), "batch: both patch rows and image bytes");
    check(C > 0 && P > 0 && batch.image_rows % P == 0 && batch.image_cols % P == 0 && batch.image_rows > 0 &&
              batch.image_cols > 0 && batch.patch_dim == C * P * P && batch.byte_values.size() == C * 256,
          "batch: image bytes of ", batch.image_rows, " × ", batch.image_cols, " pixels × ", C, " channels, patch ", P,
          ", patch_dim ", batch.patch_dim, " and ", batch.byte_values.size(), " byte values do not fit together");
    const std::size_t n = (batch.image_rows / P) * (batch.image_cols / P);
    for (std::size_t s = 0; s < b; ++s)
      check(static_cast<std::size_t>(batch.seq_starts[s + 1] - batch.seq_starts[s]) == n, "batch: sequence ", s,
            " of ", batch.seq_starts[s + 1] - batch.seq_starts[s], " tokens, but its image has ", n, " patches");
    check(batch.image_bytes.size() == b * batch.image_rows * batch.image_cols * C, "batch: ",
          batch.image_bytes.size(), " image bytes for ", b, " images of ", batch.image_rows, " × ", batch.image_cols,
          " × ", C);
  }
  if (batch.pool_starts.empty()) return;
  check(batch.pool_starts.size() == b, "batch: ", batch.pool_starts.size(), " pool starts for ", b, " sequences");
  for (std::size_t s = 0; s < b; ++s)
    check(batch.pool_starts[s] >= batch.seq_starts[s] && batch.pool_starts[s] <= batch.seq_starts[s + 1],
          "batch: pool start ", batch.pool_starts[s], " of sequence ", s, " is outside its rows [",
          batch.seq_starts[s], ", ", batch.seq_starts[s + 1], "]");
}

}  // namespace il::plan
