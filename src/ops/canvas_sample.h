// The per-row work of DiffusionGemma's sampler (transformers' EntropyBoundSampler; docs/diffusion-gemma.md
// §6), where the logits are: each canvas row's raw logits divided by the request's temperature (the
// processed logits, kept for the next forward's self-conditioning), their entropy and first argmax,
// and a token drawn from softmax(processed) by the inverse CDF of a uniform the host supplies. Only
// these few values per row go back to the host; the acceptance sort, renoising and stop rule
// (C values a canvas) stay there.
//
// Arithmetic (both backends): processed = raw / T in f32; entropy from processed with the maximum
// m subtracted, e = exp(x − m) and its sums in f64, H = log Σe − Σ e·(x − m) / Σe, rounded to f32;
// the draw from the f32 probabilities p = f32(expf(x − m) / Σ expf(x − m)) (Σ in f64), the first
// index whose running f64 sum of p exceeds u, skipping p = 0 (the last index with p > 0 when
// rounding leaves u above the total). The CPU adds each row in order; the CUDA kernel adds in
// segments, so its sums can differ in the last bits (a draw moves only when u lies within
// ~1e-15 of a boundary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

// What one row gives back.
struct RowDraw {
  float entropy = 0.0f;
  int32_t argmax = 0;  // the first maximum
  int32_t sample = 0;  // the inverse-CDF draw
};

struct CanvasSampleArgs {
  ConstTensorView logits;        // [rows, cols] f32: the raw (softcapped) logits
  TensorView processed;          // [rows, cols] f32: logits / temperature (may be logits itself)
  const float* temperature = nullptr;  // [rows], > 0
  const double* uniform = nullptr;     // [rows], in [0, 1)
  std::size_t rows = 0, cols = 0;
  RowDraw* out = nullptr;        // [rows]
};

void check_canvas_sample(const CanvasSampleArgs& a, const char* what = "canvas sample");
// Every pointer in host memory.
void canvas_sample_cpu(const CanvasSampleArgs& a, ThreadPool& pool);

// One row's parts, on the host (the CPU op and the sampler's tests use them).
RowDraw row_entropy_argmax(std::span<const float> processed);
int32_t inverse_cdf_draw(std::span<const float> processed, double u);

}  // namespace il::ops
