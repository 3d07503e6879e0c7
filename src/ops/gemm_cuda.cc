#include "ops/gemm_cuda.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "core/env.h"
#include "ops/check_cuda.h"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

// The largest power of two dividing the address, capped at 256 (cuBLASLt's default assumption,
// which a column window of a buffer does not meet: an algorithm needing more is excluded), and
// at least the element size.
unsigned alignment_of(const void* p, DType t) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  const auto floor = static_cast<unsigned>(dtype_size(t));
  unsigned a = 256;
  while (a > floor && v % a != 0) a /= 2;
  return a;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void* value,
              std::size_t size) {
  IL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, value, size));
}

cublasLtEpilogue_t epilogue_for(bool bias, Activation act) {
  const bool relu = act == Activation::kRelu;
  if (bias) return relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

CublasLtGemm::CublasLtGemm(std::size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  skinny_ = env::on_unless_zero("IL_GEMM_SKINNY");
  // Opt-in: timed alone the wgmma kernel can win a shape (up-projection + erf-GELU: 0.318 against
  // 0.332 ms) and the tuner then keeps it, but in the model's sequence it ran slower than
  // cuBLASLt plus the pass (kernel trace, bge-base 128×256 f16: 0.375 against 0.357 ms a call,
  // 0.21 ms a forward; docs/perf-history.md). IL_GEMM_WGMMA=1 lets it compete.
  wgmma_ = env::equals("IL_GEMM_WGMMA", "1");
  tune_ = env::on_unless_zero("IL_GEMM_TUNE");
  IL_CUBLAS_CHECK(cublasLtCreate(&handle_));
  if (workspace_bytes_ > 0) IL_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

cublasStatus_t CublasLtGemm::matmul(const GemmCudaArgs& a, const Shape& s, const cublasLtMatmulAlgo_t& algo,
                                     cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(handle_, s.desc, &alpha, a.w.data, s.w, a.x.data, s.x, &beta, a.y.data, s.y, a.y.data, s.y, &algo, workspace_,
                        workspace_bytes_, stream);
}

namespace {

// The tuned choice per (device, shape), shared by every CublasLtGemm of the process: two
// executors of one model pick the same algorithm, so they compute the same bits (the graph
// replay test compares an executor with graphs against one without).
std::mutex& tuned_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<int, CublasLtGemm::Key>, std::size_t>& tuned_choices() {
  static std::map<std::pair<int, CublasLtGemm::Key>, std::size_t> choices;
  return choices;
}

}  // namespace

// Times every candidate (a warm-up run, then kTuneRuns) on the caller's operands and keeps the
// fastest: the cuBLASLt algorithms the heuristic offered, each followed by the bias /
// activation pass its epilogue leaves undone, and where it applies the wgmma kernel at each
// tile width (index candidates.size() + i for kWgmmaTiles[i]). It runs once per shape, on its
// first eager run: the stream is synchronised then (never in a graph capture: a capturing stream
// keeps the heuristic's choice for this launch and tunes on a later eager one). Every run
// rewrites the whole output from x (beta 0), and the caller then runs the chosen candidate.
void CublasLtGemm::tune(const Key& key, const GemmCudaArgs& a, Shape& s, cudaStream_t stream) {
  const std::size_t wgmma_count = wgmma_ && wgmma_gemm_applies(a) ? std::size(kWgmmaTiles) : 0;
  const std::size_t total = s.candidates.size() + wgmma_count;
  const auto choose = [&](std::size_t i) {
    s.wgmma_tile = i < s.candidates.size() ? 0 : kWgmmaTiles[i - s.candidates.size()];
    if (i < s.candidates.size()) s.algo = s.candidates[i];
    s.tuned = true;
  };
  if (total <= 1 || !tune_) {  // IL_GEMM_TUNE=0: the heuristic's first algorithm, untimed
    choose(0);
    return;
  }
  int device = 0;
  IL_CUDA_CHECK(cudaGetDevice(&device));
  {
    std::lock_guard<std::mutex> lock(tuned_mutex());
    if (auto it = tuned_choices().find({device, key}); it != tuned_choices().end() && it->second < total) {
      choose(it->second);
      return;
    }
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  IL_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return;
  if (!tune_start_) {
    IL_CUDA_CHECK(cudaEventCreate(&tune_start_));
    IL_CUDA_CHECK(cudaEventCreate(&tune_end_));
  }
  const BiasActivationArgs rest{a.y, s.fused_bias ? ConstTensorView{} : a.bias, a.m, a.n,
                                s.fused_act ? Activation::kNone : a.act};
  // One run of candidate i; false where a cuBLASLt algorithm cannot run this call.
  const auto run_candidate = [&](std::size_t i) {
    if (i >= s.candidates.size()) {
      wgmma_gemm_cuda(a, kWgmmaTiles[i - s.candidates.size()], stream);
      return true;
    }
    if (matmul(a, s, s.candidates[i], stream) != CUBLAS_STATUS_SUCCESS) return false;
    bias_activation_cuda(rest, stream);
    return true;
  };
  constexpr int kTuneRuns = 3;
  std::size_t best = 0;
  float best_ms = INFINITY;
  for (std::size_t i = 0; i < total; ++i) {
    if (!run_candidate(i)) continue;  // not runnable here
    IL_CUDA_CHECK(cudaEventRecord(tune_start_, stream));
    for (int r = 0; r < kTuneRuns; ++r) run_candidate(i);
    IL_CUDA_CHECK(cudaEventRecord(tune_end_, stream));
    IL_CUDA_CHECK(cudaEventSynchronize(tune_end_));
    float ms = 0.0f;
    IL_CUDA_CHECK(cudaEventElapsedTime(&ms, tune_start_, tune_end_));
    if (ms < best_ms) {
      best_ms = ms;
      best = i;
    }
  }
  choose(best);
  std::lock_guard<std::mutex> lock(tuned_mutex());
  tuned_choices().emplace(std::make_pair(device, key), best);
}

CublasLtGemm::~CublasLtGemm() {
  if (tune_start_) cudaEventDestroy(tune_start_);
  if (tune_end_) cudaEventDestroy(tune_end_);
  for (auto& [key, s] : shapes_) destroy(s);
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

void CublasLtGemm::destroy(Shape& s) {
  if (s.desc) cublasLtMatmulDescDestroy(s.desc);
  if (s.w) cublasLtMatrixLayoutDestroy(s.w);
  if (s.x) cublasLtMatrixLayoutDestroy(s.x);
  if (s.y) cublasLtMatrixLayoutDestroy(s.y);
  s = Shape{};
}

// Row-major y = x·Wᵀ is column-major yᵀ = W'ᵀ·xᵀ with W' = W read as a column-major [k, n]
// matrix: A = W (k × n, ld k, transposed), B = x (k × m, ld ldx), D = y (n × m, ld ldy). A
// transposed weight (row-major [k, n], y = x·W) is the column-major [n, k] matrix A itself
// (n × k, ld n, not transposed).
bool CublasLtGemm::try_build(const GemmCudaArgs& a, cublasLtEpilogue_t epilogue, Shape& s) {
  IL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&s.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  set_attr(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, a.transpose_w ? &no_trans : &trans, sizeof trans);
  set_attr(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans);
  set_attr(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (a.bias.data) set_attr(s.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias.data, sizeof a.bias.data);
  const auto u64 = [](std::size_t v) { return static_cast<uint64_t>(v); };
  const auto i64 = [](std::size_t v) { return static_cast<int64_t>(v); };
  const cudaDataType_t t = cuda_type(a.type());
  if (a.transpose_w) IL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.w, t, u64(a.n), u64(a.k), i64(a.n)));
  else IL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.w, t, u64(a.k), u64(a.n), i64(a.k)));
  IL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.x, t, u64(a.k), u64(a.m), i64(a.x.ld)));
  IL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.y, t, u64(a.n), u64(a.m), i64(a.y.ld)));

  cublasLtMatmulPreference_t pref = nullptr;
  IL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_bytes_;
  const uint32_t align_w = alignment_of(a.w.data, a.type()), align_x = alignment_of(a.x.data, a.type()),
                 align_y = alignment_of(a.y.data, a.type());
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  int found = 0;
  const cublasStatus_t st = [&] {
    cublasStatus_t r = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_w, sizeof align_w);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_x, sizeof align_x);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_y, sizeof align_y);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_y, sizeof align_y);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = cublasLtMatmulAlgoGetHeuristic(handle_, s.desc, s.w, s.x, s.y, s.y, pref, kCandidates, results, &found);
    return r;
  }();
  cublasLtMatmulPreferenceDestroy(pref);
  // NOT_SUPPORTED means no algorithm for this combination: the caller tries a plainer epilogue.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) return false;
  IL_CUBLAS_CHECK(st);
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) s.candidates.push_back(results[i].algo);
  if (s.candidates.empty()) return false;
  s.algo = s.candidates.front();  // the heuristic's first choice, until tune() has timed them
  s.fused_bias = epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  s.fused_act = epilogue == CUBLASLT_EPILOGUE_RELU || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  return true;
}

CublasLtGemm::Key CublasLtGemm::key_for(const GemmCudaArgs& a) {
  return Key{a.m,
             a.n,
             a.k,
             a.x.ld,
             a.y.ld,
             static_cast<int>(epilogue_for(a.bias.data != nullptr, a.act)),
             static_cast<int>(a.act),
             alignment_of(a.x.data, a.type()),
             alignment_of(a.w.data, a.type()),
             alignment_of(a.y.data, a.type()),
             static_cast<int>(a.type()),
             a.transpose_w};
}

CublasLtGemm::Shape& CublasLtGemm::shape_for(const Key& key, const GemmCudaArgs& a) {
  const cublasLtEpilogue_t fused = epilogue_for(a.bias.data != nullptr, a.act);
  if (auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  Shape s;
  bool ok = false;
  try {
    ok = try_build(a, fused, s);
    if (!ok && fused != CUBLASLT_EPILOGUE_DEFAULT) {
      destroy(s);
      ok = try_build(a, CUBLASLT_EPILOGUE_DEFAULT, s);
    }
  } catch (...) {
    destroy(s);
    throw;
  }
  if (!ok) {
    destroy(s);
    s.fallback = true;
  }
  return shapes_.emplace(key, s).first->second;
}

GemmKernel CublasLtGemm::kernel_for(const GemmCudaArgs& a) {
  if (skinny_ && gemm_kernel_supports(GemmKernel::kSkinny, a)) return GemmKernel::kSkinny;
  return shape_kernel(a, shape_for(key_for(a), a));
}

GemmKernel CublasLtGemm::shape_kernel(const GemmCudaArgs& a, const Shape& s) {
  if (s.fallback) return GemmKernel::kFallback;
  // (The key does not hold the bias alignment: a call the wgmma kernel cannot take runs the
  // heuristic's cuBLASLt algorithm.)
  if (s.wgmma_tile > 0 && gemm_kernel_supports(GemmKernel::kWgmma, a)) return GemmKernel::kWgmma;
  return GemmKernel::kCublasLt;
}

// kernel_for's choice, with the shape looked up once.
void CublasLtGemm::run(const GemmCudaArgs& a, cudaStream_t stream) {
  check_gemm_cuda(a);
  if (a.m == 0) return;
  if (skinny_ && gemm_kernel_supports(GemmKernel::kSkinny, a)) return skinny_gemm_cuda(a, stream);
  const Key key = key_for(a);
  Shape& s = shape_for(key, a);
  if (s.fallback) return gemm_fallback_cuda(a, stream);
  // The bias pointer changes between steps of the same shape; the descriptor is read at enqueue.
  if (s.fused_bias) set_attr(s.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias.data, sizeof a.bias.data);
  if (!s.tuned) tune(key, a, s, stream);  // may pick the wgmma kernel
  if (shape_kernel(a, s) == GemmKernel::kWgmma) return wgmma_gemm_cuda(a, s.wgmma_tile, stream);
  IL_CUBLAS_CHECK(matmul(a, s, s.algo, stream));
  bias_activation_cuda({a.y, s.fused_bias ? ConstTensorView{} : a.bias, a.m, a.n,
                        s.fused_act ? Activation::kNone : a.act},
                       stream);
}

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::kSkinny: return "skinny";
    case GemmKernel::kCublasLt: return "cublaslt";
    case GemmKernel::kWgmma: return "wgmma";
    case GemmKernel::kFallback: return "fallback";
  }
  return "?";
}

void check_gemm_cuda(const GemmCudaArgs& a, const char* what) {
  check(a.x.data && a.w.data && a.y.data, what, ": null operand");
  const DType t = a.type();
  check(a.x.dtype == t && a.w.dtype == t && (!a.bias.data || a.bias.dtype == t), what, ": operands differ in ",
        "element type (x ", dtype_name(a.x.dtype), ", w ", dtype_name(a.w.dtype), ", y ", dtype_name(t), ")");
  check(a.n > 0 && a.k > 0, what, ": empty weight");
  const std::size_t w_row = a.transpose_w ? a.n : a.k;  // [k, n] transposed, else [n, k]
  check(a.w.ld == w_row, what, ": the weight's rows must be dense (ld ", a.w.ld, ", ", a.transpose_w ? "n " : "k ",
        w_row, ")");
  check(a.x.ld >= a.k && a.y.ld >= a.n, what, ": row stride smaller than the row (ldx ", a.x.ld, ", k ", a.k,
        ", ldy ", a.y.ld, ", n ", a.n, ")");
}

bool gemm_kernel_supports(GemmKernel k, const GemmCudaArgs& a) {
  switch (k) {
    case GemmKernel::kSkinny: return skinny_gemm_applies(a);
    case GemmKernel::kWgmma: return wgmma_gemm_applies(a);
    case GemmKernel::kCublasLt:
    case GemmKernel::kFallback: return true;
  }
  return false;
}

}  // namespace il::ops
