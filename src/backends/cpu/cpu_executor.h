// The reference executor: f32 buffers in host memory, ops from ops/*_cpu.cc, GEMM through BLAS.
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ops/gemm_packed.h"
#include "ops/tensor_view.h"
#include "plan/executor.h"
#include "plan/step_profile.h"

namespace il::cpu {

class CpuExecutor final : public plan::Executor {
 public:
  // The plan must outlive the executor. threads == 0: one per hardware thread. GEMM weights move
  // into the packed panel layout of ops/gemm_packed.h, the others into f32 copies of the
  // executor's own, and the plan's values are released (one executor per plan).
  CpuExecutor(plan::Plan& plan, std::size_t max_tokens, std::size_t threads);
  // With IL_PROFILE=1 in the environment, prints the per-step profile to stderr at the end.
  ~CpuExecutor() override;

  std::size_t max_tokens() const override { return max_tokens_; }
  void set_batch(const plan::Batch& batch) override;
  void run(const std::string& program) override;
  void read(const plan::View& view, float* dst) override;
  void argmax_rows(const plan::View& view, int32_t* dst) override;
  void write(const plan::View& view, const float* src, std::size_t rows) override;
  void fill_rows(const plan::View& view, std::size_t first, std::size_t count, float value) override;
  void copy_rows(const plan::View& view, std::size_t from, std::size_t to, std::size_t count) override;
  void sample_rows(const plan::View& logits, const plan::View& processed, const std::vector<float>& temperature,
                   const std::vector<double>& uniform, ops::RowDraw* out) override;
  std::string backend_name() const override { return "cpu"; }
  void maxsim(const plan::View& tokens, const std::vector<int32_t>& pairs, const std::vector<uint8_t>& keep,
              float* scores) override;

  // Profiling: when on, run() accumulates wall time per step name and op kind.
  void set_profiling(bool on) { profiling_ = on; }
  // The profile as a table: time per op kind, then the slowest steps.
  std::string profile_report() const;

 private:
  void execute(const plan::Step& step);
  float* ptr(const plan::View& v);
  ops::TensorView tensor(const plan::View& v);  // every buffer holds f32 here
  std::size_t ld(const plan::View& v) const;
  std::size_t rows(const plan::View& v) const;
  // rows(x), checked against what each of `others` holds (absent views skipped).
  std::size_t row_wise(const std::string& step, const plan::View& x, std::initializer_list<plan::View> others) const;
  void check_cache_rows(const std::string& step, const plan::View& v, const std::vector<int32_t>& indices) const;
  const float* weight_f32(plan::WeightId id) const;        // null for kNoWeight
  ops::ConstTensorView weight(plan::WeightId id) const;  // absent for kNoWeight
  void pack_gemm_weights(plan::Plan& plan);

  const plan::Plan& plan_;
  std::size_t max_tokens_;
  ThreadPool pool_;
  std::vector<std::vector<float>> buffers_;
  std::map<plan::WeightId, ops::PackedWeight> packed_;  // GEMM weights in panel layout
  std::map<plan::WeightId, ops::PackedWeight> packed_transposed_;  // [in, out] GEMM operands, packed as their transpose
  std::vector<std::vector<float>> host_weights_;        // the other weights, f32, by id (empty: none)
  plan::Batch batch_;
  plan::StepProfile profile_;
  bool profiling_ = false;
};

}  // namespace il::cpu
