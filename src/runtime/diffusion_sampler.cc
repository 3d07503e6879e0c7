#include "runtime/diffusion_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace il::runtime {

float diffusion_temperature(int n, int N, double t_min, double t_max) {
  const float frac = static_cast<float>(n) / static_cast<float>(N);
  const float span = static_cast<float>(t_max - t_min);
  return static_cast<float>(t_min) + span * frac;
}

std::vector<std::uint8_t> accept_by_entropy(std::span<const float> entropies, float bound) {
  std::vector<std::size_t> order(entropies.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return entropies[a] < entropies[b]; });
  std::vector<std::uint8_t> accepted(entropies.size(), 0);
  double before = 0.0;
  for (std::size_t i : order) {
    if (before <= bound) accepted[i] = 1;
    before += entropies[i];
  }
  return accepted;
}

std::optional<std::size_t> first_end(std::span<const int32_t> block, std::span<const int32_t> end_ids) {
  for (std::size_t i = 0; i < block.size(); ++i)
    if (std::find(end_ids.begin(), end_ids.end(), block[i]) != end_ids.end()) return i;
  return std::nullopt;
}

std::optional<std::size_t> finalize_block(std::span<int32_t> block, std::span<const int32_t> end_ids,
                                          std::optional<int32_t> pad) {
  const std::optional<std::size_t> end = first_end(block, end_ids);
  if (end && pad) std::fill(block.begin() + static_cast<std::ptrdiff_t>(*end + 1), block.end(), *pad);
  return end;
}

void StopRule::restart(int stability, std::size_t canvas) {
  history_.assign(static_cast<std::size_t>(std::max(stability, 0)), std::vector<int32_t>(canvas, -1));
}

bool StopRule::check(std::span<const int32_t> argmax, float mean_entropy, std::optional<float> threshold) {
  bool stable = true;
  for (const auto& h : history_) stable = stable && std::equal(h.begin(), h.end(), argmax.begin(), argmax.end());
  if (!history_.empty()) {
    std::rotate(history_.begin(), history_.begin() + 1, history_.end());
    history_.back().assign(argmax.begin(), argmax.end());
  }
  return threshold && stable && mean_entropy < *threshold;
}

void SeededDraws::uniform_ids(std::span<int32_t> out, std::size_t vocab) {
  for (int32_t& id : out) id = static_cast<int32_t>((rng_() >> 32) * vocab >> 32);
}

void SeededDraws::uniforms(std::span<double> out) {
  for (double& u : out) u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

}  // namespace il::runtime
