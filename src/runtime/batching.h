// Input validation and packing of token inputs into ragged batches under a token budget.
#pragma once

#include <cstddef>
#include <vector>

#include "inferencelayer/types.h"
#include "models/model.h"
#include "plan/plan.h"

namespace il::runtime {

struct BatchRange {
  std::size_t first = 0;  // index of the first input
  std::size_t count = 0;
};

// Throws il::Error naming the input index and the problem: empty input, too long, token id
// outside the vocabulary, segment id outside the type table, type_ids of another length.
void validate_inputs(const std::vector<TokenInput>& inputs, const models::InputLimits& limits,
                     std::size_t max_len);

// Consecutive ranges whose token total stays within max_tokens (each input must fit alone).
std::vector<BatchRange> pack_batches(const std::vector<TokenInput>& inputs, std::size_t max_tokens);

// skip_prompts: fill pool_starts so pooling leaves out each input's prompt_tokens (clamped to
// its length); only when some input has any.
// Positions are each token's index in its sequence.
plan::Batch make_batch(const std::vector<TokenInput>& inputs, const BatchRange& range, bool skip_prompts = false);

}  // namespace il::runtime
