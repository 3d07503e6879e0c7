// tests/fixtures/glm-ocr-vision (tools/oracle/make_glm_ocr_vision.py): a tiny random
// GlmOcrVisionModel saved by transformers 5.17, its inputs (three images' pixel_values in
// merge-window order and their grids, one of two frames) and its outputs. Shared by the CPU
// oracle test and the CUDA model test.
#pragma once

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture.h"
#include "io/safetensors.h"
#include "models/glm_ocr_vision.h"
#include "models/glm_ocr_vision_config.h"
#include "plan/plan.h"
#include "runtime/merge_window_vision_batch.h"

namespace il::test {

struct GlmOcrVisionFixture {
  models::GlmOcrVisionConfig config;
  std::vector<std::array<int, 3>> grid_thw;
  std::vector<float> pixel_values;  // rows back to back
  std::size_t patch_dim = 0;
  // Rows back to back, and their width.
  std::vector<float> post_layernorm, last_hidden_state, pooler_output;
  std::size_t hidden = 0, out_hidden = 0;
};

inline std::filesystem::path glm_ocr_vision_dir() { return fixtures_root() / "glm-ocr-vision"; }

inline std::vector<float> flatten_rows(const nlohmann::json& rows, std::size_t& width) {
  std::vector<float> out;
  width = rows.at(0).size();
  for (const auto& r : rows) {
    if (r.size() != width) throw std::runtime_error("ragged rows in the fixture");
    for (const auto& v : r) out.push_back(v.get<float>());
  }
  return out;
}

inline GlmOcrVisionFixture load_glm_ocr_vision_fixture() {
  GlmOcrVisionFixture f;
  const auto dir = glm_ocr_vision_dir();
  std::ifstream cfg(dir / "config.json");
  f.config = models::glm_ocr_vision_config_of(nlohmann::json::parse(cfg), "glm-ocr-vision/config.json");
  std::ifstream in(dir / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& g : j.at("grid_thw")) f.grid_thw.push_back({g.at(0).get<int>(), g.at(1).get<int>(), g.at(2).get<int>()});
  f.pixel_values = flatten_rows(j.at("pixel_values"), f.patch_dim);
  f.post_layernorm = flatten_rows(j.at("post_layernorm"), f.hidden);
  f.last_hidden_state = flatten_rows(j.at("last_hidden_state"), f.out_hidden);
  f.pooler_output = flatten_rows(j.at("pooler_output"), f.out_hidden);
  return f;
}

inline models::SafeTensorsSource glm_ocr_vision_weights() {
  return models::SafeTensorsSource(io::SafeTensors::open(glm_ocr_vision_dir() / "model.safetensors"));
}

// The checkpoint under another prefix (as GlmOcrForConditionalGeneration names the tower's
// tensors "model.visual.…"), without copying it.
class PrefixedSource final : public models::WeightSource {
 public:
  PrefixedSource(const models::WeightSource& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}
  bool has(const std::string& name) const override { return strip(name) && inner_.has(name.substr(prefix_.size())); }
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override {
    if (!strip(name)) return inner_.load("<not under " + prefix_ + "> " + name, shape);
    return inner_.load(name.substr(prefix_.size()), shape);
  }
  plan::StoredTensor view(const std::string& name, const std::vector<int64_t>& shape) const override {
    if (!strip(name)) return inner_.view("<not under " + prefix_ + "> " + name, shape);
    return inner_.view(name.substr(prefix_.size()), shape);
  }

 private:
  bool strip(const std::string& name) const { return name.compare(0, prefix_.size(), prefix_) == 0; }
  const models::WeightSource& inner_;
  std::string prefix_;
};

}  // namespace il::test
