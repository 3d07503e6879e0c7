// Where a builder gets its tensors: a safetensors folder, or random values for benchmarks run
// from a config.json alone. Both hand out f32 with the shape checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace il::models {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool has(const std::string& name) const = 0;
  // Throws il::Error naming the tensor when absent or shaped differently.
  virtual std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const = 0;
};

class SafeTensorsSource final : public WeightSource {
 public:
  explicit SafeTensorsSource(io::SafeTensors tensors) : tensors_(std::move(tensors)) {}
  bool has(const std::string& name) const override { return tensors_.has(name); }
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override {
    return tensors_.load_f32(name, shape);
  }
  const io::SafeTensors& tensors() const { return tensors_; }

 private:
  io::SafeTensors tensors_;
};

// Random weights for a known set of tensor names: norms near 1, everything else small, so a
// random model runs at realistic speed with finite outputs. Deterministic per name.
class RandomSource final : public WeightSource {
 public:
  explicit RandomSource(std::map<std::string, std::vector<int64_t>> shapes)
      : shapes_(std::move(shapes)) {}
  bool has(const std::string& name) const override { return shapes_.count(name) > 0; }
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override;

 private:
  std::map<std::string, std::vector<int64_t>> shapes_;
};

}  // namespace il::models
