#include "backends/cuda/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/batch_buckets.h"
#include "core/env.h"
#include "core/error.h"
#include "ops/attention_half_cuda.h"
#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"
#include "plan/operands.h"
#include "plan/overloaded.h"

namespace il::cuda {

using plan::Rows;
using plan::View;

namespace {

std::size_t elem_size(DType t) { return dtype_size(t); }

int slot(DType t) { return static_cast<int>(t); }

}  // namespace

CudaExecutor::CudaExecutor(plan::Plan& plan, std::size_t max_tokens, int device, DType compute)
    : plan_(plan), max_tokens_(max_tokens), device_(device), compute_(compute) {
  check(max_tokens > 0, "cuda executor: max_tokens must be positive");
  profiling_ = env::on_when_set("IL_PROFILE");
  graphs_enabled_ = env::on_unless_zero("IL_CUDA_GRAPHS");
  graphs_always_ = env::equals("IL_CUDA_GRAPHS", "always");
  try {
    allocate(plan);
  } catch (...) {
    release();  // the destructor does not run for a half-built executor
    throw;
  }
  if (env::on_when_set("IL_CUDA_MEMORY"))
    std::fprintf(stderr, "cuda executor (%s): %.1f MiB of device memory (weights %.1f MiB, scratch %.1f MiB)\n",
                 compute_dtype().c_str(), static_cast<double>(device_bytes()) / (1 << 20),
                 static_cast<double>(weight_arena_.bytes()) / (1 << 20),
                 static_cast<double>(buffer_arena_.bytes()) / (1 << 20));
}

std::string CudaExecutor::compute_dtype() const {
  switch (compute_) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "f32";
}

std::size_t CudaExecutor::device_bytes() const {
  return weight_arena_.bytes() + buffer_arena_.bytes() + batch_arena_.bytes() + gemm_->workspace_bytes();
}

// Activations in the serving precision; kF32 buffers (by default the sequence rows: pooled
// vectors, heads, scores) f32 in every mode. No step reads or writes integer buffers as floats.
DType CudaExecutor::type_of(const View& v) const {
  const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(v.buffer));
  switch (b.elem) {
    case plan::Elem::kActivation: return compute_;
    case plan::Elem::kF32: return DType::kF32;
    case plan::Elem::kI32: break;
  }
  throw make_error("cuda executor: buffer ", b.name, " holds int32 values, not floating-point ones");
}

std::size_t CudaExecutor::elem_bytes(const plan::BufferDesc& b) const {
  switch (b.elem) {
    case plan::Elem::kActivation: return elem_size(compute_);
    case plan::Elem::kF32: return sizeof(float);
    case plan::Elem::kI32: return sizeof(int32_t);
  }
  return sizeof(float);
}

void CudaExecutor::allocate(plan::Plan& plan) {
  IL_CUDA_CHECK(cudaSetDevice(device_));
  IL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  IL_CUDA_CHECK(cudaEventCreateWithFlags(&upload_done_, cudaEventDisableTiming));
  IL_CUDA_CHECK(cudaEventCreate(&shape_start_));
  IL_CUDA_CHECK(cudaEventCreate(&shape_end_));
  gemm_ = std::make_unique<ops::CublasLtGemm>();
  upload_weights(plan);

  // Scratch: every buffer gets max_tokens rows (a batch can hold as many sequences as tokens).
  // A buffer over another's storage (plan::BufferDesc::storage) takes none of its own.
  const auto bytes_of = [&](std::size_t id) {
    const plan::BufferDesc& b = plan.buffers()[id];
    if (b.storage >= 0) return std::size_t{0};
    return aligned_bytes(max_tokens_ * b.cols * elem_bytes(b));
  };
  std::size_t total = 0;
  for (std::size_t i = 0; i < plan.buffers().size(); ++i) total += bytes_of(i);
  buffer_arena_ = DeviceMemory(total);
  // Zeroed once so a view never reads uninitialised memory, even past the current rows.
  // On our stream: a non-blocking stream does not wait for work on the legacy default stream.
  if (total > 0) IL_CUDA_CHECK(cudaMemsetAsync(buffer_arena_.get(), 0, total, stream_));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < plan.buffers().size(); ++i) {
    buffers_.push_back(buffer_arena_.get() + offset);
    offset += bytes_of(i);
  }
  for (std::size_t i = 0; i < plan.buffers().size(); ++i)
    if (const plan::BufferId owner = plan.buffers()[i].storage; owner >= 0)
      buffers_[i] = buffers_.at(static_cast<std::size_t>(owner));

  // Positions go up with each batch only where a step reads them (rotary embeddings).
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      needs_positions_ = needs_positions_ || std::holds_alternative<plan::RopeStep>(step.op);

  // Batch ids (sequence offsets, tokens, type ids, pool starts, positions), device side and
  // pinned host side.
  const std::size_t ints = 5 * max_tokens_ + 1;
  batch_arena_ = DeviceMemory(ints * sizeof(int32_t));
  batch_staging_ = PinnedMemory(ints * sizeof(int32_t));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// Each weight is uploaded in the element types its steps read it in (plan/operands.h): GEMM
// weights and biases and embedding tables in the type of the activations they meet (the serving
// precision for activation rows, f32 for the heads on f32 sequence rows); norm weights and biases
// in f32 (see ops/ops_cuda.h). Half copies are converted on the device from one f32 upload.
void CudaExecutor::upload_weights(plan::Plan& plan) {
  const std::size_t count = plan.weights().size();
  std::vector<std::array<bool, 3>> need(count, {false, false, false});
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      for (const plan::WeightUse& use : plan::operands(step.op).weights) {
        DType t = DType::kF32;
        switch (use.role) {
          case plan::WeightRole::kGemm:
          case plan::WeightRole::kGemmBias:
          case plan::WeightRole::kTable: t = type_of(use.meets); break;
          case plan::WeightRole::kNorm: t = DType::kF32; break;
        }
        need.at(static_cast<std::size_t>(use.id))[slot(t)] = true;
      }

  std::size_t total = 0, widest_half = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t n = plan.weights()[i].numel();
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16})
      if (need[i][slot(t)]) {
        total += aligned_bytes(n * elem_size(t));
        if (t != DType::kF32) widest_half = std::max(widest_half, n);
      }
  }
  weight_arena_ = DeviceMemory(total);
  DeviceMemory f32_staging(widest_half * sizeof(float));  // freed after the upload
  std::size_t offset = 0;
  for (std::size_t i = 0; i < count; ++i) {
    plan::WeightDesc& w = plan.weights()[i];
    check(w.has_values(), "cuda executor: weight ", w.name,
          " holds no values (its plan is already used by another executor?)");
    // One tensor in f32 on the host at a time: a bf16 checkpoint is never converted whole.
    const std::vector<float> values = w.to_f32();
    std::array<const void*, 3> copies{nullptr, nullptr, nullptr};
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      if (!need[i][slot(t)]) continue;
      std::byte* dst = weight_arena_.get() + offset;
      offset += aligned_bytes(values.size() * elem_size(t));
      copies[slot(t)] = dst;
      // On our stream, in order (a pageable cudaMemcpy may return before its DMA completes).
      void* target = t == DType::kF32 ? static_cast<void*>(dst) : static_cast<void*>(f32_staging.get());
      IL_CUDA_CHECK(cudaMemcpyAsync(target, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice,
                                    stream_));
      if (t != DType::kF32) ops::convert_cuda(f32_staging.get(), DType::kF32, dst, t, values.size(), stream_);
      IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host vector and the staging are reused
    }
    weights_.push_back(copies);
    weight_shapes_.push_back(w.shape);
    w.release();  // the device copies are the only ones needed from now on
  }
}

CudaExecutor::~CudaExecutor() {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (profiling_ && !profile_.empty()) std::fputs(profile_report().c_str(), stderr);
  release();
}

void CudaExecutor::release() noexcept {
  // CUDA errors cannot be acted on here; memory handles free themselves.
  for (auto& [a, b] : events_) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  events_.clear();
  for (auto& [key, shape] : graphs_)
    if (shape.exec) cudaGraphExecDestroy(shape.exec);
  if (shape_start_) cudaEventDestroy(shape_start_);
  if (shape_end_) cudaEventDestroy(shape_end_);
  shape_start_ = shape_end_ = nullptr;
  graphs_.clear();
  if (upload_done_) cudaEventDestroy(upload_done_);
  upload_done_ = nullptr;
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void CudaExecutor::set_batch(const plan::Batch& batch) {
  plan::check_batch(batch, max_tokens_);  // sequence rows and the id staging hold max_tokens rows
  std::size_t longest = 0;
  for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
    longest = std::max<std::size_t>(longest, static_cast<std::size_t>(batch.seq_starts[s + 1] - batch.seq_starts[s]));
  }
  const std::size_t t = batch.num_tokens(), b = batch.num_seqs();
  // The launched shape: counts rounded up to buckets (never past the scratch). Padding sequences
  // are empty (their start is t) and padding tokens are id 0, type 0, in no sequence: every op
  // leaves the real rows as an exact-shape run would (see backends/cuda/batch_buckets.h).
  const std::size_t tb = count_bucket(t, max_tokens_), bb = count_bucket(b, max_tokens_);
  const std::size_t types = batch.type_ids.empty() ? 0 : tb;
  const std::size_t pool_starts = batch.pool_starts.empty() ? 0 : bb;
  const std::size_t positions = needs_positions_ ? tb : 0;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  // The previous upload may still be reading the staging buffer.
  IL_CUDA_CHECK(cudaEventSynchronize(upload_done_));
  // Packed back to back — offsets, tokens, type ids, pool starts, positions — so one small copy
  // uploads the batch.
  auto* staging = reinterpret_cast<int32_t*>(batch_staging_.get());
  std::memcpy(staging, batch.seq_starts.data(), (b + 1) * sizeof(int32_t));
  std::fill(staging + b + 1, staging + bb + 1, static_cast<int32_t>(t));
  int32_t* tokens = staging + bb + 1;
  if (t > 0) std::memcpy(tokens, batch.tokens.data(), t * sizeof(int32_t));
  std::fill(tokens + t, tokens + tb, 0);
  if (types > 0) {
    std::memcpy(tokens + tb, batch.type_ids.data(), t * sizeof(int32_t));
    std::fill(tokens + tb + t, tokens + tb + tb, 0);
  }
  int32_t* starts = tokens + tb + types;
  if (pool_starts > 0) {
    std::memcpy(starts, batch.pool_starts.data(), b * sizeof(int32_t));
    std::fill(starts + b, starts + bb, static_cast<int32_t>(t));  // padding sequences: empty
  }
  int32_t* pos = starts + pool_starts;
  if (positions > 0) {
    if (!batch.positions.empty()) {
      std::memcpy(pos, batch.positions.data(), t * sizeof(int32_t));
    } else {  // each token's index in its sequence, as the CPU executor fills them
      for (std::size_t s = 0; s < b; ++s)
        for (int32_t i = batch.seq_starts[s]; i < batch.seq_starts[s + 1]; ++i) pos[i] = i - batch.seq_starts[s];
    }
    std::fill(pos + t, pos + tb, 0);  // padding tokens: in no sequence, any position will do
  }
  // Each array's device address follows from the bucketed counts and which arrays are present,
  // all in the graph key (run_graph).
  auto* base = reinterpret_cast<int32_t*>(batch_arena_.get());
  d_starts_ = base;
  d_tokens_ = base + bb + 1;
  d_types_ = base + bb + 1 + tb;
  d_pool_starts_ = pool_starts > 0 ? base + bb + 1 + tb + types : nullptr;
  d_positions_ = positions > 0 ? base + bb + 1 + tb + types + pool_starts : nullptr;
  IL_CUDA_CHECK(cudaMemcpyAsync(base, staging, (bb + 1 + tb + types + pool_starts + positions) * sizeof(int32_t),
                                cudaMemcpyHostToDevice, stream_));
  IL_CUDA_CHECK(cudaEventRecord(upload_done_, stream_));
  num_tokens_ = tb;
  num_seqs_ = bb;
  max_seq_len_ = length_bucket(longest);
  real_tokens_ = t;
  real_seqs_ = b;
  has_types_ = !batch.type_ids.empty();
}

float* CudaExecutor::ptr(const View& v) const {
  return reinterpret_cast<float*>(buffers_.at(static_cast<std::size_t>(v.buffer)) + v.col * elem_size(type_of(v)));
}

std::size_t CudaExecutor::ld(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).cols;
}

std::size_t CudaExecutor::rows(const View& v) const {
  switch (plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows) {
    case Rows::kTokens: return num_tokens_;
    case Rows::kSequences:
    case Rows::kSelected: return num_seqs_;
  }
  return 0;
}

const float* CudaExecutor::weight(plan::WeightId id, DType t) const {
  if (id == plan::kNoWeight) return nullptr;
  const void* p = weights_.at(static_cast<std::size_t>(id))[slot(t)];
  check(p != nullptr, "cuda executor: weight ", plan_.weights().at(static_cast<std::size_t>(id)).name,
        " was not uploaded as ", dtype_name(t));
  return static_cast<const float*>(p);
}

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
  const GraphKey key{program, num_tokens_, num_seqs_, max_seq_len_, has_types_, d_pool_starts_ != nullptr};
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

std::optional<double> CudaExecutor::energy_joules() {
  if (!energy_meter_) energy_meter_ = std::make_unique<EnergyMeter>(device_);
  return energy_meter_->joules();
}

ops::GemmCudaArgs CudaExecutor::gemm_args(const std::string& name, const plan::GemmStep& op) const {
  const auto& shape = weight_shapes_.at(static_cast<std::size_t>(op.w));
  const std::size_t n = static_cast<std::size_t>(shape.at(0)), k = static_cast<std::size_t>(shape.at(1));
  check(op.x.cols == k && op.y.cols == n, "gemm ", name, ": views ", op.x.cols, " → ", op.y.cols,
        " do not match the weight [", n, ", ", k, "]");
  const DType t = type_of(op.x);
  check(type_of(op.y) == t, "gemm ", name, ": input and output rows differ in kind");
  return {ptr(op.x), ld(op.x), weight(op.w, t), n, k, weight(op.bias, t), ptr(op.y), ld(op.y), rows(op.x), op.act, t};
}

ops::LayerNormArgs CudaExecutor::norm_args(const std::string& name, const plan::LayerNormStep& op) const {
  const bool has_res = op.residual.buffer >= 0, has_sum = op.sum_out.buffer >= 0;
  const DType t = type_of(op.x);
  check(type_of(op.out) == t && (!has_res || type_of(op.residual) == t) && (!has_sum || type_of(op.sum_out) == t),
        "layernorm ", name, ": operands differ in element type");
  ops::LayerNormArgs a{ptr(op.x), ld(op.x), has_res ? ptr(op.residual) : nullptr, has_res ? ld(op.residual) : 0,
                       weight(op.w, DType::kF32), weight(op.b, DType::kF32), ptr(op.out), ld(op.out), rows(op.x),
                       op.x.cols, op.eps, op.rms};
  a.sum_out = has_sum ? ptr(op.sum_out) : nullptr;
  a.lds = has_sum ? ld(op.sum_out) : 0;
  a.group = op.group;
  ops::check_layernorm(a, name.c_str());
  return a;
}

bool CudaExecutor::selected(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows == Rows::kSelected;
}

// One callable per step kind (plan::Overloaded): a kind added to plan::StepOp fails to compile
// here until it is handled.
void CudaExecutor::execute(const plan::Step& step) {
  std::visit(
      plan::Overloaded{
          [&](const plan::EmbedStep& op) {
            const DType t = type_of(op.out);
            ops::embed_cuda({d_tokens_, has_types_ ? d_types_ : nullptr, d_starts_, num_seqs_, weight(op.word, t),
                             weight(op.position, t), op.position_offset, weight(op.type, t), ptr(op.out), ld(op.out),
                             op.out.cols},
                            num_tokens_, stream_, t);
          },
          [&](const plan::GemmStep& op) { gemm_->run(gemm_args(step.name, op), stream_); },
          [&](const plan::LayerNormStep& op) {
            ops::layernorm_cuda(norm_args(step.name, op), stream_, type_of(op.x));
          },
          [&](const plan::GluStep& op) {
            const DType t = type_of(op.x);
            check(type_of(op.out) == t, "glu ", step.name, ": operands differ in element type");
            check(op.x.cols == 2 * op.out.cols, "glu ", step.name, ": input of ", op.x.cols,
                  " columns for an output of ", op.out.cols);
            ops::glu_cuda({ptr(op.x), ld(op.x), ptr(op.out), ld(op.out), rows(op.x), op.out.cols, op.act}, stream_, t);
          },
          [&](const plan::RopeStep& op) {
            check(!selected(op.x), "rope ", step.name, ": selected rows have no positions of their own");
            check(op.heads * op.head_dim <= op.x.cols, "rope ", step.name, ": ", op.heads, " heads of ", op.head_dim,
                  " do not fit a view of ", op.x.cols, " columns");
            check(d_positions_ != nullptr, "rope ", step.name, ": no positions uploaded");
            ops::rope_cuda({ptr(op.x), ld(op.x), d_positions_, rows(op.x), op.heads, op.head_dim, op.rotary_dim,
                            op.theta},
                           stream_, type_of(op.x));
          },
          [&](const plan::AttentionStep& op) { attention(step.name, op); },
          [&](const plan::PoolStep& op) {
            // Selected rows hold one row per sequence: row s is sequence s's (pool_cuda takes them
            // by CLS or last-token pooling only).
            const bool per_sequence = selected(op.x);
            ops::pool_cuda({ptr(op.x), ld(op.x), ptr(op.out), ld(op.out), d_starts_, num_seqs_, op.x.cols, op.mode,
                            per_sequence ? nullptr : d_pool_starts_, per_sequence},
                           stream_, type_of(op.x), type_of(op.out));
          },
          [&](const plan::L2Step& op) {
            ops::l2_rows_cuda({ptr(op.x), ld(op.x), rows(op.x), op.x.cols}, stream_, type_of(op.x));
          },
      },
      step.op);
}

// Which attention kernel: one query row per sequence → the one-row kernel (f32 arithmetic in
// every mode); f16 / bf16 → the tensor-core kernel where it supports the head size (its own
// dispatch picks the Hopper forms where they apply); otherwise the f32-arithmetic flash kernel
// (ops/attention_cuda.cu), in the buffers' type. Every kernel takes causal masks, windows and
// GQA; the head-size limits are checked by attention_half_supported and the launchers.
void CudaExecutor::attention(const std::string& name, const plan::AttentionStep& op) {
  const DType t = type_of(op.q);
  check(type_of(op.k) == t && type_of(op.v) == t && type_of(op.out) == t, "attention ", name,
        ": operands differ in element type");
  const ops::AttentionArgs args{ptr(op.q), ld(op.q), ptr(op.k), ld(op.k), ptr(op.v), ld(op.v), ptr(op.out),
                                ld(op.out), d_starts_, num_seqs_, op.heads, op.kv_heads, op.head_dim, op.scale,
                                op.mask, op.window};
  switch (op.queries) {
    case plan::QueryRows::kFirst: return ops::attention_first_cuda(args, stream_, t);
    case plan::QueryRows::kLast: return ops::attention_last_cuda(args, stream_, t);
    case plan::QueryRows::kAll: break;
  }
  if (t != DType::kF32 && ops::attention_half_supported(op.head_dim)) {
    ops::attention_half_cuda({args.q, args.ldq, args.k, args.ldk, args.v, args.ldv, args.out, args.ldo,
                              args.seq_starts, args.num_seqs, args.heads, args.kv_heads, args.head_dim, args.scale,
                              args.mask, args.window, t == DType::kF16 ? ops::HalfType::kF16 : ops::HalfType::kBF16,
                              num_tokens_},
                             max_seq_len_, stream_);
    return;
  }
  ops::attention_cuda(args, max_seq_len_, stream_, t);
}

void CudaExecutor::read(const View& view, float* dst) {
  // The real rows only: the launched shape may be padded up to a bucket.
  std::size_t n = 0;
  switch (plan_.buffers().at(static_cast<std::size_t>(view.buffer)).rows) {
    case Rows::kTokens: n = real_tokens_; break;
    case Rows::kSequences:
    case Rows::kSelected: n = real_seqs_; break;
  }
  if (n == 0 || view.cols == 0) return;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const plan::BufferDesc& desc = plan_.buffers().at(static_cast<std::size_t>(view.buffer));
  const bool ints = desc.elem == plan::Elem::kI32;
  const DType t = ints ? DType::kF32 : type_of(view);  // int32 rows: 4-byte elements, converted below
  const std::size_t size = elem_bytes(desc);
  const std::size_t bytes = n * view.cols * size;
  // Grows to the largest read once (a T × hidden readback at most); later reads reuse it.
  if (read_staging_.bytes() < bytes) read_staging_ = PinnedMemory(bytes);
  const std::byte* src = buffers_.at(static_cast<std::size_t>(view.buffer)) + view.col * size;
  IL_CUDA_CHECK(cudaMemcpy2DAsync(read_staging_.get(), view.cols * size, src, ld(view) * size, view.cols * size, n,
                                  cudaMemcpyDeviceToHost, stream_));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::size_t count = n * view.cols;
  if (ints) {
    const auto* v = reinterpret_cast<const int32_t*>(read_staging_.get());
    for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(v[i]);
    return;
  }
  const auto* half = reinterpret_cast<const uint16_t*>(read_staging_.get());
  switch (t) {
    case DType::kF32: std::memcpy(dst, read_staging_.get(), bytes); return;
    case DType::kF16:
      for (std::size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(half[i]);
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(half[i]);
      return;
  }
}

}  // namespace il::cuda
