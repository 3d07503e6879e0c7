#include "deepseek_ocr_fixture.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fixture.h"
#include "runtime/view_vision.h"

namespace il::test {

std::vector<TextCase> text_cases() {
  std::ifstream f(fixtures_root() / "deepseek-ocr2" / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<TextCase> out;
  for (const auto& c : j.at("text_cases")) {
    TextCase t;
    t.name = c.at("name").get<std::string>();
    t.input_ids = c.at("input_ids").get<std::vector<int32_t>>();
    t.greedy = c.at("greedy").get<std::vector<int32_t>>();
    t.last_logits = c.at("last_logits").get<std::vector<float>>();
    t.step_logits = c.at("step_logits").get<std::vector<std::vector<float>>>();
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<PageCase> page_cases(const std::string& folder) {
  const std::filesystem::path dir = fixtures_root() / folder;
  std::ifstream f(dir / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  const std::size_t patch = j.at("geometry").at("sam").at("patch_size").get<std::size_t>();
  const auto npy = [&](const nlohmann::json& ref) { return io::read_npy(dir / ref.at("npy").get<std::string>()); };
  const auto floats = [](const io::NpyArray& a) { return std::vector<float>(a.values.begin(), a.values.end()); };
  std::vector<PageCase> out;
  for (const auto& c : j.at("cases")) {
    PageCase p;
    p.name = c.at("name").get<std::string>();
    p.input_ids = c.at("input_ids").get<std::vector<int32_t>>();
    p.greedy = c.at("greedy").get<std::vector<int32_t>>();
    p.last_logits = c.at("last_logits").get<std::vector<float>>();
    const io::NpyArray global = npy(c.at("pixel_values"));
    std::vector<float> tiles;
    std::size_t tile_count = 0, tile_side = 0;
    if (c.contains("pixel_values_local")) {
      const io::NpyArray local = npy(c.at("pixel_values_local"));
      tiles = floats(local);
      tile_count = static_cast<std::size_t>(local.shape.at(0));
      tile_side = static_cast<std::size_t>(local.shape.at(3));
    }
    const std::vector<float> g = floats(global);
    p.page = runtime::make_view_page(g.data(), static_cast<std::size_t>(global.shape.at(3)), tiles.data(), tile_count,
                                     tile_side, patch);
    if (c.contains("image_spatial_crop")) {
      const auto grid = c.at("image_spatial_crop").at(0).get<std::vector<int>>();
      p.page.tile_grid = {grid.at(0), grid.at(1)};
    }
    p.vision = npy(c.at("vision"));
    out.push_back(std::move(p));
  }
  return out;
}

GenerationRequest page_request(const PageCase& c) {
  GenerationRequest r;
  r.input_ids = c.input_ids;
  r.images = {c.page};
  r.options.max_new_tokens = c.greedy.size();
  r.options.stop_ids = std::vector<int32_t>{};
  return r;
}

}  // namespace il::test
