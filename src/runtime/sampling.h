// Picking a sequence's next token from its logits (SamplingOptions), on the host: the logits
// processors transformers' generate applies, in its order, then greedy or a seeded draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "inferencelayer/generation.h"

namespace il::runtime {

class TokenSampler {
 public:
  explicit TokenSampler(const SamplingOptions& options);

  // The next token after `history` (the prompt and the tokens generated so far). `logits` is
  // modified in place (penalties, bans, temperature).
  int32_t pick(std::span<float> logits, std::span<const int32_t> history);
  // Picks where the anti-loop guard (no_repeat_ngram) banned the token that was then the most
  // likely one: the loops it broke.
  std::size_t guarded() const { return guarded_; }

 private:
  void penalize_repeats(std::span<float> logits, std::span<const int32_t> history) const;
  void ban_repeated_ngrams(std::span<float> logits, std::span<const int32_t> history);
  int32_t draw(std::span<float> logits);

  SamplingOptions o_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;
  std::size_t guarded_ = 0;
};

// Checks the options (ranges), throwing il::Error naming the field.
void check_sampling_options(const SamplingOptions& o);

}  // namespace il::runtime
