#include "backends/cpu/cpu_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/env.h"
#include "core/error.h"
#include "ops/activation.h"
#include "ops/disentangled_attention.h"
#include "ops/embed.h"
#include "ops/glu.h"
#include "ops/layernorm.h"
#include "ops/maxsim.h"
#include "ops/pool.h"
#include "ops/rope.h"
#include "ops/short_conv.h"
#include "ops/image_patches.h"
#include "ops/kv_cache.h"
#include "ops/logits.h"
#include "ops/moe.h"
#include "ops/gather_rows.h"
#include "ops/sam_attention.h"
#include "ops/probe_attention.h"
#include "plan/operands.h"
#include "plan/overloaded.h"

namespace il::cpu {

using plan::Rows;
using plan::View;

CpuExecutor::CpuExecutor(plan::Plan& plan, std::size_t max_tokens, std::size_t threads)
    : plan_(plan), max_tokens_(max_tokens), pool_(threads) {
  check(max_tokens > 0, "cpu executor: max_tokens must be positive");
  buffers_.reserve(plan.buffers().size());
  // Sequence buffers get one row per token too: a batch can hold as many sequences as tokens;
  // persistent buffers their own rows, zeroed here once and kept from run to run. A buffer over
  // another's storage gets none of its own.
  for (const auto& b : plan.buffers())
    buffers_.emplace_back(b.storage < 0 ? plan::capacity_rows(b, max_tokens) * b.cols : 0);
  profiling_ = env::on_when_set("IL_PROFILE");
  pack_gemm_weights(plan);
}

void CpuExecutor::pack_gemm_weights(plan::Plan& plan) {
  // GEMM weights move into panels. Those read by other steps too (a tied embedding used as an
  // output projection) keep their plan copy; the others are released once packed.
  struct Uses {
    bool gemm = false, transposed = false, other = false;
  };
  std::map<plan::WeightId, Uses> uses;
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      for (const plan::WeightUse& use : plan::operands(step.op).weights) {
        Uses& u = uses[use.id];
        (use.role == plan::WeightRole::kGemm             ? u.gemm
         : use.role == plan::WeightRole::kGemmTransposed ? u.transposed
                                                          : u.other) = true;
      }
  // Every weight is converted to f32 one tensor at a time (a bf16 checkpoint is never held in f32
  // whole, nor twice): GEMM weights straight into panels, the others into the executor's own
  // copies. The plan's values are released as they are placed.
  host_weights_.resize(plan.weights().size());
  for (const auto& [id, u] : uses) {
    auto& w = plan.weights().at(static_cast<std::size_t>(id));
    check(w.has_values(), "cpu executor: weight ", w.name,
          " holds no values (its plan is already used by another executor?)");
    std::vector<float> values = w.to_f32();
    if (u.gemm) {
      check(w.shape.size() == 2, "cpu executor: GEMM weight ", w.name, " is not a matrix");
      const std::size_t n = static_cast<std::size_t>(w.shape[0]);
      const std::size_t k = static_cast<std::size_t>(w.shape[1]);
      packed_.emplace(id, ops::PackedWeight(values.data(), n, k));
    }
    if (u.transposed) {  // [in, out]: packed as the [out, in] matrix it stands for
      check(w.shape.size() == 2, "cpu executor: GEMM weight ", w.name, " is not a matrix");
      const std::size_t in = static_cast<std::size_t>(w.shape[0]), out = static_cast<std::size_t>(w.shape[1]);
      std::vector<float> t(values.size());
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t o = 0; o < out; ++o) t[o * in + i] = values[i * out + o];
      packed_transposed_.emplace(id, ops::PackedWeight(t.data(), out, in));
    }
    if (u.other) host_weights_[static_cast<std::size_t>(id)] = std::move(values);
    w.release();
  }
}

CpuExecutor::~CpuExecutor() {
  if (profiling_ && !profile_.empty()) std::fputs(profile_report().c_str(), stderr);
}

std::string CpuExecutor::profile_report() const {
  return profile_.report("profile (cpu, " + std::to_string(pool_.size()) + " threads)", 8);
}

void CpuExecutor::set_batch(const plan::Batch& batch) {
  plan::check_batch(batch, max_tokens_);
  batch_ = batch;
  if (batch_.positions.empty()) {  // each token's index in its sequence
    batch_.positions.resize(batch_.num_tokens());
    for (std::size_t s = 0; s < batch_.num_seqs(); ++s)
      for (int32_t t = batch_.seq_starts[s]; t < batch_.seq_starts[s + 1]; ++t)
        batch_.positions[static_cast<std::size_t>(t)] = t - batch_.seq_starts[s];
  }
}

float* CpuExecutor::ptr(const View& v) {
  const plan::BufferId storage = plan_.buffers().at(static_cast<std::size_t>(v.buffer)).storage;
  return buffers_.at(static_cast<std::size_t>(storage >= 0 ? storage : v.buffer)).data() + v.col;
}

ops::TensorView CpuExecutor::tensor(const View& v) { return ops::f32_view(ptr(v), ld(v)); }

std::size_t CpuExecutor::ld(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).cols;
}

std::size_t CpuExecutor::rows(const View& v) const {
  switch (plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows) {
    case Rows::kTokens: return batch_.num_tokens();
    case Rows::kSequences:
    case Rows::kSelected: return batch_.num_seqs();
    case Rows::kPersistent: return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).fixed_rows;
    case Rows::kWindows:
      check(batch_.num_tokens() % plan::kWindowTokens == 0, "cpu executor: window rows of ", plan::kWindowTokens,
            " tokens need a token count divisible by it, not ", batch_.num_tokens());
      return batch_.num_tokens() / plan::kWindowTokens;
  }
  return 0;
}

// A row-wise step runs over rows(x): every operand must hold them (a persistent buffer holds its
// fixed rows, the others max_tokens).
std::size_t CpuExecutor::row_wise(const std::string& step, const View& x, std::initializer_list<View> others) const {
  const std::size_t n = rows(x);
  for (const View& v : others) {
    if (v.buffer < 0) continue;
    const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(v.buffer));
    check(n <= plan::capacity_rows(b, max_tokens_), "cpu executor: step ", step, " runs over ", n, " rows, more than ",
          b.name, " holds (", plan::capacity_rows(b, max_tokens_), ")");
  }
  return n;
}

// Row indices the batch sends into a persistent buffer (cache rows, injected rows) must lie
// inside it: the runtime computes them, and a wrong one would write outside the buffer.
void CpuExecutor::check_cache_rows(const std::string& step, const View& v, const std::vector<int32_t>& indices) const {
  const std::size_t n = rows(v);
  for (int32_t r : indices)
    check(r < 0 || static_cast<std::size_t>(r) < n, "step ", step, ": row ", r, " outside ",
          plan_.buffers().at(static_cast<std::size_t>(v.buffer)).name, " (", n, " rows)");
}

const float* CpuExecutor::weight_f32(plan::WeightId id) const {
  if (id == plan::kNoWeight) return nullptr;
  return host_weights_.at(static_cast<std::size_t>(id)).data();
}

ops::ConstTensorView CpuExecutor::weight(plan::WeightId id) const {
  return ops::f32_view(weight_f32(id));  // dense rows: the ops read the weight's own width
}

void CpuExecutor::run(const std::string& program) {
  check(batch_.num_seqs() > 0, "cpu executor: run before set_batch");
  for (const plan::Step& step : plan_.program(program)) {
    if (!profiling_) {
      execute(step);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    execute(step);
    const auto t1 = std::chrono::steady_clock::now();
    profile_.add(step.name, plan::op_name(step.op), std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
}

void CpuExecutor::execute(const plan::Step& step) {
  const int32_t* starts = batch_.seq_starts.data();
  const std::size_t nseq = batch_.num_seqs();
  const auto selected = [&](const View& v) {
    return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows == Rows::kSelected;
  };
  const auto present = [](const View& v) { return v.buffer >= 0; };
  std::visit(
      plan::Overloaded{
          [&](const plan::EmbedStep& op) {
            ops::embed_cpu({batch_.tokens.data(), batch_.type_ids.empty() ? nullptr : batch_.type_ids.data(), starts,
                            nseq, weight(op.word), weight(op.position), op.position_offset, weight(op.type),
                            tensor(op.out), op.out.cols, op.scale},
                           pool_);
          },
          [&](const plan::GemmStep& op) {
            const ops::PackedWeight& w = op.transpose_w ? packed_transposed_.at(op.w) : packed_.at(op.w);
            check(w.k() == op.x.cols && w.n() == op.y.cols, "gemm ", step.name, ": a weight of ", w.n(), " × ", w.k(),
                  " for ", op.x.cols, " inputs and ", op.y.cols, " outputs");
            ops::gemm_packed_cpu({tensor(op.x), &w, weight(op.bias), tensor(op.y), row_wise(step.name, op.x, {op.y}),
                                  op.act},
                                 pool_);
          },
          [&](const plan::LayerNormStep& op) {
            ops::LayerNormArgs a{tensor(op.x), present(op.residual) ? tensor(op.residual) : ops::TensorView{},
                                 weight_f32(op.w), weight_f32(op.b), tensor(op.out),
                                 row_wise(step.name, op.x, {op.residual, op.out, op.sum_out}), op.x.cols, op.eps,
                                 op.rms};
            a.sum_out = present(op.sum_out) ? tensor(op.sum_out) : ops::TensorView{};
            a.group = op.group;
            a.sum_scale = op.sum_scale;
            ops::check_layernorm(a, step.name.c_str());
            ops::layernorm_cpu(a, pool_);
            if (op.act != Activation::kNone)  // out = act(out), row by row
              pool_.parallel_for(a.rows, 16, [&](std::size_t r0, std::size_t r1) {
                ops::bias_activation_cpu(
                    {ops::f32_view(ptr(op.out) + r0 * ld(op.out), ld(op.out)), {}, r1 - r0, op.out.cols, op.act});
              });
          },
          [&](const plan::GluStep& op) {
            check(op.x.cols == 2 * op.out.cols, "glu ", step.name, ": input of ", op.x.cols,
                  " columns for an output of ", op.out.cols);
            ops::glu_cpu({tensor(op.x), tensor(op.out), row_wise(step.name, op.x, {op.out}), op.out.cols, op.act},
                         pool_);
          },
          [&](const plan::RopeStep& op) {
            check(!selected(op.x), "rope ", step.name, ": selected rows have no positions of their own");
            check(op.heads * op.head_dim <= op.x.cols, "rope ", step.name, ": ", op.heads, " heads of ", op.head_dim,
                  " do not fit a view of ", op.x.cols, " columns");
            ops::RopeArgs a{tensor(op.x), batch_.positions.data(), rows(op.x), op.heads, op.head_dim, op.rotary_dim,
                            op.theta, op.interleaved};
            if (!op.sections.empty()) {  // multi-axis: group g reads axis g of rope_positions
              check(batch_.rope_axes() >= op.sections.size(), "rope ", step.name, ": ", op.sections.size(),
                    " position axes needed, the batch has ", batch_.rope_axes());
              a.positions = batch_.rope_positions.data();
              a.sections = op.sections;
              a.sections_restart = op.sections_restart;
              a.freq_dim = op.freq_dim;
              a.axis_stride = batch_.num_tokens();
            }
            a.active_pairs = op.active_pairs;
            a.norm_first = weight_f32(op.norm_first);  // null without a head norm
            a.norm_rest = weight_f32(op.norm_rest);
            a.norm_split = op.norm_split;
            a.norm_eps = op.norm_eps;
            ops::check_rope(a, step.name.c_str());
            ops::rope_cpu(a, pool_);
          },
          [&](const plan::AttentionStep& op) {
            ops::AttentionArgs args{ptr(op.q), ld(op.q), ptr(op.k), ld(op.k), ptr(op.v), ld(op.v),
                                    ptr(op.out), ld(op.out), starts, nseq, op.heads, op.kv_heads,
                                    op.head_dim, op.scale, op.mask, op.window};
            if (!batch_.key_limits.empty()) args.key_limits = batch_.key_limits.data();
            if (!batch_.causal_prefix.empty()) args.causal_prefix = batch_.causal_prefix.data();
            switch (op.queries) {
              case plan::QueryRows::kAll: return ops::attention_cpu(args, pool_);
              case plan::QueryRows::kFirst: return ops::attention_first_cpu(args, pool_);
              case plan::QueryRows::kLast: return ops::attention_last_cpu(args, pool_);
            }
          },
          [&](const plan::PoolStep& op) {
            // Selected rows hold one row per sequence: row s is sequence s's.
            const bool per_sequence = selected(op.x);
            ops::pool_cpu({tensor(op.x), tensor(op.out), starts, nseq, op.x.cols, op.mode,
                           batch_.pool_starts.empty() || per_sequence ? nullptr : batch_.pool_starts.data(),
                           per_sequence},
                          pool_);
          },
          [&](const plan::L2Step& op) { ops::l2_rows_cpu({tensor(op.x), rows(op.x), op.x.cols}, pool_); },
          [&](const plan::DisentangledAttentionStep& op) {
            check(!selected(op.q) && !selected(op.out), "disentangled attention ", step.name,
                  ": token rows only");
            ops::DisentangledAttentionArgs a;
            a.q = tensor(op.q);
            a.k = tensor(op.k);
            a.v = tensor(op.v);
            a.out = tensor(op.out);
            a.seq_starts = starts;
            a.num_seqs = nseq;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.pos_key = weight_f32(op.pos_key);
            a.pos_query = weight_f32(op.pos_query);
            a.span = op.span;
            a.rel_index = weight_f32(op.rel_index);
            a.max_len = op.max_len;
            a.scale = op.scale;
            ops::disentangled_attention_cpu(a, pool_);
          },
          [&](const plan::ShortConvStep& op) {
            check(!selected(op.x) && !selected(op.out), "short_conv ", step.name, ": needs every token's row");
            check(op.x.cols == 3 * op.out.cols, "short_conv ", step.name, ": input of ", op.x.cols,
                  " columns for an output of ", op.out.cols, " (B | C | x)");
            ops::ShortConvArgs a{tensor(op.x), weight_f32(op.w), tensor(op.out), starts, nseq,
                                 row_wise(step.name, op.x, {op.out}), op.out.cols, op.taps};
            if (!batch_.key_limits.empty()) a.key_limits = batch_.key_limits.data();
            ops::short_conv_cpu(a, pool_);
          },
          [&](const plan::PatchEmbedStep& op) {
            check((!batch_.patches.empty() || !batch_.image_bytes.empty()) && batch_.patch_dim == op.patches.cols,
                  "patch_embed ", step.name, ": the batch holds no patch rows of ", op.patches.cols, " values");
            check(!selected(op.patches) && !selected(op.out), "patch_embed ", step.name, ": token rows only");
            const std::size_t n = row_wise(step.name, op.patches, {op.out});
            if (!batch_.image_bytes.empty()) {
              ops::PatchBytesArgs a;
              a.bytes = batch_.image_bytes.data();
              a.byte_values = batch_.byte_values.data();
              a.channels = batch_.image_channels;
              a.patch = batch_.image_patch;
              a.image_rows = batch_.image_rows;
              a.image_cols = batch_.image_cols;
              a.num_rows = a.launched_rows = n;
              a.out = tensor(op.patches);
              ops::patch_bytes_cpu(a, pool_);
            } else {
              ops::patch_rows_cpu({batch_.patches.data(), n, n, op.patches.cols, tensor(op.patches)});
            }
            ops::gemm_packed_cpu({tensor(op.patches), &packed_.at(op.w), weight(op.bias), tensor(op.out), n,
                                  Activation::kNone},
                                 pool_);
            if (op.position != plan::kNoWeight)  // towers with rotary positions (GLM-OCR) have no table
              ops::add_position_cpu({batch_.positions.data(), n, op.out.cols, weight(op.position), tensor(op.out)},
                                    pool_);
          },
          [&](const plan::ProbeAttentionStep& op) {
            check(!selected(op.k) && !selected(op.v), "probe_attention ", step.name, ": keys must be token rows");
            ops::ProbeAttentionArgs a;
            a.q = weight_f32(op.query);
            a.k = tensor(op.k);
            a.v = tensor(op.v);
            a.out = tensor(op.out);
            a.seq_starts = starts;
            a.num_seqs = nseq;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.scale = op.scale;
            ops::probe_attention_cpu(a, pool_);
          },
          [&](const plan::KvWriteStep& op) {
            check(batch_.cache_rows.size() == batch_.num_tokens(), "kv_write ", step.name,
                  ": the batch holds no cache rows");
            check(op.k.cols == op.v.cols && op.k.cols == op.k_cache.cols && op.v.cols == op.v_cache.cols, "kv_write ",
                  step.name, ": key / value widths differ from the cache's");
            check_cache_rows(step.name, op.k_cache, batch_.cache_rows);
            check_cache_rows(step.name, op.v_cache, batch_.cache_rows);
            ops::kv_write_cpu({tensor(op.k), tensor(op.v), tensor(op.k_cache), tensor(op.v_cache),
                               batch_.cache_rows.data(), batch_.num_tokens(), op.k.cols},
                              pool_);
          },
          [&](const plan::CachedAttentionStep& op) {
            check(!selected(op.q) && !selected(op.out), "cached_attention ", step.name, ": token rows only");
            check(batch_.cache_lengths.size() == batch_.num_tokens(), "cached_attention ", step.name,
                  ": the batch holds no cache lengths");
            // Every page a sequence lists must lie inside the cache.
            const std::size_t cache_rows = rows(op.k_cache);
            for (int32_t p : batch_.kv_pages)
              check((static_cast<std::size_t>(p) + 1) * batch_.kv_page_size <= cache_rows, "cached_attention ",
                    step.name, ": page ", p, " lies outside the cache of ", cache_rows, " rows");
            ops::CachedAttentionArgs a;
            a.q = tensor(op.q);
            a.k_cache = tensor(op.k_cache);
            a.v_cache = tensor(op.v_cache);
            a.out = tensor(op.out);
            a.seq_starts = starts;
            a.num_seqs = nseq;
            a.cache_lengths = batch_.cache_lengths.data();
            a.page_starts = batch_.kv_page_starts.data();
            a.pages = batch_.kv_pages.data();
            a.page_size = batch_.kv_page_size;
            a.heads = op.heads;
            a.kv_heads = op.kv_heads;
            a.head_dim = op.head_dim;
            a.scale = op.scale;
            a.window = op.window;
            if (op.window > 0 && !batch_.window_anchors.empty()) {
              check(batch_.window_anchors.size() == batch_.num_tokens(), "cached_attention ", step.name, ": ",
                    batch_.window_anchors.size(), " window anchors for ", batch_.num_tokens(), " tokens");
              a.window_anchors = batch_.window_anchors.data();
            }
            ops::cached_attention_cpu(a, pool_);
          },
          [&](const plan::InjectRowsStep& op) {
            if (batch_.inject_rows.empty()) return;  // no token takes another row
            check(op.src.cols == op.out.cols, "inject_rows ", step.name, ": source of ", op.src.cols,
                  " columns for rows of ", op.out.cols);
            check_cache_rows(step.name, op.src, batch_.inject_rows);
            ops::inject_rows_cpu({tensor(op.src), tensor(op.out), batch_.inject_rows.data(), batch_.num_tokens(),
                                  op.out.cols},
                                 pool_);
          },
          [&](const plan::RouterStep& op) {
            ops::RouterArgs a;
            a.x = tensor(op.x);
            a.w = weight_f32(op.w);
            a.expert_scale = weight_f32(op.expert_scale);
            a.ids = reinterpret_cast<int32_t*>(ptr(op.ids));  // an Elem::kI32 buffer: 4-byte slots
            a.ld_ids = ld(op.ids);
            a.weights = ptr(op.weights);
            a.ld_weights = ld(op.weights);
            a.rows = row_wise(step.name, op.x, {op.ids, op.weights});
            a.cols = op.x.cols;
            a.experts = op.experts;
            a.top_k = op.top_k;
            a.renormalize = op.renormalize;
            a.scale = op.scale;
            check(op.ids.cols >= op.top_k && op.weights.cols >= op.top_k, "router ", step.name, ": outputs narrower than top_k ",
                  op.top_k);
            ops::router_cpu(a, pool_);
          },
          [&](const plan::MoeStep& op) {
            ops::MoeArgs a;
            a.x = tensor(op.x);
            a.ids = reinterpret_cast<const int32_t*>(ptr(op.ids));
            a.ld_ids = ld(op.ids);
            a.weights = ptr(op.weights);
            a.ld_weights = ld(op.weights);
            a.gate_up = weight(op.gate_up);
            a.down = weight(op.down);
            a.out = tensor(op.out);
            a.rows = row_wise(step.name, op.x, {op.ids, op.weights, op.out});
            a.cols = op.x.cols;
            a.out_cols = op.out.cols;
            a.experts = op.experts;
            a.top_k = op.top_k;
            a.inner = op.inner;
            a.act = op.act;
            ops::moe_cpu(a, pool_);
          },
          [&](const plan::SoftmaxStep& op) {
            check(op.x.cols == op.out.cols, "softmax ", step.name, ": ", op.x.cols, " columns in, ", op.out.cols, " out");
            // Over out's rows (the batch's tokens): x may be a persistent buffer of more rows.
            ops::softmax_rows_cpu({tensor(op.x), tensor(op.out), row_wise(step.name, op.out, {op.x}), op.x.cols, op.scale},
                                  pool_);
          },
          [&](const plan::SoftcapStep& op) {
            check(op.x.cols == op.out.cols, "softcap ", step.name, ": ", op.x.cols, " columns in, ", op.out.cols, " out");
            ops::softcap_cpu({tensor(op.x), tensor(op.out), row_wise(step.name, op.x, {op.out}), op.x.cols, op.cap},
                             pool_);
          },
          [&](const plan::SamAttentionStep& op) {
            check(op.qkv.cols == 3 * op.heads * op.head_dim && op.out.cols == op.heads * op.head_dim, "sam_attention ",
                  step.name, ": qkv of ", op.qkv.cols, " columns and out of ", op.out.cols, " for ", op.heads,
                  " heads of ", op.head_dim);
            // Each view (sequence) reads the tables of its side: the window's, or its own when global.
            const std::size_t views = batch_.num_seqs();
            std::vector<const float*> rel_h(views), rel_w(views);
            for (std::size_t v = 0; v < views; ++v) {
              const std::size_t n = static_cast<std::size_t>(starts[v + 1] - starts[v]);
              const std::size_t side = op.window ? op.window : (n ? ops::sam_view_side(n, "sam_attention") : 0);
              const auto t = std::find_if(op.tables.begin(), op.tables.end(),
                                          [&](const plan::SamRelTable& x) { return x.side == side; });
              check(n == 0 || t != op.tables.end(), "sam_attention ", step.name, ": no relative position table for ",
                    op.window ? "windows" : "a view", " of side ", side);
              if (n == 0) continue;
              rel_h[v] = weight_f32(t->h);
              rel_w[v] = weight_f32(t->w);
            }
            ops::SamAttentionArgs a;
            a.qkv = ptr(op.qkv);
            a.ld_qkv = ld(op.qkv);
            a.qkv_bias = weight_f32(op.qkv_bias);
            a.out = ptr(op.out);
            a.ldo = ld(op.out);
            a.view_starts = starts;
            a.views = views;
            a.heads = op.heads;
            a.head_dim = op.head_dim;
            a.window = op.window;
            a.rel_h = rel_h.data();
            a.rel_w = rel_w.data();
            a.scale = op.scale;
            ops::sam_attention_cpu(a, pool_);
          },
          [&](const plan::GatherRowsStep& op) {
            check(op.out.cols == op.taps * op.src.cols, "gather_rows ", step.name, ": ", op.taps, " parts of ",
                  op.src.cols, " columns into ", op.out.cols);
            const std::size_t n = batch_.num_tokens();
            check(batch_.gather.size() == n * op.taps, "gather_rows ", step.name, ": the batch has ",
                  batch_.gather.size(), " gather indices for ", n, " rows of ", op.taps, " parts");
            check_cache_rows(step.name, op.src, batch_.gather);
            ops::gather_rows_cpu({tensor(op.src), tensor(op.out), batch_.gather.data(), n, op.taps, op.src.cols}, pool_);
          },
          [&](const plan::SequenceWindowStep& op) {
            check(op.out.cols == op.taps * op.x.cols, "sequence_window ", step.name, ": ", op.taps, " parts of ",
                  op.x.cols, " columns into ", op.out.cols);
            ops::SequenceWindowArgs a{tensor(op.x), tensor(op.out), starts, batch_.num_seqs(),
                                      row_wise(step.name, op.x, {op.out}), op.taps, op.x.cols};
            ops::check_sequence_window(a, step.name.c_str());
            ops::sequence_window_cpu(a, pool_);
          },
      },
      step.op);
}

void CpuExecutor::read(const View& view, float* dst) {
  const std::size_t n = rows(view);
  const float* src = ptr(view);
  const std::size_t stride = ld(view);
  if (plan_.buffers().at(static_cast<std::size_t>(view.buffer)).elem == plan::Elem::kI32) {
    // 4-byte int slots: their values, as the CUDA executor reads them.
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t j = 0; j < view.cols; ++j) {
        int32_t v = 0;
        std::memcpy(&v, src + r * stride + j, sizeof v);
        dst[r * view.cols + j] = static_cast<float>(v);
      }
    return;
  }
  for (std::size_t r = 0; r < n; ++r)
    std::memcpy(dst + r * view.cols, src + r * stride, view.cols * sizeof(float));
}

void CpuExecutor::argmax_rows(const View& view, int32_t* dst) {
  check(plan_.buffers().at(static_cast<std::size_t>(view.buffer)).elem != plan::Elem::kI32,
        "argmax rows: ", plan_.buffers().at(static_cast<std::size_t>(view.buffer)).name, " holds integers");
  ops::RowArgmaxArgs a;
  a.x = ops::f32_view(static_cast<const float*>(ptr(view)), ld(view));
  a.rows = rows(view);
  a.cols = view.cols;
  a.out = dst;
  ops::row_argmax_cpu(a, pool_);
}

void CpuExecutor::write(const View& view, const float* src, std::size_t n) {
  const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(view.buffer));
  check(b.rows == Rows::kPersistent, "cpu executor: write into ", b.name, ", which is not a persistent buffer");
  check(n <= b.fixed_rows, "cpu executor: ", n, " rows written into ", b.name, " of ", b.fixed_rows, " rows");
  float* dst = ptr(view);
  if (b.elem == plan::Elem::kI32) {  // 4-byte int slots: the values converted, as read gives them back
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t j = 0; j < view.cols; ++j) {
        const auto v = static_cast<int32_t>(src[r * view.cols + j]);
        std::memcpy(dst + r * b.cols + j, &v, sizeof v);
      }
    return;
  }
  for (std::size_t r = 0; r < n; ++r) std::memcpy(dst + r * b.cols, src + r * view.cols, view.cols * sizeof(float));
}

// Rows of a persistent buffer: the checks fill_rows and copy_rows share.
static void check_persistent_f32_rows(const plan::Plan& plan, const View& view, std::size_t end, const char* what) {
  const plan::BufferDesc& b = plan.buffers().at(static_cast<std::size_t>(view.buffer));
  check(b.rows == Rows::kPersistent, what, ": ", b.name, " is not a persistent buffer");
  check(b.elem == plan::Elem::kF32, what, ": ", b.name, " does not hold f32 values in every mode");
  check(end <= b.fixed_rows, what, ": rows up to ", end, " of ", b.name, ", which holds ", b.fixed_rows);
  check(view.col + view.cols <= b.cols, what, ": a view past the columns of ", b.name);
}

void CpuExecutor::fill_rows(const View& view, std::size_t first, std::size_t count, float value) {
  check_persistent_f32_rows(plan_, view, first + count, "fill rows");
  for (std::size_t r = first; r < first + count; ++r) std::fill_n(ptr(view) + r * ld(view), view.cols, value);
}

void CpuExecutor::copy_rows(const View& view, std::size_t from, std::size_t to, std::size_t count) {
  check_persistent_f32_rows(plan_, view, std::max(from, to) + count, "copy rows");
  check(from == to || from + count <= to || to + count <= from, "copy rows: the ranges overlap");
  for (std::size_t r = 0; r < count; ++r)
    std::memcpy(ptr(view) + (to + r) * ld(view), ptr(view) + (from + r) * ld(view), view.cols * sizeof(float));
}

void CpuExecutor::sample_rows(const View& logits, const View& processed, const std::vector<float>& temperature,
                              const std::vector<double>& uniform, ops::RowDraw* out) {
  const std::size_t n = rows(logits);
  check(plan_.buffers().at(static_cast<std::size_t>(logits.buffer)).rows == Rows::kTokens,
        "sample rows: the logits must be a token-row buffer");
  check(temperature.size() == n && uniform.size() == n, "sample rows: ", temperature.size(), " temperatures and ",
        uniform.size(), " uniforms for ", n, " rows");
  check_persistent_f32_rows(plan_, processed, n, "sample rows");
  check(processed.cols == logits.cols, "sample rows: ", processed.cols, " processed columns for ", logits.cols);
  ops::CanvasSampleArgs a;
  a.logits = ops::ConstTensorView(tensor(logits));
  a.processed = tensor(processed);
  a.temperature = temperature.data();
  a.uniform = uniform.data();
  a.rows = n;
  a.cols = logits.cols;
  a.out = out;
  ops::canvas_sample_cpu(a, pool_);
}

void CpuExecutor::maxsim(const View& tokens, const std::vector<int32_t>& pairs, const std::vector<uint8_t>& keep,
                         float* scores) {
  const std::size_t n = rows(tokens);
  check(keep.empty() || keep.size() == n, "maxsim: ", keep.size(), " keep bytes for ", n, " rows");
  check(pairs.size() % 2 == 0, "maxsim: pairs must hold (query, document) index pairs");
  ops::MaxSimArgs a;
  a.x = ops::f32_view(static_cast<const float*>(ptr(tokens)), ld(tokens));
  a.seq_starts = batch_.seq_starts.data();
  a.num_seqs = batch_.num_seqs();
  a.pairs = pairs.data();
  a.num_pairs = pairs.size() / 2;
  a.dim = tokens.cols;
  a.keep = keep.empty() ? nullptr : keep.data();
  a.scores = scores;
  ops::maxsim_cpu(a, pool_);
}

}  // namespace il::cpu
