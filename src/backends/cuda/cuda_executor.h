// The CUDA executor: the plan's buffers in device memory, its steps as launches of ops/*_cuda on
// one stream. Weights are uploaded once at construction (f32, Hugging Face layout); scratch is
// sized once for max_tokens; batches go up and results come back through pinned host buffers.
// run() enqueues only: no allocation, no synchronisation (read() synchronises).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "ops/gemm_cuda.h"
#include "plan/executor.h"

namespace il::cuda {

class CudaExecutor final : public plan::Executor {
 public:
  // The plan must outlive the executor; its host weight copies are released after upload.
  // With IL_PROFILE=1 in the environment, per-step device time (CUDA events) is printed to
  // stderr when the executor is destroyed; IL_CUDA_GRAPHS=1 replays repeated batch shapes as
  // CUDA graphs.
  CudaExecutor(plan::Plan& plan, std::size_t max_tokens, int device);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  std::size_t max_tokens() const override { return max_tokens_; }
  void set_batch(const plan::Batch& batch) override;
  void run(const std::string& program) override;
  void read(const plan::View& view, float* dst) override;
  std::string backend_name() const override { return "cuda:" + std::to_string(device_); }

  void set_profiling(bool on) { profiling_ = on; }
  std::string profile_report() const;

 private:
  void allocate(plan::Plan& plan);  // everything the constructor sets up
  void release() noexcept;          // stream, events, cuBLASLt (memory frees itself)
  void upload_weights(plan::Plan& plan);
  void execute(const plan::Step& step);
  float* ptr(const plan::View& v) const;
  std::size_t ld(const plan::View& v) const;
  std::size_t rows(const plan::View& v) const;
  const float* weight(plan::WeightId id) const;
  void record_profile(const std::string& program);
  void run_graph(const std::string& program, const std::vector<plan::Step>& steps);

  const plan::Plan& plan_;
  std::size_t max_tokens_;
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t upload_done_ = nullptr;  // the pinned batch staging is free again
  std::unique_ptr<ops::CublasLtGemm> gemm_;

  DeviceMemory weight_arena_, buffer_arena_, batch_arena_;
  std::vector<const float*> weights_;            // device pointer per weight id
  std::vector<std::vector<int64_t>> weight_shapes_;
  std::vector<float*> buffers_;                  // device pointer per buffer id
  int32_t* d_tokens_ = nullptr;
  int32_t* d_types_ = nullptr;
  int32_t* d_starts_ = nullptr;
  PinnedMemory batch_staging_, read_staging_;

  std::size_t num_tokens_ = 0, num_seqs_ = 0, max_seq_len_ = 0;
  bool has_types_ = false;

  struct StepTime {
    std::string op;
    double ms = 0.0;
    std::size_t calls = 0;
  };
  // IL_CUDA_GRAPHS=1: replay each (program, batch shape) as a captured CUDA graph from its
  // second run on (experimental; profiling runs stay eager so steps can be timed).
  using GraphKey = std::tuple<std::string, std::size_t, std::size_t, std::size_t, bool>;
  static constexpr std::size_t kMaxGraphs = 256;
  bool graphs_enabled_ = false;
  std::map<GraphKey, cudaGraphExec_t> graphs_;  // null: seen once, not captured yet

  bool profiling_ = false;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;  // profiling only, one pair per step
  std::map<std::string, StepTime> profile_;
};

}  // namespace il::cuda
