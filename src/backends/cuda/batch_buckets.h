// Batch shapes rounded up to buckets, so CUDA graphs are captured per bucket rather than per
// exact shape: a graph serves every batch whose counts round to the same bucket, and the cache
// stays small. The padding costs at most 1/8 of the work above 64 rows (8 buckets per octave)
// and at most 7 rows below. Kernels read the real counts from the device's seq_starts (padding
// sequences are empty, padding tokens belong to none), so results do not depend on the bucket.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>

namespace il::cuda {

// n rounded up to a multiple of max(8, 2^(floor(log2 n) − 3)), capped at `cap` (≥ n).
inline std::size_t count_bucket(std::size_t n, std::size_t cap) {
  if (n == 0) return 0;
  const std::size_t top = std::bit_floor(n);
  const std::size_t step = std::max<std::size_t>(8, top / 8);
  return std::min(cap, (n + step - 1) / step * step);
}

// The attention grid covers the longest sequence in blocks of 32 query rows; rows past a
// sequence's end exit at once, so a power of two (at least 32) is a cheap bucket.
inline std::size_t length_bucket(std::size_t n) { return n == 0 ? 0 : std::bit_ceil(std::max<std::size_t>(n, 32)); }

}  // namespace il::cuda
