// Sentence-embedding heads over the final hidden states: one program per pooling mode
// ("pool_mean", "pool_cls", "pool_last"), each followed by the folder's Dense module if it has
// one, writing output "embedding"; and program "normalize" (row L2 of "embedding").
#pragma once

#include <optional>

#include "io/st_modules.h"
#include "models/weight_source.h"
#include "plan/plan.h"

namespace il::models {

struct DenseWeights {
  const WeightSource* src = nullptr;  // tensors linear.weight [out, in], linear.bias [out]
  io::DenseModule module;
};

// Returns the embedding width (hidden, or the Dense module's out_features).
std::size_t build_embedding_head(plan::Plan& plan, plan::BufferId hidden, std::size_t hidden_size,
                                 const std::optional<DenseWeights>& dense);

std::string pooling_program(PoolingMode mode);

}  // namespace il::models
