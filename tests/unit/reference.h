// Naive double-precision references for the op tests, and helpers for random inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "inferencelayer/types.h"

namespace il::test {

std::vector<float> random_vector(std::size_t n, uint32_t seed, float scale = 1.0f);
double activation_ref(Activation act, double v);
// Largest |a − b| over both vectors (sizes must match).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);
// Max |value| of a vector, at least 1: tolerances are relative to the output's scale.
double scale_of(const std::vector<float>& a);

// The sizes every op is tried at: odd ones catch tail handling, large ones threading.
inline const std::vector<std::size_t> kOddSizes = {1, 7, 97, 257};

}  // namespace il::test
