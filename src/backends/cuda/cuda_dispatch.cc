// CudaExecutor, dispatch: each step kind to its launches (one callable per kind, through
// plan::Overloaded), with the argument structs built from the step's views.
#include <algorithm>
#include <string>

#include "backends/cuda/cuda_executor.h"
#include "core/error.h"
#include "ops/attention_dispatch_cuda.h"
#include "ops/ops_cuda.h"
#include "ops/sam_attention.h"
#include "plan/overloaded.h"

namespace il::cuda {

using plan::View;

ops::GemmCudaArgs CudaExecutor::gemm_args(const std::string& name, const plan::GemmStep& op) const {
  const auto& shape = weights_->shapes.at(static_cast<std::size_t>(op.w));
  check(shape.size() == 2, "gemm ", name, ": the weight is not a matrix");
  // [out, in], or [in, out] read as it is (GemmStep::transpose_w).
  const std::size_t n = static_cast<std::size_t>(shape.at(op.transpose_w ? 1 : 0)),
                    k = static_cast<std::size_t>(shape.at(op.transpose_w ? 0 : 1));
  check(op.x.cols == k && op.y.cols == n, "gemm ", name, ": views ", op.x.cols, " → ", op.y.cols,
        " do not match the weight [", shape.at(0), ", ", shape.at(1), "]", op.transpose_w ? " (transposed)" : "");
  const DType t = type_of(op.x);
  check(type_of(op.y) == t, "gemm ", name, ": input and output rows differ in kind");
  ops::GemmCudaArgs a{tensor(op.x), weight(op.w, t), weight(op.bias, t), tensor(op.y), row_wise(name, op.x, {op.y}),
                      n, k, op.act};
  a.transpose_w = op.transpose_w;
  return a;
}

ops::LayerNormArgs CudaExecutor::norm_args(const std::string& name, const plan::LayerNormStep& op) const {
  const bool has_res = op.residual.buffer >= 0, has_sum = op.sum_out.buffer >= 0;
  ops::LayerNormArgs a{tensor(op.x),
                       has_res ? tensor(op.residual) : ops::TensorView{},
                       norm_weight(op.w),
                       norm_weight(op.b),
                       tensor(op.out),
                       row_wise(name, op.x, {op.residual, op.out, op.sum_out}),
                       op.x.cols,
                       op.eps,
                       op.rms};
  a.sum_out = has_sum ? tensor(op.sum_out) : ops::TensorView{};
  a.group = op.group;
  a.sum_scale = op.sum_scale;
  ops::check_layernorm(a, name.c_str());  // operands of one element type among others
  return a;
}

// One callable per step kind (plan::Overloaded): a kind added to plan::StepOp fails to compile
// here until it is handled. Each op's CUDA launcher picks its kernel from the arguments.
void CudaExecutor::execute(const plan::Step& step) {
  std::visit(
      plan::Overloaded{
          [&](const plan::EmbedStep& op) {
            const DType t = type_of(op.out);
            ops::embed_cuda({d_tokens_, has_types_ ? d_types_ : nullptr, d_starts_, num_seqs_, weight(op.word, t),
                             weight(op.position, t), op.position_offset, weight(op.type, t), tensor(op.out),
                             op.out.cols, op.scale},
                            num_tokens_, stream_);
          },
          [&](const plan::GemmStep& op) { gemm_->run(gemm_args(step.name, op), stream_); },
          [&](const plan::LayerNormStep& op) {
            const ops::LayerNormArgs a = norm_args(step.name, op);
            ops::layernorm_cuda(a, stream_);
            if (op.act != Activation::kNone)  // out = act(out), in place
              ops::bias_activation_cuda({a.out, {}, a.rows, op.out.cols, op.act}, stream_);
          },
          [&](const plan::GluStep& op) {
            check(op.x.cols == 2 * op.out.cols, "glu ", step.name, ": input of ", op.x.cols,
                  " columns for an output of ", op.out.cols);
            const ops::GluArgs a{tensor(op.x), tensor(op.out), row_wise(step.name, op.x, {op.out}), op.out.cols,
                                 op.act};
            ops::check_glu(a, step.name.c_str());
            ops::glu_cuda(a, stream_);
          },
          [&](const plan::RopeStep& op) {
            check(!selected(op.x), "rope ", step.name, ": selected rows have no positions of their own");
            check(op.heads * op.head_dim <= op.x.cols, "rope ", step.name, ": ", op.heads, " heads of ", op.head_dim,
                  " do not fit a view of ", op.x.cols, " columns");
            check(d_positions_ != nullptr, "rope ", step.name, ": no positions uploaded");
            ops::RopeArgs a{tensor(op.x), d_positions_, rows(op.x), op.heads, op.head_dim, op.rotary_dim, op.theta,
                            op.interleaved};
            if (!op.sections.empty()) {  // multi-axis: group g reads axis g of the rope positions
              check(rope_axes_ >= op.sections.size(), "rope ", step.name, ": ", op.sections.size(),
                    " position axes needed, the batch has ", rope_axes_);
              a.positions = d_rope_positions_;
              a.sections = op.sections;
              a.sections_restart = op.sections_restart;
              a.freq_dim = op.freq_dim;
              a.axis_stride = num_tokens_;  // uploaded axes are the launched (bucketed) rows apart
            }
            a.active_pairs = op.active_pairs;  // in rope_frequencies' table, shared with the CPU
            a.norm_first = norm_weight(op.norm_first);  // null without a head norm
            a.norm_rest = norm_weight(op.norm_rest);
            a.norm_split = op.norm_split;
            a.norm_eps = op.norm_eps;
            ops::rope_cuda(a, stream_);
          },
          [&](const plan::AttentionStep& op) { attention(step.name, op); },
          [&](const plan::PoolStep& op) {
            // Selected rows hold one row per sequence: row s is sequence s's (pool_cuda takes them
            // by CLS or last-token pooling only).
            const bool per_sequence = selected(op.x);
            ops::pool_cuda({tensor(op.x), tensor(op.out), d_starts_, num_seqs_, op.x.cols, op.mode,
                            per_sequence ? nullptr : d_pool_starts_, per_sequence},
                           stream_);
          },
          [&](const plan::L2Step& op) { ops::l2_rows_cuda({tensor(op.x), rows(op.x), op.x.cols}, stream_); },
          [&](const plan::DisentangledAttentionStep& op) {
            check(!selected(op.q) && !selected(op.out), "disentangled attention ", step.name,
                  ": token rows only");
            ops::DisentangledAttentionArgs a;
            a.q = tensor(op.q);
            a.k = tensor(op.k);
            a.v = tensor(op.v);
            a.out = tensor(op.out);
            a.seq_starts = d_starts_;
            a.num_seqs = num_seqs_;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.pos_key = norm_weight(op.pos_key);
            a.pos_query = norm_weight(op.pos_query);
            a.span = op.span;
            a.rel_index = norm_weight(op.rel_index);
            a.max_len = op.max_len;
            a.scale = op.scale;
            a.buckets = op.position_buckets;
            a.max_rel = op.max_relative;
            if (disentangled_tables_.get() != nullptr) {  // the table form
              const DType t = type_of(op.q);
              if (op.pos_key != plan::kNoWeight) a.pos_key_t = weight(op.pos_key, t);
              if (op.pos_query != plan::kNoWeight) a.pos_query_t = weight(op.pos_query, t);
              a.tables = reinterpret_cast<float*>(disentangled_tables_.get());
              a.table_floats = disentangled_tables_.bytes() / sizeof(float);
              a.table_rows = num_tokens_;
            }
            ops::disentangled_attention_cuda(a, max_seq_len_, stream_);
          },
          [&](const plan::ShortConvStep& op) {
            check(!selected(op.x) && !selected(op.out), "short_conv ", step.name, ": needs every token's row");
            check(op.x.cols == 3 * op.out.cols, "short_conv ", step.name, ": input of ", op.x.cols,
                  " columns for an output of ", op.out.cols, " (B | C | x)");
            ops::ShortConvArgs a{tensor(op.x), norm_weight(op.w), tensor(op.out), d_starts_, num_seqs_,
                                 row_wise(step.name, op.x, {op.out}), op.out.cols, op.taps};
            a.key_limits = d_key_limits_;
            ops::short_conv_cuda(a, stream_);
          },
          [&](const plan::PatchEmbedStep& op) {
            check(patch_dim_ == op.patches.cols, "patch_embed ", step.name, ": no patch rows of ", op.patches.cols,
                  " values uploaded");
            check(!byte_patches_ || image_channels_ * image_patch_ * image_patch_ == op.patches.cols, "patch_embed ",
                  step.name, ": image bytes of ", image_channels_, " × ", image_patch_, "² values a patch for rows of ",
                  op.patches.cols);
            check(!selected(op.patches) && !selected(op.out), "patch_embed ", step.name, ": token rows only");
            // Over the launched rows (padding rows hold zero patches and position 0), so a captured
            // graph depends on the bucket alone.
            const std::size_t n = row_wise(step.name, op.patches, {op.out});
            if (byte_patches_) {
              // The real token count from the device (the last sequence offset: padding
              // sequences start at it), so padding rows get zeros in a replayed graph too.
              ops::PatchBytesArgs a;
              a.bytes = reinterpret_cast<const std::uint8_t*>(image_arena_.get() + kImageTableBytes);
              a.byte_values = reinterpret_cast<const float*>(image_arena_.get());
              a.channels = image_channels_;
              a.patch = image_patch_;
              a.image_rows = image_rows_;
              a.image_cols = image_cols_;
              a.num_rows = a.launched_rows = n;
              a.device_num_rows = d_starts_ + num_seqs_;
              a.out = tensor(op.patches);
              ops::patch_bytes_cuda(a, stream_);
            } else {
              ops::patch_rows_cuda({reinterpret_cast<const float*>(patch_arena_.get()), n, n, op.patches.cols,
                                    tensor(op.patches)},
                                   stream_);
            }
            plan::GemmStep g;
            g.x = op.patches;
            g.w = op.w;
            g.bias = op.bias;
            g.y = op.out;
            gemm_->run(gemm_args(step.name, g), stream_);
            if (op.position != plan::kNoWeight) {  // towers with rotary positions (GLM-OCR) have no table
              check(d_positions_ != nullptr, "patch_embed ", step.name, ": no positions uploaded");
              ops::add_position_cuda({d_positions_, n, op.out.cols, weight(op.position, type_of(op.out)), tensor(op.out)},
                                     stream_);
            }
          },
          [&](const plan::ProbeAttentionStep& op) {
            check(!selected(op.k) && !selected(op.v), "probe_attention ", step.name, ": keys must be token rows");
            ops::ProbeAttentionArgs a;
            a.q = norm_weight(op.query);
            a.k = tensor(op.k);
            a.v = tensor(op.v);
            a.out = tensor(op.out);
            a.seq_starts = d_starts_;
            a.num_seqs = num_seqs_;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.scale = op.scale;
            ops::probe_attention_cuda(a, stream_);
          },
          [&](const plan::KvWriteStep& op) {
            check(op.k.cols == op.v.cols && op.k.cols == op.k_cache.cols && op.v.cols == op.v_cache.cols, "kv_write ",
                  step.name, ": key / value widths differ from the cache's");
            ops::kv_write_cuda({tensor(op.k), tensor(op.v), tensor(op.k_cache), tensor(op.v_cache), d_cache_rows_,
                                num_tokens_, op.k.cols},
                               stream_);
          },
          [&](const plan::CachedAttentionStep& op) {
            check(!selected(op.q) && !selected(op.out), "cached_attention ", step.name, ": token rows only");
            check(page_size_ > 0, "cached_attention ", step.name, ": the batch has no KV cache pages");
            ops::CachedAttentionArgs a;
            a.q = tensor(op.q);
            a.k_cache = tensor(op.k_cache);
            a.v_cache = tensor(op.v_cache);
            a.out = tensor(op.out);
            a.seq_starts = d_starts_;
            a.num_seqs = num_seqs_;
            a.cache_lengths = d_cache_lengths_;
            a.page_starts = d_page_starts_;
            a.pages = d_pages_;
            a.page_size = page_size_;
            a.heads = op.heads;
            a.kv_heads = op.kv_heads;
            a.head_dim = op.head_dim;
            a.scale = op.scale;
            a.workspace = reinterpret_cast<float*>(attn_workspace_.get());
            a.workspace_floats = attn_workspace_floats_;
            // A window reads the anchors uploaded with the batch (the batch's, or each token's own
            // entry: set_batch fills them either way, at a fixed address).
            a.window = op.window;
            a.window_anchors = op.window > 0 ? d_window_anchors_ : nullptr;
            ops::cached_attention_cuda(a, num_tokens_, stream_);
          },
          [&](const plan::InjectRowsStep& op) {
            check(op.src.cols == op.out.cols, "inject_rows ", step.name, ": source of ", op.src.cols,
                  " columns for rows of ", op.out.cols);
            ops::inject_rows_cuda({tensor(op.src), tensor(op.out), d_inject_rows_, num_tokens_, op.out.cols}, stream_);
          },
          [&](const plan::RouterStep& op) {
            check(op.ids.cols >= op.top_k && op.weights.cols >= op.top_k, "router ", step.name,
                  ": outputs narrower than top_k ", op.top_k);
            check(type_of(op.weights) == DType::kF32, "router ", step.name, ": the weights buffer must be f32");
            const auto& shape = weights_->shapes.at(static_cast<std::size_t>(op.w));
            check(shape.size() == 2 && static_cast<std::size_t>(shape[0]) == op.experts &&
                      static_cast<std::size_t>(shape[1]) == op.x.cols,
                  "router ", step.name, ": a router weight that is not [", op.experts, ", ", op.x.cols, "]");
            ops::RouterArgs a;
            a.x = tensor(op.x);
            a.w = norm_weight(op.w);
            a.expert_scale = norm_weight(op.expert_scale);
            a.ids = ints(step.name, op.ids);
            a.ld_ids = ld(op.ids);
            a.weights = static_cast<float*>(tensor(op.weights).data);
            a.ld_weights = ld(op.weights);
            a.rows = row_wise(step.name, op.x, {op.ids, op.weights});
            a.cols = op.x.cols;
            a.experts = op.experts;
            a.top_k = op.top_k;
            a.renormalize = op.renormalize;
            a.scale = op.scale;
            ops::router_cuda(a, stream_);
          },
          [&](const plan::MoeStep& op) {
            const DType t = type_of(op.x);
            check(type_of(op.out) == t, "moe ", step.name, ": input and output rows differ in kind");
            check(type_of(op.weights) == DType::kF32, "moe ", step.name, ": the weights buffer must be f32");
            const auto expect = [&](plan::WeightId id, std::size_t rows, std::size_t cols, const char* what) {
              const auto& shape = weights_->shapes.at(static_cast<std::size_t>(id));
              check(shape.size() == 3 && static_cast<std::size_t>(shape[0]) == op.experts &&
                        static_cast<std::size_t>(shape[1]) == rows && static_cast<std::size_t>(shape[2]) == cols,
                    "moe ", step.name, ": ", what, " is not [", op.experts, ", ", rows, ", ", cols, "]");
            };
            expect(op.gate_up, 2 * op.inner, op.x.cols, "gate_up");
            expect(op.down, op.out.cols, op.inner, "down");
            ops::MoeArgs a;
            a.x = tensor(op.x);
            a.ids = ints(step.name, op.ids);
            a.ld_ids = ld(op.ids);
            a.weights = static_cast<const float*>(tensor(op.weights).data);
            a.ld_weights = ld(op.weights);
            a.gate_up = weight(op.gate_up, t);
            a.down = weight(op.down, t);
            a.out = tensor(op.out);
            a.rows = row_wise(step.name, op.x, {op.ids, op.weights, op.out});
            a.cols = op.x.cols;
            a.out_cols = op.out.cols;
            a.experts = op.experts;
            a.top_k = op.top_k;
            a.inner = op.inner;
            a.act = op.act;
            a.workspace = moe_workspace_.get();
            a.workspace_bytes = moe_workspace_.bytes();
            ops::moe_cuda(a, stream_);
          },
          [&](const plan::SoftmaxStep& op) {
            check(op.x.cols == op.out.cols, "softmax ", step.name, ": ", op.x.cols, " columns in, ", op.out.cols, " out");
            ops::softmax_rows_cuda({tensor(op.x), tensor(op.out), row_wise(step.name, op.x, {op.out}), op.x.cols, op.scale},
                                   stream_);
          },
          [&](const plan::SoftcapStep& op) {
            check(op.x.cols == op.out.cols, "softcap ", step.name, ": ", op.x.cols, " columns in, ", op.out.cols, " out");
            ops::softcap_cuda({tensor(op.x), tensor(op.out), row_wise(step.name, op.x, {op.out}), op.x.cols, op.cap},
                              stream_);
          },
          [&](const plan::SamAttentionStep& op) {
            check(op.qkv.cols == 3 * op.heads * op.head_dim && op.out.cols == op.heads * op.head_dim, "sam_attention ",
                  step.name, ": qkv of ", op.qkv.cols, " columns and out of ", op.out.cols, " for ", op.heads,
                  " heads of ", op.head_dim);
            check(type_of(op.out) == type_of(op.qkv), "sam_attention ", step.name,
                  ": qkv and out differ in element type");
            check(op.tables.size() <= ops::kSamMaxTables, "sam_attention ", step.name, ": ", op.tables.size(),
                  " relative position tables (at most ", ops::kSamMaxTables, " on CUDA)");
            ops::SamAttentionCudaArgs a;
            a.num_tables = op.tables.size();
            for (std::size_t i = 0; i < op.tables.size(); ++i)
              a.tables[i] = {op.tables[i].side, norm_weight(op.tables[i].h), norm_weight(op.tables[i].w)};
            // The device picks each view's tables by side; here, the CPU executor's checks: every
            // view a square with a table of its side (the window's, or its own when global).
            std::size_t largest = 0;
            for (std::size_t v = 0; v + 1 < host_starts_.size(); ++v) {
              const std::size_t n = static_cast<std::size_t>(host_starts_[v + 1] - host_starts_[v]);
              if (n == 0) continue;
              largest = std::max(largest, n);
              const std::size_t g = ops::sam_view_side(n, "sam_attention");  // throws unless a square
              const std::size_t side = op.window ? op.window : g;
              const bool found = std::any_of(op.tables.begin(), op.tables.end(),
                                             [&](const plan::SamRelTable& x) { return x.side == side; });
              check(found, "sam_attention ", step.name, ": no relative position table for ",
                    op.window ? "windows" : "a view", " of side ", side);
              check(side <= ops::kSamMaxSide, "sam_attention ", step.name, ": side ", side, " (at most ",
                    ops::kSamMaxSide, " on CUDA)");
            }
            a.qkv = tensor(op.qkv);
            a.qkv_bias = norm_weight(op.qkv_bias);
            a.out = tensor(op.out);
            a.view_starts = d_starts_;
            a.views = num_seqs_;  // padding views are empty: skipped
            a.max_view_tokens = largest;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.window = op.window;
            a.scale = op.scale;
            ops::sam_attention_cuda(a, stream_);
          },
          [&](const plan::GatherRowsStep& op) {
            check(op.out.cols == op.taps * op.src.cols, "gather_rows ", step.name, ": ", op.taps, " parts of ",
                  op.src.cols, " columns into ", op.out.cols);
            check(gather_taps_ == op.taps, "gather_rows ", step.name, ": the batch has ",
                  gather_taps_ == 0 ? std::string("no gather indices") : std::to_string(gather_taps_) + " parts a row",
                  " for a step of ", op.taps, " parts");
            check(type_of(op.src) == type_of(op.out), "gather_rows ", step.name,
                  ": source and output differ in element type");
            // The CPU executor's row check (set_batch checked the allocation already): a token-row
            // source has the batch's real tokens, another what rows() says.
            const plan::BufferDesc& sd = plan_.buffers().at(static_cast<std::size_t>(op.src.buffer));
            const std::size_t src_rows = sd.rows == plan::Rows::kTokens ? real_tokens_ : rows(op.src);
            check(max_gather_index_ < 0 || static_cast<std::size_t>(max_gather_index_) < src_rows, "gather_rows ",
                  step.name, ": gather index ", max_gather_index_, " outside the ", src_rows, " rows of ", sd.name);
            ops::GatherRowsArgs a;
            a.src = tensor(op.src);
            a.out = tensor(op.out);
            a.rows = row_wise(step.name, op.out, {op.out});  // the launched token rows (padding: −1, zeros)
            a.taps = op.taps;
            a.cols = op.src.cols;
            ops::gather_rows_cuda(a, d_gather_, stream_);
          },
          [&](const plan::SequenceWindowStep& op) {
            check(op.out.cols == op.taps * op.x.cols, "sequence_window ", step.name, ": ", op.taps, " parts of ",
                  op.x.cols, " columns into ", op.out.cols);
            ops::SequenceWindowArgs a{tensor(op.x), tensor(op.out), d_starts_, num_seqs_,
                                      row_wise(step.name, op.x, {op.out}), op.taps, op.x.cols};
            ops::check_sequence_window(a, step.name.c_str());
            ops::sequence_window_cuda(a, stream_);  // rows past the batch's tokens: zeros
          },
      },
      step.op);
}

// The attention's kernel is chosen in one place, ops::attention_dispatch_cuda (the order and each
// kernel's supports() are in ops/attention_dispatch_cuda.h): one query row per sequence → the
// one-row kernel; f16 / bf16 → the tensor-core kernels where they support the case; otherwise the
// f32-arithmetic flash kernel in the buffers' type.
void CudaExecutor::attention(const std::string& name, const plan::AttentionStep& op) {
  const DType t = type_of(op.q);
  check(type_of(op.k) == t && type_of(op.v) == t && type_of(op.out) == t, "attention ", name,
        ": operands differ in element type");
  ops::AttentionCudaArgs a;
  a.q = tensor(op.q).data;
  a.ldq = ld(op.q);
  a.k = tensor(op.k).data;
  a.ldk = ld(op.k);
  a.v = tensor(op.v).data;
  a.ldv = ld(op.v);
  a.out = tensor(op.out).data;
  a.ldo = ld(op.out);
  a.seq_starts = d_starts_;
  a.num_seqs = num_seqs_;
  a.heads = op.heads;
  a.kv_heads = op.kv_heads;
  a.head_dim = op.head_dim;
  a.scale = op.scale;
  a.mask = op.mask;
  a.window = op.window;
  a.type = t;
  switch (op.queries) {
    case plan::QueryRows::kAll: a.queries = ops::AttentionQueries::kAll; break;
    case plan::QueryRows::kFirst: a.queries = ops::AttentionQueries::kFirst; break;
    case plan::QueryRows::kLast: a.queries = ops::AttentionQueries::kLast; break;
  }
  a.max_seq_len = max_seq_len_;
  a.rows = num_tokens_;  // q, k and v are token rows of the scratch: readable up to the bucketed count
  a.key_limits = d_key_limits_;
  a.causal_prefix = d_causal_prefix_;
  ops::attention_dispatch_cuda(a, stream_);
}

}  // namespace il::cuda
