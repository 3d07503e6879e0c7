// Row-wise ops over logits: a softmax that turns a row into a distribution (DiffusionGemma's
// self-conditioning reads the previous step's processed logits this way) and the final logit
// softcap c · tanh(x / c) of Gemma models.
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

// out[r] = softmax(x[r]) · scale, in f32 (max-subtracted); a row whose values are all −inf
// (no distribution: a canvas without self-conditioning) gives a row of zeros. x is f32; out any
// element type.
struct SoftmaxRowsArgs {
  ConstTensorView x;
  TensorView out;
  std::size_t rows = 0, cols = 0;
  float scale = 1.0f;
};

// out[r, j] = cap · tanh(x[r, j] / cap), computed in f32; out is f32, x any element type. out may
// be x when both are f32.
struct SoftcapArgs {
  ConstTensorView x;
  TensorView out;
  std::size_t rows = 0, cols = 0;
  float cap = 30.0f;
};

void check_softmax_rows(const SoftmaxRowsArgs& a, const char* what = "softmax");
void check_softcap(const SoftcapArgs& a, const char* what = "softcap");
// f32 operands only.
void softmax_rows_cpu(const SoftmaxRowsArgs& a, ThreadPool& pool);
void softcap_cpu(const SoftcapArgs& a, ThreadPool& pool);

}  // namespace il::ops
