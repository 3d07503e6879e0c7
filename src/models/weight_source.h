// Where a builder gets its tensors: a safetensors folder, or random values for benchmarks run
// from a config.json alone. load() hands out f32 with the shape checked (for weights a builder
// computes with: fused or folded on the host); view() hands out the values as stored, with no
// conversion and, for a checkpoint, no copy (executors convert per tensor as they place them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/safetensors.h"
#include "plan/plan.h"

namespace il::models {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool has(const std::string& name) const = 0;
  // Throws il::Error naming the tensor when absent or shaped differently.
  virtual std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  // The same tensor as stored: one part, valid while the returned keep lives.
  virtual plan::StoredTensor view(const std::string& name, const std::vector<int64_t>& shape) const = 0;
};

class SafeTensorsSource final : public WeightSource {
 public:
  explicit SafeTensorsSource(io::SafeTensors tensors)
      : tensors_(std::make_shared<io::SafeTensors>(std::move(tensors))) {}
  bool has(const std::string& name) const override { return tensors_->has(name); }
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override {
    return tensors_->load_f32(name, shape);
  }
  plan::StoredTensor view(const std::string& name, const std::vector<int64_t>& shape) const override;
  const io::SafeTensors& tensors() const { return *tensors_; }

 private:
  std::shared_ptr<io::SafeTensors> tensors_;  // shared with the views: the mapping outlives the source
};

// Random weights for a known set of tensor names: norms near 1, everything else small (uniform,
// standard deviation about 0.02), so a random model runs at realistic speed with finite outputs.
// Deterministic per name. Stored in `storage` (bf16 for a config whose checkpoints are bf16, so a
// large model takes its real host memory).
class RandomSource final : public WeightSource {
 public:
  // storage: kF32 or kBF16.
  explicit RandomSource(std::map<std::string, std::vector<int64_t>> shapes, DType storage = DType::kF32)
      : shapes_(std::move(shapes)), storage_(storage == DType::kF16 ? DType::kBF16 : storage) {}
  bool has(const std::string& name) const override { return shapes_.count(name) > 0; }
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override;
  plan::StoredTensor view(const std::string& name, const std::vector<int64_t>& shape) const override;

 private:
  std::map<std::string, std::vector<int64_t>> shapes_;
  DType storage_;
};

// What random weights for a config are stored as: bf16 where its checkpoints are 16-bit ("dtype"
// or "torch_dtype" bfloat16 or float16), f32 otherwise.
DType checkpoint_dtype(const nlohmann::json& config);

}  // namespace il::models
