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
  // Whether pick() would return the first largest logit as it stands: greedy, no repetition
  // penalty, and no n-gram the anti-loop guard would ban after `history`. Then the caller may
  // take the argmax where the logits are (Executor::argmax_rows) and call pick() not at all; the
  // guard counts nothing then, as pick() would not.
  bool picks_plain_argmax(std::span<const int32_t> history) const;
  // Picks where the anti-loop guard (no_repeat_ngram) banned the token that was then the most
  // likely one: the loops it broke.
  std::size_t guarded() const { return guarded_; }

 private:
  void penalize_repeats(std::span<float> logits, std::span<const int32_t> history) const;
  void ban_repeated_ngrams(std::span<float> logits, std::span<const int32_t> history);
  // The guard's window of `history` and its last n − 1 tokens, when the guard can ban anything
  // after it (on, long enough, no whitelisted token in the tail); false otherwise.
  bool ngram_tail(std::span<const int32_t> history, std::span<const int32_t>& window,
                  std::span<const int32_t>& tail) const;
  int32_t draw(std::span<float> logits);
  bool whitelisted(int32_t t) const;

  SamplingOptions o_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;
  std::size_t guarded_ = 0;
};

// Checks the options (ranges), throwing il::Error naming the field.
void check_sampling_options(const SamplingOptions& o);

}  // namespace il::runtime
