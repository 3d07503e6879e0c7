// Sentence-embedding heads over the final hidden states: one program per pooling mode
// ("pool_mean", "pool_cls", "pool_last"), each followed by the folder's Dense module if it has
// one, writing output "embedding"; "pool_selected_first" / "pool_selected_last", the pooling of
// the selected rows "encode_first" / "encode_last" leave (models/layers.h); and program
// "normalize" (row L2 of "embedding").
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

// Returns the embedding width (hidden, or the Dense module's out_features). `selected` (-1: none)
// holds each sequence's first or last row (`which`) as the encoder's selected program leaves it.
std::size_t build_embedding_head(plan::Plan& plan, plan::BufferId hidden, plan::BufferId selected,
                                 plan::QueryRows which, std::size_t hidden_size,
                                 const std::optional<DenseWeights>& dense);

std::string pooling_program(PoolingMode mode);
// "encode_first" / "encode_last"; a head over selected rows appends the same suffix.
std::string selected_suffix(plan::QueryRows which);

// The encoder and head programs that produce `mode`'s pooling ("embedding") or, for a scoring
// model, its scores: the selected-row programs where the plan has them and the head reads one
// row per sequence (CLS or last-token pooling, the score heads), unless IL_FIRST_TOKEN=0.
struct Programs {
  std::string encoder, head;
};
Programs embedding_programs(const plan::Plan& plan, PoolingMode mode);
Programs scoring_programs(const plan::Plan& plan);

}  // namespace il::models
