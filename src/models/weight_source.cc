#include "models/weight_source.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace il::models {
namespace {

std::size_t numel_of(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// A counter-based generator (splitmix64): value i of a tensor depends on its name and i alone, and
// costs a few nanoseconds, so an 8B-parameter model's random weights take seconds.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [-a, a] with a = 0.02·√3: standard deviation 0.02. Norm weights centre on 1.
template <typename Store>
void fill_random(const std::string& name, std::size_t n, Store store) {
  const uint64_t seed = std::hash<std::string>{}(name);
  const bool is_norm = name.find("LayerNorm") != std::string::npos || name.find("norm") != std::string::npos ||
                       name.find("emb_ln") != std::string::npos;
  const bool is_weight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
  const float centre = is_norm && is_weight ? 1.0f : 0.0f;
  constexpr float kHalfWidth = 0.034641016f;
  const auto fill = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const double u = static_cast<double>(mix(seed ^ (i * 0xd1b54a32d192ed03ull)) >> 11) * 0x1.0p-53;  // [0, 1)
      store(i, centre + kHalfWidth * static_cast<float>(2.0 * u - 1.0));
    }
  };
  // Each value depends on (name, i) alone, so large tensors (a 26B model's expert stacks hold
  // half a billion values each) are filled by every hardware thread with the same result.
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  if (n < (std::size_t{1} << 22) || threads == 1) return fill(0, n);
  std::vector<std::thread> workers;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads && t * chunk < n; ++t)
    workers.emplace_back(fill, t * chunk, std::min(n, (t + 1) * chunk));
  for (std::thread& w : workers) w.join();
}

}  // namespace

plan::StoredTensor SafeTensorsSource::view(const std::string& name, const std::vector<int64_t>& shape) const {
  const std::uint8_t* bytes = tensors_->bytes(name, shape);
  return {{{tensors_->info(name).dtype, bytes, numel_of(shape)}}, {tensors_}};
}

std::vector<float> RandomSource::load(const std::string& name, const std::vector<int64_t>& shape) const {
  const plan::StoredTensor t = view(name, shape);
  std::vector<float> data(numel_of(shape));
  convert_to_f32(t.parts[0].dtype, t.parts[0].bytes, data.data(), data.size());
  return data;
}

plan::StoredTensor RandomSource::view(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = shapes_.find(name);
  check(it != shapes_.end(), "random weights: no tensor named ", name);
  check(it->second == shape, "random weights: tensor ", name, " requested with another shape");
  const std::size_t n = numel_of(shape);
  auto buffer = std::make_shared<std::vector<std::uint8_t>>(n * dtype_size(storage_));
  std::uint8_t* out = buffer->data();
  if (storage_ == DType::kF32) {
    fill_random(name, n, [&](std::size_t i, float v) { std::memcpy(out + 4 * i, &v, 4); });
  } else {
    fill_random(name, n, [&](std::size_t i, float v) {
      const uint16_t h = f32_to_bf16(v);
      std::memcpy(out + 2 * i, &h, 2);
    });
  }
  return {{{storage_, out, n}}, {std::shared_ptr<const void>(buffer, buffer.get())}};
}

DType checkpoint_dtype(const nlohmann::json& config) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    const auto it = config.find(key);
    if (it == config.end() || !it->is_string()) continue;
    const std::string v = it->get<std::string>();
    if (v == "bfloat16" || v == "float16") return DType::kBF16;  // random values: 16 bits either way
    if (v == "float32") return DType::kF32;
  }
  return DType::kF32;
}

}  // namespace il::models
