// Sentence-embedding heads over the final hidden states: one program per pooling mode
// ("pool_mean", "pool_cls", "pool_last"), each followed by the folder's Dense module if it has
// one, writing output "embedding"; "pool_first", CLS pooling of "encode_first"'s first-token
// rows (models/bert.h); and program "normalize" (row L2 of "embedding").
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
std::size_t build_embedding_head(plan::Plan& plan, plan::BufferId hidden, plan::BufferId first,
                                 std::size_t hidden_size, const std::optional<DenseWeights>& dense);

std::string pooling_program(PoolingMode mode);

// The encoder and head programs that produce `mode`'s pooling ("embedding") or, for a
// cross-encoder, its scores: the first-token programs where the plan has them and the head
// only reads first tokens (CLS pooling, the cross-encoder head), unless IL_FIRST_TOKEN=0.
struct Programs {
  std::string encoder, head;
};
Programs embedding_programs(const plan::Plan& plan, PoolingMode mode);
Programs scoring_programs(const plan::Plan& plan);

}  // namespace il::models
