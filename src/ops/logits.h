// Row-wise ops over logits: a softmax that turns a row into a distribution (DiffusionGemma's
// self-conditioning reads the previous step's processed logits this way), the final logit
// softcap c · tanh(x / c) of Gemma models, and greedy decoding's pick (each row's first
// maximum), so that only a token id per sequence leaves the device.
#pragma once

#include <cstddef>
#include <cstdint>

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

// out[r] = the index of x[r]'s first largest value, as the host sampler's scan finds it: an
// index wins only over the values before it by being strictly larger, so ties go to the lowest
// index, a NaN never wins, a row whose first value is NaN gives 0, and a row of −inf gives 0.
// x any element type (read exactly into f32).
struct RowArgmaxArgs {
  ConstTensorView x;
  std::size_t rows = 0, cols = 0;
  int32_t* out = nullptr;  // [rows]
};

void check_softmax_rows(const SoftmaxRowsArgs& a, const char* what = "softmax");
void check_softcap(const SoftcapArgs& a, const char* what = "softcap");
void check_row_argmax(const RowArgmaxArgs& a, const char* what = "row argmax");
// f32 operands only.
void softmax_rows_cpu(const SoftmaxRowsArgs& a, ThreadPool& pool);
void softcap_cpu(const SoftcapArgs& a, ThreadPool& pool);
void row_argmax_cpu(const RowArgmaxArgs& a, ThreadPool& pool);

}  // namespace il::ops
