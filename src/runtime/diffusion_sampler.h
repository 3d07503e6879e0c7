// The block-diffusion sampler of transformers' DiffusionGemma generate (EntropyBoundSampler, the
// temperature schedule, StableAndConfidentStoppingCriteria, _finalize_canvas), on the host over
// one canvas's logits; docs/diffusion-gemma.md §6. The random draws go through DiffusionDraws so
// a test can replace them with a recorded sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "core/thread_pool.h"

namespace il::runtime {

// T(n) for step n of N (counting down N … 1), in transformers' arithmetic: n / N in f32, the
// difference t_max − t_min of the Python floats rounded to f32, the sum in f32.
float diffusion_temperature(int n, int N, double t_min, double t_max);

// Per row: the entropy of softmax(row) (f64 sums, the result f32) and its first maximum.
struct RowStats {
  float entropy = 0.0f;
  int32_t argmax = 0;
};
RowStats row_stats(std::span<const float> logits);

// Which positions keep their sampled token: sorted by entropy (ascending; ties by position),
// position i is accepted while the entropies before it in that order sum to at most `bound`
// (so the lowest-entropy position always is).
std::vector<std::uint8_t> accept_by_entropy(std::span<const float> entropies, float bound);

// The first index whose running sum (f64) of the probabilities of `logits` exceeds u ∈ [0, 1):
// an inverse-CDF draw (the last index with a non-zero probability when rounding leaves u above
// the total).
int32_t inverse_cdf(std::span<const float> logits, double u);

// Where the block's tokens end: the first end id's index, or none.
std::optional<std::size_t> first_end(std::span<const int32_t> block, std::span<const int32_t> end_ids);
// transformers' _finalize_canvas for a block that holds an end id: the first stays, every token
// after it becomes `pad` (none: left as they are). Returns the end id's index, or none.
std::optional<std::size_t> finalize_block(std::span<int32_t> block, std::span<const int32_t> end_ids,
                                          std::optional<int32_t> pad);

// StableAndConfidentStoppingCriteria for one sequence: a step stops the block when the argmax
// canvas equals each of the last `stability` ones (0: always stable) and the mean entropy is
// under the threshold (none: never). The history starts at −1 ids (the first step never
// matches it) and restarts with each block.
class StopRule {
 public:
  StopRule(int stability, std::size_t canvas) { restart(stability, canvas); }
  void restart(int stability, std::size_t canvas);
  bool check(std::span<const int32_t> argmax, float mean_entropy, std::optional<float> threshold);

 private:
  std::vector<std::vector<int32_t>> history_;  // oldest first
};

// The random draws of one request, in transformers' order: a canvas of uniform ids per block,
// then per step one token per position drawn from its distribution and a fresh canvas of
// uniform ids (the renoise draw).
class DiffusionDraws {
 public:
  virtual ~DiffusionDraws() = default;
  virtual void uniform_ids(std::span<int32_t> out, std::size_t vocab) = 0;
  // out[i] from the distribution softmax(logits row i) (rows of `vocab` values); the rows may be
  // spread over `pool` (the draws themselves are taken in row order).
  virtual void sample(std::span<const float> logits, std::size_t vocab, std::span<int32_t> out, ThreadPool& pool) = 0;
};

// Our own draws, reproducible from the request's seed: a 64-bit Mersenne Twister; ids are the
// high bits scaled to the vocabulary, samples the inverse CDF of a 53-bit uniform.
class SeededDraws final : public DiffusionDraws {
 public:
  explicit SeededDraws(std::uint64_t seed) : rng_(seed) {}
  void uniform_ids(std::span<int32_t> out, std::size_t vocab) override;
  void sample(std::span<const float> logits, std::size_t vocab, std::span<int32_t> out, ThreadPool& pool) override;

 private:
  double uniform();
  std::mt19937_64 rng_;
};

}  // namespace il::runtime
