#include "backends/cpu/cpu_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/env.h"
#include "core/error.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/pool.h"

namespace il::cpu {

using plan::Rows;
using plan::View;

CpuExecutor::CpuExecutor(plan::Plan& plan, std::size_t max_tokens, std::size_t threads)
    : plan_(plan), max_tokens_(max_tokens), pool_(threads) {
  check(max_tokens > 0, "cpu executor: max_tokens must be positive");
  buffers_.reserve(plan.buffers().size());
  // Sequence buffers get one row per token too: a batch can hold as many sequences as tokens.
  // A buffer over another's storage gets none of its own.
  for (const auto& b : plan.buffers()) buffers_.emplace_back(b.storage < 0 ? max_tokens * b.cols : 0);
  profiling_ = env::on_when_set("IL_PROFILE");
  pack_gemm_weights(plan);
}

void CpuExecutor::pack_gemm_weights(plan::Plan& plan) {
  // Weights read by other steps too (a tied embedding used as an output projection) keep
  // their plan copy; the others are released once packed.
  std::map<plan::WeightId, bool> gemm_only;
  for (const std::string& name : plan.program_names()) {
    for (const plan::Step& step : plan.program(name)) {
      std::visit(
          [&](const auto& op) {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, plan::GemmStep>) {
              gemm_only.try_emplace(op.w, true);
            } else if constexpr (std::is_same_v<T, plan::EmbedStep>) {
              for (plan::WeightId id : {op.word, op.position, op.type}) gemm_only[id] = false;
            }
          },
          step.op);
    }
  }
  for (const auto& [id, only] : gemm_only) {
    if (id == plan::kNoWeight) continue;
    auto& w = plan.weights().at(static_cast<std::size_t>(id));
    const std::size_t n = static_cast<std::size_t>(w.shape.at(0));
    const std::size_t k = static_cast<std::size_t>(w.shape.at(1));
    check(w.data.size() == n * k, "cpu executor: weight ", w.name,
          " holds no data (its plan is already used by another executor?)");
    packed_.emplace(id, ops::PackedWeight(w.data.data(), n, k));
    if (only) std::vector<float>().swap(w.data);
  }
}

CpuExecutor::~CpuExecutor() {
  if (profiling_ && !profile_.empty()) std::fputs(profile_report().c_str(), stderr);
}

std::string CpuExecutor::profile_report() const {
  return profile_.report("profile (cpu, " + std::to_string(pool_.size()) + " threads)", 8);
}

void CpuExecutor::set_batch(const plan::Batch& batch) {
  check(batch.num_seqs() > 0, "batch: no sequences");
  check(batch.num_tokens() <= max_tokens_, "batch: ", batch.num_tokens(),
        " tokens exceed the scratch size of ", max_tokens_);
  check(batch.seq_starts.front() == 0 &&
            static_cast<std::size_t>(batch.seq_starts.back()) == batch.num_tokens(),
        "batch: seq_starts must run from 0 to the token count");
  check(batch.type_ids.empty() || batch.type_ids.size() == batch.num_tokens(),
        "batch: type_ids must be empty or one per token");
  check(batch.num_seqs() <= max_tokens_, "batch: ", batch.num_seqs(), " sequences exceed the scratch size of ",
        max_tokens_);  // sequence and first-token rows live in buffers of max_tokens rows
  plan::check_pool_starts(batch);
  batch_ = batch;
}

float* CpuExecutor::ptr(const View& v) {
  const plan::BufferId storage = plan_.buffers().at(static_cast<std::size_t>(v.buffer)).storage;
  return buffers_.at(static_cast<std::size_t>(storage >= 0 ? storage : v.buffer)).data() + v.col;
}

std::size_t CpuExecutor::ld(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).cols;
}

std::size_t CpuExecutor::rows(const View& v) const {
  switch (plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows) {
    case Rows::kTokens: return batch_.num_tokens();
    case Rows::kSequences:
    case Rows::kFirstTokens: return batch_.num_seqs();
  }
  return 0;
}

const float* CpuExecutor::weight(plan::WeightId id) const {
  if (id == plan::kNoWeight) return nullptr;
  return plan_.weights().at(static_cast<std::size_t>(id)).data.data();
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
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, plan::EmbedStep>) {
          ops::embed_cpu({batch_.tokens.data(), batch_.type_ids.empty() ? nullptr : batch_.type_ids.data(),
                          starts, nseq, weight(op.word), weight(op.position), op.position_offset,
                          weight(op.type), ptr(op.out), ld(op.out), op.out.cols},
                         pool_);
        } else if constexpr (std::is_same_v<T, plan::GemmStep>) {
          ops::gemm_packed_cpu({ptr(op.x), ld(op.x), &packed_.at(op.w), weight(op.bias), ptr(op.y),
                                ld(op.y), rows(op.x), op.act},
                               pool_);
        } else if constexpr (std::is_same_v<T, plan::LayerNormStep>) {
          const bool has_res = op.residual.buffer >= 0;
          ops::layernorm_cpu({ptr(op.x), ld(op.x), has_res ? ptr(op.residual) : nullptr,
                              has_res ? ld(op.residual) : 0, weight(op.w), weight(op.b), ptr(op.out),
                              ld(op.out), rows(op.x), op.x.cols, op.eps, op.rms},
                             pool_);
        } else if constexpr (std::is_same_v<T, plan::AttentionStep>) {
          const ops::AttentionArgs args{ptr(op.q), ld(op.q), ptr(op.k), ld(op.k), ptr(op.v), ld(op.v),
                                        ptr(op.out), ld(op.out), starts, nseq, op.heads, op.kv_heads,
                                        op.head_dim, op.scale, op.mask, op.window};
          if (op.first_query_only) ops::attention_first_cpu(args, pool_);
          else ops::attention_cpu(args, pool_);
        } else if constexpr (std::is_same_v<T, plan::PoolStep>) {
          // First-token rows hold one row per sequence: row s is sequence s's (CLS) row.
          const bool per_sequence = plan_.buffers().at(static_cast<std::size_t>(op.x.buffer)).rows == Rows::kFirstTokens;
          check(!per_sequence || op.mode == PoolingMode::kCls, "pool ", step.name,
                ": first-token rows can only be CLS-pooled");
          ops::pool_cpu({ptr(op.x), ld(op.x), ptr(op.out), ld(op.out), starts, nseq, op.x.cols, op.mode,
                         batch_.pool_starts.empty() || per_sequence ? nullptr : batch_.pool_starts.data(),
                         per_sequence},
                        pool_);
        } else if constexpr (std::is_same_v<T, plan::L2Step>) {
          ops::l2_rows_cpu({ptr(op.x), ld(op.x), rows(op.x), op.x.cols}, pool_);
        }
      },
      step.op);
}

void CpuExecutor::read(const View& view, float* dst) {
  const std::size_t n = rows(view);
  const float* src = ptr(view);
  const std::size_t stride = ld(view);
  for (std::size_t r = 0; r < n; ++r)
    std::memcpy(dst + r * view.cols, src + r * stride, view.cols * sizeof(float));
}

}  // namespace il::cpu
