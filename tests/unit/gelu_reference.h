// The exact GELU in long double and correct rounding to f16 / bf16, for the exhaustive checks of
// ops/gelu_erf_fast.h (tests/unit on the CPU, tests/gpu for the kernel).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "core/dtype.h"

namespace il::test {

inline long double exact_gelu(long double x) { return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); }

// The 16-bit storage types by their decoders; `inf` is the +infinity pattern. Positive finite
// patterns are ordered like their values, which the rounding below relies on.
struct Half16 {
  const char* name;
  float (*decode)(uint16_t);
  uint16_t inf;
};
inline const Half16 kF16{"f16", f16_to_f32, 0x7c00};
inline const Half16 kBF16{"bf16", bf16_to_f32, 0x7f80};

// v correctly rounded (to nearest, ties to even) to the type's pattern; NaN → the type's NaN.
inline uint16_t round_to(const Half16& t, long double v) {
  if (std::isnan(v)) return static_cast<uint16_t>(t.inf | 0x0001u);
  const uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
  const long double a = std::fabs(v);
  // The largest pattern p in [0, inf] with value(p) ≤ a.
  uint32_t lo = 0, hi = t.inf;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (static_cast<long double>(t.decode(static_cast<uint16_t>(mid))) <= a) lo = mid;
    else hi = mid - 1;
  }
  uint32_t p = lo;
  if (p < t.inf) {
    const long double below = t.decode(static_cast<uint16_t>(p));
    const long double above = t.decode(static_cast<uint16_t>(p + 1));
    // Past the largest finite value the next pattern is infinity: round by the spacing below.
    const long double up = p + 1 == t.inf ? below + (below - t.decode(static_cast<uint16_t>(p - 1))) : above;
    if (a - below > up - a || (a - below == up - a && (p & 1u) != 0)) p += 1;
  }
  return static_cast<uint16_t>(sign | p);
}

// Units in the last place between two patterns, counted through zero across the signs (0 when
// equal; +0 and −0 count as equal).
inline long ulps_apart(uint16_t a, uint16_t b) {
  const auto key = [](uint16_t p) { return (p & 0x8000u) ? -static_cast<long>(p & 0x7fffu) : static_cast<long>(p); };
  return std::labs(key(a) - key(b));
}

}  // namespace il::test
