// CudaExecutor, running programs: eager launches, CUDA graph capture and replay per bucketed
// batch shape (run_graph, with the policy's reasons), and the per-step profile.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "backends/cuda/cuda_executor.h"
#include "core/error.h"
#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"

namespace il::cuda {

void CudaExecutor::execute_all(const std::vector<plan::Step>& steps) {
  for (const plan::Step& step : steps) execute(step);
}

void CudaExecutor::run(const std::string& program) {
  check(num_seqs_ > 0, "cuda executor: run before set_batch");
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const auto& steps = plan_.program(program);
  if (!profiling_) {
    if (graphs_enabled_) return run_graph(program, steps);
    execute_all(steps);
    return;
  }
  while (events_.size() < steps.size()) {
    cudaEvent_t a = nullptr, b = nullptr;
    IL_CUDA_CHECK(cudaEventCreate(&a));
    IL_CUDA_CHECK(cudaEventCreate(&b));
    events_.emplace_back(a, b);
  }
  // The device waits until the host has enqueued every step (about 30 µs each is ample), so
  // each event pair times the step's kernels and not the host's launch calls between them.
  ops::hold_stream_cuda(std::min(50000.0, 30.0 * static_cast<double>(steps.size())), stream_);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    IL_CUDA_CHECK(cudaEventRecord(events_[i].first, stream_));
    execute(steps[i]);
    IL_CUDA_CHECK(cudaEventRecord(events_[i].second, stream_));
  }
  // Already past the first step: the hold ended before the enqueue did, so later steps may
  // include launch gaps; the report says so. (A program's first run is not counted: it tunes
  // the GEMMs, synchronising as it goes.)
  const cudaError_t first = cudaEventQuery(events_.front().first);
  if (first != cudaSuccess && first != cudaErrorNotReady) IL_CUDA_CHECK(first);
  if (first == cudaSuccess && profiled_.count(program) > 0) ++host_bound_runs_;
  record_profile(program);
}

// Replay through CUDA graphs (IL_CUDA_GRAPHS=0 turns them off). A graph pays where the host's
// launches, not the kernels, set the pace: a short batch of ~90 small kernels. A large batch
// keeps the device busy while the host enqueues, so a graph would only hold host memory (the
// driver's copy of every node). So a bucketed batch shape runs eagerly twice: the first run
// picks the cuBLASLt algorithms and loads the kernels, the second is timed, host enqueue against
// device time. A shape whose enqueue took under half its device time stays eager; the others are
// captured on their third run and replayed from then on. IL_CUDA_GRAPHS=always captures every
// shape on its second run.
//
// Every host value a launch depends on is in the key (the bucketed counts); the batch arrays sit
// at the same device addresses for the same bucketed counts, and their contents are uploaded
// before the launch on the same stream. Eager runs launch the same bucketed shapes, so a replay
// gives the eager run's bits.
void CudaExecutor::run_graph(const std::string& program, const std::vector<plan::Step>& steps) {
  // SAM attention checks each batch's views on the host (squares, a table per side) as it
  // launches: a replayed graph would skip the checks, so such programs stay eager (the vision
  // tower's kernels, not its launches, set its pace).
  if (std::any_of(steps.begin(), steps.end(),
                  [](const plan::Step& s) { return std::holds_alternative<plan::SamAttentionStep>(s.op); }))
    return execute_all(steps);
  const GraphKey key{program,
                     num_tokens_,
                     num_seqs_,
                     max_seq_len_,
                     has_types_,
                     d_pool_starts_ != nullptr,
                     d_key_limits_ != nullptr,
                     rope_axes_,
                     page_size_,
                     byte_patches_,
                     d_causal_prefix_ != nullptr,
                     gather_taps_};
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (graphs_.size() >= kMaxShapes) return execute_all(steps);  // too many shapes: stay eager
    it = graphs_.emplace(key, ShapeRecord{}).first;
  }
  ShapeRecord& shape = it->second;
  if (shape.exec != nullptr) {
    IL_CUDA_CHECK(cudaGraphLaunch(shape.exec, stream_));
    return;
  }
  if (shape.eager_only) return execute_all(steps);
  if (shape.eager_runs < (graphs_always_ ? 1 : 2)) {
    // The first run picks algorithms and loads kernels; the second (unless `always`) is timed.
    if (++shape.eager_runs == 1 || graphs_always_) return execute_all(steps);
    IL_CUDA_CHECK(cudaEventRecord(shape_start_, stream_));
    const auto t0 = std::chrono::steady_clock::now();
    execute_all(steps);
    const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    IL_CUDA_CHECK(cudaEventRecord(shape_end_, stream_));
    IL_CUDA_CHECK(cudaEventSynchronize(shape_end_));  // once per shape; the caller's read waits anyway
    float device_ms = 0.0f;
    IL_CUDA_CHECK(cudaEventElapsedTime(&device_ms, shape_start_, shape_end_));
    shape.eager_only = host_ms < 0.5 * static_cast<double>(device_ms);
    return;
  }
  if (captured_graphs_ >= kMaxGraphs) {
    shape.eager_only = true;
    return execute_all(steps);
  }
  cudaGraph_t graph = nullptr;
  // Relaxed: the launches set function attributes, which the stricter modes may refuse.
  IL_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  try {
    execute_all(steps);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  IL_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  IL_CUDA_CHECK(e);
  shape.exec = exec;
  ++captured_graphs_;
  IL_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
}

void CudaExecutor::record_profile(const std::string& program) {
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // A program's first run pays one-time costs (module loading, GEMM algorithm tuning): not counted.
  if (profiled_.insert(program).second) return;
  const auto& steps = plan_.program(program);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    float ms = 0.0f;
    IL_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second));
    profile_.add(steps[i].name, plan::op_name(steps[i].op), ms);
  }
}

std::string CudaExecutor::profile_report() const {
  std::string title = "profile (" + backend_name() + " " + compute_dtype() +
                      ", device time per step, first run of each program not counted)";
  std::string report = profile_.report(title, 16);
  if (host_bound_runs_ > 0) {
    const std::size_t line_end = report.find('\n') + 1;
    report.insert(line_end, "  (" + std::to_string(host_bound_runs_) +
                                " run(s) enqueued slower than the device ran: their figures include launch gaps)\n");
  }
  return report;
}

}  // namespace il::cuda
