// The CUDA GEMM: y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n]) through cuBLASLt with f32 compute.
// `type` is the element type of x, W, bias and y: f32 (no TF32: the parity class), or f16 / bf16
// (tensor cores, f32 accumulation, one rounding of the biased sum). x and y may be column windows of wider
// buffers (ldx ≥ k, ldy ≥ n); W keeps the Hugging Face [out, in] layout, read transposed.
// Bias and ReLU run in cuBLASLt's epilogue; the other activations in ops/activation_cuda.cu.
// Where cuBLASLt offers no algorithm for a shape (alignment, strides), a plain tiled kernel runs.
// Only CUDA code includes this header.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "inferencelayer/types.h"

namespace il::ops {

struct GemmCudaArgs {
  const void* x = nullptr;
  std::size_t ldx = 0;
  const void* w = nullptr;  // [n, k] row-major
  std::size_t n = 0, k = 0;
  const void* bias = nullptr;  // [n] or null
  void* y = nullptr;
  std::size_t ldy = 0;
  std::size_t m = 0;
  Activation act = Activation::kNone;
  DType type = DType::kF32;  // of x, w, bias and y (strides in elements)
};

// The GEMM for at most kSkinnyMaxRows rows (ops/gemm_skinny_cuda.cu): bias and every activation
// fused, weight bytes read once. It applies when x's rows and W split into aligned 16-byte
// vectors; CublasLtGemm::run takes it for such shapes unless IL_GEMM_SKINNY=0.
inline constexpr std::size_t kSkinnyMaxRows = 16;
bool skinny_gemm_applies(const GemmCudaArgs& a);
void skinny_gemm_cuda(const GemmCudaArgs& a, cudaStream_t stream);

// The Hopper GEMM (ops/gemm_wgmma_cuda.cu): f16 / bf16 with the bias and the activation (none,
// erf- or tanh-GELU) applied before the one store; compute capability 9.0 devices only, where
// it applies when x, W and y are 16-byte aligned with row pitches of a multiple of 8 elements
// (the TMA unit moves all three), n is even and the bias 4-byte aligned. tile_n (128 or 192) is
// the output tile's width; cluster 2 pairs blocks that share W's tiles (each loads half into
// both), 1 runs them alone, 0 takes the default (2, or IL_GEMM_WGMMA_CLUSTER).
bool wgmma_gemm_applies(const GemmCudaArgs& a);
void wgmma_gemm_cuda(const GemmCudaArgs& a, int tile_n, cudaStream_t stream, int cluster = 0);
// The block count wgmma_gemm_cuda would launch for `a`: persistent, never more than the device
// holds at once.
unsigned wgmma_gemm_blocks(const GemmCudaArgs& a, int tile_n, int cluster = 0);

// One per executor (one device, one stream at a time). Holds the cuBLASLt handle, a workspace
// allocated once, and per shape the descriptors and the algorithm picked: the heuristic offers up
// to kCandidates, and on Hopper with IL_GEMM_WGMMA=1 the wgmma kernel above competes with its two
// tile widths; the first run of the shape times them all, each with the bias / activation pass
// it still needs, and keeps the fastest (see tune()), so a replayed shape costs one launch (or
// two where a cuBLASLt algorithm won and the activation is not in its epilogue). The wgmma
// kernel is opt-in because it won alone but lost in the model (see the constructor).
class CublasLtGemm {
 public:
  explicit CublasLtGemm(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void run(const GemmCudaArgs& a, cudaStream_t stream);
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // Everything the algorithm choice depends on: sizes, strides, epilogue, activation, pointer
  // alignments, element type.
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, int, int,
                         unsigned, unsigned, unsigned, int>;

 private:
  static constexpr int kCandidates = 8;
  struct Shape {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
    std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's, best predicted first
    cublasLtMatmulAlgo_t algo{};
    bool tuned = false;  // algo is the timed fastest candidate
    bool fused_bias = false;  // the epilogue adds the bias
    bool fused_act = false;   // the epilogue applies the activation
    bool fallback = false;    // cuBLASLt found no algorithm: ops::gemm_fallback_cuda runs it
    int wgmma_tile = 0;       // > 0: the tuner picked wgmma_gemm_cuda with this tile width
  };
  static constexpr int kWgmmaTiles[] = {192, 128};
  static Key key_for(const GemmCudaArgs& a);
  Shape& shape_for(const Key& key, const GemmCudaArgs& a);
  void tune(const Key& key, const GemmCudaArgs& a, Shape& s, cudaStream_t stream);
  cublasStatus_t matmul(const GemmCudaArgs& a, const Shape& s, const cublasLtMatmulAlgo_t& algo, cudaStream_t stream);
  bool try_build(const GemmCudaArgs& a, cublasLtEpilogue_t epilogue, Shape& s);
  static void destroy(Shape& s);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  bool skinny_ = true;  // few-row shapes take skinny_gemm_cuda (IL_GEMM_SKINNY=0: never)
  bool wgmma_ = false;  // the wgmma kernel competes in tune() (IL_GEMM_WGMMA=1)
  bool tune_ = true;    // time the candidates (IL_GEMM_TUNE=0: take the heuristic's first)
  std::map<Key, Shape> shapes_;
  cudaEvent_t tune_start_ = nullptr, tune_end_ = nullptr;
};

}  // namespace il::ops
