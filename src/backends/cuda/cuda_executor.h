// The CUDA executor: the plan's buffers in device memory, its steps as launches of ops/*_cuda on
// one stream. Weights are uploaded once at construction in the precision their use needs;
// scratch is sized once for max_tokens; batches go up and results come back through pinned host
// buffers. run() enqueues only: no allocation, no synchronisation (read() synchronises).
//
// Precision: in f32 mode everything is f32 (the parity class). In f16 / bf16 mode the activation
// buffers (plan::Elem::kActivation: token and selected rows, the values between ops) are stored in
// that type and the GEMMs run on tensor cores with f32 accumulation; kF32 buffers (by default
// the sequence rows: pooled vectors, the heads' small GEMMs, scores) stay f32, so the outputs
// read back are f32 and the heads add no rounding. kI32 buffers hold 32-bit integers.
// Persistent buffers (plan::Rows::kPersistent) are zeroed once here and keep their contents
// across set_batch and run, at fixed addresses (graph replays write into them too).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/energy_meter.h"
#include "core/dtype.h"
#include "ops/gemm_cuda.h"
#include "ops/layernorm.h"
#include "ops/tensor_view.h"
#include "plan/executor.h"
#include "plan/step_profile.h"

namespace il::cuda {

class CudaExecutor final : public plan::Executor {
 public:
  // The plan must outlive the executor; its host weight copies are released after upload.
  // With IL_PROFILE=1 in the environment, per-step device time (CUDA events) is printed to
  // stderr when the executor is destroyed; CUDA graphs replay repeated batch buckets unless
  // IL_CUDA_GRAPHS=0; IL_CUDA_MEMORY=1 prints the device memory it allocated.
  CudaExecutor(plan::Plan& plan, std::size_t max_tokens, int device, DType compute = DType::kF32);
  ~CudaExecutor() override;
  // Another lane (plan::Executor::another_lane): its own stream, scratch, staging, GEMM handle
  // and graphs on the same device, the weights this executor uploaded shared, not copied.
  std::unique_ptr<plan::Executor> another_lane() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  std::size_t max_tokens() const override { return max_tokens_; }
  void set_batch(const plan::Batch& batch) override;
  void run(const std::string& program) override;
  void read(const plan::View& view, float* dst) override;
  void argmax_rows(const plan::View& view, int32_t* dst) override;
  // Host f32 rows into a persistent buffer, converted to its element type; returns once the
  // rows are on the device (never inside a run, so no graph holds it).
  void write(const plan::View& view, const float* src, std::size_t rows) override;
  void maxsim(const plan::View& tokens, const std::vector<int32_t>& pairs, const std::vector<uint8_t>& keep,
              float* scores) override;
  void fill_rows(const plan::View& view, std::size_t first, std::size_t count, float value) override;
  void copy_rows(const plan::View& view, std::size_t from, std::size_t to, std::size_t count) override;
  void sample_rows(const plan::View& logits, const plan::View& processed, const std::vector<float>& temperature,
                   const std::vector<double>& uniform, ops::RowDraw* out) override;
  std::string backend_name() const override { return "cuda:" + std::to_string(device_); }
  std::string compute_dtype() const override;
  std::size_t captured_graphs() const override { return captured_graphs_.load(std::memory_order_relaxed); }
  std::optional<double> energy_joules() override;  // NVML, loaded on first call

  void set_profiling(bool on) { profiling_ = on; }
  std::string profile_report() const;
  std::size_t device_bytes() const;  // weights, scratch, batch ids and the GEMM workspace

 private:
  // The device copy of each weight per element type its steps need (null where none does), in
  // one allocation; made by the first lane, shared by the others.
  struct DeviceWeights {
    DeviceMemory arena;
    std::vector<std::array<const void*, 3>> copies;
    std::vector<std::vector<int64_t>> shapes;
  };
  CudaExecutor(const CudaExecutor& first_lane, std::shared_ptr<const DeviceWeights> weights);
  // Everything a constructor sets up; the weights uploaded from `upload` (the first lane), or
  // already shared (null).
  void allocate(const plan::Plan& plan, plan::Plan* upload);
  void release() noexcept;          // stream, events, cuBLASLt (memory frees itself)
  std::shared_ptr<const DeviceWeights> upload_weights(plan::Plan& plan);
  void upload_generation(const plan::Batch& batch, std::size_t t, std::size_t b, std::size_t tb, std::size_t bb);
  void upload_image_bytes(const plan::Batch& batch);  // into image_arena_ (set_batch)
  void upload_gather(const plan::Batch& batch, std::size_t t, std::size_t tb);  // into gather_arena_ (set_batch)
  void execute(const plan::Step& step);
  void execute_all(const std::vector<plan::Step>& steps);
  ops::GemmCudaArgs gemm_args(const std::string& name, const plan::GemmStep& op) const;
  ops::LayerNormArgs norm_args(const std::string& name, const plan::LayerNormStep& op) const;
  void attention(const std::string& name, const plan::AttentionStep& op);
  DType type_of(const plan::View& v) const;  // the element type of the view's buffer (not kI32)
  std::size_t elem_bytes(const plan::BufferDesc& b) const;
  bool selected(const plan::View& v) const;  // kSelected rows
  ops::TensorView tensor(const plan::View& v) const;  // the view's columns, typed by type_of
  std::size_t ld(const plan::View& v) const;
  std::size_t rows(const plan::View& v) const;
  // rows(x), checked against what each of `others` holds (absent views skipped).
  std::size_t row_wise(const std::string& step, const plan::View& x, std::initializer_list<plan::View> others) const;
  // The device copy of a weight in element type t (absent for kNoWeight); norm weights: f32.
  ops::ConstTensorView weight(plan::WeightId id, DType t) const;
  const float* norm_weight(plan::WeightId id) const;
  // The view's columns of an Elem::kI32 buffer (router expert ids).
  int32_t* ints(const std::string& step, const plan::View& v) const;
  void record_profile(const std::string& program);
  void run_graph(const std::string& program, const std::vector<plan::Step>& steps);

  const plan::Plan& plan_;
  std::size_t max_tokens_;
  int device_;
  DType compute_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t upload_done_ = nullptr;  // the pinned batch staging is free again
  std::unique_ptr<ops::CublasLtGemm> gemm_;

  std::shared_ptr<const DeviceWeights> weights_;
  bool first_lane_ = true;  // uploaded the weights (device_bytes counts them)
  DeviceMemory buffer_arena_, batch_arena_;
  std::vector<std::byte*> buffers_;  // device pointer per buffer id
  int32_t* d_tokens_ = nullptr;
  int32_t* d_types_ = nullptr;
  int32_t* d_starts_ = nullptr;
  int32_t* d_pool_starts_ = nullptr;  // null when the batch pools every token
  int32_t* d_key_limits_ = nullptr;   // null when every token is a key (plan::Batch::key_limits)
  int32_t* d_causal_prefix_ = nullptr;  // null without plan::Batch::causal_prefix (one per launched sequence)
  // The batch's sequence offsets on the host (real sequences only): SAM attention's host checks
  // (every view a square with a table of its side).
  std::vector<int32_t> host_starts_;
  // Row gathers (plan::GatherRowsStep): Batch::gather per launched token row, taps of them (at most
  // kMaxGatherTaps; padding rows −1: zeros), at a fixed device address; allocated only where a
  // step gathers. gather_srcs_: each such step's source, whose rows every index must stay inside.
  static constexpr std::size_t kMaxGatherTaps = 9;
  DeviceMemory gather_arena_;
  PinnedMemory gather_staging_;
  int32_t* d_gather_ = nullptr;
  std::size_t gather_taps_ = 0;  // the current batch's (0: it has no gather indices)
  int64_t max_gather_index_ = -1;  // the current batch's largest index (−1: none)
  std::vector<plan::View> gather_srcs_;
  int32_t* d_positions_ = nullptr;    // null unless a step reads positions (needs_positions_)
  bool needs_positions_ = false;
  // Batch::rope_positions: rope_axes_ axes of num_tokens_ (launched) rows each, padding rows 0;
  // null and 0 when the batch has none.
  int32_t* d_rope_positions_ = nullptr;
  std::size_t rope_axes_ = 0;
  // Image models (plan::PatchEmbedStep): each batch's f32 patch rows, max_tokens rows of
  // patch_dim_, padding rows zeroed (null and 0 without such a step).
  DeviceMemory patch_arena_;
  std::size_t patch_dim_ = 0;
  // Or, for compact images (plan::Batch::image_bytes), the batch's byte value table (the first
  // kImageTableBytes) then its image bytes (at most max_tokens × patch_dim_), on the device and in
  // pinned staging of the same layout; the patch embedding cuts the rows from them. The image
  // geometry is the first such batch's (one model, one geometry: a graph holds it).
  static constexpr std::size_t kMaxImageChannels = 4;
  static constexpr std::size_t kImageTableBytes = kMaxImageChannels * 256 * sizeof(float);
  DeviceMemory image_arena_;
  PinnedMemory image_staging_;
  bool byte_patches_ = false;  // the current batch's patch rows come as image bytes
  std::size_t image_rows_ = 0, image_cols_ = 0, image_channels_ = 0, image_patch_ = 0;
  PinnedMemory batch_staging_, read_staging_;
  // Generation (KV cache and row-injection steps): per batch the cache rows, cache lengths and
  // injected rows of the launched tokens (padding: -1, 0, -1), each sequence's page offsets and
  // the pages; fixed addresses, so captured graphs replay with new contents. gen_pages_cap_: the
  // most pages a batch may list (a cache's rows).
  bool generation_ = false;
  DeviceMemory gen_arena_;
  // Cached attention's split workspace (ops::cached_attention_splits): room for 8,192
  // (token, head, split) partial results of the widest head.
  DeviceMemory attn_workspace_;
  std::size_t attn_workspace_floats_ = 0;
  PinnedMemory gen_staging_;
  std::size_t gen_pages_cap_ = 0;
  std::size_t gen_cache_rows_ = SIZE_MAX, gen_inject_rows_ = SIZE_MAX;  // rows a batch may address
  int32_t* d_cache_rows_ = nullptr;
  int32_t* d_cache_lengths_ = nullptr;
  int32_t* d_inject_rows_ = nullptr;
  int32_t* d_page_starts_ = nullptr;
  int32_t* d_pages_ = nullptr;
  // Per launched token the entry a sliding window counts back from (plan::Batch::window_anchors,
  // or cache length − 1 where the batch gives none; padding 0): always present, so a captured
  // graph does not depend on whether a batch had them.
  int32_t* d_window_anchors_ = nullptr;
  std::size_t page_size_ = 0;
  int64_t max_cache_row_ = -1, max_page_ = -1, max_inject_row_ = -1;  // the batch's, for the row checks
  // Mixture-of-experts scratch (ops::moe_workspace_bytes for max_tokens, the largest MoeStep),
  // allocated once; empty without such a step.
  DeviceMemory moe_workspace_;
  // DeBERTa's relative tables for the table form of the disentangled attention (absent with
  // IL_DISENTANGLED_TC=0): ops::disentangled_table_cap_floats for max_tokens rows.
  DeviceMemory disentangled_tables_;
  DeviceMemory write_staging_;  // write(): the rows in f32, then converted; grown to the largest
  // maxsim(): pairs, keep bytes and scores on the device, and their pinned staging; grown to the
  // largest call.
  DeviceMemory maxsim_arena_;
  PinnedMemory maxsim_staging_;
  // sample_rows(): per row the temperature, the uniform and the result, on the device and in
  // pinned staging of the same layout; grown to the largest call.
  DeviceMemory sample_arena_;
  PinnedMemory sample_staging_;
  // argmax_rows: the ids on the device and their pinned copy, grown to the largest batch.
  DeviceMemory argmax_arena_;
  PinnedMemory argmax_staging_;

  // The launched shape is the batch rounded up to buckets (backends/cuda/batch_buckets.h);
  // reads return the real rows.
  std::size_t num_tokens_ = 0, num_seqs_ = 0, max_seq_len_ = 0;  // bucketed
  std::size_t real_tokens_ = 0, real_seqs_ = 0;
  bool has_types_ = false;

  // Per (program, bucketed shape): eager runs so far, then either a CUDA graph or "stays eager"
  // (see run_graph). Profiling runs stay eager so steps can be timed. IL_CUDA_GRAPHS=0: always
  // eager; =always: capture every shape on its second run.
  // (program, tokens, sequences, longest sequence, has type ids, has pool starts, has key limits,
  // rope position axes, KV cache page size: a kernel argument of cached attention, patch rows as
  // image bytes, has causal prefixes, gather taps). Programs with a SAM attention step always run
  // eagerly (its host checks read each batch's views).
  using GraphKey = std::tuple<std::string, std::size_t, std::size_t, std::size_t, bool, bool, bool, std::size_t,
                              std::size_t, bool, bool, std::size_t>;
  struct ShapeRecord {
    int eager_runs = 0;
    bool eager_only = false;  // device-bound: a graph would not pay
    cudaGraphExec_t exec = nullptr;
  };
  static constexpr std::size_t kMaxGraphs = 256;    // captured graphs
  static constexpr std::size_t kMaxShapes = 4096;   // shapes remembered; past it, eager
  bool graphs_enabled_ = true, graphs_always_ = false;
  std::map<GraphKey, ShapeRecord> graphs_;
  // Read by other threads (the server's metrics, summed over lanes).
  std::atomic<std::size_t> captured_graphs_{0};
  cudaEvent_t shape_start_ = nullptr, shape_end_ = nullptr;  // times a shape's second eager run

  std::unique_ptr<EnergyMeter> energy_meter_;  // made by the first energy_joules()

  bool profiling_ = false;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;  // profiling only, one pair per step
  plan::StepProfile profile_;
  std::set<std::string> profiled_;  // programs whose first (uncounted) run is done
  std::size_t host_bound_runs_ = 0;  // profiled runs whose enqueue outlasted the stream hold
};

}  // namespace il::cuda
