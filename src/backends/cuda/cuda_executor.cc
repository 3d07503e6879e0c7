// CudaExecutor, memory and batches: construction (weights placed, scratch and batch staging
// allocated), set_batch (the batch's ids up in one copy, bucketed shapes), views to device
// pointers, and read(). Running programs and CUDA graphs: cuda_graphs.cc; one step to its
// launches: cuda_dispatch.cc.
#include "backends/cuda/cuda_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/batch_buckets.h"
#include "core/env.h"
#include "core/error.h"
#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"
#include "plan/operands.h"

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
    allocate(plan, &plan);
  } catch (...) {
    release();  // the destructor does not run for a half-built executor
    throw;
  }
  if (env::on_when_set("IL_CUDA_MEMORY"))
    std::fprintf(stderr, "cuda executor (%s): %.1f MiB of device memory (weights %.1f MiB, scratch %.1f MiB)\n",
                 compute_dtype().c_str(), static_cast<double>(device_bytes()) / (1 << 20),
                 static_cast<double>(weights_->arena.bytes()) / (1 << 20),
                 static_cast<double>(buffer_arena_.bytes()) / (1 << 20));
}

CudaExecutor::CudaExecutor(const CudaExecutor& first_lane, std::shared_ptr<const DeviceWeights> weights)
    : plan_(first_lane.plan_), max_tokens_(first_lane.max_tokens_), device_(first_lane.device_),
      compute_(first_lane.compute_), weights_(std::move(weights)), first_lane_(false) {
  profiling_ = first_lane.profiling_;
  graphs_enabled_ = first_lane.graphs_enabled_;
  graphs_always_ = first_lane.graphs_always_;
  try {
    allocate(plan_, nullptr);
  } catch (...) {
    release();
    throw;
  }
  if (env::on_when_set("IL_CUDA_MEMORY"))
    std::fprintf(stderr, "cuda executor lane (%s): %.1f MiB of device memory of its own (scratch %.1f MiB)\n",
                 compute_dtype().c_str(), static_cast<double>(device_bytes()) / (1 << 20),
                 static_cast<double>(buffer_arena_.bytes()) / (1 << 20));
}

std::unique_ptr<plan::Executor> CudaExecutor::another_lane() {
  // A lane's weights are this one's: it must have finished uploading them (allocate waits for
  // its stream), which it has by the time the constructor returned.
  return std::unique_ptr<plan::Executor>(new CudaExecutor(*this, weights_));
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
  return (first_lane_ ? weights_->arena.bytes() : 0) + buffer_arena_.bytes() + batch_arena_.bytes() +
         gemm_->workspace_bytes() + moe_workspace_.bytes() + disentangled_tables_.bytes();
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

void CudaExecutor::allocate(const plan::Plan& plan, plan::Plan* upload) {
  IL_CUDA_CHECK(cudaSetDevice(device_));
  IL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  IL_CUDA_CHECK(cudaEventCreateWithFlags(&upload_done_, cudaEventDisableTiming));
  IL_CUDA_CHECK(cudaEventCreate(&shape_start_));
  IL_CUDA_CHECK(cudaEventCreate(&shape_end_));
  gemm_ = std::make_unique<ops::CublasLtGemm>();
  if (upload) weights_ = upload_weights(*upload);

  // Scratch: every buffer gets max_tokens rows (a batch can hold as many sequences as tokens),
  // a persistent one its own rows. A buffer over another's storage (plan::BufferDesc::storage)
  // takes none of its own.
  const auto bytes_of = [&](std::size_t id) {
    const plan::BufferDesc& b = plan.buffers()[id];
    if (b.storage >= 0) return std::size_t{0};
    return aligned_bytes(plan::capacity_rows(b, max_tokens_) * b.cols * elem_bytes(b));
  };
  std::size_t total = 0;
  for (std::size_t i = 0; i < plan.buffers().size(); ++i) total += bytes_of(i);
  buffer_arena_ = DeviceMemory(total);
  // Zeroed once so a view never reads uninitialised memory, even past the current rows, and
  // persistent buffers start from zeros; nothing clears them later (set_batch and run leave their
  // contents, and their addresses, which CUDA graphs hold, never change).
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
      needs_positions_ = needs_positions_ || std::holds_alternative<plan::RopeStep>(step.op) ||
                         std::holds_alternative<plan::PatchEmbedStep>(step.op);
  // Patch rows go up with each batch where a step embeds image patches.
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      if (const auto* pe = std::get_if<plan::PatchEmbedStep>(&step.op)) {
        check(patch_dim_ == 0 || patch_dim_ == pe->patches.cols, "cuda executor: patch embeddings of different widths");
        patch_dim_ = pe->patches.cols;
      }
  if (patch_dim_ > 0) {
    patch_arena_ = DeviceMemory(max_tokens_ * patch_dim_ * sizeof(float));
    image_arena_ = DeviceMemory(kImageTableBytes + max_tokens_ * patch_dim_);
    image_staging_ = PinnedMemory(kImageTableBytes + max_tokens_ * patch_dim_);
  }

  // Generation's per-batch arrays, where a step reads them.
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      generation_ = generation_ || std::holds_alternative<plan::KvWriteStep>(step.op) ||
                    std::holds_alternative<plan::CachedAttentionStep>(step.op) ||
                    std::holds_alternative<plan::InjectRowsStep>(step.op);
  if (generation_) {
    for (const plan::BufferDesc& b : plan.buffers())
      if (b.rows == Rows::kPersistent) gen_pages_cap_ = std::max(gen_pages_cap_, b.fixed_rows);
    // The rows a batch may address: the smallest cache and injection source (checked per batch
    // in set_batch, since a captured graph replays without the dispatch's checks).
    const auto rows_of = [&](const View& v) { return plan.buffers().at(static_cast<std::size_t>(v.buffer)).fixed_rows; };
    for (const std::string& name : plan.program_names())
      for (const plan::Step& step : plan.program(name)) {
        if (const auto* w = std::get_if<plan::KvWriteStep>(&step.op))
          gen_cache_rows_ = std::min({gen_cache_rows_, rows_of(w->k_cache), rows_of(w->v_cache)});
        if (const auto* c = std::get_if<plan::CachedAttentionStep>(&step.op))
          gen_cache_rows_ = std::min({gen_cache_rows_, rows_of(c->k_cache), rows_of(c->v_cache)});
        if (const auto* r = std::get_if<plan::InjectRowsStep>(&step.op))
          gen_inject_rows_ = std::min(gen_inject_rows_, rows_of(r->src));
      }
    std::size_t widest = 0;
    for (const std::string& name : plan.program_names())
      for (const plan::Step& step : plan.program(name))
        if (const auto* c = std::get_if<plan::CachedAttentionStep>(&step.op)) widest = std::max(widest, c->head_dim);
    if (widest > 0) {
      // 8,192 partial results: a bucket of 8 decode tokens split 64 ways over 16 query heads.
      attn_workspace_floats_ = 8192 * (widest + 2);
      attn_workspace_ = DeviceMemory(attn_workspace_floats_ * sizeof(float));
    }
    const std::size_t ints = 5 * max_tokens_ + 1 + gen_pages_cap_;
    gen_arena_ = DeviceMemory(ints * sizeof(int32_t));
    gen_staging_ = PinnedMemory(ints * sizeof(int32_t));
    auto* g = reinterpret_cast<int32_t*>(gen_arena_.get());
    d_cache_rows_ = g;
    d_cache_lengths_ = g + max_tokens_;
    d_inject_rows_ = g + 2 * max_tokens_;
    d_window_anchors_ = g + 3 * max_tokens_;
    d_page_starts_ = g + 4 * max_tokens_;
    d_pages_ = g + 5 * max_tokens_ + 1;
  }

  // The mixture-of-experts scratch, once, for the largest step at max_tokens rows.
  std::size_t moe_bytes = 0;
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      if (const auto* m = std::get_if<plan::MoeStep>(&step.op))
        moe_bytes = std::max(moe_bytes, ops::moe_workspace_bytes(max_tokens_, m->x.cols, m->out.cols, m->experts,
                                                                 m->top_k, m->inner, elem_size(type_of(m->x))));
  if (moe_bytes > 0) moe_workspace_ = DeviceMemory(moe_bytes);

  // DeBERTa's relative tables, once, for the largest disentangled step at max_tokens rows.
  const bool tables_on = env::on_unless_zero("IL_DISENTANGLED_TC");
  std::size_t table_floats = 0;
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      if (const auto* d = std::get_if<plan::DisentangledAttentionStep>(&step.op); d != nullptr && tables_on)
        table_floats = std::max(table_floats, ops::disentangled_table_cap_floats(
                                                  max_tokens_, d->heads, d->span,
                                                  (d->pos_key != plan::kNoWeight) + (d->pos_query != plan::kNoWeight)));
  if (table_floats > 0) disentangled_tables_ = DeviceMemory(table_floats * sizeof(float));

  // Row gathers: the batch's indices, max_tokens rows of at most kMaxGatherTaps.
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      if (const auto* g = std::get_if<plan::GatherRowsStep>(&step.op)) {
        check(g->taps > 0 && g->taps <= kMaxGatherTaps, "cuda executor: gather_rows ", step.name, " of ", g->taps,
              " parts (1 to ", kMaxGatherTaps, " on CUDA)");
        gather_srcs_.push_back(g->src);
      }
  if (!gather_srcs_.empty()) {
    gather_arena_ = DeviceMemory(max_tokens_ * kMaxGatherTaps * sizeof(int32_t));
    gather_staging_ = PinnedMemory(max_tokens_ * kMaxGatherTaps * sizeof(int32_t));
    d_gather_ = reinterpret_cast<int32_t*>(gather_arena_.get());
  }

  // Batch ids (sequence offsets, tokens, type ids, pool starts, positions, key limits, rope
  // positions, causal prefixes), device side and pinned host side.
  const std::size_t ints = (7 + plan::kMaxRopeAxes) * max_tokens_ + 1;
  batch_arena_ = DeviceMemory(ints * sizeof(int32_t));
  batch_staging_ = PinnedMemory(ints * sizeof(int32_t));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// Each weight is uploaded in the element types its steps read it in (plan/operands.h): GEMM
// weights and biases and embedding tables in the type of the activations they meet (the serving
// precision for activation rows, f32 for the heads on f32 sequence rows); norm weights and biases
// in f32 (see ops/ops_cuda.h). Half copies are converted on the device from one f32 upload.
std::shared_ptr<const CudaExecutor::DeviceWeights> CudaExecutor::upload_weights(plan::Plan& plan) {
  auto uploaded = std::make_shared<DeviceWeights>();
  const std::size_t count = plan.weights().size();
  std::vector<std::array<bool, 3>> need(count, {false, false, false});
  for (const std::string& name : plan.program_names())
    for (const plan::Step& step : plan.program(name))
      for (const plan::WeightUse& use : plan::operands(step.op).weights) {
        DType t = DType::kF32;
        switch (use.role) {
          // One copy per element type: a tied table read as kTable, kGemm and kGemmTransposed
          // in the activations' type is uploaded once and read in each layout.
          case plan::WeightRole::kGemm:
          case plan::WeightRole::kGemmBias:
          case plan::WeightRole::kTable:
          case plan::WeightRole::kGemmTransposed:
          case plan::WeightRole::kExperts:
          case plan::WeightRole::kOperand: t = type_of(use.meets); break;
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
  uploaded->arena = DeviceMemory(total);
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
      std::byte* dst = uploaded->arena.get() + offset;
      offset += aligned_bytes(values.size() * elem_size(t));
      copies[slot(t)] = dst;
      // On our stream, in order (a pageable cudaMemcpy may return before its DMA completes).
      void* target = t == DType::kF32 ? static_cast<void*>(dst) : static_cast<void*>(f32_staging.get());
      IL_CUDA_CHECK(cudaMemcpyAsync(target, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice,
                                    stream_));
      if (t != DType::kF32)
        ops::convert_cuda({{f32_staging.get(), DType::kF32, 0}, {dst, t, 0}, values.size()}, stream_);
      IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host vector and the staging are reused
    }
    uploaded->copies.push_back(copies);
    uploaded->shapes.push_back(w.shape);
    w.release();  // the device copies are the only ones needed from now on
  }
  return uploaded;
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
  check(batch.causal_prefix.empty() || batch.causal_prefix.size() == batch.num_seqs(), "cuda executor: ",
        batch.causal_prefix.size(), " causal prefixes for ", batch.num_seqs(), " sequences");
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
  const std::size_t key_limits = batch.key_limits.empty() ? 0 : bb;
  const std::size_t rope_axes = batch.rope_axes(), rope_positions = rope_axes * tb;
  const std::size_t prefixes = batch.causal_prefix.empty() ? 0 : bb;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  // The previous upload may still be reading the staging buffer.
  IL_CUDA_CHECK(cudaEventSynchronize(upload_done_));
  // Packed back to back — offsets, tokens, type ids, pool starts, positions, key limits, rope
  // positions — so one small copy
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
  int32_t* limits = pos + positions;
  if (key_limits > 0) {
    std::memcpy(limits, batch.key_limits.data(), b * sizeof(int32_t));
    std::fill(limits + b, limits + bb, 1);  // padding sequences are empty: any limit will do
  }
  int32_t* rope = limits + key_limits;
  for (std::size_t a = 0; a < rope_axes; ++a) {  // axis a at a · tb: the launched rows apart
    std::memcpy(rope + a * tb, batch.rope_positions.data() + a * t, t * sizeof(int32_t));
    std::fill(rope + a * tb + t, rope + (a + 1) * tb, 0);  // padding tokens: any position will do
  }
  int32_t* prefix = rope + rope_positions;
  if (prefixes > 0) {
    std::memcpy(prefix, batch.causal_prefix.data(), b * sizeof(int32_t));
    std::fill(prefix + b, prefix + bb, 0);  // padding sequences are empty: any prefix will do
  }
  // Each array's device address follows from the bucketed counts and which arrays are present,
  // all in the graph key (run_graph).
  auto* base = reinterpret_cast<int32_t*>(batch_arena_.get());
  d_starts_ = base;
  d_tokens_ = base + bb + 1;
  d_types_ = base + bb + 1 + tb;
  d_pool_starts_ = pool_starts > 0 ? base + bb + 1 + tb + types : nullptr;
  d_positions_ = positions > 0 ? base + bb + 1 + tb + types + pool_starts : nullptr;
  d_key_limits_ = key_limits > 0 ? base + bb + 1 + tb + types + pool_starts + positions : nullptr;
  d_rope_positions_ =
      rope_axes > 0 ? base + bb + 1 + tb + types + pool_starts + positions + key_limits : nullptr;
  rope_axes_ = rope_axes;
  d_causal_prefix_ =
      prefixes > 0 ? base + bb + 1 + tb + types + pool_starts + positions + key_limits + rope_positions : nullptr;
  IL_CUDA_CHECK(cudaMemcpyAsync(
      base, staging,
      (bb + 1 + tb + types + pool_starts + positions + key_limits + rope_positions + prefixes) * sizeof(int32_t),
      cudaMemcpyHostToDevice, stream_));
  upload_gather(batch, t, tb);
  if (generation_) upload_generation(batch, t, b, tb, bb);
  byte_patches_ = patch_dim_ > 0 && !batch.image_bytes.empty();
  if (byte_patches_) upload_image_bytes(batch);
  IL_CUDA_CHECK(cudaEventRecord(upload_done_, stream_));
  if (patch_dim_ > 0 && !batch.patches.empty()) {
    check(batch.patch_dim == patch_dim_, "cuda executor: patch rows of ", batch.patch_dim, " values, the plan takes ",
          patch_dim_);
    // From pageable memory: the call returns once the rows are staged, so the batch may go.
    auto* d = reinterpret_cast<float*>(patch_arena_.get());
    IL_CUDA_CHECK(cudaMemcpyAsync(d, batch.patches.data(), t * patch_dim_ * sizeof(float), cudaMemcpyHostToDevice,
                                  stream_));
    // Padding tokens get zero patches, so the launched rows stay finite whatever the bucket.
    if (tb > t) IL_CUDA_CHECK(cudaMemsetAsync(d + t * patch_dim_, 0, (tb - t) * patch_dim_ * sizeof(float), stream_));
  }
  num_tokens_ = tb;
  num_seqs_ = bb;
  max_seq_len_ = length_bucket(longest);
  real_tokens_ = t;
  real_seqs_ = b;
  has_types_ = !batch.type_ids.empty();
  host_starts_.assign(batch.seq_starts.begin(), batch.seq_starts.end());
}

// Batch::gather into its own device array, the launched rows' worth: taps per token row, padding
// rows −1 (zero parts). The kernel does not check the indices, and a graph replay skips the
// dispatch's checks, so here every index is checked against the rows every gather step's source
// holds (its allocation: max_tokens rows for a token-row source, a persistent one's fixed rows;
// the smallest over the plan's gather steps, since any of them may run on this batch): no gather
// reads outside memory. The dispatch (eager runs) also checks the largest index against the rows
// its own source has now (a token-row source: the batch's real tokens), as the CPU executor does.
// The staging is free: set_batch waited for the previous upload.
void CudaExecutor::upload_gather(const plan::Batch& batch, std::size_t t, std::size_t tb) {
  gather_taps_ = 0;
  max_gather_index_ = -1;
  if (batch.gather.empty() || gather_srcs_.empty()) return;  // no step reads them
  check(t > 0 && batch.gather.size() % t == 0, "cuda executor: ", batch.gather.size(), " gather indices for ", t,
        " token rows");
  const std::size_t taps = batch.gather.size() / t;
  check(taps <= kMaxGatherTaps, "cuda executor: ", taps, " gather parts per row (at most ", kMaxGatherTaps,
        " on CUDA)");
  std::size_t bound = SIZE_MAX;
  for (const View& v : gather_srcs_)
    bound = std::min(bound, plan::capacity_rows(plan_.buffers().at(static_cast<std::size_t>(v.buffer)), max_tokens_));
  for (const int32_t i : batch.gather) {  // negative: a zero part
    check(i < 0 || static_cast<std::size_t>(i) < bound, "cuda executor: gather index ", i,
          " outside the rows a gather source holds (", bound, ")");
    max_gather_index_ = std::max<int64_t>(max_gather_index_, i);
  }
  auto* s = reinterpret_cast<int32_t*>(gather_staging_.get());
  std::memcpy(s, batch.gather.data(), t * taps * sizeof(int32_t));
  std::fill(s + t * taps, s + tb * taps, -1);
  IL_CUDA_CHECK(cudaMemcpyAsync(d_gather_, s, tb * taps * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  gather_taps_ = taps;
}

// The generation arrays in one copy: cache rows, cache lengths and injected rows per launched
// token (padding tokens -1, 0, -1: the kernels skip them), then page offsets per launched sequence
// (padding sequences hold no pages), then the pages. The staging is free: set_batch waited for
// the previous upload.
void CudaExecutor::upload_generation(const plan::Batch& batch, std::size_t t, std::size_t b, std::size_t tb,
                                     std::size_t bb) {
  check(batch.kv_pages.size() <= gen_pages_cap_, "cuda executor: the batch lists ", batch.kv_pages.size(),
        " cache pages, more than any cache holds (", gen_pages_cap_, ")");
  auto* s = reinterpret_cast<int32_t*>(gen_staging_.get());
  int32_t* rows = s;
  int32_t* lengths = s + max_tokens_;
  int32_t* inject = s + 2 * max_tokens_;
  int32_t* anchors = s + 3 * max_tokens_;
  int32_t* starts = s + 4 * max_tokens_;
  int32_t* pages = s + 5 * max_tokens_ + 1;
  const auto fill = [&](int32_t* dst, const std::vector<int32_t>& src, int32_t pad) {
    if (!src.empty()) std::memcpy(dst, src.data(), t * sizeof(int32_t));
    std::fill(dst + (src.empty() ? 0 : t), dst + tb, pad);
  };
  fill(rows, batch.cache_rows, -1);
  fill(lengths, batch.cache_lengths, 0);
  fill(inject, batch.inject_rows, -1);
  // Window anchors: the batch's, or each token's own entry (a causal sliding window) as the CPU
  // executor reads an empty list; the kernels read them only for a windowed step.
  check(batch.window_anchors.empty() || batch.window_anchors.size() == t, "cuda executor: ",
        batch.window_anchors.size(), " window anchors for ", t, " tokens");
  if (!batch.window_anchors.empty()) {
    std::memcpy(anchors, batch.window_anchors.data(), t * sizeof(int32_t));
  } else {
    for (std::size_t i = 0; i < t; ++i) anchors[i] = batch.cache_lengths.empty() ? 0 : batch.cache_lengths[i] - 1;
  }
  std::fill(anchors + t, anchors + tb, 0);
  if (!batch.kv_page_starts.empty()) std::memcpy(starts, batch.kv_page_starts.data(), (b + 1) * sizeof(int32_t));
  else std::fill(starts, starts + b + 1, 0);
  std::fill(starts + b + 1, starts + bb + 1, starts[b]);
  if (!batch.kv_pages.empty()) std::memcpy(pages, batch.kv_pages.data(), batch.kv_pages.size() * sizeof(int32_t));
  page_size_ = batch.kv_page_size;
  max_cache_row_ = max_page_ = max_inject_row_ = -1;
  for (int32_t r : batch.cache_rows) max_cache_row_ = std::max<int64_t>(max_cache_row_, r);
  for (int32_t p : batch.kv_pages) max_page_ = std::max<int64_t>(max_page_, p);
  for (int32_t r : batch.inject_rows) max_inject_row_ = std::max<int64_t>(max_inject_row_, r);
  // Compared unsigned: a plan with no cache (or no injection) step holds SIZE_MAX rows there,
  // which as a signed count would refuse every row (a KV cache without injected rows:
  // DiffusionGemma). -1: the batch names none.
  const auto within = [](int64_t last, std::size_t rows) { return last < 0 || static_cast<std::size_t>(last) < rows; };
  check(within(max_cache_row_, gen_cache_rows_), "cuda executor: cache row ", max_cache_row_,
        " outside the KV cache of ", gen_cache_rows_, " rows");
  check(batch.kv_pages.empty() ||
            within((max_page_ + 1) * static_cast<int64_t>(page_size_) - 1, gen_cache_rows_),
        "cuda executor: cache page ", max_page_, " of ", page_size_, " rows outside the KV cache of ", gen_cache_rows_,
        " rows");
  check(within(max_inject_row_, gen_inject_rows_), "cuda executor: injected row ", max_inject_row_,
        " outside the source of ", gen_inject_rows_, " rows");
  // Contiguous from the start through the last page; the gaps are the unused tails of each array.
  const std::size_t count = 5 * max_tokens_ + 1 + batch.kv_pages.size();
  IL_CUDA_CHECK(
      cudaMemcpyAsync(gen_arena_.get(), s, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
}

// The table, then the bytes in pieces: each piece is copied into the pinned staging and its
// upload queued before the next is copied, so the host copy and the transfer overlap. (A pinned
// source is what makes the transfer asynchronous and full speed; the caller has waited for the
// previous batch's upload to leave the staging.)
void CudaExecutor::upload_image_bytes(const plan::Batch& batch) {
  check(batch.patch_dim == patch_dim_, "cuda executor: image patches of ", batch.patch_dim,
        " values, the plan takes ", patch_dim_);
  check(batch.image_channels <= kMaxImageChannels, "cuda executor: images of ", batch.image_channels,
        " channels (at most ", kMaxImageChannels, ")");
  if (image_patch_ == 0) {
    image_rows_ = batch.image_rows;
    image_cols_ = batch.image_cols;
    image_channels_ = batch.image_channels;
    image_patch_ = batch.image_patch;
  }
  check(image_rows_ == batch.image_rows && image_cols_ == batch.image_cols &&
            image_channels_ == batch.image_channels && image_patch_ == batch.image_patch,
        "cuda executor: images of ", batch.image_rows, " × ", batch.image_cols, " × ", batch.image_channels,
        " (patch ", batch.image_patch, ") after images of ", image_rows_, " × ", image_cols_, " × ", image_channels_,
        " (patch ", image_patch_, ")");
  const std::size_t bytes = batch.image_bytes.size();
  check(bytes <= max_tokens_ * patch_dim_, "cuda executor: ", bytes, " image bytes exceed the staging");
  std::byte* host = image_staging_.get();
  std::byte* device = image_arena_.get();
  std::memcpy(host, batch.byte_values.data(), batch.byte_values.size() * sizeof(float));
  IL_CUDA_CHECK(cudaMemcpyAsync(device, host, batch.byte_values.size() * sizeof(float), cudaMemcpyHostToDevice,
                                stream_));
  constexpr std::size_t kPiece = 1u << 20;
  for (std::size_t off = 0; off < bytes; off += kPiece) {
    const std::size_t len = std::min(kPiece, bytes - off);
    std::memcpy(host + kImageTableBytes + off, batch.image_bytes.data() + off, len);
    IL_CUDA_CHECK(cudaMemcpyAsync(device + kImageTableBytes + off, host + kImageTableBytes + off, len,
                                  cudaMemcpyHostToDevice, stream_));
  }
}

ops::TensorView CudaExecutor::tensor(const View& v) const {
  const DType t = type_of(v);
  return {buffers_.at(static_cast<std::size_t>(v.buffer)) + v.col * elem_size(t), t, ld(v)};
}

std::size_t CudaExecutor::ld(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).cols;
}

std::size_t CudaExecutor::rows(const View& v) const {
  switch (plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows) {
    case Rows::kTokens: return num_tokens_;
    case Rows::kSequences:
    case Rows::kSelected: return num_seqs_;
    case Rows::kPersistent: return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).fixed_rows;
    case Rows::kWindows:
      // The launched token rows may be padded to a bucket; their windows, rounded down, still
      // cover every real window (real tokens are a multiple of kWindowTokens).
      check(real_tokens_ % plan::kWindowTokens == 0, "cuda executor: window rows of ", plan::kWindowTokens,
            " tokens need a token count divisible by it, not ", real_tokens_);
      return num_tokens_ / plan::kWindowTokens;
  }
  return 0;
}

// A row-wise step runs over rows(x), the launched rows (token counts rounded up to a bucket):
// every operand must hold them (a persistent buffer its fixed rows, the others max_tokens).
std::size_t CudaExecutor::row_wise(const std::string& step, const View& x, std::initializer_list<View> others) const {
  const std::size_t n = rows(x);
  for (const View& v : others) {
    if (v.buffer < 0) continue;
    const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(v.buffer));
    check(n <= plan::capacity_rows(b, max_tokens_), "cuda executor: step ", step, " runs over ", n, " rows, more than ",
          b.name, " holds (", plan::capacity_rows(b, max_tokens_), ")");
  }
  return n;
}

bool CudaExecutor::selected(const View& v) const {
  return plan_.buffers().at(static_cast<std::size_t>(v.buffer)).rows == Rows::kSelected;
}

ops::ConstTensorView CudaExecutor::weight(plan::WeightId id, DType t) const {
  if (id == plan::kNoWeight) return {};
  const void* p = weights_->copies.at(static_cast<std::size_t>(id))[slot(t)];
  check(p != nullptr, "cuda executor: weight ", plan_.weights().at(static_cast<std::size_t>(id)).name,
        " was not uploaded as ", dtype_name(t));
  const auto& shape = weights_->shapes.at(static_cast<std::size_t>(id));
  return {p, t, shape.size() == 2 ? static_cast<std::size_t>(shape[1]) : 0};  // a matrix's rows are dense
}

const float* CudaExecutor::norm_weight(plan::WeightId id) const {
  return static_cast<const float*>(weight(id, DType::kF32).data);
}

int32_t* CudaExecutor::ints(const std::string& step, const View& v) const {
  const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(v.buffer));
  check(b.elem == plan::Elem::kI32, "cuda executor: step ", step, " needs an int32 buffer, and ", b.name,
        " is not one");
  return reinterpret_cast<int32_t*>(buffers_.at(static_cast<std::size_t>(v.buffer))) + v.col;
}

std::optional<double> CudaExecutor::energy_joules() {
  if (!energy_meter_) energy_meter_ = std::make_unique<EnergyMeter>(device_);
  return energy_meter_->joules();
}

void CudaExecutor::read(const View& view, float* dst) {
  // The real rows only: the launched shape may be padded up to a bucket.
  std::size_t n = 0;
  switch (plan_.buffers().at(static_cast<std::size_t>(view.buffer)).rows) {
    case Rows::kTokens: n = real_tokens_; break;
    case Rows::kSequences:
    case Rows::kSelected: n = real_seqs_; break;
    case Rows::kPersistent: n = plan_.buffers().at(static_cast<std::size_t>(view.buffer)).fixed_rows; break;
    case Rows::kWindows: n = real_tokens_ / plan::kWindowTokens; break;
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

// The rows go up in f32 (pageable: the call returns once the copy is done) and are converted on
// the device where the buffer holds f16 / bf16, then copied into the view's columns; the stream
// is synchronised so the caller may reuse src (and no run is being captured: run() returns first).
void CudaExecutor::write(const View& view, const float* src, std::size_t n) {
  const plan::BufferDesc& b = plan_.buffers().at(static_cast<std::size_t>(view.buffer));
  check(b.rows == Rows::kPersistent, "cuda executor: write into ", b.name, ", which is not a persistent buffer");
  check(n <= b.fixed_rows, "cuda executor: ", n, " rows written into ", b.name, " of ", b.fixed_rows, " rows");
  check(view.col + view.cols <= b.cols, "cuda executor: a view past the columns of ", b.name);
  if (n == 0 || view.cols == 0) return;
  const DType t = type_of(view);  // refuses int32 buffers
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const std::size_t count = n * view.cols, size = elem_size(t);
  std::byte* dst = buffers_.at(static_cast<std::size_t>(view.buffer)) + view.col * size;
  if (t == DType::kF32) {
    IL_CUDA_CHECK(cudaMemcpy2DAsync(dst, ld(view) * size, src, view.cols * sizeof(float), view.cols * sizeof(float), n,
                                    cudaMemcpyHostToDevice, stream_));
  } else {
    const std::size_t f32_bytes = aligned_bytes(count * sizeof(float)), bytes = f32_bytes + count * size;
    if (write_staging_.bytes() < bytes) {
      IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // an earlier write may still read it
      write_staging_ = DeviceMemory(bytes);
    }
    std::byte* f32 = write_staging_.get();
    std::byte* half = f32 + f32_bytes;
    IL_CUDA_CHECK(cudaMemcpyAsync(f32, src, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
    ops::convert_cuda({{f32, DType::kF32, 0}, {half, t, 0}, count}, stream_);
    IL_CUDA_CHECK(cudaMemcpy2DAsync(dst, ld(view) * size, half, view.cols * size, view.cols * size, n,
                                    cudaMemcpyDeviceToDevice, stream_));
  }
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// Pairs, keep bytes and scores go through one pinned staging buffer and one device piece each
// way; the kernel reads the token rows where the last run left them, so only the scores come back.
// Rows of a persistent f32 buffer: the checks fill_rows and copy_rows share.
static void check_persistent_f32_rows(const plan::Plan& plan, const View& view, std::size_t end, const char* what) {
  const plan::BufferDesc& b = plan.buffers().at(static_cast<std::size_t>(view.buffer));
  check(b.rows == Rows::kPersistent, what, ": ", b.name, " is not a persistent buffer");
  check(b.elem == plan::Elem::kF32, what, ": ", b.name, " does not hold f32 values");
  check(end <= b.fixed_rows, what, ": rows up to ", end, " of ", b.name, ", which holds ", b.fixed_rows);
  check(view.col + view.cols <= b.cols, what, ": a view past the columns of ", b.name);
}

void CudaExecutor::fill_rows(const View& view, std::size_t first, std::size_t count, float value) {
  check_persistent_f32_rows(plan_, view, first + count, "fill rows");
  IL_CUDA_CHECK(cudaSetDevice(device_));
  ops::fill_rows_cuda(static_cast<float*>(tensor(view).data) + first * ld(view), ld(view), count, view.cols, value,
                      stream_);
}

void CudaExecutor::copy_rows(const View& view, std::size_t from, std::size_t to, std::size_t count) {
  check_persistent_f32_rows(plan_, view, std::max(from, to) + count, "copy rows");
  check(from == to || from + count <= to || to + count <= from, "copy rows: the ranges overlap");
  if (count == 0 || from == to) return;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  float* base = static_cast<float*>(tensor(view).data);
  const std::size_t pitch = ld(view) * sizeof(float);
  IL_CUDA_CHECK(cudaMemcpy2DAsync(base + to * ld(view), pitch, base + from * ld(view), pitch,
                                  view.cols * sizeof(float), count, cudaMemcpyDeviceToDevice, stream_));
}

void CudaExecutor::argmax_rows(const View& view, int32_t* dst) {
  const plan::BufferDesc& desc = plan_.buffers().at(static_cast<std::size_t>(view.buffer));
  check(desc.elem != plan::Elem::kI32, "argmax rows: ", desc.name, " holds integers");
  std::size_t n = 0;  // the real rows, as read() counts them
  switch (desc.rows) {
    case Rows::kTokens: n = real_tokens_; break;
    case Rows::kSequences:
    case Rows::kSelected: n = real_seqs_; break;
    case Rows::kPersistent: n = desc.fixed_rows; break;
    case Rows::kWindows: n = real_tokens_ / plan::kWindowTokens; break;
  }
  if (n == 0 || view.cols == 0) return;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const std::size_t bytes = aligned_bytes(n * sizeof(int32_t));
  if (argmax_arena_.bytes() < bytes) {
    argmax_arena_ = DeviceMemory(bytes);
    argmax_staging_ = PinnedMemory(bytes);
  }
  ops::RowArgmaxArgs a;
  a.x = ops::ConstTensorView(tensor(view));
  a.rows = n;
  a.cols = view.cols;
  a.out = reinterpret_cast<int32_t*>(argmax_arena_.get());
  ops::row_argmax_cuda(a, stream_);
  IL_CUDA_CHECK(cudaMemcpyAsync(argmax_staging_.get(), a.out, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // every call ends synchronised: nothing in flight uses the arena
  std::memcpy(dst, argmax_staging_.get(), n * sizeof(int32_t));
}

void CudaExecutor::sample_rows(const View& logits, const View& processed, const std::vector<float>& temperature,
                               const std::vector<double>& uniform, ops::RowDraw* out) {
  const plan::BufferDesc& lb = plan_.buffers().at(static_cast<std::size_t>(logits.buffer));
  check(lb.rows == Rows::kTokens && lb.elem == plan::Elem::kF32,
        "sample rows: the logits must be a token-row f32 buffer");
  const std::size_t n = real_tokens_;
  check(temperature.size() == n && uniform.size() == n, "sample rows: ", temperature.size(), " temperatures and ",
        uniform.size(), " uniforms for ", n, " rows");
  check_persistent_f32_rows(plan_, processed, n, "sample rows");
  check(processed.cols == logits.cols, "sample rows: ", processed.cols, " processed columns for ", logits.cols);
  for (std::size_t r = 0; r < n; ++r)
    check(temperature[r] > 0.0f && uniform[r] >= 0.0 && uniform[r] < 1.0, "sample rows: row ", r,
          " has temperature ", temperature[r], " and uniform ", uniform[r]);
  if (n == 0) return;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const std::size_t t_bytes = aligned_bytes(n * sizeof(float)), u_bytes = aligned_bytes(n * sizeof(double));
  const std::size_t out_bytes = aligned_bytes(n * sizeof(ops::RowDraw)), total = t_bytes + u_bytes + out_bytes;
  if (sample_arena_.bytes() < total) {
    IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // an earlier call's copies may still use them
    sample_arena_ = DeviceMemory(total);
    sample_staging_ = PinnedMemory(total);
  }
  std::byte* host = sample_staging_.get();
  std::memcpy(host, temperature.data(), n * sizeof(float));
  std::memcpy(host + t_bytes, uniform.data(), n * sizeof(double));
  std::byte* dev = sample_arena_.get();
  IL_CUDA_CHECK(cudaMemcpyAsync(dev, host, t_bytes + u_bytes, cudaMemcpyHostToDevice, stream_));
  ops::CanvasSampleArgs a;
  a.logits = ops::ConstTensorView(tensor(logits));
  a.processed = tensor(processed);
  a.temperature = reinterpret_cast<const float*>(dev);
  a.uniform = reinterpret_cast<const double*>(dev + t_bytes);
  a.rows = n;
  a.cols = logits.cols;
  a.out = reinterpret_cast<ops::RowDraw*>(dev + t_bytes + u_bytes);
  ops::canvas_sample_cuda(a, stream_);
  IL_CUDA_CHECK(cudaMemcpyAsync(host + t_bytes + u_bytes, a.out, n * sizeof(ops::RowDraw), cudaMemcpyDeviceToHost,
                                stream_));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::memcpy(out, host + t_bytes + u_bytes, n * sizeof(ops::RowDraw));
}

void CudaExecutor::maxsim(const View& tokens, const std::vector<int32_t>& pairs, const std::vector<uint8_t>& keep,
                          float* scores) {
  check(plan_.buffers().at(static_cast<std::size_t>(tokens.buffer)).rows == Rows::kTokens,
        "maxsim: the token vectors must be a token-row buffer");
  check(keep.empty() || keep.size() == real_tokens_, "maxsim: ", keep.size(), " keep bytes for ", real_tokens_,
        " rows");
  check(pairs.size() % 2 == 0, "maxsim: pairs must hold (query, document) index pairs");
  const std::size_t num_pairs = pairs.size() / 2;
  for (int32_t s : pairs)
    check(s >= 0 && static_cast<std::size_t>(s) < real_seqs_, "maxsim: a pair names sequence ", s, " of ",
          real_seqs_);
  if (num_pairs == 0) return;
  IL_CUDA_CHECK(cudaSetDevice(device_));
  const std::size_t pair_bytes = aligned_bytes(pairs.size() * sizeof(int32_t));
  const std::size_t keep_bytes = aligned_bytes(keep.size());
  const std::size_t score_bytes = aligned_bytes(num_pairs * sizeof(float));
  const std::size_t total = pair_bytes + keep_bytes + score_bytes;
  if (maxsim_arena_.bytes() < total) {
    IL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // an earlier call's copies may still read them
    maxsim_arena_ = DeviceMemory(total);
    maxsim_staging_ = PinnedMemory(total);
  }
  std::byte* host = maxsim_staging_.get();
  std::memcpy(host, pairs.data(), pairs.size() * sizeof(int32_t));
  if (!keep.empty()) std::memcpy(host + pair_bytes, keep.data(), keep.size());
  std::byte* dev = maxsim_arena_.get();
  IL_CUDA_CHECK(cudaMemcpyAsync(dev, host, pair_bytes + keep_bytes, cudaMemcpyHostToDevice, stream_));
  ops::MaxSimArgs a;
  const ops::TensorView x = tensor(tokens);
  a.x = ops::ConstTensorView(x);
  a.seq_starts = d_starts_;
  a.num_seqs = real_seqs_;
  a.pairs = reinterpret_cast<const int32_t*>(dev);
  a.num_pairs = num_pairs;
  a.dim = tokens.cols;
  a.keep = keep.empty() ? nullptr : reinterpret_cast<const uint8_t*>(dev + pair_bytes);
  a.scores = reinterpret_cast<float*>(dev + pair_bytes + keep_bytes);
  ops::maxsim_cuda(a, stream_);
  IL_CUDA_CHECK(cudaMemcpyAsync(host + pair_bytes + keep_bytes, a.scores, num_pairs * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_));
  IL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::memcpy(scores, host + pair_bytes + keep_bytes, num_pairs * sizeof(float));
}

}  // namespace il::cuda
