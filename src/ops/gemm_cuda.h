// The CUDA GEMM: y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n]) with f32 accumulation. x, W, bias
// and y share one element type: f32 (no TF32: the parity class), or f16 / bf16 (tensor cores,
// one rounding of the biased sum). x and y may be column windows of wider buffers (ld ≥ k, ≥ n);
// W keeps the Hugging Face [out, in] layout (ld k), read transposed; with transpose_w it is an
// [in, out] matrix (ld n) read as it is (y = x · W: a tied embedding table [vocab, hidden]
// multiplied by a distribution over the vocabulary). Transposed weights take cuBLASLt (or the
// fallback) only: the skinny and wgmma kernels read W's rows along k.
//
// Its kernels, and the one place that picks among them (CublasLtGemm::kernel_for, which run()
// follows):
//
//   skinny     at most 16 rows, x's rows and W in aligned 16-byte vectors (gemm_skinny_cuda.cu;
//              bias and every activation fused; IL_GEMM_SKINNY=0 off)
//   cublaslt   cuBLASLt, the algorithm timed fastest per shape among its heuristic's candidates,
//              bias and ReLU in its epilogue, other activations in a pass (activation_cuda.cu)
//   wgmma      Hopper, f16 / bf16, TMA-aligned, none / GELU: competes with cuBLASLt in that
//              timing when IL_GEMM_WGMMA=1 (gemm_wgmma_cuda.cu)
//   fallback   a plain tiled kernel and the pass, where cuBLASLt offers no algorithm for the shape
//              (alignments, strides) (gemm_fallback_cuda.cu)
//
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
#include "ops/tensor_view.h"

namespace il::ops {

struct GemmCudaArgs {
  ConstTensorView x;     // [m, k]
  ConstTensorView w;     // [n, k] row-major: ld k ([k, n], ld n, with transpose_w)
  ConstTensorView bias;  // [n] or absent
  TensorView y;          // [m, n]
  std::size_t m = 0, n = 0, k = 0;
  Activation act = Activation::kNone;
  bool transpose_w = false;  // w is [k, n] (y = x · w)
  // The element type of every operand (check_gemm_cuda holds them to one).
  DType type() const { return y.dtype; }
};

// Operands present and of one element type, W dense ([n, k] with ld k; [k, n] with ld n when
// transposed), strides that fit.
void check_gemm_cuda(const GemmCudaArgs& a, const char* what = "gemm (CUDA)");

enum class GemmKernel { kSkinny, kCublasLt, kWgmma, kFallback };
const char* gemm_kernel_name(GemmKernel k);
// What each kernel's launcher accepts, from the arguments alone (whether cuBLASLt has an
// algorithm for a shape only its heuristic says: CublasLtGemm::kernel_for asks it). The
// fallback takes every valid call.
bool gemm_kernel_supports(GemmKernel k, const GemmCudaArgs& a);
// The fallback alone: the tiled kernel, then bias and activation in the epilogue pass.
void gemm_fallback_cuda(const GemmCudaArgs& a, cudaStream_t stream);

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

  // Enqueues the GEMM on the kernel kernel_for(a) names.
  void run(const GemmCudaArgs& a, cudaStream_t stream);
  // The kernel run() takes for `a`: skinny where it is on and supports `a`; else the shape's
  // choice (cuBLASLt, or wgmma where the timing picked it and it supports `a`; cuBLASLt until
  // the shape's first eager run has timed them), or the fallback where cuBLASLt has no
  // algorithm. Builds the shape's descriptors on first sight (no launch, no synchronisation).
  GemmKernel kernel_for(const GemmCudaArgs& a);
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // Everything the algorithm choice depends on: sizes, strides, epilogue, activation, pointer
  // alignments, element type.
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, int, int,
                         unsigned, unsigned, unsigned, int, bool>;

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
  static GemmKernel shape_kernel(const GemmCudaArgs& a, const Shape& s);  // past the skinny check
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
