// What each step reads and writes, as data: the views, and the weights with the role each plays.
// Executors place weights from this list (which to pack as GEMM panels, which element type to
// upload) instead of knowing each step's fields, and plan checks read it.
#pragma once

#include <vector>

#include "plan/plan.h"

namespace il::plan {

enum class WeightRole {
  kGemm,       // [out, in] matrix of a GEMM; stored like the activations it multiplies
  kGemmBias,   // [out], added in the GEMM epilogue; stored like the GEMM's activations
  kTable,      // embedding table rows copied into activations; stored like them
  kNorm,       // norm scale / shift: f32 in every precision mode
  kGemmTransposed,  // [in, out] matrix of a GEMM (GemmStep::transpose_w); stored like kGemm
  kExperts,    // [experts, out, in]: one [out, in] GEMM matrix per expert; stored like kGemm
  kOperand,    // a matrix a device kernel multiplies itself: stored like the activations it meets, never packed
};

struct WeightUse {
  WeightId id = kNoWeight;
  WeightRole role = WeightRole::kGemm;
  View meets;  // the activations the weight is combined with (its storage type follows theirs)
};

struct Operands {
  std::vector<View> reads, writes;
  std::vector<WeightUse> weights;  // kNoWeight entries left out
};

Operands operands(const StepOp& op);

}  // namespace il::plan
