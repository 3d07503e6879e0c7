// The block-diffusion sampler of transformers' DiffusionGemma generate (EntropyBoundSampler, the
// temperature schedule, StableAndConfidentStoppingCriteria, _finalize_canvas): the decisions over
// one canvas's per-row results, on the host (docs/diffusion-gemma.md §6). The per-row work over the
// vocabulary runs where the logits are (ops/canvas_sample.h, plan::Executor::sample_rows). The
// random draws go through DiffusionDraws so a test can replace them with a recorded sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace il::runtime {

// T(n) for step n of N (counting down N … 1), in transformers' arithmetic: n / N in f32, the
// difference t_max − t_min of the Python floats rounded to f32, the sum in f32.
float diffusion_temperature(int n, int N, double t_min, double t_max);

// Which positions keep their sampled token: sorted by entropy (ascending; ties by position),
// position i is accepted while the entropies before it in that order sum to at most `bound`
// (so the lowest-entropy position always is).
std::vector<std::uint8_t> accept_by_entropy(std::span<const float> entropies, float bound);

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
  // One uniform in [0, 1) per position, for this step's token draws: position i's token is the
  // inverse-CDF draw of out[i] from softmax(its processed logits), made where the logits are.
  virtual void uniforms(std::span<double> out) = 0;
  // Tokens a test imposes in place of this step's draws (transformers' own multinomial draws,
  // which no uniform reproduces), asked after the forward; false: none.
  virtual bool imposed(std::span<int32_t> /*tokens*/) { return false; }
};

// Our own draws, reproducible from the request's seed: a 64-bit Mersenne Twister; ids are the
// high bits scaled to the vocabulary, uniforms 53-bit.
class SeededDraws final : public DiffusionDraws {
 public:
  explicit SeededDraws(std::uint64_t seed) : rng_(seed) {}
  void uniform_ids(std::span<int32_t> out, std::size_t vocab) override;
  void uniforms(std::span<double> out) override;

 private:
  std::mt19937_64 rng_;
};

}  // namespace il::runtime
