#include "models/weight_source.h"

#include <functional>
#include <random>

#include "core/error.h"

namespace il::models {

std::vector<float> RandomSource::load(const std::string& name,
                                      const std::vector<int64_t>& shape) const {
  auto it = shapes_.find(name);
  check(it != shapes_.end(), "random weights: no tensor named ", name);
  check(it->second == shape, "random weights: tensor ", name, " requested with another shape");
  std::size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<std::size_t>(d);
  std::vector<float> data(numel);
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(name)));
  const bool is_norm = name.find("LayerNorm") != std::string::npos ||
                       name.find("norm") != std::string::npos || name.find("emb_ln") != std::string::npos;
  const bool is_weight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (float& v : data) v = (is_norm && is_weight ? 1.0f : 0.0f) + dist(rng);
  return data;
}

}  // namespace il::models
