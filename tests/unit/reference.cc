#include "reference.h"

#include <algorithm>
#include <cmath>

namespace il::test {

std::vector<float> random_vector(std::size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double activation_ref(Activation act, double v) {
  switch (act) {
    case Activation::kNone: return v;
    case Activation::kGeluErf: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case Activation::kSilu: return v / (1.0 + std::exp(-v));
    case Activation::kRelu: return v > 0 ? v : 0.0;
    case Activation::kTanh: return std::tanh(v);
    case Activation::kQuickGelu: return v / (1.0 + std::exp(-1.702 * v));
  }
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

double scale_of(const std::vector<float>& a) {
  double m = 1.0;
  for (float x : a) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

}  // namespace il::test
