#include "cli/non_finite.h"

#include <cmath>
#include <cstdio>

namespace il::cli {

namespace {
// Past this many, further outputs are counted only: a model that is NaN everywhere must not
// bury the terminal under a million warnings.
constexpr std::size_t kNamedWarnings = 20;
}  // namespace

void NonFiniteReport::check(const float* values, std::size_t n, std::string_view where) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += std::isfinite(values[i]) ? 0 : 1;
  if (bad == 0) return;
  ++count_;
  if (count_ <= kNamedWarnings) {
    std::fprintf(stderr,
                 "inferencelayer: warning: %.*s: %zu of %zu output values are NaN or infinite (written as %s)\n",
                 static_cast<int>(where.size()), where.data(), bad, n, written_as_.c_str());
  } else if (count_ == kNamedWarnings + 1) {
    std::fprintf(stderr,
                 "inferencelayer: warning: more outputs with NaN or infinite values follow; they are counted, "
                 "not listed\n");
  }
}

void NonFiniteReport::finish(std::size_t outputs) const {
  if (count_ == 0) return;
  throw NonFiniteOutputs(std::to_string(count_) + " of " + std::to_string(outputs) +
                         " outputs hold NaN or infinite values (written as " + written_as_ +
                         "); every line was written, see the warnings above");
}

}  // namespace il::cli
